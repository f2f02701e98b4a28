"""xlapy.nn against jax.nn: JAX-produced literals (large, -inf and NaN-producing inputs included) and numpy
formulas, eager and under jit. The literals were produced once by jax 0.10.2 on CPU."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy import nn

inf, nan = np.inf, np.nan
X = np.array([-100., -20., -5., -1.5, -0.5, -1e-3, 0., 1e-3, 0.5, 1.5, 5., 20., 100., inf, -inf], np.float32)
M = np.array([[1, 2, 3, 4], [1000, 1001, 1002, -inf], [-inf, -inf, -inf, -inf], [-1e30, 0, 1e30, 5]], np.float32)
W = np.array([[True, False, True, True]])

REF = {
    'relu': ('float32', (15,), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0010000000474974513, 0.5, 1.5, 5.0, 20.0,
        100.0, inf, 0.0]),
    'relu6': ('float32', (15,), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0010000000474974513, 0.5, 1.5, 5.0, 6.0,
        6.0, 6.0, 0.0]),
    'sigmoid': ('float32', (15,), [0.0, 2.06115369216775e-09, 0.006692850962281227, 0.18242552876472473,
        0.3775406777858734, 0.499750018119812, 0.5, 0.500249981880188, 0.622459352016449, 0.8175744414329529,
        0.9933071732521057, 1.0, 1.0, 1.0, 0.0]),
    'softplus': ('float32', (15,), [0.0, 2.06115369216775e-09, 0.006715348456054926, 0.20141328871250153,
        0.4740769863128662, 0.6926473379135132, 0.6931471824645996, 0.6936473250389099, 0.9740769863128662,
        1.7014132738113403, 5.006715297698975, 20.0, 100.0, inf, 0.0]),
    'silu': ('float32', (15,), [-0.0, -4.1223074731533416e-08, -0.033464252948760986, -0.2736383080482483,
        -0.1887703388929367, -0.0004997500218451023, 0.0, 0.000500250025652349, 0.3112296760082245,
        1.226361632347107, 4.966536045074463, 20.0, 100.0, inf, nan]),
    'log_sigmoid': ('float32', (15,), [-100.0, -20.0, -5.006715297698975, -1.7014132738113403,
        -0.9740769863128662, -0.6936473250389099, -0.6931471824645996, -0.6926473379135132, -0.4740769863128662,
        -0.20141328871250153, -0.006715348456054926, -2.06115369216775e-09, -0.0, -0.0, -inf]),
    'elu': ('float32', (15,), [-1.0, -1.0, -0.9932620525360107, -0.7768698334693909, -0.39346933364868164,
        -0.0009995000436902046, 0.0, 0.0010000000474974513, 0.5, 1.5, 5.0, 20.0, 100.0, inf, -1.0]),
    'leaky_relu': ('float32', (15,), [-1.0, -0.19999998807907104, -0.04999999701976776, -0.014999999664723873,
        -0.004999999888241291, -1.0000000656873453e-05, 0.0, 0.0010000000474974513, 0.5, 1.5, 5.0, 20.0, 100.0,
        inf, -inf]),
    'celu': ('float32', (15,), [-1.0, -1.0, -0.9932620525360107, -0.7768698334693909, -0.39346933364868164,
        -0.0009995000436902046, 0.0, 0.0010000000474974513, 0.5, 1.5, 5.0, 20.0, 100.0, inf, -1.0]),
    'selu': ('float32', (15,), [-1.7580993175506592, -1.7580993175506592, -1.7462533712387085,
        -1.3658143281936646, -0.6917582154273987, -0.0017572203651070595, 0.0, 0.0010507010156288743,
        0.5253505110740662, 1.5760514736175537, 5.253505229949951, 21.014020919799805, 105.07009887695312, inf,
        -1.7580993175506592]),
    'hard_tanh': ('float32', (15,), [-1.0, -1.0, -1.0, -1.0, -0.5, -0.0010000000474974513, 0.0,
        0.0010000000474974513, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0]),
    'hard_sigmoid': ('float32', (15,), [0.0, 0.0, 0.0, 0.25, 0.4166666865348816, 0.499833345413208, 0.5,
        0.500166654586792, 0.5833333730697632, 0.75, 1.0, 1.0, 1.0, 1.0, 0.0]),
    'hard_silu': ('float32', (15,), [-0.0, -0.0, -0.0, -0.375, -0.2083333432674408, -0.0004998333752155304, 0.0,
        0.0005001666722819209, 0.2916666865348816, 1.125, 5.0, 20.0, 100.0, inf, nan]),
    'mish': ('float32', (15,), [-0.0, -4.1223074731533416e-08, -0.03357623517513275, -0.29809969663619995,
        -0.22074377536773682, -0.0005996800609864295, 0.0, 0.0006003199960105121, 0.37524524331092834,
        1.4033782482147217, 4.999552249908447, 20.0, 100.0, inf, nan]),
    'soft_sign': ('float32', (15,), [-0.9900990128517151, -0.9523809552192688, -0.8333333134651184,
        -0.6000000238418579, -0.3333333432674408, -0.0009990009712055326, 0.0, 0.0009990009712055326,
        0.3333333432674408, 0.6000000238418579, 0.8333333134651184, 0.9523809552192688, 0.9900990128517151, nan,
        nan]),
    'gelu_tanh': ('float32', (15,), [-0.0, -0.0, -0.0, -0.10042843222618103, -0.1542859971523285,
        -0.0004996010684408247, 0.0, 0.0005003989790566266, 0.3457140028476715, 1.3995715379714966, 5.0, 20.0,
        100.0, inf, nan]),
    'gelu_erf': ('float32', (15,), [-0.0, -0.0, -1.4332579212350538e-06, -0.10021083056926727,
        -0.1542687714099884, -0.0004996010684408247, 0.0, 0.0005003989790566266, 0.3457312285900116,
        1.3997892141342163, 4.999998569488525, 20.0, 100.0, inf, nan]),
    'elu_a2': ('float32', (15,), [-2.0, -2.0, -1.9865241050720215, -1.5537396669387817, -0.7869386672973633,
        -0.0019990000873804092, 0.0, 0.0010000000474974513, 0.5, 1.5, 5.0, 20.0, 100.0, inf, -2.0]),
    'leaky_0.2': ('float32', (15,), [-20.0, -4.0, -1.0, -0.30000001192092896, -0.10000000149011612,
        -0.00020000000949949026, 0.0, 0.0010000000474974513, 0.5, 1.5, 5.0, 20.0, 100.0, inf, -inf]),
    'gelu_erf_f16': ('float16', (15,), [-0.0, -0.0, -1.4901161193847656e-06, -0.1002197265625, -0.154296875,
        -0.000499725341796875, 0.0, 0.0005006790161132812, 0.345703125, 1.3994140625, 5.0, 20.0, 100.0, inf,
        nan]),
    'relu_int': ('int32', (3,), [0, 0, 4]),
    'softmax': ('float32', (4, 4), [[0.032058604061603546, 0.08714432269334793, 0.23688283562660217,
        0.6439142823219299], [0.09003057330846786, 0.2447284758090973, 0.6652409434318542, 0.0], [nan, nan, nan,
        nan], [0.0, 0.0, 1.0, 0.0]]),
    'softmax_ax0': ('float32', (2, 4), [[1.0, 0.8807970285415649, 0.0, 0.2689414322376251], [0.0,
        0.11920291185379028, 1.0, 0.7310585975646973]]),
    'log_softmax': ('float32', (4, 4), [[-3.4401895999908447, -2.4401895999908447, -1.4401897192001343,
        -0.4401896893978119], [-2.4076058864593506, -1.4076058864593506, -0.40760594606399536, -inf], [nan, nan,
        nan, nan], [-2.0000000300949324e+30, -1.0000000150474662e+30, 0.0, -1.0000000150474662e+30]]),
    'log_softmax_ax0': ('float32', (2, 4), [[-999.0, -999.0, -999.0, 0.0], [0.0, 0.0, 0.0, -inf]]),
    'lse': ('float32', (4,), [4.440189838409424, 1002.4075927734375, -inf, 1.0000000150474662e+30]),
    'lse_keep': ('float32', (4, 1), [[4.440189838409424], [1002.4075927734375], [-inf], [1.0000000150474662e+30]]),
    'lse_all': ('float32', (), 1002.4075927734375),
    'lse_b': ('float32', (2,), [4.408392429351807, 1002.3156127929688]),
    'lse_neg_b': ('float32', (), nan),
    'lse_sign_r': ('float32', (), 0.5413248538970947),
    'lse_sign_s': ('float32', (), -1.0),
    'softmax_where': ('float32', (1, 4), [[0.03511902317404747, 0.0, 0.25949645042419434, 0.7053844928741455]]),
    'lse_where': ('float32', (2,), [4.34901237487793, 1002.126953125]),
    'one_hot': ('float32', (4, 3), [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),
    'one_hot_ax0': ('int32', (3, 2, 2), [[[1, 0], [0, 0]], [[0, 1], [0, 0]], [[0, 0], [1, 0]]]),
    'standardize': ('float32', (1, 4), [[-1.3411043882369995, -0.4470347762107849, 0.44703489542007446,
        1.3411043882369995]]),
    'standardize_ax0': ('float32', (3, 2), [[-1.2247425317764282, -1.2247425317764282], [0.0, 0.0],
        [1.2247425317764282, 1.2247425317764282]]),
    'glu': ('float32', (1, 2), [[0.9525741338729858, 1.9640275239944458]]),
}

CASES = {
    **{f: (lambda f: lambda: getattr(nn, f)(X))(f)
       for f in ["relu", "relu6", "sigmoid", "softplus", "silu", "log_sigmoid", "elu", "leaky_relu", "celu", "selu",
                 "hard_tanh", "hard_sigmoid", "hard_silu", "mish", "soft_sign"]},
    "gelu_tanh": lambda: nn.gelu(X, approximate=True),
    "gelu_erf": lambda: nn.gelu(X, approximate=False),
    "elu_a2": lambda: nn.elu(X, 2.0),
    "leaky_0.2": lambda: nn.leaky_relu(X, 0.2),
    "gelu_erf_f16": lambda: nn.gelu(X.astype(np.float16), approximate=False),
    "relu_int": lambda: nn.relu(np.array([-3, 0, 4], np.int32)),
    "softmax": lambda: nn.softmax(M),
    "softmax_ax0": lambda: nn.softmax(M[[0, 3]], axis=0),
    "log_softmax": lambda: nn.log_softmax(M),
    "log_softmax_ax0": lambda: nn.log_softmax(M[[0, 1]], axis=0),
    "lse": lambda: nn.logsumexp(M, axis=1),
    "lse_keep": lambda: nn.logsumexp(M, axis=-1, keepdims=True),
    "lse_all": lambda: nn.logsumexp(M[:2, :3]),
    "lse_b": lambda: nn.logsumexp(M[:2], axis=1, b=np.array([1., 2., 0.5, 1.], np.float32)),
    "lse_neg_b": lambda: nn.logsumexp(np.float32([0., 1.]), b=np.float32([1., -1.])),
    "lse_sign_r": lambda: nn.logsumexp(np.float32([0., 1.]), b=np.float32([1., -1.]), return_sign=True)[0],
    "lse_sign_s": lambda: nn.logsumexp(np.float32([0., 1.]), b=np.float32([1., -1.]), return_sign=True)[1],
    "softmax_where": lambda: nn.softmax(M[:1], where=W),
    "lse_where": lambda: nn.logsumexp(M[:2], axis=1, where=np.concatenate([W, W])),
    "one_hot": lambda: nn.one_hot(np.array([0, 2, -1, 3], np.int32), 3),
    "one_hot_ax0": lambda: nn.one_hot(np.array([[0, 1], [2, 5]], np.int32), 3, axis=0, dtype=np.int32),
    "standardize": lambda: nn.standardize(M[:1] / 10),
    "standardize_ax0": lambda: nn.standardize(np.arange(6.).reshape(3, 2).astype(np.float32), axis=0),
    "glu": lambda: nn.glu(M[:1, :]),
}


# XLA:CPU's f32 tanh rounds tanh(-8.45) to exactly -1 (so gelu(-5) is -0.0 there); the backend's tanh is
# correctly rounded (-0.99999988), leaving -3e-7: an absolute difference
ATOL = {"gelu_tanh": 1e-6}


def _check(name: str, actual) -> None:
    dt, shape, values = REF[name]
    expected = np.asarray(values, np.float64).astype(dt)
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype and actual.shape == tuple(shape), (name, actual.dtype, actual.shape)
    if expected.dtype.kind in "iub":
        np.testing.assert_array_equal(actual, expected, err_msg=name)
        return
    eps = float(np.finfo(expected.dtype).eps)
    # a few ulp: XLA:CPU and the xlapy backend use different exp/log/tanh approximations (and XLA:CPU fuses
    # multiply-adds); values below the smallest normal are compared absolutely (XLA:CPU flushes them to 0)
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=8 * eps,
                               atol=ATOL.get(name, float(np.finfo(expected.dtype).tiny)), equal_nan=True,
                               err_msg=name)
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected), err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_matches_jax(name):
    _check(name, CASES[name]())


JIT_CASES = {
    "gelu_erf": lambda x: nn.gelu(x, approximate=False),
    "gelu_tanh": nn.gelu,
    "softplus": nn.softplus,
    "log_sigmoid": nn.log_sigmoid,
    "elu": nn.elu,
    "leaky_relu": nn.leaky_relu,
    "relu6": nn.relu6,
}


@pytest.mark.parametrize("name", sorted(JIT_CASES))
def test_jit_elementwise_matches_jax(name):
    _check(name, xlapy.jit(JIT_CASES[name])(X))


def test_jit_softmax_family_matches_jax():
    _check("softmax", xlapy.jit(nn.softmax)(M))
    _check("log_softmax", xlapy.jit(nn.log_softmax)(M))
    _check("lse", xlapy.jit(lambda m: nn.logsumexp(m, axis=1))(M))
    _check("lse_keep", xlapy.jit(lambda m: nn.logsumexp(m, axis=-1, keepdims=True))(M))
    _check("one_hot", xlapy.jit(lambda i: nn.one_hot(i, 3))(np.array([0, 2, -1, 3], np.int32)))
    text = xlapy.jit(nn.log_softmax).lower(M).as_text()
    assert 'op_name="stop_gradient"' in text        # the max is stop_gradient'ed, as in JAX


# -- numpy formulas on random inputs (float64 reference) -------------------------------------------

_RNG = np.random.default_rng(0)
Y = (_RNG.standard_normal((6, 7)) * 4).astype(np.float32)
Y64 = Y.astype(np.float64)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


FORMULAS = {
    "relu": (nn.relu, lambda v: np.maximum(v, 0)),
    "relu6": (nn.relu6, lambda v: np.clip(v, 0, 6)),
    "sigmoid": (nn.sigmoid, _sigmoid),
    "softplus": (nn.softplus, lambda v: np.log1p(np.exp(v))),
    "silu": (nn.silu, lambda v: v * _sigmoid(v)),
    "swish": (nn.swish, lambda v: v * _sigmoid(v)),
    "log_sigmoid": (nn.log_sigmoid, lambda v: np.log(_sigmoid(v))),
    "elu": (nn.elu, lambda v: np.where(v > 0, v, np.expm1(v))),
    "leaky_relu": (nn.leaky_relu, lambda v: np.where(v >= 0, v, 0.01 * v)),
    "gelu_tanh": (nn.gelu, lambda v: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))),
    "gelu_erf": (lambda v: nn.gelu(v, approximate=False),
                 lambda v: 0.5 * v * (1 + np.vectorize(__import__("math").erf)(v / np.sqrt(2)))),
    "softmax": (nn.softmax, lambda v: np.exp(v - v.max(-1, keepdims=True)) / np.exp(v - v.max(-1, keepdims=True))
                .sum(-1, keepdims=True)),
    "log_softmax": (lambda v: nn.log_softmax(v, axis=0),
                    lambda v: v - v.max(0) - np.log(np.exp(v - v.max(0)).sum(0))),
    "logsumexp": (lambda v: nn.logsumexp(v, axis=(0, 1)), lambda v: np.log(np.exp(v).sum())),
    "standardize": (nn.standardize, lambda v: (v - v.mean(-1, keepdims=True)) / np.sqrt(v.var(-1, keepdims=True)
                                                                                          + 1e-5)),
}


@pytest.mark.parametrize("name", sorted(FORMULAS))
def test_matches_numpy_formula(name):
    fn, ref = FORMULAS[name]
    out = np.asarray(fn(Y))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref(Y64), rtol=2e-5, atol=2e-5, err_msg=name)


def test_logsumexp_is_stable_and_handles_infinities():
    big = np.array([1e4, 1e4 + 1], np.float32)
    np.testing.assert_allclose(float(nn.logsumexp(big)), 1e4 + 1 + np.log1p(np.exp(-1.0)), rtol=1e-6)
    assert float(nn.logsumexp(np.array([-inf, -inf], np.float32))) == -inf
    assert float(nn.logsumexp(np.array([inf, 0.], np.float32))) == inf
    np.testing.assert_allclose(np.asarray(nn.softmax(np.array([1e4, 1e4], np.float32))), [0.5, 0.5])


def test_one_hot_dtypes_and_errors():
    out = nn.one_hot(np.array([1, 0], np.int32), 2, dtype=np.bool_)
    assert np.asarray(out).dtype == np.bool_ and np.asarray(out).tolist() == [[False, True], [True, False]]
    assert np.asarray(nn.one_hot(np.int32(2), 4)).tolist() == [0., 0., 1., 0.]
    with pytest.raises(xlapy.XlapyError, match="out of bounds"):
        nn.one_hot(np.array([1], np.int32), 3, axis=3)


def test_integer_inputs_promote_like_jax():
    assert np.asarray(nn.sigmoid(np.array([0], np.int32).astype(np.float32))).dtype == np.float32
    assert np.asarray(nn.gelu(np.array([1, 2], np.int32))).dtype == np.float32
    assert np.asarray(nn.softmax(np.array([1, 2], np.int32))).dtype == np.float32
    assert np.asarray(nn.relu(np.array([-1, 2], np.int32))).dtype == np.int32
