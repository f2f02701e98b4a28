"""The JAX-checked cases of test_numpy_more.py, test_lax_more.py and test_nn_more.py, shared with the generator
tools/gen_api_data.py (which runs them with real JAX and writes tests/frontend/api_data/jax_api_more.npz).

Each case is (name, fn, inputs, options): `fn(m, *inputs)` is written once against a namespace `m` with the
attributes `lax`, `numpy`, `nn`, `grad` (jax's in the generator, xlapy's in the tests) and returns an array or
a tuple/list of arrays. Options: "jit": False for functions with data-dependent shapes (run eagerly only),
"rtol"/"atol" tolerances, "exact" for bitwise comparison. Only numpy is imported here."""
from __future__ import annotations

import numpy as np

_rng = np.random.default_rng(1234)


def _f32(*shape, lo=None, hi=None):
    if lo is not None:
        return _rng.uniform(lo, hi, shape).astype(np.float32)
    return _rng.standard_normal(shape).astype(np.float32)


def _i32(*shape, lo=0, hi=10):
    return _rng.integers(lo, hi, shape).astype(np.int32)


X = _f32(3, 5)
UNIT = _f32(11, lo=-0.99, hi=0.99)
POS = _f32(9, lo=1.01, hi=20.0)
V7 = np.array([3, 1, 3, 2, 7, 1, 5], np.int32)
V4 = np.array([1, 5, 9, 2], np.int32)
NANX = X.copy()
NANX[0, 1] = np.nan
NANX[2, :] = np.nan


def _scatter_dn(m):
    return m.lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))


