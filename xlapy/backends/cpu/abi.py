"""The native entry function of a CPU executable: the one calling convention that the emitter, the JIT, the AOT
wrapper and the fast call path share.

    void xlapy_entry(i8** params, i8** results, i8* scratch)

compiler.emit_module defines it (its docstring says what the arguments hold). The name and type live here,
below everything that uses them, because the element emitter (elemental.py, which marks loads of entry
parameters invariant) sits below the compiler in the imports.
"""
from __future__ import annotations

from llvmlite import ir

from .irhelpers import I8P, VOID

ENTRY_NAME = "xlapy_entry"
ENTRY_TYPE = ir.FunctionType(VOID, [I8P.as_pointer(), I8P.as_pointer(), I8P])
