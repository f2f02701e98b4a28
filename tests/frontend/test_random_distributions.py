"""xlapy.random's distributions against jax.random's draws (JAX 0.10.2, CPU, threefry), stored with their case
table in random_data/jax_random.npz by tools/gen_random_data.py, on both backends.

Both sides draw the same threefry bits and run the same algorithm, so integer-valued samplers (rademacher,
geometric, poisson, binomial, categorical, choice) must match exactly; real-valued ones match to the few ulp
the backend's log/exp/tan/pow differ by (amplified a little by the gamma samplers' arithmetic)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import random

DATA = np.load(Path(__file__).parent / "random_data" / "jax_random.npz")
CASES = {c["name"]: c for c in json.loads(str(DATA["__cases__"]))}

JAX_NAMES = ["PRNGKey", "ball", "bernoulli", "beta", "binomial", "bits", "categorical", "cauchy", "chisquare",
             "choice", "clone", "dirichlet", "double_sided_maxwell", "exponential", "f", "fold_in", "gamma",
             "generalized_normal", "geometric", "gumbel", "key", "key_data", "key_dtype", "key_impl", "laplace",
             "loggamma", "logistic", "lognormal", "maxwell", "multinomial", "multivariate_normal", "normal",
             "orthogonal", "pareto", "permutation", "poisson", "rademacher", "randint", "rayleigh", "split", "t",
             "triangular", "truncated_normal", "uniform", "wald", "weibull_min", "wrap_key_data"]   # JAX 0.10.2


def _decode(v):
    if isinstance(v, dict) and "shape" in v:
        return tuple(v["shape"])
    if isinstance(v, dict) and "array" in v:
        return xnp.asarray(np.asarray(v["array"], np.float32))
    return v


def _draw(c):
    old = xlapy.config.enable_x64
    xlapy.config.update("jax_enable_x64", c["x64"])
    try:
        fn = getattr(random, c["fn"])
        args = [_decode(a) for a in c["args"]]
        kwargs = {k: _decode(v) for k, v in c["kwargs"].items()}
        return np.asarray(fn(random.PRNGKey(c["seed"]), *args, **kwargs))
    finally:
        xlapy.config.update("jax_enable_x64", old)


@pytest.mark.parametrize("name", list(CASES))
def test_matches_jax(name):
    c = CASES[name]
    got, want = _draw(c), DATA[name]
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "iub" or c["fn"] in ("poisson", "binomial", "multinomial", "geometric"):
        np.testing.assert_array_equal(got, want)
    else:
        rtol = 1e-12 if want.dtype == np.float64 else 2e-5
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def test_every_jax_name_exists():
    assert [n for n in JAX_NAMES if not hasattr(random, n)] == []


def test_under_jit_matches_eager():
    k = random.PRNGKey(3)
    f = xlapy.jit(lambda k: (random.gamma(k, 2.0, (4,)), random.poisson(k, 5.0, (4,)), random.cauchy(k, (3,))))
    for a, b in zip(f(k), (random.gamma(k, 2.0, (4,)), random.poisson(k, 5.0, (4,)), random.cauchy(k, (3,)))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_statistics():
    k = random.PRNGKey(0)
    g = np.asarray(random.gamma(k, 3.0, (4000,)))
    assert abs(g.mean() - 3.0) < 0.15 and abs(g.var() - 3.0) < 0.4
    p = np.asarray(random.poisson(k, 20.0, (4000,)))
    assert abs(p.mean() - 20.0) < 0.5
    b = np.asarray(random.binomial(k, 30.0, 0.5, (4000,)))
    assert abs(b.mean() - 15.0) < 0.3
    o = np.asarray(random.orthogonal(k, 4))
    np.testing.assert_allclose(o @ o.T, np.eye(4), atol=1e-5)


def test_keys_and_errors():
    k = random.PRNGKey(0)
    assert random.key_impl(k) == "threefry2x32"
    assert random.key_dtype() == np.uint32
    np.testing.assert_array_equal(random.clone(k), k)
    with pytest.raises(ValueError):
        random.gumbel(k, (2,), mode="bad")
    with pytest.raises(ValueError):
        random.choice(k, 3, (2,), p=xnp.asarray([0.5, 0.5]))
