"""Regenerates tests/frontend/transform_data/jax_transforms.npz: what JAX gives for jacfwd, jacrev, hessian,
linearize, linear_transpose, custom_jvp/custom_vjp gradients, checkpoint gradients and tree_util key paths, so
tests/frontend/test_transforms_api.py (and test_tree_util_full.py) compare xlapy against JAX without JAX installed.

Run with the environment that has real JAX (tools/setup_models_env.sh):

    .venv-models/bin/python tools/gen_transform_data.py

The functions here and in the tests are the same (FUNCTIONS below is mirrored by name in the tests); inputs are
float64 (x64 on).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "frontend" / "transform_data" / "jax_transforms.npz"

X = np.linspace(-1.0, 1.2, 6).reshape(2, 3)
Y = np.array([0.5, -1.5, 2.0])


def main() -> None:
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import tree_util

    def f_vec(x, y):          # (2,3), (3,) -> (2,)
        return jnp.tanh(x @ y) * jnp.sum(x ** 2, axis=1)

    def f_tree(p):             # {"w": (2,3), "b": (3,)} -> ((3,), scalar)
        h = jnp.sin(p["w"]).sum(0) + p["b"] ** 3
        return h, jnp.sum(h * p["b"])

    def f_scalar(x):
        return jnp.sum(jnp.exp(-x ** 2) * jnp.cos(3.0 * x))

    out = {}
    for name, jac in (("jacfwd", jax.jacfwd), ("jacrev", jax.jacrev)):
        jx, jy = jac(f_vec, argnums=(0, 1))(X, Y)
        out[f"{name}_vec_x"], out[f"{name}_vec_y"] = np.asarray(jx), np.asarray(jy)
        (hw, hb), (sw, sb) = [(d["w"], d["b"]) for d in jac(f_tree)({"w": X, "b": Y})]
        out[f"{name}_tree_hw"], out[f"{name}_tree_hb"] = np.asarray(hw), np.asarray(hb)
        out[f"{name}_tree_sw"], out[f"{name}_tree_sb"] = np.asarray(sw), np.asarray(sb)
    out["hessian_scalar"] = np.asarray(jax.hessian(f_scalar)(X))
    out["hessian_vec_y"] = np.asarray(jax.hessian(lambda y: f_vec(X, y).sum())(Y))
    y, f_jvp = jax.linearize(f_vec, X, Y)
    out["linearize_out"] = np.asarray(y)
    out["linearize_t"] = np.asarray(f_jvp(np.ones_like(X), Y))
    lt = jax.linear_transpose(lambda x: (2.0 * x[:, ::-1]).sum(0), X)
    out["linear_transpose"] = np.asarray(lt(Y)[0])

    @jax.custom_jvp
    def soft(x):
        return jnp.log1p(jnp.exp(x))

    @soft.defjvp
    def _(p, t):
        x, = p
        return soft(x), t[0] * jax.nn.sigmoid(x) * 2.0
    out["custom_jvp_grad"] = np.asarray(jax.grad(lambda x: soft(x).sum())(X))
    out["custom_jvp_hess"] = np.asarray(jax.hessian(lambda y: soft(y).sum())(Y))

    @jax.custom_vjp
    def clip(x):
        return x

    clip.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -0.5, 0.5),))
    out["custom_vjp_grad"] = np.asarray(jax.grad(lambda x: (clip(x) * Y * 3.0).sum())(X))
    out["checkpoint_grad"] = np.asarray(jax.grad(jax.checkpoint(f_scalar, policy=jax.checkpoint_policies.dots_saveable))(X))

    tree = {"a": [1, (2, 3)], "b": None, "c": {"d": 4}}
    paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(tree)[0]]
    out["keypaths"] = np.array(paths)
    out["keypaths_simple"] = np.array([tree_util.keystr(p, simple=True, separator="/")
                                       for p, _ in tree_util.tree_flatten_with_path(tree)[0]])
    out["treedef_str"] = np.array(str(tree_util.tree_structure(tree)))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez(OUT, **out)
    print(f"wrote {OUT} ({len(out)} arrays)")


if __name__ == "__main__":
    main()
