"""Regenerates tests/frontend/eig_grad_data/eig_grads.npz: JAX's derivatives of jnp.linalg.eigvals (the geev
custom-call's eigenvalue JVP, and the gradient of a real function of the eigenvalues) on real matrices with
real and complex-conjugate eigenvalues, for tests/frontend/test_linalg_eig_grads.py (which needs no JAX).

    .venv-models/bin/python tools/gen_eig_grad_data.py

Per case KEY: `KEY.a`, `KEY.t` (the tangent), `KEY.jvp`, `KEY.grad`; "__keys__" lists the cases.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "frontend" / "eig_grad_data" / "eig_grads.npz"
rs = np.random.RandomState(11)
CASES = {"f32": rs.randn(4, 4).astype(np.float32), "batch_f32": rs.randn(2, 3, 3).astype(np.float32),
         "f64": rs.randn(5, 5)}


def loss(jnp, x):
    """A real function of the eigenvalues that sees real and imaginary parts (order-independent)."""
    w = jnp.linalg.eigvals(x)
    return jnp.sum(jnp.real(w) ** 3 + jnp.imag(w) ** 2 * jnp.real(w))


def main():
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    arrays = {}
    for key, a in CASES.items():
        t = rs.randn(*a.shape).astype(a.dtype)
        arrays[f"{key}.a"], arrays[f"{key}.t"] = a, t
        arrays[f"{key}.w"], arrays[f"{key}.jvp"] = (np.asarray(v) for v in jax.jvp(jnp.linalg.eigvals, (a,), (t,)))
        arrays[f"{key}.grad"] = np.asarray(jax.grad(lambda x: loss(jnp, x))(a))
    arrays["__keys__"] = np.asarray(list(CASES))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez(OUT, **arrays)
    print(f"wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