LAX_CASES = [
    ("lax_acos", lambda m, x: m.lax.acos(x), [UNIT], {}),
    ("lax_asin", lambda m, x: m.lax.asin(x), [UNIT], {}),
    ("lax_atan", lambda m, x: m.lax.atan(x), [X], {}),
    ("lax_acosh", lambda m, x: m.lax.acosh(x), [POS], {}),
    ("lax_asinh", lambda m, x: m.lax.asinh(x), [X], {}),
    ("lax_atanh", lambda m, x: m.lax.atanh(x), [UNIT], {}),
    ("lax_cosh", lambda m, x: m.lax.cosh(x), [X], {}),
    ("lax_sinh", lambda m, x: m.lax.sinh(x), [X], {}),
    ("lax_exp2", lambda m, x: m.lax.exp2(x), [X], {}),
    ("lax_square", lambda m, x: m.lax.square(x), [X], {}),
    ("lax_reciprocal", lambda m, x: m.lax.reciprocal(x), [POS], {}),
    ("lax_conj", lambda m, x: m.lax.conj(m.lax.complex(x, -x)), [X], {}),
    ("lax_nextafter", lambda m, x, y: m.lax.nextafter(x, y), [X, X[::-1].copy()], {"exact": True}),
    ("lax_nextafter_edges", lambda m, x, y: m.lax.nextafter(x, y),
     [np.array([1.0, -1.0, 0.0, 3.0, np.inf, np.nan, 2.0], np.float32),
      np.array([2.0, -2.0, -1.0, 3.0, 0.0, 1.0, np.nan], np.float32)], {"exact": True}),
    ("lax_mulhi_i32", lambda m, x, y: m.lax.mulhi(x, y),
     [np.array([7, -7, 2 ** 30, -2 ** 31, 123456789, -1], np.int32),
      np.array([3, 5, 8, 2 ** 31 - 1, 987654321, -1], np.int32)], {"exact": True}),
    ("lax_mulhi_u32", lambda m, x, y: m.lax.mulhi(x, y),
     [np.array([7, 2 ** 31, 4000000000, 1], np.uint32), np.array([3, 6, 4000000000, 5], np.uint32)],
     {"exact": True}),
    ("lax_select_n", lambda m, w, a, b, c: m.lax.select_n(w, a, b, c),
     [np.array([0, 2, 1, 1, 0], np.int32), X[0], X[1], X[2]], {"exact": True}),
    ("lax_select_n_bool", lambda m, w, a, b: m.lax.select_n(w, a, b),
     [np.array([True, False, True, False, True]), X[0], X[1]], {"exact": True}),
    ("lax_slice_in_dim", lambda m, x: m.lax.slice_in_dim(x, 1, -1, 2, axis=1), [X], {"exact": True}),
    ("lax_index_in_dim", lambda m, x: (m.lax.index_in_dim(x, -1, 1, keepdims=False), m.lax.index_in_dim(x, 1)),
     [X], {"exact": True}),
    ("lax_dynamic_slice_in_dim", lambda m, x, i: m.lax.dynamic_slice_in_dim(x, i, 3, axis=1),
     [X, np.int32(-2)], {"exact": True}),
    ("lax_dynamic_update_slice_in_dim", lambda m, x, u, i: m.lax.dynamic_update_slice_in_dim(x, u, i, axis=1),
     [X, np.ones((3, 2), np.float32), np.int32(4)], {"exact": True}),
    ("lax_cumlogsumexp", lambda m, x: (m.lax.cumlogsumexp(x, axis=1), m.lax.cumlogsumexp(x, axis=0, reverse=True)),
     [X], {"rtol": 1e-5}),
    ("lax_batch_matmul", lambda m, a, b: m.lax.batch_matmul(a, b), [_f32(2, 3, 4), _f32(2, 4, 5)], {"rtol": 1e-5}),
    ("lax_scatter_sub", lambda m, x, i, u: m.lax.scatter_sub(x, i, u, _scatter_dn(m)),
     [X, np.array([[0], [2], [0]], np.int32), _f32(3, 5)], {"rtol": 1e-6}),
    ("lax_scatter_apply", lambda m, x, i: m.lax.scatter_apply(x, i, lambda v: v * 2 + 1, _scatter_dn(m),
                                                              update_shape=(2, 5)),
     [X, np.array([[0], [2]], np.int32)], {"rtol": 1e-6}),
    ("lax_split", lambda m, x: tuple(m.lax.split(x, (1, 3, 1), axis=1)), [X], {"exact": True}),
    ("lax_stack_unstack", lambda m, x: (m.lax.stack([x, x * 2], axis=1),) + tuple(m.lax.unstack(x, axis=1)), [X],
     {"exact": True}),
    ("lax_tile", lambda m, x: m.lax.tile(x, (2, 3)), [X], {"exact": True}),
    ("lax_collapse", lambda m, x: (m.lax.collapse(x, 0, 2), m.lax.collapse(x, 1)), [_f32(2, 3, 4)], {"exact": True}),
    ("lax_broadcast_to_rank", lambda m, x: m.lax.broadcast_to_rank(x, 4), [X], {"exact": True}),
    ("lax_index_take", lambda m, x: m.lax.index_take(x, (np.array([0, -1, 2], np.int32),
                                                          np.array([1, 4, -5], np.int32)), (0, 1)), [X],
     {"exact": True}),
    ("lax_approx_max_k", lambda m, x: m.lax.approx_max_k(x, 2), [X], {"exact": True}),
    ("lax_approx_min_k", lambda m, x: m.lax.approx_min_k(x, 2, reduction_dimension=0), [X], {"exact": True}),
    ("lax_associative_scan", lambda m, x: (m.lax.associative_scan(m.lax.add, x, axis=1),
                                           m.lax.associative_scan(m.lax.max, x, reverse=True)), [X], {"rtol": 1e-5}),
    ("lax_conv", lambda m, a, w: m.lax.conv(a, w, (1, 2), "SAME"), [_f32(2, 3, 8, 9), _f32(4, 3, 3, 2)],
     {"rtol": 1e-4, "atol": 1e-5}),
    ("lax_conv_with_general_padding", lambda m, a, w: m.lax.conv_with_general_padding(
        a, w, (1, 1), [(1, 2), (0, 1)], (2, 1), (1, 2)), [_f32(1, 2, 5, 6), _f32(3, 2, 2, 3)],
     {"rtol": 1e-4, "atol": 1e-5}),
    ("lax_conv_patches", lambda m, a: m.lax.conv_general_dilated_patches(a, (2, 3), (1, 2), "VALID"),
     [_f32(2, 3, 5, 7)], {"rtol": 1e-6}),
    ("lax_conv_patches_nhwc", lambda m, a: m.lax.conv_general_dilated_patches(
        a, (3, 2), (2, 1), "SAME", dimension_numbers=("NHWC", "OIHW", "NHWC")), [_f32(2, 5, 6, 3)], {"rtol": 1e-6}),
    ("lax_conv_local", lambda m, a, w: m.lax.conv_general_dilated_local(a, w, (1, 1), "VALID", (2, 2)),
     [_f32(2, 3, 4, 5), _f32(4, 12, 3, 4)], {"rtol": 1e-4, "atol": 1e-5}),
    ("lax_ragged_dot", lambda m, a, b, g: m.lax.ragged_dot(a, b, g), [_f32(7, 4), _f32(3, 4, 5),
                                                                      np.array([2, 0, 5], np.int32)],
     {"rtol": 1e-5, "atol": 1e-6}),
    ("lax_shape_tuples", lambda m: (
        np.asarray(m.lax.conv_general_shape_tuple((2, 9, 10, 3), (3, 3, 3, 5), (2, 1), [(1, 1), (0, 2)],
                                                  ("NHWC", "HWIO", "NHWC"))),
        np.asarray(m.lax.conv_shape_tuple((2, 3, 9, 10), (5, 3, 3, 3), (2, 1), "SAME")),
        np.asarray(m.lax.conv_transpose_shape_tuple((2, 3, 9, 10), (5, 3, 3, 3), (2, 1), [(1, 1), (0, 2)],
                                                    ("NCHW", "OIHW", "NCHW"))),
        np.asarray(m.lax.reduce_window_shape_tuple((9, 10), (3, 2), (2, 2), [(1, 0), (2, 1)], (1, 2), (2, 1))),
        np.concatenate([np.asarray(p) for p in m.lax.conv_general_permutations(("NHWC", "HWIO", "NCHW"))])),
     [], {"jit": False, "exact": True}),
    ("lax_grads", lambda m, x: (m.grad(lambda v: m.lax.cumlogsumexp(v, reverse=True).sum())(x),
                                m.grad(lambda v: (m.lax.asinh(v) * m.lax.cosh(v) + m.lax.exp2(v)).sum())(x)),
     [_f32(7)], {"rtol": 1e-5}),
]


