"""Every lax function against numpy, traced under jit and run eagerly (one table, one harness)."""
import math

import numpy as np
import pytest

import xlapy
from xlapy import lax

rng = np.random.default_rng(0)
F = rng.standard_normal((3, 4)).astype(np.float32)
G = rng.standard_normal((3, 4)).astype(np.float32)
P = (np.abs(F) + 0.5).astype(np.float32)
I = rng.integers(-20, 20, (3, 4)).astype(np.int32)
J = rng.integers(1, 7, (3, 4)).astype(np.int32)
U = rng.integers(0, 2**31, (3, 4)).astype(np.uint32)
B = F > 0
erf = np.vectorize(math.erf, otypes=[np.float32])

# name, lax call, numpy reference, inputs
CASES = [
    ("add", lax.add, np.add, (F, G)), ("sub", lax.sub, np.subtract, (F, G)),
    ("mul", lax.mul, np.multiply, (F, G)), ("div", lax.div, np.divide, (F, P)),
    ("div_int", lax.div, lambda a, b: np.trunc(a / b).astype(np.int32), (I, J)),
    ("rem", lax.rem, np.fmod, (F, P)), ("rem_int", lax.rem, np.fmod, (I, J)),
    ("pow", lax.pow, np.power, (P, G)), ("max", lax.max, np.maximum, (F, G)),
    ("min", lax.min, np.minimum, (F, G)), ("atan2", lax.atan2, np.arctan2, (F, G)),
    ("neg", lax.neg, np.negative, (F,)), ("abs", lax.abs, np.abs, (F,)), ("sign", lax.sign, np.sign, (F,)),
    ("floor", lax.floor, np.floor, (F,)), ("ceil", lax.ceil, np.ceil, (F,)),
    ("round", lax.round, lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), (F * 2,)),
    ("round_even", lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), np.round, (F * 2,)),
    ("exp", lax.exp, np.exp, (F,)), ("expm1", lax.expm1, np.expm1, (F,)), ("log", lax.log, np.log, (P,)),
    ("log1p", lax.log1p, np.log1p, (P,)), ("logistic", lax.logistic, lambda x: 1 / (1 + np.exp(-x)), (F,)),
    ("tanh", lax.tanh, np.tanh, (F,)), ("sin", lax.sin, np.sin, (F,)), ("cos", lax.cos, np.cos, (F,)),
    ("tan", lax.tan, np.tan, (F,)), ("sqrt", lax.sqrt, np.sqrt, (P,)), ("rsqrt", lax.rsqrt, lambda x: 1 / np.sqrt(x), (P,)),
    ("cbrt", lax.cbrt, np.cbrt, (F,)), ("erf", lax.erf, erf, (F,)),
    ("is_finite", lax.is_finite, np.isfinite, (np.array([1.0, np.inf, np.nan, -np.inf], np.float32),)),
    ("and", lax.bitwise_and, np.bitwise_and, (I, J)), ("or", lax.bitwise_or, np.bitwise_or, (I, J)),
    ("xor", lax.bitwise_xor, np.bitwise_xor, (I, J)), ("not", lax.bitwise_not, np.invert, (I,)),
    ("not_bool", lax.bitwise_not, np.logical_not, (B,)),
    ("shift_left", lax.shift_left, np.left_shift, (I, J)),
    ("shift_right_arithmetic", lax.shift_right_arithmetic, np.right_shift, (I, J)),
    ("shift_right_logical", lax.shift_right_logical, np.right_shift, (U, J.astype(np.uint32))),
    ("population_count", lax.population_count, lambda x: np.array([bin(v).count("1") for v in x.ravel()],
                                                                  np.uint32).reshape(x.shape), (U,)),
    ("clz", lax.clz, lambda x: np.array([32 - int(v).bit_length() for v in x.ravel()], np.uint32).reshape(x.shape), (U,)),
    ("eq", lax.eq, np.equal, (I, J)), ("ne", lax.ne, np.not_equal, (I, J)), ("lt", lax.lt, np.less, (F, G)),
    ("le", lax.le, np.less_equal, (F, G)), ("gt", lax.gt, np.greater, (F, G)), ("ge", lax.ge, np.greater_equal, (F, G)),
    ("select", lax.select, np.where, (B, F, G)),
    ("clamp", lambda x: lax.clamp(-0.5, x, 0.5), lambda x: np.clip(x, -0.5, 0.5), (F,)),
    ("convert", lambda x: lax.convert_element_type(x, np.int32), lambda x: x.astype(np.int32), (F * 5,)),
    ("bitcast", lambda x: lax.bitcast_convert_type(x, np.int32), lambda x: x.view(np.int32), (F,)),
    ("bitcast_narrow", lambda x: lax.bitcast_convert_type(x, np.uint8),
     lambda x: x.view(np.uint8).reshape(3, 4, 4), (F,)),
    ("reduce_precision", lambda x: lax.reduce_precision(x, 8, 7),
     lambda x: x.astype(xlapy.hlo.primitive_type("bf16").dtype).astype(np.float32), (F,)),
    ("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
     lambda x: np.broadcast_to(x, (2, 3, 4)), (F,)),
    ("broadcast_in_dim_expand", lambda x: lax.broadcast_in_dim(x[:1], (3, 4), (0, 1)),
     lambda x: np.broadcast_to(x[:1], (3, 4)), (F,)),
    ("broadcast", lambda x: lax.broadcast(x, (2,)), lambda x: np.broadcast_to(x, (2, 3, 4)), (F,)),
    ("reshape", lambda x: lax.reshape(x, (4, 3)), lambda x: x.reshape(4, 3), (F,)),
    ("reshape_dims", lambda x: lax.reshape(x, (12,), (1, 0)), lambda x: x.T.reshape(12), (F,)),
    ("transpose", lambda x: lax.transpose(x, (1, 0)), np.transpose, (F,)),
    ("squeeze", lambda x: lax.squeeze(x[None], (0,)), lambda x: x, (F,)),
    ("expand_dims", lambda x: lax.expand_dims(x, (0, 3)), lambda x: x[None, :, :, None], (F,)),
    ("slice", lambda x: lax.slice(x, (1, 0), (3, 4), (1, 2)), lambda x: x[1:3, 0:4:2], (F,)),
    ("dynamic_slice", lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 2)), lambda x, i: x[1:3, 1:3], (F, np.int32(5))),
    ("dynamic_update_slice", lambda x, u: lax.dynamic_update_slice(x, u, (1, 2)),
     lambda x, u: np.concatenate([x[:1], np.concatenate([x[1:3, :2], u], 1)], 0), (F, G[:2, :2])),
    ("concatenate", lambda x, y: lax.concatenate([x, y], 1), lambda x, y: np.concatenate([x, y], 1), (F, G)),
    ("pad", lambda x: lax.pad(x, 0.0, [(1, 2, 1), (0, -1, 0)]),
     lambda x: np.pad(np.insert(x, [1, 2], 0, axis=0), ((1, 2), (0, 0)))[:, :3], (F,)),
    ("rev", lambda x: lax.rev(x, (0, 1)), lambda x: x[::-1, ::-1], (F,)),
    ("iota", lambda: lax.iota(np.int32, 5), lambda: np.arange(5, dtype=np.int32), ()),
    ("broadcasted_iota", lambda: lax.broadcasted_iota(np.float32, (2, 3), 1),
     lambda: np.broadcast_to(np.arange(3, dtype=np.float32), (2, 3)), ()),
    ("dot_general", lambda a, b: lax.dot_general(a, b, (((1,), (1,)), ((), ()))), lambda a, b: a @ b.T, (F, G)),
    ("dot_general_batch", lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
     lambda a, b: np.einsum("bij,bjk->bik", a, b), (F.reshape(2, 2, 3), G.reshape(2, 3, 2))),
    ("dot_preferred", lambda a, b: lax.dot(a, b, preferred_element_type=np.float32),
     lambda a, b: a.astype(np.float32) @ b.astype(np.float32), (I, J.T.copy())),
    ("reduce_sum", lambda x: lax.reduce_sum(x, (1,)), lambda x: x.sum(1), (F,)),
    ("reduce_max", lambda x: lax.reduce_max(x, (0,)), lambda x: x.max(0), (F,)),
    ("reduce_min", lambda x: lax.reduce_min(x, (0, 1)), lambda x: x.min(), (I,)),
    ("reduce_prod", lambda x: lax.reduce_prod(x, (1,)), lambda x: x.prod(1), (P,)),
    ("reduce_and", lambda x: lax.reduce_and(x, (1,)), lambda x: x.all(1), (B,)),
    ("reduce_or", lambda x: lax.reduce_or(x, (1,)), lambda x: x.any(1), (B,)),
    ("reduce_custom", lambda x: lax.reduce(x, -np.inf, lambda a, b: lax.max(a, b), (0,)),
     lambda x: x.max(0), (F,)),
    ("reduce_variadic", lambda x, y: lax.reduce((x, y), (0.0, 1.0), lambda a, b: (lax.add(a[0], b[0]),
                                                                                  lax.mul(a[1], b[1])), (1,)),
     lambda x, y: (x.sum(1), y.prod(1)), (F, P)),
    ("argmax", lambda x: lax.argmax(x, 1, np.int32), lambda x: x.argmax(1).astype(np.int32), (F,)),
    ("argmin", lambda x: lax.argmin(x, 0, np.int32), lambda x: x.argmin(0).astype(np.int32), (I,)),
    ("reduce_window", lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 2), "VALID"),
     lambda x: np.maximum.reduce([x[:-1, 0::2], x[:-1, 1::2], x[1:, 0::2], x[1:, 1::2]]), (F,)),
    ("reduce_window_same", lambda x: lax.reduce_window(x, 0.0, lax.add, (3, 1), (1, 1), "SAME"),
     lambda x: np.pad(x, ((1, 1), (0, 0)))[:-2] + x + np.pad(x, ((1, 1), (0, 0)))[2:], (F,)),
    ("cumsum", lambda x: lax.cumsum(x, 1), lambda x: np.cumsum(x, 1), (F,)),
    ("cumsum_rev", lambda x: lax.cumsum(x, 0, reverse=True), lambda x: np.cumsum(x[::-1], 0)[::-1], (F,)),
    ("cumprod", lambda x: lax.cumprod(x, 0), lambda x: np.cumprod(x, 0), (P,)),
    ("cummax", lambda x: lax.cummax(x, 1), lambda x: np.maximum.accumulate(x, 1), (F,)),
    ("cummin", lambda x: lax.cummin(x, 0), lambda x: np.minimum.accumulate(x, 0), (I,)),
    ("sort", lambda x: lax.sort(x), lambda x: np.sort(x, -1), (np.array([3.0, np.nan, -1.0, -0.0, 2.0], np.float32),)),
    ("sort_multi", lambda k, v: lax.sort((k, v), 0, num_keys=1),
     lambda k, v: (np.sort(k, 0, kind="stable"), np.take_along_axis(v, np.argsort(k, 0, kind="stable"), 0)), (I, F)),
    ("sort_two_keys", lambda a, b: lax.sort((a, b), 0, num_keys=2),
     lambda a, b: tuple(np.array(sorted(zip(a, b))).T.astype(np.int32)),
     (np.array([2, 1, 2, 1], np.int32), np.array([5, 7, 3, 6], np.int32))),
    ("top_k", lambda x: lax.top_k(x, 2), lambda x: (-np.sort(-x, 1)[:, :2], np.argsort(-x, 1, kind="stable")[:, :2].astype(np.int32)), (F,)),
    ("gather", lambda x, i: lax.gather(x, i, lax.GatherDimensionNumbers((1,), (0,), (0,)), (1, 4)),
     lambda x, i: x[i[:, 0]], (F, np.array([[2], [0], [2]], np.int32))),
    ("gather_fill", lambda x, i: lax.gather(x, i, lax.GatherDimensionNumbers((1,), (0,), (0,)), (1, 4), mode="fill",
                                            fill_value=-1.0),
     lambda x, i: np.where((i[:, :1] >= 0) & (i[:, :1] < 3), x[np.clip(i[:, 0], 0, 2)], -1.0), (F, np.array([[1], [5]], np.int32))),
    ("scatter", lambda x, i, u: lax.scatter(x, i, u, lax.ScatterDimensionNumbers((1,), (0,), (0,))),
     lambda x, i, u: _np_scatter(x, i, u, None), (F, np.array([[2], [0]], np.int32), G[:2])),
    ("scatter_add", lambda x, i, u: lax.scatter_add(x, i, u, lax.ScatterDimensionNumbers((1,), (0,), (0,))),
     lambda x, i, u: _np_scatter(x, i, u, np.add), (F, np.array([[2], [2]], np.int32), G[:2])),
    ("scatter_mul", lambda x, i, u: lax.scatter_mul(x, i, u, lax.ScatterDimensionNumbers((1,), (0,), (0,))),
     lambda x, i, u: _np_scatter(x, i, u, np.multiply), (F, np.array([[1], [2]], np.int32), G[:2])),
    ("scatter_max", lambda x, i, u: lax.scatter_max(x, i, u, lax.ScatterDimensionNumbers((1,), (0,), (0,))),
     lambda x, i, u: _np_scatter(x, i, u, np.maximum), (F, np.array([[1], [1]], np.int32), G[:2])),
    ("scatter_min", lambda x, i, u: lax.scatter_min(x, i, u, lax.ScatterDimensionNumbers((1,), (0,), (0,))),
     lambda x, i, u: _np_scatter(x, i, u, np.minimum), (F, np.array([[0], [1]], np.int32), G[:2])),
    ("stop_gradient", lax.stop_gradient, lambda x: x, (F,)),
    ("optimization_barrier", lambda x, y: lax.optimization_barrier((x, y)), lambda x, y: (x, y), (F, G)),
]


