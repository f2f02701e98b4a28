"""The CPU runtime: an optimized BLAS found in this process, made callable by name from JIT-compiled code.

XLA:CPU links Eigen's matrix kernels into its runtime; we borrow the OpenBLAS that numpy (or scipy) already
loaded. A provider is looked up once, in this order:

  numpy   numpy's bundled OpenBLAS (`numpy.libs/libscipy_openblas64_*.so`): CBLAS, row-major, 64-bit ints
          passed by value. The very library `a @ b` runs on, so a dot costs what numpy's matmul costs.
  scipy   `scipy.linalg.cython_blas` function pointers (PyCapsules): the Fortran ABI, column-major, every
          argument by pointer, 32-bit ints.
  none    no BLAS: the dot emitter emits loops.

`XLAPY_BLAS=numpy|scipy|none` forces a choice. Each function is registered with LLVM under a name of ours
(`xlapy_<abi>_<routine>`, e.g. `xlapy_cblas64_sgemm`), so MCJIT resolves calls to it like a libc symbol.
`XLAPY_NUM_THREADS=n` sets the BLAS thread count when a provider loads (numpy's BLAS is shared with numpy,
so this also sets numpy's matmul threads); `set_num_threads` changes it later. Large GEMMs of multithreaded
JIT code are split over xlapy's own thread pool instead, each part a single-threaded BLAS call (dot_blas.py,
threadpool.py), so the provider's thread-count functions are also exported to compiled code.
"""
from __future__ import annotations

import ctypes
import glob
import os
from dataclasses import dataclass, field
from typing import Callable

import llvmlite.binding as llvm

ROUTINES = ("gemm", "gemv")
_PREFIX = {"f32": "s", "f64": "d"}

# CBLAS enums
CBLAS_ROW_MAJOR, CBLAS_COL_MAJOR = 101, 102
CBLAS_NO_TRANS, CBLAS_TRANS = 111, 112


@dataclass(frozen=True)
class BlasFunction:
    """One BLAS routine as JIT-ed code calls it. abi is "cblas" (C interface: order/transpose enums and ints by
    value) or "fortran" (column-major, all arguments by pointer, transposes as 'N'/'T' chars); int_bits is the
    width of its integer arguments."""
    name: str
    routine: str        # "gemm" | "gemv"
    dtype: str          # "f32" | "f64"
    abi: str
    int_bits: int
    address: int


@dataclass
class Provider:
    name: str
    description: str
    functions: dict[tuple[str, str], BlasFunction] = field(default_factory=dict)
    set_threads: Callable[[int], None] | None = None
    get_threads: Callable[[], int] | None = None
    set_threads_address: int | None = None       # void set(int), int get(): for compiled code (threadpool.py)
    get_threads_address: int | None = None


