"""Regenerates tests/frontend/eig_grad_data/eig_grads.npz: JAX's derivatives of jnp.linalg.eigvals (the geev
custom-call's eigenvalue JVP, and the gradient of a real function of the eigenvalues) on real matrices with
real and complex-conjugate eigenvalues, and of a real function of a complex Hermitian eigh (heevd: eigenvalues
and eigenvectors) and of a complex matrix's eigvals (geev on complex input), built from two real matrices;
and eig's eigenvector derivatives (enable_eigvec_derivs=True). For tests/frontend/test_linalg_eig_grads.py
(which needs no JAX).

    .venv-models/bin/python tools/gen_eig_grad_data.py

Per case KEY: `KEY.a`, `KEY.t` (the tangent), `KEY.jvp`, `KEY.grad`; "__keys__" lists the cases. Per
Hermitian case KEY: `KEY.x`, `KEY.y`, `KEY.tx`, `KEY.ty`, `KEY.value`, `KEY.jvp`, `KEY.gx`, `KEY.gy`
("__herm__" lists them; `ceig_*`: eigvals of x + i y; `ceigvec_*`: eig with enable_eigvec_derivs). Per
real eigenvector case KEY (`__eigvec__`): `KEY.a`, `KEY.t`, `KEY.value`, `KEY.jvp`, `KEY.grad` of eigvec_loss.
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


HERM = {"herm_f32": (rs.randn(3, 3).astype(np.float32), rs.randn(3, 3).astype(np.float32)),
        "herm_batch_f64": (rs.randn(2, 4, 4), rs.randn(2, 4, 4)),
        "ceig_f32": (rs.randn(3, 3).astype(np.float32), rs.randn(3, 3).astype(np.float32)),
        "ceigvec_f64": (rs.randn(3, 3), rs.randn(3, 3))}
EIGVEC = {"eigvec_f64": rs.randn(4, 4), "eigvec_f32": rs.randn(3, 3).astype(np.float32)}


def herm_loss(jnp, lax, x, y):
    """Eigenvalues and (phase-free) eigenvector moduli of the Hermitian matrix x + i y symmetrized."""
    w, v = jnp.linalg.eigh(lax.complex(x, y))
    return jnp.sum(w ** 2) + jnp.sum(jnp.abs(v[..., 0, :]) ** 2 * w)


def ceig_loss(jnp, lax, x, y):
    """The eigenvalues of the complex matrix x + i y (geev on complex input)."""
    w = jnp.linalg.eigvals(lax.complex(x, y))
    return jnp.sum(jnp.real(w) ** 3 + jnp.imag(w) ** 2 * jnp.real(w))


def eigvec_loss(jnp, lax, x, y=None):
    """Eigenvalues and both eigenvector sets of lax.linalg.eig(enable_eigvec_derivs=True), summed so that the
    order of the eigenvalues does not matter."""
    if y is not None:
        x = lax.complex(x, y)
    w, vl, vr = lax.linalg.eig(x, enable_eigvec_derivs=True)
    rows = jnp.arange(vr.shape[-2])[:, None]
    return (jnp.sum(jnp.real(vr) * rows) + jnp.sum(jnp.imag(vl) ** 2) + jnp.sum(jnp.imag(vr))
            + jnp.sum(jnp.real(w) ** 2))


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
    for key, (x, y) in HERM.items():
        loss_fn = {"ceig": ceig_loss, "ceigvec": eigvec_loss, "herm": herm_loss}[key.split("_")[0]]
        f = lambda x, y, g=loss_fn: g(jnp, jax.lax, x, y)          # noqa: E731
        tx, ty = rs.randn(*x.shape).astype(x.dtype), rs.randn(*x.shape).astype(x.dtype)
        value, tangent = jax.jvp(f, (x, y), (tx, ty))
        gx, gy = jax.grad(f, argnums=(0, 1))(x, y)
        arrays.update({f"{key}.x": x, f"{key}.y": y, f"{key}.tx": tx, f"{key}.ty": ty,
                       f"{key}.value": np.asarray(value), f"{key}.jvp": np.asarray(tangent),
                       f"{key}.gx": np.asarray(gx), f"{key}.gy": np.asarray(gy)})
    arrays["__herm__"] = np.asarray(list(HERM))
    for key, a in EIGVEC.items():
        t = rs.randn(*a.shape).astype(a.dtype)
        f = lambda x: eigvec_loss(jnp, jax.lax, x)          # noqa: E731
        value, tangent = jax.jvp(f, (a,), (t,))
        arrays.update({f"{key}.a": a, f"{key}.t": t, f"{key}.value": np.asarray(value),
                       f"{key}.jvp": np.asarray(tangent), f"{key}.grad": np.asarray(jax.grad(f)(a))})
    arrays["__eigvec__"] = np.asarray(list(EIGVEC))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez(OUT, **arrays)
    print(f"wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
