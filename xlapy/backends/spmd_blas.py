"""The BLAS single-threaded while a replicated CPU run's devices run.

Each device's program is compiled with num_threads=1 (the devices are the parallelism), and the CPU backend's
rule for such programs is a plain BLAS call with the BLAS's own threads (cpu/dot_blas.py). With N device
threads that is N x the BLAS's threads on the same cores: OpenBLAS's spinning threads made a data-parallel
step ~100x slower on 2 devices. So a run brackets itself with the JIT's own mechanism, `xlapy_blas_serial`
(cpu/threadpool.py): the first user sets the provider's thread count to 1, the last restores it, and numpy's
matmul on other threads meanwhile is single-threaded too, as it is around the GEMMs the JIT splits itself.

| per-device num_threads | BLAS during the run |
|---|---|
| 1 (the default), an op that may call the BLAS (BLAS_OPCODES) | single-threaded (`serial()` brackets the run) |
| 1, no such op | untouched (the bracket costs two locked calls per run: nothing to pay for on a collective's path) |
| > 1 | the JIT's own rule (it already brackets each GEMM it splits) |
| no thread control (a BLAS without one) | unchanged |
"""
from __future__ import annotations

import contextlib
import ctypes
import threading
from typing import Callable, Iterator

_lock = threading.Lock()
_serial_fn: Callable[[int], None] | None = None


def _serial_function() -> Callable[[int], None] | None:
    """xlapy_blas_serial as a ctypes function, pointed at the current BLAS provider (as the JIT does at each
    compile); None when the provider has no thread control."""
    global _serial_fn
    import llvmlite.binding as llvm
    from .cpu import threadpool
    available = threadpool.serial_blas_available()
    with _lock:
        if available and _serial_fn is None:
            address = llvm.address_of_symbol(threadpool.SERIAL_BLAS_SYMBOL)
            if address:
                _serial_fn = ctypes.CFUNCTYPE(None, ctypes.c_int32)(address)
        return _serial_fn if available else None


# ops the CPU backend may lower to BLAS / LAPACK calls (dots, convolutions rewritten as dots, linalg)
BLAS_OPCODES = frozenset({"dot", "convolution", "custom-call", "triangular-solve", "cholesky", "fft"})


def uses_blas(module) -> bool:
    return any(inst.opcode in BLAS_OPCODES for comp in module.computations for inst in comp.instructions)


def wanted(backend: str, num_threads: int, module=None) -> bool:
    """Whether a run of per-device programs compiled for `backend` with `num_threads` brackets itself (called
    at compile time; `module`: the optimized module, when known)."""
    if backend != "cpu" or num_threads > 1 or (module is not None and not uses_blas(module)):
        return False
    return _serial_function() is not None


@contextlib.contextmanager
def serial() -> Iterator[None]:
    """The BLAS single-threaded inside the block (nested and concurrent blocks count users)."""
    fn = _serial_fn
    if fn is None:
        yield
        return
    fn(1)
    try:
        yield
    finally:
        fn(0)


__all__ = ["BLAS_OPCODES", "serial", "uses_blas", "wanted"]
