"""Regenerates tests/frontend/complex_grad_data/complex_grads.npz: JAX's derivatives (jvp and grad) of real
functions of complex solves (getrf + triangular-solve), det, inv, Cholesky (factor and solve), singular
values (svdvals, the nuclear norm) and triangular solves in every op mode (transpose, adjoint, right side), for
tests/frontend/test_linalg_complex_grads.py (which needs no JAX). The
functions are FUNCTIONS below, written once for both libraries (`np_` = jax.numpy or xlapy.numpy, `lax`,
`sl` = scipy.linalg).

    .venv-models/bin/python tools/gen_complex_grad_data.py

Arrays: x, y (the matrix is x + i y + 3 I), bx, by (the right-hand side bx + i by); per function NAME:
`NAME.value`, `NAME.jvp` (along (y, x, by, bx)), `NAME.g0` ... `NAME.g3` (the gradient in each argument).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "frontend" / "complex_grad_data" / "complex_grads.npz"


def functions(np_, lax, sl):
    def mk(x, y):
        return lax.complex(x, y) + 3 * np_.eye(3)

    return {
        "solve": lambda x, y, bx, by: np_.sum(np_.abs(np_.linalg.solve(mk(x, y), lax.complex(bx, by))) ** 2),
        "inv": lambda x, y, bx, by: np_.sum(np_.real(np_.linalg.inv(mk(x, y))) * np_.imag(mk(x, y))),
        "det": lambda x, y, bx, by: np_.abs(np_.linalg.det(mk(x, y))),
        "tri_t": lambda x, y, bx, by: np_.sum(np_.abs(sl.solve_triangular(mk(x, y), lax.complex(bx, by), trans=1,
                                                                          lower=True)) ** 2),
        "tri_h": lambda x, y, bx, by: np_.sum(np_.real(sl.solve_triangular(mk(x, y), lax.complex(bx, by),
                                                                           trans=2)) ** 3),
        "cholesky": lambda x, y, bx, by: np_.sum(np_.abs(np_.linalg.cholesky(
            mk(x, y) @ np_.conj(mk(x, y)).T)) ** 2 * bx[:, :1]),
        "cho_solve": lambda x, y, bx, by: np_.sum(np_.imag(sl.cho_solve(sl.cho_factor(
            mk(x, y) @ np_.conj(mk(x, y)).T, lower=True), lax.complex(bx, by))) ** 2),
        "svdvals": lambda x, y, bx, by: np_.sum(np_.linalg.svd(lax.complex(x, y), compute_uv=False) ** 3),
        "norm_nuc": lambda x, y, bx, by: np_.linalg.norm(lax.complex(bx, by), "nuc"),
        "tri_r": lambda x, y, bx, by: np_.sum(np_.imag(lax.linalg.triangular_solve(
            mk(x, y), lax.complex(bx, by).T, left_side=False, transpose_a=True, conjugate_a=True)) ** 2),
    }


def inputs():
    rs = np.random.RandomState(0)
    return rs.randn(3, 3), rs.randn(3, 3), rs.randn(3, 2), rs.randn(3, 2)


def main():
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
    jax.config.update("jax_enable_x64", True)
    args = inputs()
    arrays = dict(zip(("x", "y", "bx", "by"), args))
    tangents = (args[1], args[0], args[3], args[2])
    for name, f in functions(jnp, jax.lax, jsl).items():
        value, tangent = jax.jvp(f, args, tangents)
        arrays[f"{name}.value"], arrays[f"{name}.jvp"] = np.asarray(value), np.asarray(tangent)
        for k, g in enumerate(jax.grad(f, argnums=(0, 1, 2, 3))(*args)):
            arrays[f"{name}.g{k}"] = np.asarray(g)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez(OUT, **arrays)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
