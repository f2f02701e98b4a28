"""lax.linalg.schur and lax.linalg.hessenberg, lowered as JAX lowers them on the CPU.

| function | HLO |
|---|---|
| schur(x, compute_schur_vectors=True) | `lapack_?gees_ffi` (mode V or N, sort N): (t, vs, wr, wi, sdim, info) real, (t, vs, w, sdim, info) complex |
| hessenberg(a) | `lapack_?gehrd_ffi` (`{high = n : i32, low = 1 : i32}`): (a', taus[..., n-1], info) |

Both turn a batch element with info != 0 into NaNs. Real
input gives the real Schur form (2x2 blocks for conjugate pairs); jax.scipy.linalg.schur's output='complex'
converts to complex first. No derivative rules (JAX has none either).
"""
from __future__ import annotations

import numpy as np

from ..hlo import Shape
from .lax_linalg import _check, _error, _is_complex, _not_ok_to_nan, _target, _config
from .lax_operands import hlo_shape
from .tracer import aval, bind

__all__ = ["schur", "hessenberg"]


def _call(routine: str, x, results: list, config: str):
    a = aval(x)
    shape = Shape.tuple_of([hlo_shape(dt, dims) for dt, dims in results])
    attrs = {"custom_call_target": _target(routine, a.dtype), "api_version": "API_VERSION_TYPED_FFI",
             "backend_config": config}
    return bind("custom-call", [x], attrs, shape=shape, name=routine)


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False, select_callable=None):
    """(t, vs) with x = vs t vs^H (vs unitary; t upper triangular, quasi-triangular for real x), or t alone."""
    a = _check("schur", x, square=True)
    if sort_eig_vals:
        raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
    batch = a.shape[:-2]
    ws = [(a.dtype, a.shape[:-1])] * (1 if _is_complex(x) else 2)
    results = [(a.dtype, a.shape), (a.dtype, a.shape)] + ws + [(np.int32, batch), (np.int32, batch)]
    outs = _call("gees", x, results, _config(mode="V" if compute_schur_vectors else "N", sort="N"))
    info = outs[-1]
    t = _not_ok_to_nan(info, outs[0])
    return (t, _not_ok_to_nan(info, outs[1])) if compute_schur_vectors else t


def hessenberg(a):
    """(a', taus): the upper Hessenberg matrix on and above a''s first subdiagonal, the Householder reflectors
    below it, their scalar factors taus[..., n-1] (LAPACK gehrd)."""
    av = _check("hessenberg", a, square=True)
    n = av.shape[-1]
    if n == 0:
        raise _error("hessenberg", f"needs a nonempty matrix, got shape {av.shape}")
    batch = av.shape[:-2]
    results = [(av.dtype, av.shape), (av.dtype, batch + (n - 1,)), (np.int32, batch)]
    h, taus, info = _call("gehrd", a, results, f"{{high = {n} : i32, low = 1 : i32}}")
    return _not_ok_to_nan(info, h), _not_ok_to_nan(info, taus)
