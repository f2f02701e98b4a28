"""Regenerates tests/frontend/complex_grad_data/complex_decomp_grads.npz: JAX's derivatives (jvp and grad) of real
functions of complex QR factors (Q and R, square and tall, reduced) and complex singular vectors (U and V^H,
square, tall and wide), for tests/frontend/test_linalg_complex_decomp_grads.py (which needs no JAX).

The singular-vector functions read only phase-invariant quantities (|U|, |V^H|, U diag(s) V^H, projectors
U_k U_k^H): singular vectors are defined up to a phase per pair, which two LAPACKs may choose differently.
QR is compared as it is: both libraries call LAPACK's geqrf, whose R has a real diagonal of the same signs.
The functions are FUNCTIONS below, written once for both libraries (`np_` = jax.numpy or xlapy.numpy).

    .venv-models/bin/python tools/gen_complex_decomp_grad_data.py

Arrays: per shape key K, `K.x`, `K.y` (the matrix is x + i y); per function NAME: `NAME.value`, `NAME.jvp`
(along (y, x)), `NAME.g0`, `NAME.g1` (the gradients in x and y).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "frontend" / "complex_grad_data" / "complex_decomp_grads.npz"

SHAPES = {"sq": (3, 3), "tall": (4, 2), "wide": (2, 4)}


def functions(np_, lax):
    def z(x, y):
        return lax.complex(x, y)

    def weights(shape, k):
        return np_.cos(np_.arange(shape[0] * shape[1], dtype=np_.float64).reshape(shape) * 0.7 + k)

    def qr_q(x, y):
        q, r = np_.linalg.qr(z(x, y))
        return np_.sum(np_.real(q) * weights(q.shape, 0)) + np_.sum(np_.imag(q) ** 2 * weights(q.shape, 1))

    def qr_r(x, y):
        q, r = np_.linalg.qr(z(x, y))
        return np_.sum(np_.real(r) * weights(r.shape, 2)) + np_.sum(np_.imag(r) * weights(r.shape, 3))

    def qr_both(x, y):
        q, r = np_.linalg.qr(z(x, y))
        return np_.sum(np_.abs(q @ r - z(x, y) * 0.5) ** 2) + np_.sum(np_.imag(q[:, :1]) * np_.real(r[:1, :1]))

    def svd_abs(x, y):
        u, s, vh = np_.linalg.svd(z(x, y), full_matrices=False)
        return np_.sum(np_.abs(u) ** 3 * weights(u.shape, 0)) + np_.sum(np_.abs(vh) ** 3 * weights(vh.shape, 1))

    def svd_proj(x, y):
        u, s, vh = np_.linalg.svd(z(x, y), full_matrices=False)
        p = u[:, :1] @ np_.conj(u[:, :1]).T
        w = np_.conj(vh[:1]).T @ vh[:1]
        return np_.sum(np_.real(p) * weights(p.shape, 2)) + np_.sum(np_.imag(w) * weights(w.shape, 3))

    def svd_rebuild(x, y):
        u, s, vh = np_.linalg.svd(z(x, y), full_matrices=False)
        a = (u * s[None, :]) @ vh
        return np_.sum(np_.real(a) * np_.imag(a)) + np_.sum(s ** 2)

    return {"qr_q": qr_q, "qr_r": qr_r, "qr_both": qr_both, "svd_abs": svd_abs, "svd_proj": svd_proj,
            "svd_rebuild": svd_rebuild}


# (function, shape keys): QR needs m >= n (as in JAX)
CASES = [("qr_q", ("sq", "tall")), ("qr_r", ("sq", "tall")), ("qr_both", ("sq", "tall")),
         ("svd_abs", ("sq", "tall", "wide")), ("svd_proj", ("sq", "tall", "wide")),
         ("svd_rebuild", ("sq", "tall", "wide"))]


def inputs(key: str):
    rs = np.random.RandomState(sum(map(ord, key)))
    shape = SHAPES[key]
    return rs.randn(*shape), rs.randn(*shape)


def main():
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    fns = functions(jnp, jax.lax)
    arrays = {}
    for key in SHAPES:
        arrays[f"{key}.x"], arrays[f"{key}.y"] = inputs(key)
    for name, keys in CASES:
        for key in keys:
            x, y = inputs(key)
            value, tangent = jax.jvp(fns[name], (x, y), (y, x))
            tag = f"{name}.{key}"
            arrays[f"{tag}.value"], arrays[f"{tag}.jvp"] = np.asarray(value), np.asarray(tangent)
            g0, g1 = jax.grad(fns[name], argnums=(0, 1))(x, y)
            arrays[f"{tag}.g0"], arrays[f"{tag}.g1"] = np.asarray(g0), np.asarray(g1)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez(OUT, **arrays)
    print(f"wrote {OUT} ({len(arrays)} arrays)")


if __name__ == "__main__":
    main()
