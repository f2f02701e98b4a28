"""xlapy.numpy against numpy: one table, one harness, every case eager and under xlapy.jit.

A case is (name, fn, args, dtype[, ref]). `fn(m, *args)` is written once against a numpy-like module m: the
harness calls it with m=xlapy.numpy (eagerly on Arrays, and traced under jit), and the reference is
`ref(*args)` or else fn(numpy, *args). `dtype` is the result dtype JAX gives (checked with jax.numpy 0.10,
where the same lambdas run with m=jax.numpy); for tuple results it is every element's dtype.
"""
import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp

# --- cases begin (plain numpy below: the table can be re-run against jax.numpy) ---
rng = np.random.default_rng(0)
F = rng.standard_normal((3, 4)).astype(np.float32)
G = rng.standard_normal((3, 4)).astype(np.float32)
P = (np.abs(F) + 0.5).astype(np.float32)
H = rng.uniform(-0.9, 0.9, (3, 4)).astype(np.float32)
R = rng.standard_normal((4,)).astype(np.float32)
C = rng.standard_normal((2, 3, 4)).astype(np.float32)
I = rng.integers(-20, 20, (3, 4)).astype(np.int32)
J = rng.integers(1, 7, (3, 4)).astype(np.int32)
I8 = rng.integers(-5, 5, (3, 4)).astype(np.int8)
U8 = rng.integers(0, 9, (3, 4)).astype(np.uint8)
B = F > 0
S = np.array([2.0, np.nan, -1.0, 3.0, -1.0, 0.5], np.float32)
V = np.array([3, 1, 3, 2, 1, 5, 3], np.int32)
SPECIAL = np.array([1.0, np.inf, -np.inf, np.nan, 0.0, -0.0], np.float32)


HX = np.append(H.ravel(), [-1.0, 1.0]).astype(np.float32)


def _np_take_fill(x, idx):
    """jnp.take's default along axis 1: negative indices wrap, out-of-bounds ones give NaN."""
    n = x.shape[1]
    ok = (idx >= -n) & (idx < n)
    out = x[:, np.where(ok, idx, 0)].astype(np.float32)
    out[:, ~ok] = np.nan
    return out


