"""Regenerates tests/frontend/random_data/jax_random.npz: jax.random's distributions on fixed keys and
parameters, so that tests/frontend/test_random_distributions.py compares xlapy.random against JAX without JAX
installed (keys, split, bits, uniform, normal, randint ... are pinned in test_random.py itself).

Run with the environment that has real JAX (tools/setup_models_env.sh):

    .venv-models/bin/python tools/gen_random_data.py

Each case is (name, function, seed, positional arguments after the key, keyword arguments, x64): the table is
stored as JSON under "__cases__" beside one array per case, so the test rebuilds each call from the file.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "frontend" / "random_data" / "jax_random.npz"


def S(*dims):
    """A shape argument."""
    return {"shape": list(dims)}


def A(values):
    """An array argument."""
    return {"array": values}


def decode(v, asarray):
    """A case's argument as the call takes it: shapes as tuples, arrays through `asarray`, the rest as is."""
    if isinstance(v, dict) and "shape" in v:
        return tuple(v["shape"])
    if isinstance(v, dict) and "array" in v:
        return asarray(v["array"])
    return v


def case(name, fn, *args, seed=0, x64=False, **kwargs):
    return {"name": name, "fn": fn, "args": list(args), "kwargs": kwargs, "seed": seed, "x64": x64}


CASES = [
    case("exponential", "exponential", S(6)),
    case("exponential_f64", "exponential", S(4), dtype="float64", x64=True),
    case("cauchy", "cauchy", S(6), seed=1),
    case("laplace", "laplace", S(6), seed=2),
    case("logistic", "logistic", S(6), seed=3),
    case("gumbel", "gumbel", S(6), seed=4),
    case("gumbel_high", "gumbel", S(5), seed=4, mode="high"),
    case("pareto", "pareto", 2.5, S(5), seed=5),
    case("rayleigh", "rayleigh", 1.5, S(5), seed=6),
    case("weibull_min", "weibull_min", 2.0, 1.5, S(5), seed=7),
    case("wald", "wald", 1.3, S(5), seed=8),
    case("geometric", "geometric", 0.3, S(6), seed=9),
    case("triangular", "triangular", 0.0, 0.3, 2.0, S(6), seed=10),
    case("lognormal", "lognormal", 0.5, S(5), seed=11),
    case("rademacher", "rademacher", S(8), seed=12),
    case("maxwell", "maxwell", S(5), seed=13),
    case("double_sided_maxwell", "double_sided_maxwell", 1.0, 2.0, S(4), seed=14),
    case("gamma", "gamma", 2.5, S(6), seed=15),
    case("gamma_small_a", "gamma", 0.3, S(6), seed=16),
    case("gamma_arr", "gamma", A([0.5, 1.0, 4.0, 10.0]), seed=17),
    case("gamma_f64", "gamma", 3.0, S(4), seed=15, dtype="float64", x64=True),
    case("loggamma", "loggamma", 0.2, S(5), seed=18),
    case("beta", "beta", 2.0, 3.0, S(5), seed=19),
    case("dirichlet", "dirichlet", A([1.0, 2.0, 3.0]), S(2), seed=20),
    case("chisquare", "chisquare", 3.0, S(5), seed=21),
    case("f", "f", 4.0, 6.0, S(5), seed=22),
    case("t", "t", 5.0, S(5), seed=23),
    case("generalized_normal", "generalized_normal", 1.5, S(5), seed=24),
    case("ball", "ball", 3, 2, S(2), seed=25),
    case("poisson_small", "poisson", 3.0, S(8), seed=26),
    case("poisson_large", "poisson", 40.0, S(6), seed=27),
    case("poisson_arr", "poisson", A([0.0, 0.5, 9.0, 15.0, 100.0]), seed=28),
    case("binomial_small", "binomial", 10.0, 0.3, S(6), seed=29),
    case("binomial_large", "binomial", 200.0, 0.4, S(6), seed=30),
    case("binomial_high_p", "binomial", 50.0, 0.9, S(5), seed=31),
    case("multinomial", "multinomial", 20.0, A([0.2, 0.3, 0.5]), seed=32),
    case("categorical", "categorical", A([[0.1, 1.0, -1.0, 0.5], [2.0, 0.0, 0.0, 0.0]]), seed=33),
    case("categorical_shape", "categorical", A([0.1, 1.0, -1.0, 0.5]), seed=34, shape=S(6)),
    case("categorical_norep", "categorical", A([0.1, 1.0, -1.0, 0.5, 0.2]), seed=35, shape=S(3), replace=False),
    case("choice_p", "choice", 5, S(6), seed=36, p=A([0.1, 0.2, 0.3, 0.25, 0.15])),
    case("choice_p_norep", "choice", 5, S(3), seed=37, replace=False, p=A([0.1, 0.2, 0.3, 0.25, 0.15])),
    case("orthogonal", "orthogonal", 3, seed=38),
    case("orthogonal_rect", "orthogonal", 2, S(2), seed=39, m=4),
    case("mvn_cholesky", "multivariate_normal", A([1.0, -1.0]), A([[2.0, 0.5], [0.5, 1.0]]), S(3), seed=40),
    case("mvn_eigh", "multivariate_normal", A([1.0, -1.0]), A([[2.0, 0.5], [0.5, 1.0]]), S(3), seed=40, method="eigh"),
]


def main():
    import jax
    import jax.numpy as jnp
    arrays = {}
    for c in CASES:
        jax.config.update("jax_enable_x64", c["x64"])
        fn = getattr(jax.random, c["fn"])
        args = [decode(a, jnp.asarray) for a in c["args"]]
        kwargs = {k: decode(v, jnp.asarray) for k, v in c["kwargs"].items()}
        out = fn(jax.random.PRNGKey(c["seed"]), *args, **kwargs)
        arrays[c["name"]] = np.asarray(out)
    jax.config.update("jax_enable_x64", False)
    arrays["__cases__"] = np.asarray(json.dumps(CASES))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