def _np_scatter(x, i, u, fn):
    out = x.copy()
    for row, upd in zip(i[:, 0], u):
        out[row] = upd if fn is None else fn(out[row], upd)
    return out


def _check(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            _check(g, w)
        return
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    else:
        np.testing.assert_array_equal(got, want.astype(got.dtype) if want.dtype != got.dtype else want)


@pytest.mark.parametrize("name,fn,ref,args", CASES, ids=[c[0] for c in CASES])
def test_lax_jit(name, fn, ref, args):
    _check(xlapy.jit(fn)(*args), ref(*args))


EAGER = {"add", "exp", "sort", "argmax", "cumsum", "reduce_custom", "top_k", "scatter_add", "gather", "dot_general",
         "reduce_variadic", "dynamic_slice", "pad"}


@pytest.mark.parametrize("name,fn,ref,args", [c for c in CASES if c[0] in EAGER],
                         ids=[c[0] for c in CASES if c[0] in EAGER])
def test_lax_eager(name, fn, ref, args):
    _check(fn(*[xlapy.Array(a) for a in args]), ref(*args))


def test_conv_general_dilated_nhwc_same():
    x = rng.standard_normal((1, 5, 5, 2)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
    f = xlapy.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
    got = np.asarray(f(x, w))
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros((1, 5, 5, 4), np.float32)
    for i in range(5):
        for j in range(5):
            want[0, i, j] = np.einsum("hwc,hwco->o", xp[0, i:i + 3, j:j + 3], w)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert "dim_labels=b01f_01io->b01f" in f.lower(x, w).as_text()
    assert "pad=1_1x1_1" in f.lower(x, w).as_text()


def test_conv_nchw_strided_grouped():
    x = rng.standard_normal((2, 4, 6, 6)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    out = np.asarray(xlapy.jit(lambda x, w: lax.conv_general_dilated(x, w, (2, 2), "VALID", feature_group_count=2))(x, w))
    assert out.shape == (2, 6, 2, 2)
    want = np.zeros_like(out)
    for g in range(2):
        for o in range(3):
            oc = g * 3 + o
            for i in range(2):
                for j in range(2):
                    patch = x[:, g * 2:(g + 1) * 2, 2 * i:2 * i + 3, 2 * j:2 * j + 3]
                    want[:, oc, i, j] = np.einsum("bchw,chw->b", patch, w[oc])
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def test_rng_bit_generator_matches_corpus_structure():
    key = np.array([1, 2, 3, 4], np.uint32)
    f = xlapy.jit(lambda k: lax.rng_bit_generator(k, (4, 5), algorithm="three_fry"))
    new_key, bits = f(key)
    assert np.asarray(new_key).shape == (4,) and np.asarray(bits).shape == (4, 5)
    assert np.asarray(bits).dtype == np.uint32
    text = f.lower(key).as_text()
    assert "rng-bit-generator" in text and "algorithm=rng_three_fry" in text and "bitcast-convert" in text


def test_weak_scalar_keeps_dtype():
    f16 = np.ones(3, np.float16)
    out = xlapy.jit(lambda x: lax.add(x, 1.0))(f16)
    assert np.asarray(out).dtype == np.float16


def test_lax_rejects_mixed_dtypes_and_shapes():
    with pytest.raises(xlapy.XlapyError, match="lax.add.*same dtypes"):
        xlapy.jit(lax.add)(F, I)
    with pytest.raises(xlapy.XlapyError, match=r"lax.add.*f32\[3,4\].*f32\[4\]"):
        xlapy.jit(lax.add)(F, G[0])
