"""The host-callback custom-call on the CPU backend (target `xlapy_host_callback`; the definition and the
callback registry are the interpreter's: backends/interpreter/host_callback.py).

The emitted code stores the operand and result buffer pointers in two stack arrays and calls
`xlapy_host_callback(i64 key, i8** operands, i8** results)`. That symbol is a ctypes trampoline registered
with llvm.add_symbol on first use: it wraps each pointer as a numpy array of the registered shapes (row-major,
the layout asked of every operand here), calls the Python function and copies its results into the result
buffers. An exception in the callback cannot unwind through the machine code: the trampoline records it for
the calling thread and leaves the results zero; the executable (which calls through ctypes when its code calls
this symbol: `Executable.check_after_calls`) raises it as an ExecutionError when the call returns (`raise_pending`,
trampolines.py).
"""
from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import Instruction, Shape
from ..interpreter import host_callback
from .buffers import ValueTree
from . import trampolines
from .irhelpers import I8P, VOID, alloca_once, i64

SYMBOL = "xlapy_host_callback"
_PROTO = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p))
_PENDING = trampolines.PendingError("pure_callback")
raise_pending = _PENDING.raise_pending      # the error a callback of this thread's last call raised, once


def _as_array(pointer: int, shape: Shape) -> np.ndarray:
    dtype = np.dtype(shape.dtype)
    n = int(np.prod(shape.dims, dtype=np.int64))
    if n == 0:
        return np.zeros(shape.dims, dtype)
    buf = (ctypes.c_char * (n * dtype.itemsize)).from_address(pointer)
    return np.frombuffer(buf, dtype=dtype).reshape(shape.dims)


def _trampoline(key, operands, results):
    try:
        cb = host_callback.REGISTRY[key]
        args = [_as_array(operands[i], s) for i, s in enumerate(cb.operands)]
        outs = host_callback.run(key, [a.copy() for a in args])
        for i, (value, shape) in enumerate(zip(outs, cb.results)):
            _as_array(results[i], shape)[...] = value
    except BaseException as e:          # noqa: BLE001 -- nothing may unwind into machine code
        _PENDING.record(e)


def ensure_symbol() -> None:
    """Register the trampoline's address under SYMBOL (once per process)."""
    trampolines.register(SYMBOL, _PROTO, _trampoline)


def _check_row_major(inst: Instruction, shape: Shape) -> None:
    layout = shape.layout
    if layout is not None and tuple(layout.minor_to_major) != tuple(range(shape.rank - 1, -1, -1)):
        raise UnimplementedError(f"cpu backend: host callback {inst.name} on a {shape.to_text()} buffer "
                                 f"(row-major layouts only)")


def emit(em, inst: Instruction, operands: list) -> ValueTree:
    ensure_symbol()
    key = host_callback.key_of(inst)
    b = em.b
    out = em.new_tree(inst.shape, inst)
    leaves = list(out) if isinstance(out, tuple) else [out]
    for ref in list(operands) + leaves:
        _check_row_major(inst, ref.shape)
    ops_arr = alloca_once(b, ir.ArrayType(I8P, max(len(operands), 1)), "cb_operands")
    res_arr = alloca_once(b, ir.ArrayType(I8P, max(len(leaves), 1)), "cb_results")
    for arr, refs in ((ops_arr, operands), (res_arr, leaves)):
        for i, ref in enumerate(refs):
            slot = b.gep(arr, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), i)], inbounds=True)
            b.store(b.bitcast(ref.pointer, I8P), slot)
    callee = b.module.globals.get(SYMBOL)
    if callee is None:
        callee = ir.Function(b.module, ir.FunctionType(VOID, [ir.IntType(64), I8P.as_pointer(), I8P.as_pointer()]),
                             SYMBOL)
    first = [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 0)]
    b.call(callee, [i64(key), b.gep(ops_arr, first, inbounds=True), b.gep(res_arr, first, inbounds=True)])
    return out


TARGETS = {host_callback.TARGET: emit}

__all__ = ["SYMBOL", "TARGETS", "emit", "ensure_symbol", "raise_pending"]
