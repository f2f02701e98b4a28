"""LAPACK (and the level-3 BLAS routine trsm) for the linear-algebra emitters, found in the library that
runtime.py's BLAS provider comes from, and called from JIT-compiled code through the Fortran interface.

| provider | where the routines come from | LLVM symbol | integers |
|---|---|---|---|
| numpy | numpy's bundled OpenBLAS, LAPACK included (`scipy_spotrf_64_`, ...) | `xlapy_f77i64_<routine>` | 64-bit |
| scipy | `scipy.linalg.cython_lapack` / `cython_blas` function pointers | `xlapy_f77_<routine>` | 32-bit |
| none | nothing: the emitters run their own loops (XLAPY_BLAS=none, and AOT objects without BLAS) | | |

The Fortran interface is column-major and takes every argument by reference; character arguments are one
byte ('U', 'N', ...). AOT objects compiled with BLAS rename `xlapy_f77_<routine>` to the standard `<routine>_`
(aot.py), so they link against any LAPACK. Routines, by element type: potrf (Cholesky), trsm (triangular
solve), geqrf (Householder QR), orgqr for real and ungqr for complex types (the product of the reflectors);
for JAX's `lapack_*_ffi` custom-calls (lapack_ffi_emitter.py) also syevd/heevd (symmetric/Hermitian
eigensolver), getrf (LU), gesdd (SVD), gtsv (tridiagonal solve), geev (general eigensolver), gees (Schur)
and gehrd (Hessenberg).
"""
from __future__ import annotations

import ctypes
import glob
import os
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir

from . import runtime
from .irhelpers import I8, alloca_once

LETTERS = {"f32": "s", "f64": "d", "c64": "c", "c128": "z"}
ROUTINES = ("potrf", "trsm", "geqrf", "orgqr", "syevd", "getrf", "gesdd", "gtsv", "geev", "gees", "gehrd")
_COMPLEX_NAMES = {"orgqr": "ungqr", "syevd": "heevd"}


def _name(routine: str, dtype: str) -> str:
    """The LAPACK name: orgqr is ungqr and syevd heevd for complex types."""
    if dtype in ("c64", "c128"):
        routine = _COMPLEX_NAMES.get(routine, routine)
    return LETTERS[dtype] + routine


@dataclass(frozen=True)
class LapackFunction:
    """One routine as compiled code calls it: `symbol` is registered with LLVM at `address`."""
    routine: str         # one of ROUTINES
    dtype: str           # f32 | f64 | c64 | c128
    symbol: str
    int_bits: int
    address: int

    @property
    def int_type(self) -> ir.IntType:
        return ir.IntType(self.int_bits)


def _numpy_lapack() -> dict[tuple[str, str], LapackFunction]:
    import numpy
    root = os.path.dirname(os.path.dirname(numpy.__file__))
    for path in sorted(glob.glob(os.path.join(root, "numpy.libs", "libscipy_openblas64_*.so*"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        found = {}
        for routine in ROUTINES:
            for dtype in LETTERS:
                name = _name(routine, dtype)
                sym = getattr(lib, f"scipy_{name}_64_", None)
                if sym is not None:
                    found[(routine, dtype)] = LapackFunction(routine, dtype, f"xlapy_f77i64_{name}", 64,
                                                             ctypes.cast(sym, ctypes.c_void_p).value)
        if found:
            return found
    return {}


def _scipy_lapack() -> dict[tuple[str, str], LapackFunction]:
    try:
        from scipy.linalg import cython_blas, cython_lapack
    except ImportError:
        return {}
    found = {}
    for routine in ROUTINES:
        capi = (cython_blas if routine == "trsm" else cython_lapack).__pyx_capi__
        for dtype in LETTERS:
            name = _name(routine, dtype)
            capsule = capi.get(name)
            if capsule is not None:
                found[(routine, dtype)] = LapackFunction(routine, dtype, f"xlapy_f77_{name}", 32,
                                                         runtime._capsule_pointer(capsule))
    return found


_FINDERS = {"numpy": _numpy_lapack, "scipy": _scipy_lapack}
_TABLES: dict[str, dict[tuple[str, str], LapackFunction]] = {}


def lapack_function(routine: str, dtype: str) -> LapackFunction | None:
    """The routine for element type `dtype` from the current BLAS provider's library (registered with LLVM on
    first use), or None when there is no provider or it lacks the routine."""
    provider = runtime.provider()
    if provider is None or provider.name not in _FINDERS:
        return None
    table = _TABLES.get(provider.name)
    if table is None:
        table = _TABLES[provider.name] = _FINDERS[provider.name]()
        for fn in table.values():
            llvm.add_symbol(fn.symbol, fn.address)
    return table.get((routine, dtype))


# -- calls ------------------------------------------------------------------------------------------------
def ref(b: ir.IRBuilder, ty: ir.Type, value) -> ir.Value:
    """A pointer to an entry-block slot holding `value` (a Python number or an IR value of type ty)."""
    slot = alloca_once(b, ty)
    b.store(value if isinstance(value, ir.Value) else ir.Constant(ty, value), slot)
    return slot


def char(b: ir.IRBuilder, letter: str) -> ir.Value:
    return ref(b, I8, ord(letter))


def integer(b: ir.IRBuilder, fn: LapackFunction, value) -> ir.Value:
    """A by-reference integer of fn's width; `value` a Python int or an i64 IR value."""
    it = fn.int_type
    if isinstance(value, ir.Value) and value.type != it:
        value = b.trunc(value, it)
    return ref(b, it, value)


def call(b: ir.IRBuilder, fn: LapackFunction, args: list[ir.Value]) -> None:
    """Call fn with pointer arguments (declared void(i8*...) after casting each one)."""
    from .irhelpers import I8P, VOID
    callee = b.module.globals.get(fn.symbol)
    if callee is None:
        callee = ir.Function(b.module, ir.FunctionType(VOID, [I8P] * len(args)), fn.symbol)
        callee.attributes.add("nounwind")
    b.call(callee, [b.bitcast(a, I8P) for a in args])


__all__ = ["LapackFunction", "lapack_function", "ref", "char", "integer", "call", "LETTERS"]
