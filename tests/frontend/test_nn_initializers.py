"""xlapy.nn.initializers against jax.nn.initializers' outputs (JAX 0.10.2, CPU), stored with their case table
in initializers_data/jax_initializers.npz by tools/gen_initializer_data.py, so JAX is not needed here.

Cases marked exact (zeros, ones, constant, every real uniform initializer) must equal JAX bit for bit; the
normal and truncated-normal ones go through xlapy.random.normal's erf_inv, a few ulp from XLA:CPU's, so they
are compared to a tight tolerance and their distributions are checked by statistics on large samples."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import xlapy
import xlapy.nn.initializers as init_mod
from xlapy import random
from xlapy.nn import initializers

DATA = np.load(Path(__file__).parent / "initializers_data" / "jax_initializers.npz")
CASES = {c["name"]: c for c in json.loads(str(DATA["__cases__"]))}

JAX_NAMES = ["Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform", "he_normal",
             "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal", "ones",
             "orthogonal", "truncated_normal", "uniform", "variance_scaling", "xavier_normal", "xavier_uniform",
             "zeros"]                                  # dir(jax.nn.initializers), JAX 0.10.2
MISSING: list[str] = []          # every jax.nn.initializers name is here (orthogonal ones since QR exists)


def _make(c):
    fn = getattr(initializers, c["init"])
    return fn(*c["args"], **c["kwargs"]) if c["factory"] else fn


def _call(c, init=None, key=None):
    init = init or _make(c)
    key = random.PRNGKey(c["seed"]) if key is None else key
    shape = tuple(c["shape"])
    return init(key, shape) if c["dtype"] is None else init(key, shape, np.dtype(c["dtype"]))


@pytest.mark.parametrize("name", list(CASES))
def test_matches_jax(name):
    c = CASES[name]
    got, want = np.asarray(_call(c)), DATA[name]
    assert got.dtype == want.dtype and got.shape == want.shape
    if c["exact"]:
        np.testing.assert_array_equal(got, want)
    else:
        tol = 2e-3 if want.dtype == np.float16 else 2e-6
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max())))


@pytest.mark.parametrize("name", ["uniform_scale", "vs_fan_in_uniform", "glorot_uniform_conv", "he_normal_dense",
                                  "constant"])
def test_under_jit(name):
    c = CASES[name]
    init = _make(c)
    got = xlapy.jit(lambda k: _call(c, init, k))(random.PRNGKey(c["seed"]))
    want = DATA[name]
    if c["exact"]:
        np.testing.assert_array_equal(np.asarray(got), want)
    else:
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=2e-6)


def test_public_names():
    present = sorted(n for n in JAX_NAMES if n not in MISSING)
    assert sorted(initializers.__all__) == present
    assert all(hasattr(initializers, n) for n in present)
    assert init_mod is initializers is xlapy.nn.initializers
    assert initializers.xavier_uniform is initializers.glorot_uniform
    assert initializers.kaiming_normal is initializers.he_normal


@pytest.mark.parametrize("name", MISSING)
def test_missing_ones_say_why(name):
    assert not hasattr(initializers, name)
    with pytest.raises(AttributeError, match="QR decomposition"):
        getattr(initializers, name)


def test_dtype_spellings():
    import xlapy.numpy as xnp
    assert np.asarray(initializers.ones(None, (2,), xnp.float16)).dtype == np.float16
    assert np.asarray(initializers.constant(1, dtype="bfloat16")(None, (2,))).dtype == xnp.bfloat16.dtype
    assert np.asarray(initializers.normal()(KEY, 3)).shape == (3,)          # an int shape, as JAX allows


def test_default_dtype_follows_x64(x64):
    assert np.asarray(initializers.zeros(None, (2,))).dtype == np.float64
    assert np.asarray(initializers.glorot_uniform()(random.PRNGKey(0), (3, 4))).dtype == np.float64


# -- statistics where bit-exactness cannot hold ---------------------------------------------------------------
KEY = random.PRNGKey(1234)


def test_normal_statistics():
    x = np.asarray(initializers.normal(0.5)(KEY, (200, 200)), np.float64)
    assert abs(x.mean()) < 0.01 and abs(x.std() - 0.5) < 0.01


def test_truncated_normal_statistics_and_bounds():
    x = np.asarray(initializers.truncated_normal(2.0, lower=-1.0, upper=3.0)(KEY, (200, 200)), np.float64)
    assert x.min() > -2.0 and x.max() < 6.0
    # mean of a standard normal truncated to (-1, 3), times 2
    from math import erf, exp, pi, sqrt
    phi = lambda t: exp(-t * t / 2) / sqrt(2 * pi)
    cdf = lambda t: 0.5 * (1 + erf(t / sqrt(2)))
    mean = (phi(-1) - phi(3)) / (cdf(3) - cdf(-1))
    assert abs(x.mean() - 2 * mean) < 0.02


@pytest.mark.parametrize("distribution", ["truncated_normal", "normal", "uniform"])
@pytest.mark.parametrize("mode,scale", [("fan_in", 2.0), ("fan_out", 1.0), ("fan_avg", 1.0), ("fan_geo_avg", 0.5)])
def test_variance_scaling_variance(distribution, mode, scale):
    shape = (3, 3, 40, 60)                    # receptive field 9: fan_in 360, fan_out 540
    fan_in, fan_out = 9 * 40, 9 * 60
    n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
         "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
    x = np.asarray(initializers.variance_scaling(scale, mode, distribution)(KEY, shape), np.float64)
    assert abs(x.mean()) < 0.01 * np.sqrt(scale / n) * 10
    assert abs(x.var() / (scale / n) - 1) < 0.05
    if distribution == "uniform":
        assert np.abs(x).max() <= np.sqrt(3 * scale / n) * (1 + 1e-6)
    if distribution == "truncated_normal":
        assert np.abs(x).max() <= 2 * np.sqrt(scale / n) / .87962566103423978 * (1 + 1e-6)


@pytest.mark.parametrize("distribution", ["truncated_normal", "normal", "uniform"])
def test_complex_variance_scaling(distribution):
    x = np.asarray(initializers.variance_scaling(1.0, "fan_in", distribution)(KEY, (200, 300), np.complex64))
    assert x.dtype == np.complex64
    assert abs(np.mean(np.abs(x) ** 2) * 200 - 1) < 0.05


# -- errors ---------------------------------------------------------------------------------------------------
ERRORS = [
    ("1-D with the default in_axis", lambda: initializers.glorot_uniform()(KEY, (5,)),
     "Can't compute input and output sizes of a 1-dimensional"),
    ("bad mode", lambda: initializers.variance_scaling(1.0, "fan_mid", "normal")(KEY, (2, 3)),
     "invalid mode for variance scaling initializer: fan_mid"),
    ("bad distribution", lambda: initializers.variance_scaling(1.0, "fan_in", "cauchy")(KEY, (2, 3)),
     "invalid distribution for variance scaling initializer: cauchy"),
    ("uniform of ints", lambda: initializers.uniform()(KEY, (2, 2), np.int32),
     "dtype argument to `uniform` must be a float dtype, got int32"),
    ("axes outside the shape", lambda: initializers.lecun_normal(in_axis=3)(KEY, (2, 3)), "do not fit"),
]


@pytest.mark.parametrize("name,call,match", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, call, match):
    with pytest.raises(ValueError, match=match) as info:
        call()
    assert isinstance(info.value, xlapy.XlapyError)
