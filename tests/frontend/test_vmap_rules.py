"""Batching rules, one table of functions through one harness: vmap(f)(xs) must equal f run on each example
(jit, one call per example) stacked along out_axes. Each row names the opcode family it exercises; rows whose
rule is a per-example loop say so. Runs on both backends (conftest's xlapy_backend)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax

RNG = np.random.default_rng(0)
B = 3


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def ints(lo, hi, *shape):
    return RNG.integers(lo, hi, shape).astype(np.int32)


_M = f32(B, 4, 4)
SPD = (_M @ _M.transpose(0, 2, 1) + 4 * np.eye(4, dtype=np.float32)).astype(np.float32)


def conv(x, w, groups=1, batch_groups=1):
    return lax.conv_general_dilated(x, w, (1,), [(1, 1)], dimension_numbers=("NCH", "OIH", "NCH"),
                                    feature_group_count=groups, batch_group_count=batch_groups)


def _maxpool_grad(x):
    return xlapy.grad(lambda v: lax.reduce_window(v, -np.inf, lax.max, (2,), (2,), "VALID").sum())(x)


def _while_batched_pred(n):
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0), (np.int32(0), np.float32(1.0)))


def _while_unbatched_pred(x):
    return lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, xnp.sin(c[1]) + c[1]), (0, x))


def _scan_cumulative(c0, xs):
    return lax.scan(lambda c, x: (c * 0.5 + x, c * x), c0, xs)


def _switch(i, x):
    return lax.switch(i, [lambda v: v + 1.0, lambda v: v * 2.0, lambda v: -v], x)


def _pad_batched_value(x, v):
    return lax.pad(x, v, [(1, 2, 1), (0, -1, 0)])


def _reduce_batched_init(x, init):
    return lax.reduce(x, init, lax.add, (0,))


def _argsort_pair(k, v):
    return lax.sort((k, v), num_keys=1)


# name -> (f, args, in_axes, out_axes); every arg listed has the batch axis where in_axes says
CASES = {
    # elementwise
    "unary": (lambda x: xnp.tanh(xnp.exp(-x * x)) + xnp.abs(xnp.sin(x)), (f32(B, 4),), 0, 0),
    "binary_in_axes_1_0": (lambda x, y: x * y - xnp.maximum(x, y), (f32(4, B), f32(B, 4)), (1, 0), 0),
    "binary_one_unbatched": (lambda x, y: xnp.arctan2(x, y), (f32(B, 2, 3), f32(2, 3)), (0, None), 0),
    "scalar_batched": (lambda s, x: s * x + s, (f32(B), f32(4)), (0, None), 0),
    "compare_select": (lambda x, y: xnp.where(x > y, x, y * 2), (f32(B, 5), f32(B, 5)), 0, 0),
    "clamp_scalar_bounds": (lambda lo, x: lax.clamp(lo, x, np.float32(0.5)), (f32(B), f32(B, 6)), 0, 0),
    "clamp_array_bounds": (lambda lo, x, hi: lax.clamp(lo, x, hi), (f32(B, 6) - 1, f32(6), f32(B, 6) + 1),
                           (0, None, 0), 0),
    "convert_and_integer_ops": (lambda x: ((x * 10).astype(np.int32) >> 1) ^ 3, (f32(B, 4),), 0, 0),
    "bitcast_same_width": (lambda x: lax.bitcast_convert_type(x, np.int32), (f32(B, 4),), 0, 0),
    "bitcast_narrowing": (lambda x: lax.bitcast_convert_type(x, np.uint8), (f32(2, B),), 1, 0),
    "bitcast_widening": (lambda x: lax.bitcast_convert_type(x, np.float32),
                         (RNG.integers(0, 255, (B, 2, 4)).astype(np.uint8),), 0, 1),
    "reduce_precision_is_finite": (lambda x: (lax.reduce_precision(x, 5, 10), lax.is_finite(1 / x)),
                                   (f32(B, 3),), 0, 0),
    "complex_parts": (lambda x, y: xnp.abs(lax.complex(x, y) * lax.complex(y, x)).real, (f32(B, 3), f32(B, 3)),
                      0, 0),
    "weak_python_scalar": (lambda x: x + 1, (f32(B, 2),), 0, 0),
    # data movement
    "broadcast_reshape_transpose": (lambda x: xnp.transpose(xnp.broadcast_to(x, (2, 3, 4)).reshape(6, 4) * 1),
                                    (f32(3, B, 4),), 1, 0),
    "slice_reverse_concat": (lambda x, y: xnp.concatenate([x[1:3, ::-1], y[:2]], axis=1),
                             (f32(B, 4, 3), f32(2, 3)), (0, None), 0),
    "pad_unbatched_value": (lambda x: lax.pad(x, np.float32(7), [(1, 0, 2), (-1, 1, 0)]), (f32(B, 3, 4),), 0, 0),
    "pad_batched_value": (_pad_batched_value, (f32(B, 3, 4), f32(B)), 0, 0),
    "iota_constant": (lambda x: x + xnp.arange(4, dtype=np.float32) * 2, (f32(B, 4),), 0, 0),
    "dynamic_slice_index_unbatched": (lambda x: lax.dynamic_slice(x, (1, 2), (2, 2)), (f32(B, 4, 5),), 0, 0),
    "dynamic_slice_index_batched": (lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 3)),
                                    (f32(B, 5, 4), np.array([0, 3, 9], np.int32)), 0, 0),
    "dynamic_slice_operand_unbatched": (lambda x, i: lax.dynamic_slice(x, (i, i), (2, 2)),
                                        (f32(5, 4), np.array([-1, 2, 4], np.int32)), (None, 0), 0),
    "dynamic_update_slice_index_unbatched": (lambda x, u: lax.dynamic_update_slice(x, u, (1, 0)),
                                             (f32(B, 4, 3), f32(2, 3)), (0, None), 0),
    "dynamic_update_slice_index_batched": (lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 0)),
                                           (f32(4, 3), f32(B, 2, 3), np.array([0, 1, 7], np.int32)), (None, 0, 0), 0),
    "gather_indices_batched": (lambda x, i: x[i], (f32(6, 2), ints(0, 6, B, 4)), (None, 0), 0),
    "gather_operand_batched": (lambda x, i: x[i, 1], (f32(B, 6, 2), ints(0, 6, 4)), (0, None), 0),
    "gather_both_batched": (lambda x, i: xnp.take(x, i, axis=1), (f32(3, B, 5), ints(0, 5, B, 2)), (1, 0), 1),
    "scatter_add": (lambda x, i, u: x.at[i].add(u), (f32(B, 6), ints(0, 6, B, 3), f32(3)), (0, 0, None), 0),
    "scatter_set_operand_only": (lambda x, i, u: x.at[i].set(u), (f32(B, 6), ints(0, 6, 2), f32(2)),
                                 (0, None, None), 0),
    "scatter_updates_only": (lambda x, i, u: x.at[:, i].mul(u), (f32(2, 6), ints(0, 6, 3), f32(B, 2, 3)),
                             (None, None, 0), 0),
    # reductions, windows, sorting
    "reduce_sum_max": (lambda x: (x.sum(axis=0), x.max(axis=(0, 1))), (f32(2, B, 3),), 1, 0),
    "argmax_variadic_reduce": (lambda x: xnp.argmax(x, axis=1), (f32(B, 3, 5),), 0, 0),
    "reduce_batched_init (per-example loop)": (_reduce_batched_init, (f32(B, 4), f32(B)), 0, 0),
    "cumsum_cummax_reduce_window": (lambda x: (xnp.cumsum(x, axis=1), lax.cummax(x, axis=0)), (f32(B, 3, 4),), 0, 0),
    "reduce_window_maxpool": (lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 2), "SAME"),
                              (f32(4, 5, B),), 2, 0),
    "select_and_scatter (grad of maxpool)": (_maxpool_grad, (f32(B, 6),), 0, 0),
    "sort": (lambda x: xnp.sort(x, axis=0), (f32(5, B),), 1, 1),
    "sort_multi_operand": (_argsort_pair, (f32(B, 5), ints(0, 9, B, 5)), 0, 0),
    "top_k": (lambda x: lax.top_k(x, 2), (f32(B, 3, 5),), 0, 0),
    # dot, convolution, fft
    "dot_both_batched": (lambda a, b: a @ b, (f32(B, 2, 3), f32(3, B, 4)), (0, 1), 0),
    "dot_lhs_batched": (lambda a, b: a @ b, (f32(2, B, 3), f32(3, 4)), (1, None), 2),
    "dot_rhs_batched": (lambda a, b: a @ b, (f32(2, 3), f32(3, 4, B)), (None, 2), 0),
    "dot_general_batch_dims": (lambda a, b: xnp.einsum("bij,bjk->bik", a, b), (f32(2, 3, B, 4), f32(2, 4, 5)),
                               (2, None), 0),
    "matvec_vec_batched": (lambda m, v: m @ v, (f32(3, 4), f32(B, 4)), (None, 0), 0),
    "conv_input_batched": (conv, (f32(B, 2, 2, 6), f32(3, 2, 3)), (0, None), 0),
    "conv_kernel_batched": (conv, (f32(2, 2, 6), f32(3, 2, 3, B)), (None, 3), 0),
    "conv_both_batched": (conv, (f32(B, 2, 2, 6), f32(B, 3, 2, 3)), 0, 0),
    "conv_groups_input_batched": (functools.partial(conv, groups=2), (f32(B, 1, 4, 6), f32(4, 2, 3)), (0, None), 0),
    "conv_groups_kernel_batched": (functools.partial(conv, groups=2), (f32(1, 4, 6), f32(B, 4, 2, 3)), (None, 0), 0),
    "conv_groups_both_batched": (functools.partial(conv, groups=2), (f32(B, 1, 4, 6), f32(B, 4, 2, 3)), 0, 0),
    "conv_batch_groups (per-example loop)": (functools.partial(conv, batch_groups=2),
                                             (f32(B, 2, 1, 6), f32(4, 1, 3)), (0, None), 0),
    "fft": (lambda x: xnp.fft.fft(x).real + xnp.fft.rfft(x).imag.sum(), (f32(B, 8),), 0, 0),
    # linear algebra: cholesky / triangular-solve batch natively, JAX's LAPACK custom-calls run per example
    "cholesky": (lax.linalg.cholesky, (SPD,), 0, 0),
    "triangular_solve_matrix_unbatched": (lambda l, b: lax.linalg.triangular_solve(l, b, left_side=True, lower=True),
                                          (np.linalg.cholesky(SPD[0]), f32(B, 4, 2)), (None, 0), 0),
    "qr (custom-call, per-example loop)": (lambda a: lax.linalg.qr(a)[1], (SPD,), 0, 0),
    # control flow
    "cond_unbatched_pred": (lambda x: lax.cond(True, lambda v: v * 2.0, lambda v: v - 1.0, x), (f32(B, 3),), 0, 0),
    "cond_batched_pred": (lambda p, x: lax.cond(p > 0, lambda v: xnp.sin(v), lambda v: v * 3.0, x),
                          (f32(B), f32(B, 3)), 0, 0),
    "cond_batched_pred_unbatched_operand": (lambda p, x: lax.cond(p > 0, lambda v: v.sum(), lambda v: v.max(), x),
                                            (f32(B), f32(4)), (0, None), 0),
    "switch_batched_index": (_switch, (np.array([0, 2, 5], np.int32), f32(B, 2)), 0, 0),
    "switch_unbatched_index": (_switch, (np.int32(1), f32(B, 2)), (None, 0), 0),
    "while_batched_pred": (_while_batched_pred, (np.array([0, 3, 1], np.int32),), 0, 0),
    "while_unbatched_pred": (_while_unbatched_pred, (f32(B, 2),), 0, 0),
    "fori_loop_batched_carry": (lambda x: lax.fori_loop(0, 3, lambda i, c: c * x + i, x), (f32(B, 2),), 0, 0),
    "scan_batched_xs": (_scan_cumulative, (f32(2), f32(B, 5, 2)), (None, 0), 0),
    "scan_batched_carry": (_scan_cumulative, (f32(B, 2), f32(5, 2)), (0, None), 0),
    "lax_map": (lambda x: lax.map(lambda r: r.sum() * r, x), (f32(B, 4, 2),), 0, 0),
    # random bits
    "random_normal_keys (threefry)": (lambda k: xlapy.random.normal(k, (4,)),
                                      (np.stack([np.asarray(xlapy.random.PRNGKey(i)) for i in range(B)]),), 0, 0),
    "random_split_uniform": (lambda k: xlapy.random.uniform(xlapy.random.split(k)[1], (2, 2)),
                             (np.stack([np.asarray(xlapy.random.PRNGKey(i)) for i in range(B)]),), 0, 0),
    "rng_bit_generator (per-example loop)": (lambda k: lax.rng_bit_generator(k, (2, 3), np.uint32),
                                             (RNG.integers(0, 2**31, (B, 4)).astype(np.uint32),), 0, 0),
}


def _example(args, in_axes, i):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    return [a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes)]


def _reference(f, args, in_axes, out_axes):
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes if isinstance(in_axes, tuple)
                                                  else (in_axes,) * len(args)) if ax is not None)
    jf = xlapy.jit(f)
    per = [xlapy.tree_util.tree_leaves(jf(*_example(args, in_axes, i))) for i in range(size)]
    return [np.stack([np.asarray(p[k]) for p in per], axis=out_axes) for k in range(len(per[0]))]


@pytest.mark.parametrize("name", list(CASES))
def test_vmap_matches_stacked_examples(name):
    f, args, in_axes, out_axes = CASES[name]
    got = xlapy.tree_util.tree_leaves(xlapy.vmap(f, in_axes=in_axes, out_axes=out_axes)(*args))
    want = _reference(f, args, in_axes, out_axes)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", ["unary", "dot_both_batched", "conv_kernel_batched", "gather_both_batched",
                                  "while_batched_pred", "scan_batched_xs", "cond_batched_pred"])
def test_vmap_under_jit_matches(name):
    f, args, in_axes, out_axes = CASES[name]
    got = xlapy.tree_util.tree_leaves(xlapy.jit(xlapy.vmap(f, in_axes=in_axes, out_axes=out_axes))(*args))
    for g, w in zip(got, _reference(f, args, in_axes, out_axes)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=2e-6)
