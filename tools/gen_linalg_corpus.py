"""Regenerate tests/corpus/linalg/: JAX-lowered linear-algebra modules (JAX's CPU LAPACK custom-calls:
lapack_*potrf/trsm/geqrf/orgqr/syevd/heevd/getrf/gesdd/gtsv/geev_ffi) with XLA:CPU's outputs.

Run with the models environment (real JAX): `.venv-models/bin/python tools/gen_linalg_corpus.py`.
Each program gives NAME.hlo (`jax.jit(f).lower(*args).as_text(dialect="hlo")`) and NAME.npz (arg*, out*, the
convention of tests/corpus/README.md). tests/corpus/test_linalg_corpus.py runs them on both backends; outputs
LAPACK may legitimately choose differently (signs of eigenvectors and singular vectors, Householder signs) are
checked there by invariants instead of values.
"""
from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
OUT = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "linalg"
rng = np.random.default_rng(13)


def rand(*shape, dtype=np.float32):
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def spd(*shape, dtype=np.float32):
    a = rand(*shape, dtype=dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def well(*shape, dtype=np.float32):
    return (rand(*shape, dtype=dtype) + 3 * np.eye(shape[-1])).astype(dtype)


L = jax.lax.linalg
PROGRAMS = {
    "cholesky_f32": (jnp.linalg.cholesky, [spd(4, 4)]),
    "cholesky_batched_f64": (jnp.linalg.cholesky, [spd(2, 3, 3, dtype=np.float64)]),
    "cholesky_c64": (jnp.linalg.cholesky, [spd(3, 3, dtype=np.complex64)]),
    "triangular_solve_f32": (lambda a, b: L.triangular_solve(a, b, left_side=True, lower=True), [well(4, 4),
                                                                                                rand(4, 2)]),
    "triangular_solve_right_t": (lambda a, b: L.triangular_solve(a, b, left_side=False, lower=False,
                                                                 transpose_a=True), [well(3, 3), rand(2, 3)]),
    "solve_f32": (jnp.linalg.solve, [well(4, 4), rand(4, 3)]),
    "inv_batched_f32": (jnp.linalg.inv, [well(2, 3, 3)]),
    "det_f32": (jnp.linalg.det, [rand(2, 4, 4)]),
    "slogdet_f64": (lambda a: tuple(jnp.linalg.slogdet(a)), [rand(3, 3, dtype=np.float64)]),
    "lu_f32": (L.lu, [rand(4, 3)]),
    "lu_c64": (L.lu, [rand(3, 3, dtype=np.complex64)]),
    "qr_f32": (jnp.linalg.qr, [rand(4, 3)]),
    "qr_complete_f64": (lambda a: jnp.linalg.qr(a, mode="complete"), [rand(2, 4, 3, dtype=np.float64)]),
    "qr_wide_c64": (jnp.linalg.qr, [rand(3, 5, dtype=np.complex64)]),
    "eigh_f32": (jnp.linalg.eigh, [spd(4, 4)]),
    "eigh_c64": (jnp.linalg.eigh, [spd(3, 3, dtype=np.complex64)]),
    "eigvalsh_batched_f64": (jnp.linalg.eigvalsh, [spd(2, 4, 4, dtype=np.float64)]),
    "svd_f32": (jnp.linalg.svd, [rand(4, 3)]),
    "svd_reduced_wide_f64": (lambda a: jnp.linalg.svd(a, full_matrices=False), [rand(3, 5, dtype=np.float64)]),
    "svdvals_c64": (jnp.linalg.svdvals, [rand(2, 3, 4, dtype=np.complex64)]),
    "pinv_f32": (jnp.linalg.pinv, [rand(4, 3)]),
    "lstsq_f32": (lambda a, b: jnp.linalg.lstsq(a, b)[0], [rand(5, 3), rand(5, 2)]),
    "tridiagonal_solve_f32": (L.tridiagonal_solve, [np.array([0, 1, 2, 1], np.float32), np.array([5, 6, 7, 5],
                                                                                                 np.float32),
                                                    np.array([1, 1, 2, 0], np.float32), rand(4, 2)]),
    "eig_f32": (jnp.linalg.eig, [rand(3, 3)]),
    "eigvals_c64": (jnp.linalg.eigvals, [rand(3, 3, dtype=np.complex64)]),
    "grad_det_f32": (jax.grad(jnp.linalg.det), [well(3, 3)]),
    "grad_eigh_f32": (jax.grad(lambda a: jnp.sum(jnp.linalg.eigh(a)[0] * jnp.arange(3.0, dtype=np.float32))),
                      [spd(3, 3)]),
    "grad_svdvals_f32": (jax.grad(lambda a: jnp.sum(jnp.linalg.svdvals(a))), [rand(4, 3)]),
    "grad_cholesky_f32": (jax.grad(lambda a: jnp.sum(jnp.linalg.cholesky(a))), [spd(3, 3)]),
    "expm_f32": (jax.scipy.linalg.expm, [rand(3, 3)]),
}


def flatten(x):
    if isinstance(x, (tuple, list)):
        return [leaf for v in x for leaf in flatten(v)]
    return [np.asarray(x)]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (fn, args) in PROGRAMS.items():
        jitted = jax.jit(fn)
        text = jitted.lower(*args).as_text(dialect="hlo")
        outs = flatten(jitted(*args))
        (OUT / f"{name}.hlo").write_text(text)
        data = {f"arg{i}": np.asarray(a) for i, a in enumerate(args)}
        data.update({f"out{i}": o for i, o in enumerate(outs)})
        np.savez(OUT / f"{name}.npz", **data)
        print(name, [o.shape for o in outs])


if __name__ == "__main__":
    main()
