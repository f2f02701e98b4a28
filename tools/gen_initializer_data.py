"""Regenerates tests/frontend/initializers_data/jax_initializers.npz: jax.nn.initializers' outputs, so that
tests/frontend/test_nn_initializers.py compares xlapy.nn.initializers against JAX without JAX installed.

Run with the environment that has real JAX (tools/setup_models_env.sh):

    .venv-models/bin/python tools/gen_initializer_data.py

The .npz holds one array per case and, under "__cases__", the case table as JSON (initializer name, its
arguments, seed, shape, dtype, and whether xlapy must match bit for bit: xlapy.random.uniform is bit-exact,
normal and truncated_normal are within a few ulp, see xlapy/random.py), so the test rebuilds each call from
the file itself.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "frontend" / "initializers_data" / "jax_initializers.npz"

VS_FAMILY = ["glorot_uniform", "glorot_normal", "xavier_uniform", "xavier_normal", "lecun_uniform", "lecun_normal",
             "he_uniform", "he_normal", "kaiming_uniform", "kaiming_normal"]


def case(name, init, args=(), kwargs=None, seed=0, shape=(3, 4), dtype="float32", exact=True, factory=True):
    return {"name": name, "init": init, "args": list(args), "kwargs": kwargs or {}, "seed": seed,
            "shape": list(shape), "dtype": dtype, "exact": exact, "factory": factory}


CASES = [
    case("zeros", "zeros", factory=False),
    case("zeros_int32", "zeros", dtype="int32", factory=False),
    case("ones", "ones", shape=(5,), factory=False),
    case("ones_default_dtype", "ones", dtype=None, factory=False),
    case("constant", "constant", args=(2.5,)),
    case("constant_f16", "constant", args=(-1.25,), dtype="float16", shape=(2, 2, 3)),
    case("uniform", "uniform", seed=0, shape=(5, 7)),
    case("uniform_scale", "uniform", args=(2.0,), seed=1, shape=(3, 4, 5)),
    case("uniform_default_dtype", "uniform", seed=2, shape=(6,), dtype=None),
    case("normal", "normal", seed=3, shape=(10, 10), exact=False),
    case("normal_stddev", "normal", args=(0.5,), seed=4, shape=(2, 3, 4), exact=False),
    case("truncated_normal", "truncated_normal", seed=5, shape=(8, 8), exact=False),
    case("truncated_normal_bounds", "truncated_normal", args=(1.0,), kwargs={"lower": -1.0, "upper": 3.0},
         seed=6, shape=(50,), exact=False),
    case("vs_fan_in_uniform", "variance_scaling", args=(2.0, "fan_in", "uniform"), seed=7, shape=(3, 3, 4, 8)),
    case("vs_fan_out_normal", "variance_scaling", args=(1.0, "fan_out", "normal"), seed=8, shape=(6, 5),
         exact=False),
    case("vs_fan_avg_truncated", "variance_scaling", args=(0.5, "fan_avg", "truncated_normal"), seed=9,
         shape=(4, 9), exact=False),
    case("vs_fan_geo_avg_axes", "variance_scaling", args=(1.5, "fan_geo_avg", "uniform"),
         kwargs={"in_axis": [0, 1], "out_axis": 2, "batch_axis": 3}, seed=10, shape=(2, 3, 4, 5)),
    case("vs_1d_in_axis", "variance_scaling", args=(1.0, "fan_in", "uniform"), kwargs={"in_axis": 0,
         "out_axis": 0}, seed=11, shape=(7,)),
    *[case(f"{n}_dense", n, seed=20 + i, shape=(16, 32), exact="uniform" in n) for i, n in enumerate(VS_FAMILY)],
    *[case(f"{n}_conv", n, seed=40 + i, shape=(3, 3, 8, 16), exact="uniform" in n)
      for i, n in enumerate(VS_FAMILY)],
    case("glorot_uniform_out_axis0", "glorot_uniform", kwargs={"in_axis": -1, "out_axis": 0}, seed=60,
         shape=(12, 5)),
    case("glorot_uniform_complex", "glorot_uniform", seed=61, shape=(4, 6), dtype="complex64", exact=False),
    case("glorot_normal_complex", "glorot_normal", seed=62, shape=(4, 6), dtype="complex64", exact=False),
    case("vs_normal_complex", "variance_scaling", args=(1.0, "fan_in", "normal"), seed=63, shape=(4, 6),
         dtype="complex64", exact=False),
    case("he_uniform_f16", "he_uniform", seed=64, shape=(8, 4), dtype="float16", exact=False),
    case("orthogonal_wide", "orthogonal", seed=70, shape=(4, 6), exact=False),
    case("orthogonal_tall_scaled", "orthogonal", args=(2.0,), seed=71, shape=(7, 3), exact=False),
    case("orthogonal_column_axis0", "orthogonal", kwargs={"column_axis": 0}, seed=72, shape=(3, 4, 5), exact=False),
    case("delta_orthogonal_3d", "delta_orthogonal", seed=74, shape=(3, 4, 4), exact=False),
    case("delta_orthogonal_4d", "delta_orthogonal", args=(0.5,), seed=75, shape=(3, 3, 2, 5), exact=False),
]


def main() -> None:
    import jax
    import jax.numpy as jnp
    inits = jax.nn.initializers
    out = {}
    for c in CASES:
        fn = getattr(inits, c["init"])
        init = fn(*c["args"], **c["kwargs"]) if c["factory"] else fn
        key = jax.random.PRNGKey(c["seed"])
        dtype = None if c["dtype"] is None else jnp.dtype(c["dtype"])
        value = init(key, tuple(c["shape"])) if dtype is None else init(key, tuple(c["shape"]), dtype)
        out[c["name"]] = np.asarray(value)
    out["__cases__"] = np.array(json.dumps(CASES))
    out["__jax_version__"] = np.array(jax.__version__)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **out)
    print(f"wrote {len(CASES)} cases to {OUT} (jax {jax.__version__})")


if __name__ == "__main__":
    main()