# -- providers -----------------------------------------------------------------------------------------
def _numpy_openblas() -> Provider | None:
    import numpy
    root = os.path.dirname(os.path.dirname(numpy.__file__))
    for path in sorted(glob.glob(os.path.join(root, "numpy.libs", "libscipy_openblas64_*.so*"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        p = Provider("numpy", f"numpy's OpenBLAS ({os.path.basename(path)}, CBLAS, ILP64)")
        for routine in ROUTINES:
            for dtype, letter in _PREFIX.items():
                sym = getattr(lib, f"scipy_cblas_{letter}{routine}64_", None)
                if sym is None:
                    break
                name = f"xlapy_cblas64_{letter}{routine}"
                p.functions[(routine, dtype)] = BlasFunction(name, routine, dtype, "cblas", 64,
                                                             ctypes.cast(sym, ctypes.c_void_p).value)
        if not p.functions:
            continue
        _attach_thread_control(p, lib, "scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_")
        return p
    return None


def _capsule_pointer(capsule) -> int:
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))


def _scipy_blas() -> Provider | None:
    try:
        from scipy.linalg import cython_blas
    except ImportError:
        return None
    capi = cython_blas.__pyx_capi__
    p = Provider("scipy", "scipy.linalg.cython_blas (Fortran ABI, LP64)")
    for routine in ROUTINES:
        for dtype, letter in _PREFIX.items():
            capsule = capi.get(letter + routine)
            if capsule is not None:
                p.functions[(routine, dtype)] = BlasFunction(f"xlapy_f77_{letter}{routine}", routine, dtype,
                                                             "fortran", 32, _capsule_pointer(capsule))
    if not p.functions:
        return None
    import scipy
    libs = os.path.join(os.path.dirname(os.path.dirname(scipy.__file__)), "scipy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "libscipy_openblas*.so*"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if _attach_thread_control(p, lib, "scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"):
            break
    return p


def _attach_thread_control(p: Provider, lib: ctypes.CDLL, set_name: str, get_name: str) -> bool:
    setter, getter = getattr(lib, set_name, None), getattr(lib, get_name, None)
    if setter is None:
        return False
    setter.argtypes, setter.restype = [ctypes.c_int], None
    p.set_threads = lambda n: setter(int(n))
    if getter is not None:
        getter.argtypes, getter.restype = [], ctypes.c_int
        p.get_threads = lambda: int(getter())
        p.set_threads_address = ctypes.cast(setter, ctypes.c_void_p).value
        p.get_threads_address = ctypes.cast(getter, ctypes.c_void_p).value
    return True


_FINDERS: dict[str, Callable[[], Provider | None]] = {"numpy": _numpy_openblas, "scipy": _scipy_blas}
_provider: Provider | None = None
_loaded = False


def _register(p: Provider) -> None:
    for fn in p.functions.values():
        llvm.add_symbol(fn.name, fn.address)


def use_provider(name: str | None = None) -> Provider | None:
    """Select the BLAS provider: "numpy", "scipy", "none", or None for the default order (XLAPY_BLAS if set).
    Affects modules compiled afterwards; returns the provider now in use (None when no BLAS)."""
    global _provider, _loaded
    if name is None:
        name = os.environ.get("XLAPY_BLAS", "").strip().lower() or None
    order = list(_FINDERS) if name is None else ([] if name == "none" else [name])
    for n in order:
        if n not in _FINDERS:
            raise ValueError(f"unknown BLAS provider {n!r}; expected one of {sorted(_FINDERS)} or 'none'")
    _provider = None
    for n in order:
        p = _FINDERS[n]()
        if p is not None:
            _register(p)
            _provider = p
            break
    _loaded = True
    threads = os.environ.get("XLAPY_NUM_THREADS")
    if threads and _provider is not None and _provider.set_threads is not None:
        _provider.set_threads(int(threads))
    return _provider


def provider() -> Provider | None:
    if not _loaded:
        use_provider()
    return _provider


def blas_function(routine: str, dtype: str) -> BlasFunction | None:
    """The registered BLAS `routine` ("gemm" | "gemv") for element type `dtype` ("f32" | "f64"), or None."""
    p = provider()
    return None if p is None else p.functions.get((routine, dtype))


def blas_symbol(routine: str, dtype: str) -> str | None:
    """The LLVM symbol name under which `routine` for `dtype` is registered, or None when there is none."""
    fn = blas_function(routine, dtype)
    return None if fn is None else fn.name


def set_num_threads(n: int) -> bool:
    """Set the BLAS thread count; False when the provider offers no control."""
    p = provider()
    if p is None or p.set_threads is None:
        return False
    p.set_threads(n)
    return True


def get_num_threads() -> int | None:
    p = provider()
    return None if p is None or p.get_threads is None else p.get_threads()


def describe() -> str:
    p = provider()
    return "no BLAS (dots are emitted as loops)" if p is None else p.description


__all__ = ["BlasFunction", "Provider", "use_provider", "provider", "blas_function", "blas_symbol",
           "set_num_threads", "get_num_threads", "describe", "CBLAS_ROW_MAJOR", "CBLAS_COL_MAJOR",
           "CBLAS_NO_TRANS", "CBLAS_TRANS"]