CASES = [
    # creation
    ("zeros", lambda m: m.zeros((2, 3)), (), "f32"),
    ("ones_int", lambda m: m.ones(4, dtype=m.int32), (), "i32"),
    ("full", lambda m: m.full((2, 2), 7), (), "i32"),
    ("full_float", lambda m: m.full(3, 1.5), (), "f32"),
    ("full_like", lambda m, x: m.full_like(x, 2.5), (I,), "i32"),
    ("zeros_like", lambda m, x: m.zeros_like(x), (F,), "f32"),
    ("ones_like_dtype", lambda m, x: m.ones_like(x, dtype=m.float32), (I,), "f32"),
    ("empty", lambda m: m.empty((2,)) * 0, (), "f32"),
    ("array_list", lambda m: m.array([1, 2.5]), (), "f32"),
    ("asarray_int", lambda m: m.asarray([[1, 2], [3, 4]]), (), "i32"),
    ("array_of_arrays", lambda m, x, y: m.array([x, y]), (R, R), "f32"),
    ("arange", lambda m: m.arange(5), (), "i32"),
    ("arange_float", lambda m: m.arange(0.5, 3.0, 0.5), (), "f32"),
    ("arange_step", lambda m: m.arange(10, 2, -3), (), "i32"),
    ("linspace", lambda m: m.linspace(0, 1, 5), (), "f32"),
    ("linspace_open", lambda m: m.linspace(2.0, 3.0, 4, endpoint=False), (), "f32"),
    ("eye", lambda m: m.eye(3, 4, k=1), (), "f32"),
    ("identity", lambda m: m.identity(3, dtype=m.int32), (), "i32"),
    ("tri", lambda m: m.tri(3, 4, -1), (), "f32"),
    ("tril", lambda m, x: m.tril(x), (F,), "f32"),
    ("triu_k", lambda m, x: m.triu(x, 1), (C,), "f32"),
    ("meshgrid_xy", lambda m, x, y: m.meshgrid(x, y), (R, R[:3]), "f32"),
    ("meshgrid_ij", lambda m, x, y: m.meshgrid(x, y, indexing="ij"), (R, R[:3]), "f32"),
    ("diag_vec", lambda m, v: m.diag(v, 1), (R,), "f32"),
    ("diag_mat", lambda m, x: m.diag(x, -1), (F,), "f32"),
    # arithmetic and promotion
    ("add", lambda m, x, y: m.add(x, y), (F, G), "f32"),
    ("add_broadcast", lambda m, x, y: x + y, (F, R), "f32"),
    ("add_weak_int", lambda m, x: m.add(x, 2), (I8,), "i8"),
    ("add_weak_float", lambda m, x: x + 1.5, (I,), "f32", lambda x: x + np.float32(1.5)),
    ("add_u8_i8", lambda m, x, y: m.add(x, y), (U8, I8), "i16"),
    ("subtract", lambda m, x, y: m.subtract(x, y), (I, J), "i32"),
    ("multiply_bool", lambda m, x, y: m.multiply(x, y), (B, B), "bool"),
    ("divide_int", lambda m, x, y: m.divide(x, y), (I, J), "f32"),
    ("true_divide", lambda m, x, y: m.true_divide(x, y), (F, P), "f32"),
    ("floor_divide", lambda m, x, y: m.floor_divide(x, y), (I, J * np.where(B, 1, -1).astype(np.int32)), "i32"),
    ("floor_divide_f", lambda m, x, y: m.floor_divide(x, y), (F, P), "f32"),
    ("remainder", lambda m, x, y: m.remainder(x, y), (I, J * np.where(B, 1, -1).astype(np.int32)), "i32"),
    ("mod_float", lambda m, x, y: m.mod(x, y), (F * 3, G), "f32"),
    ("fmod", lambda m, x, y: m.fmod(x, y), (I, J), "i32"),
    ("power_int", lambda m, x: m.power(x, 3), (I,), "i32"),
    ("power_arr", lambda m, x, y: m.power(x, y), (P, G), "f32"),
    ("power_int_arr", lambda m, x, y: m.power(x, y), (J, J), "i32"),
    ("pow_op", lambda m, x: x ** 2.0, (F,), "f32"),
    ("negative", lambda m, x: m.negative(x), (I,), "i32"),
    ("positive", lambda m, x: m.positive(x), (F,), "f32"),
    ("abs", lambda m, x: m.abs(x), (F,), "f32"),
    ("absolute_int", lambda m, x: m.absolute(x), (I8,), "i8"),
    ("sign", lambda m, x: m.sign(x), (I,), "i32"),
    ("square", lambda m, x: m.square(x), (I,), "i32"),
    ("reciprocal", lambda m, x: m.reciprocal(x), (J,), "f32", lambda x: 1 / x.astype(np.float32)),
    ("maximum", lambda m, x, y: m.maximum(x, y), (F, G), "f32"),
    ("minimum_weak", lambda m, x: m.minimum(x, 0.5), (I,), "f32"),
    ("fmax", lambda m, x, y: m.fmax(x, y), (S, S[::-1].copy()), "f32"),
    ("fmin", lambda m, x, y: m.fmin(x, y), (S, S[::-1].copy()), "f32"),
    ("clip", lambda m, x: m.clip(x, -0.5, 0.5), (F,), "f32"),
    ("clip_int_float", lambda m, x: m.clip(x, 0, 1.5), (I,), "f32"),
    ("clip_upper", lambda m, x: m.clip(x, max=3), (I,), "i32"),
    ("where", lambda m, c, x, y: m.where(c, x, y), (B, F, G), "f32"),
    ("where_broadcast", lambda m, c, x: m.where(c, x, 0), (B, R), "f32"),
    ("where_mixed", lambda m, c, x: m.where(c, x, 2.0), (B, I), "f32"),
    # unary float functions (integers promote to float32)
    ("exp", lambda m, x: m.exp(x), (F,), "f32"),
    ("exp_int", lambda m, x: m.exp(x), (I8,), "f32", lambda x: np.exp(x.astype(np.float32))),
    ("exp2", lambda m, x: m.exp2(x), (F,), "f32"),
    ("expm1", lambda m, x: m.expm1(x), (F,), "f32"),
    ("log", lambda m, x: m.log(x), (P,), "f32"),
    ("log2", lambda m, x: m.log2(x), (J,), "f32"),
    ("log10", lambda m, x: m.log10(x), (P,), "f32"),
    ("log1p", lambda m, x: m.log1p(x), (P,), "f32"),
    ("sqrt", lambda m, x: m.sqrt(x), (P,), "f32"),
    ("sqrt_int", lambda m, x: m.sqrt(x), (J,), "f32"),
    ("cbrt", lambda m, x: m.cbrt(x), (F,), "f32"),
    ("sin", lambda m, x: m.sin(x), (F,), "f32"),
    ("cos", lambda m, x: m.cos(x), (F,), "f32"),
    ("tan", lambda m, x: m.tan(x), (H,), "f32"),
    ("arcsin", lambda m, x: m.arcsin(x), (H,), "f32"),
    ("arccos", lambda m, x: m.arccos(x), (HX,), "f32"),
    ("arctan", lambda m, x: m.arctan(x), (F * 3,), "f32"),
    ("arctan2", lambda m, x, y: m.arctan2(x, y), (F, G), "f32"),
    ("sinh", lambda m, x: m.sinh(x), (F * 3,), "f32"),
    ("cosh", lambda m, x: m.cosh(x), (F * 3,), "f32"),
    ("tanh", lambda m, x: m.tanh(x), (F,), "f32"),
    ("arcsinh", lambda m, x: m.arcsinh(x), (F * 5,), "f32"),
    ("arccosh", lambda m, x: m.arccosh(x), (P + 1,), "f32"),
    ("arctanh", lambda m, x: m.arctanh(x), (H,), "f32"),
    ("floor", lambda m, x: m.floor(x), (F * 3,), "f32"),
    ("floor_int", lambda m, x: m.floor(x), (I,), "i32"),
    ("ceil", lambda m, x: m.ceil(x), (F * 3,), "f32"),
    ("trunc", lambda m, x: m.trunc(x), (F * 3,), "f32"),
    ("round_even", lambda m, x: m.round(x), (np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.4], np.float32),), "f32"),
    ("round_decimals", lambda m, x: m.round(x, 2), (F * 10,), "f32"),
    ("around_int", lambda m, x: m.around(x), (I,), "i32"),
    ("rint", lambda m, x: m.rint(x), (F * 3,), "f32"),
    ("sinc", lambda m, x: m.sinc(x), (np.append(F.ravel(), 0).astype(np.float32),), "f32"),
    ("heaviside", lambda m, x, y: m.heaviside(x, y), (np.array([-1.0, 0.0, 2.0], np.float32), np.float32(0.5)),
     "f32"),
    ("hypot", lambda m, x, y: m.hypot(x, y), (F, G), "f32"),
    ("logaddexp", lambda m, x, y: m.logaddexp(x, y), (F, G), "f32"),
    ("deg2rad", lambda m, x: m.deg2rad(x), (I,), "f32"),
    ("rad2deg", lambda m, x: m.rad2deg(x), (F,), "f32"),
    ("copysign", lambda m, x, y: m.copysign(x, y), (F, G), "f32"),
    ("signbit", lambda m, x: m.signbit(x), (SPECIAL,), "bool"),
    # predicates, comparisons, logic, bits
    ("isnan", lambda m, x: m.isnan(x), (SPECIAL,), "bool"),
    ("isinf", lambda m, x: m.isinf(x), (SPECIAL,), "bool"),
    ("isfinite", lambda m, x: m.isfinite(x), (SPECIAL,), "bool"),
    ("isfinite_int", lambda m, x: m.isfinite(x), (I,), "bool"),
    ("equal", lambda m, x, y: m.equal(x, y), (I, J), "bool"),
    ("not_equal", lambda m, x, y: m.not_equal(x, y), (I, J), "bool"),
    ("less", lambda m, x, y: m.less(x, y), (F, G), "bool"),
    ("less_equal", lambda m, x, y: m.less_equal(x, 0), (F, G), "bool"),
    ("greater", lambda m, x, y: m.greater(x, y), (F, G), "bool"),
    ("greater_equal_mixed", lambda m, x, y: m.greater_equal(x, y), (I, F), "bool"),
    ("isclose", lambda m, x, y: m.isclose(x, y), (SPECIAL, np.array([1.0, np.inf, np.inf, np.nan, 1e-9, 0.0],
                                                                   np.float32)), "bool"),
    ("isclose_nan", lambda m, x: m.isclose(x, x, equal_nan=True), (SPECIAL,), "bool"),
    ("allclose", lambda m, x, y: m.allclose(x, y + 1e-7), (F, F), "bool"),
    ("allclose_false", lambda m, x, y: m.allclose(x, y), (F, G), "bool"),
    ("logical_and", lambda m, x, y: m.logical_and(x, y), (I, B), "bool"),
    ("logical_or", lambda m, x, y: m.logical_or(x, y), (F, B), "bool"),
    ("logical_xor", lambda m, x, y: m.logical_xor(x, y), (B, B[::-1].copy()), "bool"),
    ("logical_not", lambda m, x: m.logical_not(x), (I,), "bool"),
    ("bitwise_and", lambda m, x, y: m.bitwise_and(x, y), (I, J), "i32"),
    ("bitwise_or", lambda m, x, y: m.bitwise_or(x, y), (U8, U8[::-1].copy()), "u8"),
    ("bitwise_xor", lambda m, x, y: m.bitwise_xor(x, y), (I, J), "i32"),
    ("bitwise_not", lambda m, x: m.bitwise_not(x), (I,), "i32"),
    ("invert_bool", lambda m, x: m.invert(x), (B,), "bool"),
    ("left_shift", lambda m, x, y: m.left_shift(x, y), (I, J), "i32"),
    ("right_shift", lambda m, x, y: m.right_shift(x, y), (I, J), "i32"),
    # reductions
    ("sum", lambda m, x: m.sum(x), (F,), "f32"),
    ("sum_axis", lambda m, x: m.sum(x, axis=1), (F,), "f32"),
    ("sum_tuple_keepdims", lambda m, x: m.sum(x, axis=(0, 2), keepdims=True), (C,), "f32"),
    ("sum_bool", lambda m, x: m.sum(x, 0), (B,), "i32"),
    ("sum_u8", lambda m, x: m.sum(x), (U8,), "u32"),
    ("sum_i8", lambda m, x: m.sum(x, -1), (I8,), "i32"),
    ("sum_dtype", lambda m, x: m.sum(x, dtype=m.float32), (I,), "f32"),
    ("sum_where", lambda m, x, c: m.sum(x, axis=1, where=c), (F, B), "f32"),
    ("prod", lambda m, x: m.prod(x, 0), (P,), "f32"),
    ("prod_int", lambda m, x: m.prod(x, 1), (J,), "i32"),
    ("mean", lambda m, x: m.mean(x, axis=0), (F,), "f32"),
    ("mean_int", lambda m, x: m.mean(x), (I,), "f32"),
    ("mean_keepdims", lambda m, x: m.mean(x, (1, 2), keepdims=True), (C,), "f32"),
    ("var", lambda m, x: m.var(x, axis=1), (F,), "f32"),
    ("var_ddof", lambda m, x: m.var(x, ddof=1), (I,), "f32"),
    ("std", lambda m, x: m.std(x, 0, keepdims=True), (F,), "f32"),
    ("max", lambda m, x: m.max(x, axis=1), (F,), "f32"),
    ("max_int", lambda m, x: m.max(x), (I8,), "i8"),
    ("amax_keepdims", lambda m, x: m.amax(x, 0, keepdims=True), (I,), "i32"),
    ("min", lambda m, x: m.min(x, axis=(0, 1)), (C,), "f32"),
    ("amin_initial", lambda m, x: m.amin(x, 1, initial=-3), (I,), "i32"),
    ("argmax", lambda m, x: m.argmax(x), (F,), "i32"),
    ("argmax_axis", lambda m, x: m.argmax(x, axis=0), (F,), "i32"),
    ("argmin_keepdims", lambda m, x: m.argmin(x, axis=1, keepdims=True), (I,), "i32"),
    ("argmax_nan", lambda m, x: m.argmax(x), (S,), "i32"),
    ("any", lambda m, x: m.any(x, axis=1), (B,), "bool"),
    ("all", lambda m, x: m.all(x), (J,), "bool"),
    ("cumsum", lambda m, x: m.cumsum(x, axis=1), (F,), "f32"),
    ("cumsum_flat", lambda m, x: m.cumsum(x), (I,), "i32"),
    ("cumsum_bool", lambda m, x: m.cumsum(x, 0), (B,), "i32"),
    ("cumprod", lambda m, x: m.cumprod(x, 0), (P,), "f32"),
    ("nansum", lambda m, x: m.nansum(x), (S,), "f32"),
    ("nanmax", lambda m, x: m.nanmax(x), (S,), "f32"),
    ("nanmin", lambda m, x: m.nanmin(x), (S,), "f32"),
    ("nanmean", lambda m, x: m.nanmean(x), (S,), "f32"),
    ("median", lambda m, x: m.median(x, axis=1), (F,), "f32"),
    ("median_odd", lambda m, x: m.median(x), (V,), "f32"),
    ("median_nan", lambda m, x: m.median(x), (S,), "f32"),
    ("count_nonzero", lambda m, x: m.count_nonzero(x, axis=0), (B,), "i32"),
    ("average_weights", lambda m, x, w: m.average(x, axis=1, weights=w), (F, P[0].copy()), "f32"),
    ("ptp", lambda m, x: m.ptp(x, axis=0), (F,), "f32"),
    # linear algebra
    ("matmul", lambda m, x, y: m.matmul(x, y), (F, G.T.copy()), "f32"),
    ("matmul_op", lambda m, x, y: x @ y, (F, R), "f32"),
    ("matmul_vec_mat", lambda m, x, y: m.matmul(x, y), (R[:3].copy(), F), "f32"),
    ("matmul_batched", lambda m, x, y: m.matmul(x, y), (C, G.T.copy()), "f32"),
    ("matmul_broadcast", lambda m, x, y: m.matmul(x, y), (C[:1], C.transpose(0, 2, 1).copy()), "f32"),
    ("matmul_int", lambda m, x, y: m.matmul(x, y), (I, J.T.copy()), "i32"),
    ("dot", lambda m, x, y: m.dot(x, y), (F, R), "f32"),
    ("dot_nd", lambda m, x, y: m.dot(x, y), (C, G.T.copy()), "f32"),
    ("dot_scalar", lambda m, x: m.dot(x, 2.0), (F,), "f32"),
    ("vdot", lambda m, x, y: m.vdot(x, y), (F, G), "f32"),
    ("inner", lambda m, x, y: m.inner(x, y), (F, G), "f32"),
    ("outer", lambda m, x, y: m.outer(x, y), (R, F[0].copy()), "f32"),
    ("outer_mixed", lambda m, x, y: m.outer(x, y), (V, R), "f32"),
    ("tensordot", lambda m, x, y: m.tensordot(x, y, axes=2), (C, F), "f32"),
    ("tensordot_axes", lambda m, x, y: m.tensordot(x, y, axes=([0, 2], [1, 2])), (C, C.transpose(1, 0, 2).copy()),
     "f32"),
    ("kron", lambda m, x, y: m.kron(x, y), (F[:2, :2].copy(), G[:2, :3].copy()), "f32"),
    ("einsum_matmul", lambda m, x, y: m.einsum("ij,jk->ik", x, y), (F, G.T.copy()), "f32"),
    ("einsum_batch", lambda m, x, y: m.einsum("bij,bkj->bik", x, y), (C, C), "f32"),
    ("einsum_implicit", lambda m, x, y: m.einsum("ij,kj", x, y), (F, G), "f32"),
    ("einsum_trace", lambda m, x: m.einsum("ii", x), (F[:3, :3].copy(),), "f32"),
    ("einsum_diag", lambda m, x: m.einsum("ii->i", x), (F[:3, :3].copy(),), "f32"),
    ("einsum_sum", lambda m, x: m.einsum("ijk->j", x), (C,), "f32"),
    ("einsum_transpose", lambda m, x: m.einsum("ijk->kij", x), (C,), "f32"),
    ("einsum_ellipsis", lambda m, x, y: m.einsum("...ij,...jk->...ik", x, y), (C, C.transpose(0, 2, 1).copy()),
     "f32"),
    ("einsum_ellipsis_broadcast", lambda m, x, y: m.einsum("...j,j->...", x, y), (C, R), "f32"),
    ("einsum_three", lambda m, x, y, z: m.einsum("ij,jk,k->i", x, y, z), (F, G.T.copy(), R[:3].copy()), "f32"),
    ("einsum_outer", lambda m, x, y: m.einsum("i,j->ij", x, y), (R, R), "f32"),
    ("einsum_mixed_dtype", lambda m, x, y: m.einsum("i,i->", x, y), (U8[0].copy(), I8[0].copy()), "i16"),
    ("trace", lambda m, x: m.trace(x), (F,), "f32"),
    ("trace_offset", lambda m, x: m.trace(x, 1), (I,), "i32"),
    # shapes
    ("reshape", lambda m, x: m.reshape(x, (4, -1)), (F,), "f32"),
    ("reshape_method", lambda m, x: x.reshape(2, 6), (F,), "f32"),
    ("ravel", lambda m, x: m.ravel(x), (C,), "f32"),
    ("transpose", lambda m, x: m.transpose(x), (C,), "f32"),
    ("transpose_axes", lambda m, x: m.transpose(x, (1, 2, 0)), (C,), "f32"),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, -1), (C,), "f32"),
    ("moveaxis", lambda m, x: m.moveaxis(x, 0, -1), (C,), "f32"),
    ("moveaxis_multi", lambda m, x: m.moveaxis(x, [0, 1], [2, 0]), (C,), "f32"),
    ("expand_dims", lambda m, x: m.expand_dims(x, (0, 2)), (F,), "f32"),
    ("squeeze", lambda m, x: m.squeeze(x), (C[:1, :, :1],), "f32"),
    ("squeeze_axis", lambda m, x: m.squeeze(x, axis=0), (C[:1],), "f32"),
    ("concatenate", lambda m, x, y: m.concatenate([x, y], axis=1), (F, G), "f32"),
    ("concatenate_none", lambda m, x, y: m.concatenate([x, y], axis=None), (F, C), "f32"),
    ("concatenate_promote", lambda m, x, y: m.concatenate([x, y]), (I, F), "f32"),
    ("stack", lambda m, x, y: m.stack([x, y]), (F, G), "f32"),
    ("stack_axis", lambda m, x, y: m.stack((x, y), axis=-1), (U8, I8), "i16"),
    ("hstack", lambda m, x, y: m.hstack([x, y]), (F, G), "f32"),
    ("hstack_1d", lambda m, x, y: m.hstack([x, y]), (R, R), "f32"),
    ("vstack", lambda m, x, y: m.vstack([x, y]), (R, F), "f32"),
    ("dstack", lambda m, x, y: m.dstack([x, y]), (F, G), "f32"),
    ("column_stack", lambda m, x, y: m.column_stack([x, y]), (R, F.T.copy()), "f32"),
    ("split_sections", lambda m, x: m.split(x, 2, axis=1), (F,), "f32"),
    ("split_indices", lambda m, x: m.split(x, [1, 5]), (V,), "i32"),
    ("array_split", lambda m, x: m.array_split(x, 3), (V,), "i32"),
    ("hsplit", lambda m, x: m.hsplit(x, 2), (F,), "f32"),
    ("tile", lambda m, x: m.tile(x, (2, 1, 2)), (F,), "f32"),
    ("tile_int", lambda m, x: m.tile(x, 3), (V,), "i32"),
    ("repeat", lambda m, x: m.repeat(x, 2), (F,), "f32"),
    ("repeat_axis", lambda m, x: m.repeat(x, 3, axis=0), (F,), "f32"),
    ("repeat_counts", lambda m, x: m.repeat(x, [1, 0, 2], axis=0), (F,), "f32"),
    ("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3, 4)), (R,), "f32"),
    ("broadcast_arrays", lambda m, x, y: m.broadcast_arrays(x, y), (R, F[:, :1].copy()), "f32"),
    ("pad_constant", lambda m, x: m.pad(x, ((1, 2), (0, 1))), (F,), "f32"),
    ("pad_value", lambda m, x: m.pad(x, 2, constant_values=9), (V,), "i32"),
    ("pad_edge", lambda m, x: m.pad(x, ((1, 1), (2, 3)), mode="edge"), (F,), "f32"),
    ("pad_reflect", lambda m, x: m.pad(x, (2, 3), mode="reflect"), (V,), "i32"),
    ("pad_symmetric", lambda m, x: m.pad(x, (2, 5), mode="symmetric"), (V,), "i32"),
    ("pad_wrap", lambda m, x: m.pad(x, ((0, 0), (3, 2)), mode="wrap"), (F,), "f32"),
    ("flip", lambda m, x: m.flip(x), (F,), "f32"),
    ("flip_axis", lambda m, x: m.flip(x, axis=1), (C,), "f32"),
    ("fliplr", lambda m, x: m.fliplr(x), (F,), "f32"),
    ("flipud", lambda m, x: m.flipud(x), (F,), "f32"),
    ("roll", lambda m, x: m.roll(x, 2), (F,), "f32"),
    ("roll_axis", lambda m, x: m.roll(x, -1, axis=1), (F,), "f32"),
    ("roll_multi", lambda m, x: m.roll(x, (1, 2), axis=(0, 2)), (C,), "f32"),
    ("rot90", lambda m, x: m.rot90(x), (F,), "f32"),
    ("atleast_1d", lambda m, x: m.atleast_1d(x), (np.float32(3.0),), "f32"),
    ("atleast_2d", lambda m, x: m.atleast_2d(x), (R,), "f32"),
    ("atleast_3d", lambda m, x: m.atleast_3d(x), (F,), "f32"),
    ("diagonal", lambda m, x: m.diagonal(x, 1), (F,), "f32"),
    ("diagonal_axes", lambda m, x: m.diagonal(x, 0, 1, 2), (C,), "f32"),
    ("append", lambda m, x, y: m.append(x, y), (F, R), "f32"),
    # indexing and sorting
    ("take", lambda m, x: m.take(x, np.array([0, 2, -1])), (F,), "f32"),
    ("take_axis", lambda m, x: m.take(x, np.array([[0, 3], [-1, 1]]), axis=1), (F,), "f32"),
    ("take_fill", lambda m, x: m.take(x, np.array([0, 7, -1, -9]), axis=1), (F,), "f32",
     lambda x: _np_take_fill(x, np.array([0, 7, -1, -9]))),
    ("take_clip", lambda m, x: m.take(x, np.array([0, 7, -9]), axis=1, mode="clip"), (F,), "f32",
     lambda x: np.take(x, [0, 3, 0], axis=1)),
    ("take_wrap", lambda m, x: m.take(x, np.array([0, 7, -9]), axis=0, mode="wrap"), (F,), "f32"),
    ("take_scalar", lambda m, x: m.take(x, -2), (F,), "f32"),
    ("take_scalar_axis", lambda m, x: m.take(x, 1, axis=1), (F,), "f32"),
    ("where_scalars", lambda m, c: m.where(c, 1, 2), (B,), "i32"),
    ("take_traced_idx", lambda m, x, i: m.take(x, i, axis=0), (F, np.array([2, 0], np.int32)), "f32"),
    ("take_along_axis", lambda m, x: m.take_along_axis(x, m.argsort(x, axis=1), axis=1), (F,), "f32"),
    ("take_along_axis_0", lambda m, x, i: m.take_along_axis(x, i, axis=0),
     (F, np.array([[2, 0, 1, 1]], np.int32)), "f32"),
    ("sort", lambda m, x: m.sort(x), (F,), "f32"),
    ("sort_axis0", lambda m, x: m.sort(x, axis=0), (I,), "i32"),
    ("sort_none", lambda m, x: m.sort(x, axis=None), (F,), "f32"),
    ("sort_nan", lambda m, x: m.sort(x), (S,), "f32"),
    ("sort_descending", lambda m, x: m.sort(x, descending=True), (V,), "i32", lambda x: np.sort(x)[::-1]),
    ("argsort", lambda m, x: m.argsort(x), (V,), "i32", lambda x: np.argsort(x, kind="stable")),
    ("argsort_axis", lambda m, x: m.argsort(x, axis=0), (I,), "i32", lambda x: np.argsort(x, 0, kind="stable")),
    ("argsort_descending", lambda m, x: m.argsort(x, descending=True), (V,), "i32",
     lambda x: np.array([5, 0, 2, 6, 3, 1, 4])),
    ("lexsort", lambda m, a, b: m.lexsort((a, b)), (V, V % 2), "i32"),
    ("searchsorted", lambda m, a, v: m.searchsorted(a, v), (np.sort(R), F), "i32"),
    ("searchsorted_right", lambda m, a, v: m.searchsorted(a, v, side="right"),
     (np.array([1, 2, 2, 3], np.int32), np.array([2, 0, 5], np.int32)), "i32"),
    ("nonzero_size", lambda m, x: m.nonzero(x, size=8), (B,), "i32",
     lambda x: tuple(np.pad(i, (0, 8 - len(i))) for i in np.nonzero(x))),
    ("nonzero_size_truncate", lambda m, x: m.nonzero(x, size=2, fill_value=-1), (V > 2,), "i32",
     lambda x: (np.nonzero(x)[0][:2],)),
    ("nonzero_fill", lambda m, x: m.nonzero(x, size=5, fill_value=-1), (V > 2,), "i32",
     lambda x: (np.array([0, 2, 5, 6, -1]),)),
    ("where_one_arg_size", lambda m, x: m.where(x, size=3), (I > 10,), "i32",
     lambda x: tuple(np.pad(i, (0, max(0, 3 - len(i))))[:3] for i in np.nonzero(x))),
    ("argwhere_size", lambda m, x: m.argwhere(x, size=3), (F > 0.5,), "i32",
     lambda x: np.pad(np.argwhere(x), ((0, max(0, 3 - len(np.argwhere(x)))), (0, 0)))[:3]),
    ("flatnonzero_size", lambda m, x: m.flatnonzero(x, size=4), (V == 3,), "i32", lambda x: np.array([0, 2, 6, 0])),
    ("unique_size", lambda m, x: m.unique(x, size=6), (V,), "i32", lambda x: np.array([1, 2, 3, 5, 1, 1])),
    ("unique_counts_size", lambda m, x: m.unique(x, size=5, return_counts=True), (V,), "i32",
     lambda x: (np.array([1, 2, 3, 5, 1]), np.array([2, 1, 3, 1, 0]))),
    ("select", lambda m, x: m.select([x < -0.5, x > 0.5], [x, 2 * x], -1.0), (F,), "f32"),
    ("unravel_index", lambda m, i: m.unravel_index(i, (3, 4)), (np.array([0, 5, 11], np.int32),), "i32"),
    ("tril_indices", lambda m: m.tril_indices(3), (), "i32"),
]
# --- cases end ---