NUMPY_CASES = [
    ("np_union1d_size", lambda m, a, b: m.numpy.union1d(a, b, size=9), [V7, V4], {"exact": True}),
    ("np_intersect1d_size", lambda m, a, b: m.numpy.intersect1d(a, b, size=5), [V7, V4], {"exact": True}),
    ("np_intersect1d_idx", lambda m, a, b: m.numpy.intersect1d(a, b, return_indices=True, size=4, fill_value=-1),
     [V7, V4], {"exact": True}),
    ("np_setdiff1d_size", lambda m, a, b: m.numpy.setdiff1d(a, b, size=4), [V7, V4], {"exact": True}),
    ("np_setxor1d_size", lambda m, a, b: m.numpy.setxor1d(a, b, size=6), [V7, V4], {"exact": True}),
    ("np_setxor1d_fill", lambda m, a, b: m.numpy.setxor1d(a, b, size=6, fill_value=0), [V7, V4], {"exact": True}),
    ("np_isin", lambda m, a, b: (m.numpy.isin(a, b), m.numpy.isin(a, b, invert=True)), [V7, V4], {"exact": True}),
    ("np_unique_all_size", lambda m, a: tuple(m.numpy.unique_all(a, size=6)), [V7], {"exact": True}),
    ("np_unique_counts_size", lambda m, a: tuple(m.numpy.unique_counts(a, size=6, fill_value=0)), [V7],
     {"exact": True}),
    ("np_unique_inverse", lambda m, a: tuple(m.numpy.unique_inverse(a)), [V7.reshape(7, 1)],
     {"exact": True, "jit": False}),
    ("np_unique_index_size", lambda m, a: m.numpy.unique(a, return_index=True, return_inverse=True, size=6),
     [V7], {"exact": True}),
    ("np_histogram", lambda m, a: m.numpy.histogram(a, 5), [_f32(40)], {"rtol": 2e-6, "atol": 1e-6}),
    ("np_histogram_density", lambda m, a, w: m.numpy.histogram(a, np.array([-1.0, 0.0, 0.5, 2.0], np.float32),
                                                               weights=w, density=True),
     [_f32(40), _f32(40, lo=0, hi=1)], {"rtol": 1e-5}),
    ("np_histogram2d", lambda m, a, b: m.numpy.histogram2d(a, b, bins=(3, 4)), [_f32(30), _f32(30)],
     {"rtol": 2e-6, "atol": 1e-6}),
    ("np_histogramdd", lambda m, s: (lambda h: (h[0],) + tuple(h[1]))(m.numpy.histogramdd(s, bins=3,
                                                                                          range=[(-2, 2)] * 3)),
     [_f32(25, 3)], {"rtol": 1e-6}),
    ("np_bincount", lambda m, a, w: (m.numpy.bincount(a, length=12), m.numpy.bincount(a, w, length=8)),
     [_i32(20), _f32(20)], {"rtol": 1e-6}),
    ("np_digitize", lambda m, x, b: (m.numpy.digitize(x, b), m.numpy.digitize(x, b[::-1], right=True)),
     [_f32(12), np.array([-1.0, -0.2, 0.0, 0.7, 1.5], np.float32)], {"exact": True}),
    ("np_quantile", lambda m, x: tuple(m.numpy.quantile(x, np.array([0.1, 0.5, 0.93], np.float32), axis=1,
                                                        method=k) for k in
                                       ("linear", "lower", "higher", "midpoint", "nearest")), [X], {"rtol": 1e-6}),
    ("np_percentile_keepdims", lambda m, x: m.numpy.percentile(x, 35.0, axis=0, keepdims=True), [X],
     {"rtol": 1e-6}),
    ("np_nanquantile", lambda m, x: (m.numpy.nanquantile(x, 0.3, axis=1), m.numpy.nanmedian(x, axis=1),
                                     m.numpy.nanpercentile(x, np.array([20.0, 80.0], np.float32))), [NANX],
     {"rtol": 1e-6, "atol": 1e-7}),     # a lerp between neighbours near 1 may cancel to ~0.02: an ulp of them apart
    ("np_nanvar_std", lambda m, x: (m.numpy.nanvar(x, axis=1), m.numpy.nanstd(x, axis=0, ddof=1),
                                    m.numpy.nanvar(x)), [NANX], {"rtol": 1e-5}),
    ("np_nanargmax", lambda m, x: (m.numpy.nanargmax(x, axis=1), m.numpy.nanargmin(x, axis=1),
                                   m.numpy.nanargmax(x)), [NANX], {"exact": True}),
    ("np_nancum", lambda m, x: (m.numpy.nancumsum(x, axis=1), m.numpy.nancumprod(x)), [NANX], {"rtol": 1e-5}),
    ("np_nan_to_num", lambda m, x: (m.numpy.nan_to_num(x), m.numpy.nan_to_num(x, nan=-1.0, posinf=9.0)),
     [np.array([np.nan, np.inf, -np.inf, 1.5], np.float32)], {"exact": True}),
    ("np_cov", lambda m, x, w: (m.numpy.cov(x), m.numpy.cov(x, rowvar=False, aweights=w),
                                m.numpy.corrcoef(x)), [X, _f32(3, lo=0.5, hi=2)], {"rtol": 1e-5, "atol": 1e-6}),
    ("np_poly", lambda m, a, b: (m.numpy.polyadd(a, b), m.numpy.polysub(b, a), m.numpy.polymul(a, b),
                                 *m.numpy.polydiv(a, b), m.numpy.polyder(a, 2), m.numpy.polyint(a, 2, k=1.5),
                                 m.numpy.polyval(a, b), m.numpy.poly(b)), [_f32(5), _f32(3)],
     {"rtol": 1e-4, "atol": 1e-5}),
    ("np_polyfit", lambda m, x, y: m.numpy.polyfit(x, y, 2), [np.linspace(0, 1, 12).astype(np.float32), _f32(12)],
     {"rtol": 1e-3, "atol": 1e-4}),
    ("np_roots", lambda m, p: m.numpy.sort_complex(m.numpy.roots(p)), [np.array([0, 1.0, -6.0, 11.0, -6.0],
                                                                                np.float32)],
     {"rtol": 1e-4, "atol": 1e-5, "jit": False}),
    ("np_convolve", lambda m, a, v: tuple(f(a, v, mode=k) for f in (m.numpy.convolve, m.numpy.correlate)
                                          for k in ("full", "same", "valid")), [_f32(7), _f32(4)],
     {"rtol": 1e-5, "atol": 1e-6}),
    ("np_windows", lambda m: (m.numpy.hanning(7), m.numpy.hamming(6), m.numpy.blackman(5), m.numpy.bartlett(8),
                              m.numpy.kaiser(9, 4.5)), [], {"rtol": 1e-5, "atol": 1e-6}),
    ("np_interp", lambda m, x, xp, fp: (m.numpy.interp(x, xp, fp), m.numpy.interp(x, xp, fp, left=-5.0, right=5.0),
                                        m.numpy.interp(x, xp, fp, period=3.0)),
     [np.linspace(-1, 5, 17).astype(np.float32), np.array([0, 1, 2.5, 4.0], np.float32),
      np.array([1, 3, 2, 0.0], np.float32)], {"rtol": 1e-5, "atol": 1e-6}),
    ("np_piecewise", lambda m, x: m.numpy.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v * 2, 7.0]),
     [np.linspace(-2, 2, 9).astype(np.float32)], {"exact": True}),
    ("np_gradient", lambda m, x: tuple(m.numpy.gradient(x)) + (m.numpy.gradient(x, 0.5, axis=1),), [X],
     {"rtol": 1e-5}),
    ("np_frexp_ldexp", lambda m, x, e: (*m.numpy.frexp(x), m.numpy.ldexp(x, e)),
     [np.array([0.0, 1.0, -3.5, 1000.0, np.inf, 6e-5], np.float32), np.array([1, -3, 4, 0, 2, 7], np.int32)],
     {"exact": True}),
    ("np_gcd_lcm", lambda m, a, b: (m.numpy.gcd(a, b), m.numpy.lcm(a, b)),
     [np.array([12, 0, -18, 7, 35], np.int32), np.array([18, 5, 12, 0, -21], np.int32)], {"exact": True}),
    ("np_misc_math", lambda m, x: (m.numpy.i0(x), m.numpy.logaddexp2(x, x[::-1]), m.numpy.spacing(x),
                                   m.numpy.angle(x), m.numpy.float_power(x, 2)), [X], {"rtol": 2e-5}),
    ("np_modf_unwrap", lambda m, x: (*m.numpy.modf(x * 3), m.numpy.unwrap(m.numpy.cumsum(x * 3, axis=1))), [X],
     {"rtol": 1e-5, "atol": 1e-5}),
    ("np_trapezoid", lambda m, y, x: (m.numpy.trapezoid(y), m.numpy.trapezoid(y, x), m.numpy.trapezoid(y, dx=0.2,
                                                                                                     axis=0)),
     [X, np.array([0, 1, 3, 4, 7.0], np.float32)], {"rtol": 1e-5}),
    ("np_vec_products", lambda m, a, v, w: (m.numpy.matvec(a, v), m.numpy.vecmat(w, a), m.numpy.vecdot(a, v),
                                            m.numpy.cross(a[..., :3], a[..., 1:4])),
     [_f32(2, 3, 4), _f32(4), _f32(3)], {"rtol": 1e-5, "atol": 1e-6}),
    ("np_bits", lambda m, b, u: (m.numpy.packbits(b, axis=1), m.numpy.unpackbits(u, axis=1, count=10),
                                 m.numpy.bitwise_count(np.array([0, -3, 7, 255], np.int32))),
     [_rng.integers(0, 2, (3, 11)).astype(bool), np.array([[2, 7], [255, 128]], np.uint8)], {"exact": True}),
    ("np_arrays_misc", lambda m, x: (m.numpy.delete(x, np.array([0, 2]), axis=1),
                                     m.numpy.insert(x, 1, np.float32(9), axis=1),
                                     m.numpy.resize(x, (4, 6)), m.numpy.rollaxis(x, 1),
                                     m.numpy.choose(np.array([0, 1, 0, 1, 1], np.int32), [x[0], x[1]]),
                                     m.numpy.fill_diagonal(x, 5.0, inplace=False),
                                     m.numpy.put(x, np.array([0, 7]), np.float32(-1), inplace=False),
                                     m.numpy.place(x, x > 0, np.array([1.0, 2.0], np.float32), inplace=False),
                                     m.numpy.diagflat(x[0], 1), m.numpy.block([[x, x], [x, x]])), [X],
     {"exact": True}),
    ("np_compress_size", lambda m, c, x: m.numpy.compress(c, x, axis=1, size=4, fill_value=-1.0),
     [np.array([True, False, True, True, False]), X], {"exact": True}),
    ("np_grads", lambda m, x: (m.grad(lambda v: m.numpy.quantile(v, 0.3) + m.numpy.nanvar(v))(x),
                               m.grad(lambda v: m.numpy.convolve(v, v[::-1]).sum() + m.numpy.polyval(v, 0.5))(x),
                               m.grad(lambda v: m.numpy.interp(v, np.array([-1.0, 0.0, 2.0], np.float32),
                                                               np.array([0.0, 2.0, 1.0], np.float32)).sum())(x)),
     [_f32(6)], {"rtol": 1e-5, "atol": 1e-6}),
    ("np_geomspace", lambda m: (m.numpy.geomspace(1.0, 1000.0, 4), m.numpy.geomspace(-2.0, -32.0, 5)), [],
     {"rtol": 1e-5}),
]


