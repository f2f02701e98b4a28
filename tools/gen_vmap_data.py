"""Regenerates tests/frontend/vmap_data/jax_vmap.npz: what jax.vmap gives for random functions mapped over keys
and for a few control-flow programs, so tests/frontend/test_vmap.py compares xlapy.vmap against JAX without JAX
installed.

Run with the environment that has real JAX (tools/setup_models_env.sh):

    .venv-models/bin/python tools/gen_vmap_data.py

Keys are raw uint32[2] threefry keys (jax.random.PRNGKey), split from seed 0. xlapy.random is bit-exact for
bits, uniform, split, fold_in and randint; normal is within a few ulp (see xlapy/random.py).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "frontend" / "vmap_data" / "jax_vmap.npz"


def main() -> None:
    import jax
    import jax.numpy as jnp
    from jax import lax, random

    keys = random.split(random.PRNGKey(0), 4)
    data = np.arange(4, dtype=np.uint32) * 7
    xs = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
    ns = np.array([0, 3, 1, 5], np.int32)
    out = {
        "keys": np.asarray(keys),
        "data": data,
        "xs": xs,
        "ns": ns,
        "bits": jax.vmap(lambda k: random.bits(k, (5,)))(keys),
        "uniform": jax.vmap(lambda k: random.uniform(k, (2, 3)))(keys),
        "normal": jax.vmap(lambda k: random.normal(k, (6,)))(keys),
        "split": jax.vmap(lambda k: random.split(k, 3))(keys),
        "fold_in": jax.vmap(random.fold_in)(keys, data),
        "randint": jax.vmap(lambda k: random.randint(k, (4,), 0, 10))(keys),
        "normal_out_axes_1": jax.vmap(lambda k: random.normal(k, (2,)), out_axes=1)(keys),
        # control flow mapped: a batched while predicate, a batched cond predicate
        "while": jax.vmap(lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5 + 1.0),
                                                   (0, jnp.float32(1.0)))[1])(ns),
        "cond": jax.vmap(lambda x: lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x))(xs),
        "grad_of_sum": jax.vmap(jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2)))(xs),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez(OUT, **{k: np.asarray(v) for k, v in out.items()})
    print(f"wrote {OUT} ({len(out)} arrays)")


if __name__ == "__main__":
    main()
