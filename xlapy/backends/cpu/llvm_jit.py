"""The LLVM back half of the JIT: optimize a parsed LLVM module at the level the compile plan chose
(compile_plan.py) and turn it into machine code.

Two ways to machine code:
  * "optimized" modules (O3, the default for real work) get their own MCJIT engine, as before: the machine code is
    freed with the Executable that owns the engine.
  * "quick" modules (small ones: an eager op on a few arrays) skip LLVM's IR optimization and are code-generated
    at O0 (FastISel) in a SHARED engine. Building an O3 pass pipeline and a code generator costs ~10 ms each even
    for a ten-line function; a shared O0 engine turns a tiny module into machine code in about a millisecond.
    Each module's entry is renamed `xlapy_entry.q<n>` and every other definition is made internal, so modules do
    not see each other's symbols. A shared engine holds at most QUICK_MODULES_PER_ENGINE modules, then a new one
    starts; every Executable keeps its engine alive, so the code of a retired engine is freed with its last user.

Neither path adds fast-math flags, so IEEE-strict IR gives the same bits at any level. Where the emitter grants
freedom — `contract` (dot loops: O3 forms FMAs, O0 does not) and `reassoc` accumulations (O3 may reorder) — the
two paths may round differently, as the IR allows.
"""
from __future__ import annotations

import ctypes.util
import itertools
import threading

import llvmlite.binding as llvm

QUICK_MODULES_PER_ENGINE = 512

_lock = threading.Lock()
_shared_tm = None
_quick: dict = {"engine": None, "count": 0}
_names = itertools.count()
_initialized = False


def init_llvm() -> None:
    """Initialize LLVM's native target and asm printer and make libm's symbols visible to MCJIT, once per
    process; everything in this backend that builds a target machine or an engine calls it first."""
    global _initialized
    if not _initialized:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        libm = ctypes.util.find_library("m")
        if libm:
            llvm.load_library_permanently(libm)
        _initialized = True


def new_target_machine(opt: int = 3):
    """A fresh target machine for this host (an MCJIT engine takes ownership of the one it is given)."""
    init_llvm()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(), opt=opt)


def shared_target_machine():
    """One host target machine for the process, for data layouts and pass builders (never handed to an engine)."""
    global _shared_tm
    if _shared_tm is None:
        _shared_tm = new_target_machine(3)
    return _shared_tm


def jit_optimized(mod, entry: str):
    """A private engine for `mod` (already optimized): (engine, entry address)."""
    engine = llvm.create_mcjit_compiler(mod, new_target_machine(3))
    engine.finalize_object()
    return engine, engine.get_function_address(entry)


def jit_quick(mod, entry: str):
    """Code-generate `mod` at O0 in the shared quick engine: (engine, entry address). `mod` is consumed."""
    name = f"{entry}.q{next(_names)}"
    for g in itertools.chain(mod.functions, mod.global_variables):
        if g.is_declaration:
            continue
        if g.name == entry:
            g.name = name
        else:
            g.linkage = llvm.Linkage.internal if g.is_function else llvm.Linkage.private
    with _lock:
        engine = _quick["engine"]
        if engine is None or _quick["count"] >= QUICK_MODULES_PER_ENGINE:
            engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), new_target_machine(0))
            _quick.update(engine=engine, count=0)
        engine.add_module(mod)
        _quick["count"] += 1
        engine.finalize_object()
        address = engine.get_function_address(name)
    return engine, address