NN_CASES = [
    ("nn_log1mexp", lambda m, x: m.nn.log1mexp(x), [_f32(13, lo=0.001, hi=8.0)], {"rtol": 1e-5}),
    ("nn_logmeanexp", lambda m, x: (m.nn.logmeanexp(x, axis=1), m.nn.logmeanexp(x, axis=0, where=x > -0.5,
                                                                                keepdims=True),
                                    m.nn.logmeanexp(x)), [X], {"rtol": 1e-5}),
    ("nn_sparse", lambda m, x: (m.nn.sparse_plus(x), m.nn.sparse_sigmoid(x), m.nn.squareplus(x),
                                m.nn.squareplus(x, 1.5), m.nn.tanh(x)), [_f32(21, lo=-3, hi=3)], {"rtol": 1e-5}),
    ("nn_attention", lambda m, q, k, v: m.nn.dot_product_attention(q, k, v), [_f32(2, 5, 4, 8), _f32(2, 6, 4, 8),
                                                                              _f32(2, 6, 4, 8)],
     {"rtol": 1e-4, "atol": 1e-5}),
    ("nn_attention_gqa_causal", lambda m, q, k, v: m.nn.dot_product_attention(q, k, v, is_causal=True, scale=0.3),
     [_f32(2, 6, 4, 8), _f32(2, 6, 2, 8), _f32(2, 6, 2, 8)], {"rtol": 1e-4, "atol": 1e-5}),
    ("nn_attention_bias_mask", lambda m, q, k, v, b, mk: m.nn.dot_product_attention(q, k, v, bias=b, mask=mk),
     [_f32(1, 4, 2, 8), _f32(1, 5, 2, 8), _f32(1, 5, 2, 8), _f32(1, 2, 4, 5), _rng.integers(0, 2, (1, 1, 4, 5))
      .astype(bool) | np.eye(4, 5, dtype=bool)[None, None]], {"rtol": 1e-4, "atol": 1e-5}),
    ("nn_attention_lengths", lambda m, q, k, v, ql, kl: m.nn.dot_product_attention(
        q, k, v, query_seq_lengths=ql, key_value_seq_lengths=kl, local_window_size=(2, 1)),
     [_f32(2, 5, 2, 4), _f32(2, 5, 2, 4), _f32(2, 5, 2, 4), np.array([3, 5], np.int32), np.array([4, 2], np.int32)],
     {"rtol": 1e-4, "atol": 1e-5}),
    ("nn_attention_3d", lambda m, q, k, v: m.nn.dot_product_attention(q, k, v), [_f32(5, 2, 8), _f32(6, 2, 8),
                                                                                 _f32(6, 2, 8)],
     {"rtol": 1e-4, "atol": 1e-5}),
    ("nn_grads", lambda m, q: m.grad(lambda v: (m.nn.dot_product_attention(v, v * 0.5, v, is_causal=True).sum()
                                                + m.nn.logmeanexp(v) + m.nn.squareplus(v).sum()))(q),
     [_f32(1, 4, 2, 4)], {"rtol": 1e-4, "atol": 1e-5}),
]

CASES = LAX_CASES + NUMPY_CASES + NN_CASES