TOLERANCE = {"arccos": 1e-5, "arcsinh": 1e-5, "arccosh": 1e-5, "sinh": 1e-5, "cosh": 1e-5, "exp2": 1e-5,
             "logaddexp": 1e-5, "var_ddof": 1e-4}
DTYPES = {"f32": np.float32, "i32": np.int32, "i8": np.int8, "i16": np.int16, "u8": np.uint8, "u32": np.uint32,
          "bool": np.bool_}


def _reference(case):
    name, fn, args, _ = case[:4]
    if len(case) > 4:
        return case[4](*args)
    return fn(np, *args)


def _check(got, want, dtype, atol):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (type(got), len(want))
        for g, w in zip(got, want):
            _check(g, w, dtype, atol)
        return
    assert isinstance(got, (xlapy.Array,)), type(got)
    assert got.dtype == np.dtype(DTYPES[dtype]), (got.dtype, dtype)
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "fc" and got.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=atol or 2e-6, atol=atol or 2e-6)
    else:
        np.testing.assert_array_equal(got, want.astype(got.dtype))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_numpy_jit(case):
    name, fn, args, dtype = case[:4]
    got = xlapy.jit(lambda *a: fn(xnp, *a))(*args)
    _check(got, _reference(case), dtype, TOLERANCE.get(name))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_numpy_eager(case):
    name, fn, args, dtype = case[:4]
    got = fn(xnp, *[xlapy.Array(a) for a in args])
    _check(got, _reference(case), dtype, TOLERANCE.get(name))
