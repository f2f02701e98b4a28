"""Autodiff rules, one table of HLO functions run through one harness (JAX's check_grads, on HLO).

Every entry is an f64 HLO module. For reverse mode, <vjp(ct), dx> must equal the central finite
difference of <ct, f(x)> along dx; for forward mode, jvp(x, dx) must equal the central difference of f.
Second order: the VJP computation is itself differentiated (grad of grad) and checked the same way.
The interpreter runs everything.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import xlapy
from xlapy.frontend.autodiff import computation_module, jvp_computation, vjp_computation
from xlapy.hlo import parse
from xlapy.testing import hlo_module

HELPERS = """
add { add_a = f64[] parameter(0)
  add_b = f64[] parameter(1)
  ROOT add_r = f64[] add(add_a, add_b) }
max { max_a = f64[] parameter(0)
  max_b = f64[] parameter(1)
  ROOT max_r = f64[] maximum(max_a, max_b) }
min { min_a = f64[] parameter(0)
  min_b = f64[] parameter(1)
  ROOT min_r = f64[] minimum(min_a, min_b) }
mul { mul_a = f64[] parameter(0)
  mul_b = f64[] parameter(1)
  ROOT mul_r = f64[] multiply(mul_a, mul_b) }
lt { lt_a = f64[] parameter(0)
  lt_b = f64[] parameter(1)
  ROOT lt_r = pred[] compare(lt_a, lt_b), direction=LT }
lt4 { lt4_a = f64[] parameter(0)
  lt4_b = f64[] parameter(1)
  lt4_c = f64[] parameter(2)
  lt4_d = f64[] parameter(3)
  ROOT lt4_r = pred[] compare(lt4_a, lt4_b), direction=LT }
argmax { am_v0 = f64[] parameter(0)
  am_i0 = s32[] parameter(1)
  am_v1 = f64[] parameter(2)
  am_i1 = s32[] parameter(3)
  am_ge = pred[] compare(am_v0, am_v1), direction=GE
  am_v = f64[] select(am_ge, am_v0, am_v1)
  am_i = s32[] select(am_ge, am_i0, am_i1)
  ROOT am_r = (f64[], s32[]) tuple(am_v, am_i) }
"""


def module(body: str, extra: str = "") -> str:
    # HELPERS' reducers are f64 under the plain names (add, max, ...), which hlo_module's reducers= cannot emit.
    return hlo_module(body, HELPERS, extra)


def unary(op: str, shape: str = "f64[2,3]") -> str:
    return module(f"x = {shape} parameter(0)\n ROOT y = {shape} {op}(x)")


def binary(op: str, shape: str = "f64[2,3]") -> str:
    return module(f"x = {shape} parameter(0)\n y = {shape} parameter(1)\n ROOT z = {shape} {op}(x, y)")


def conv(x: str, w: str, out: str, attrs: str) -> str:
    return module(f"x = {x} parameter(0)\n w = {w} parameter(1)\n ROOT c = {out} convolution(x, w), {attrs}")


def reduce_window(x: str, out: str, attrs: str, init: str = "0", reducer: str = "add") -> str:
    return module(f"x = {x} parameter(0)\n z = f64[] constant({init})\n"
                  f" ROOT r = {out} reduce-window(x, z), {attrs}, to_apply={reducer}")


BRANCHES = """
tb { tb_x = f64[3] parameter(0)
  tb_s = f64[3] sine(tb_x)
  ROOT tb_r = f64[3] multiply(tb_s, tb_x) }
fb { fb_x = f64[3] parameter(0)
  ROOT fb_r = f64[3] exponential(fb_x) }
b2 { b2_x = f64[3] parameter(0)
  ROOT b2_r = f64[3] tanh(b2_x) }
"""

FORI = """
body { p = (s32[], f64[3], f64[5,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  a = f64[3] get-tuple-element(p), index=1
  buf = f64[5,3] get-tuple-element(p), index=2
  s = f64[3] sine(a)
  k = f64[] constant(0.9)
  kb = f64[3] broadcast(k), dimensions={}
  ak = f64[3] multiply(a, kb)
  a1 = f64[3] add(ak, s)
  row = f64[1,3] reshape(a1)
  zero = s32[] constant(0)
  buf1 = f64[5,3] dynamic-update-slice(buf, row, i, zero)
  ROOT t = (s32[], f64[3], f64[5,3]) tuple(i1, a1, buf1) }
cond { cp = (s32[], f64[3], f64[5,3]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(ci, n), direction=LT }
"""

FORI_ENTRY = """x = f64[3] parameter(0)
 b = f64[5,3] parameter(1)
 c0 = s32[] constant(0)
 init = (s32[], f64[3], f64[5,3]) tuple(c0, x, b)
 w = (s32[], f64[3], f64[5,3]) while(init), condition=cond, body=body
 a = f64[3] get-tuple-element(w), index=1
 buf = f64[5,3] get-tuple-element(w), index=2
 ROOT out = (f64[3], f64[5,3]) tuple(a, buf)"""

# name -> (HLO text, {parameter index: fixed value} for the non-float parameters, positive inputs?)
CASES: dict[str, tuple] = {
    # elementwise unary
    **{op: (unary(op), {}, False) for op in ("exponential", "tanh", "logistic", "sine", "cosine", "negate", "abs",
                                              "erf", "exponential-minus-one", "floor")},
    **{op: (unary(op), {}, True) for op in ("log", "sqrt", "rsqrt", "log-plus-one", "cbrt", "tan")},
    # elementwise binary
    **{op: (binary(op), {}, False) for op in ("add", "subtract", "multiply", "atan2", "maximum", "minimum")},
    **{op: (binary(op), {}, True) for op in ("divide", "power", "remainder")},
    "select": (module("""x = f64[2,3] parameter(0)
 y = f64[2,3] parameter(1)
 p = pred[2,3] compare(x, y), direction=GT
 ROOT s = f64[2,3] select(p, y, x)"""), {}, False),
    "clamp_scalar_bounds": (module("""lo = f64[] parameter(0)
 x = f64[7] parameter(1)
 hi = f64[] parameter(2)
 ROOT c = f64[7] clamp(lo, x, hi)"""), {0: -0.5, 2: 0.6}, False),
    "clamp_array_bounds": (module("""lo = f64[4] parameter(0)
 x = f64[4] parameter(1)
 hi = f64[4] parameter(2)
 ROOT c = f64[4] clamp(lo, x, hi)"""), {0: np.array([-2., -.1, .2, -3.]), 2: np.array([2., .1, .3, -2.])}, False),
    "convert_roundtrip": (module("""x = f64[4] parameter(0)
 i = s32[4] convert(x)
 y = f64[4] convert(i)
 ROOT z = f64[4] multiply(x, y)"""), {}, False),
    # dot
    "dot_matmul": (module("""x = f64[3,4] parameter(0)
 y = f64[4,2] parameter(1)
 ROOT d = f64[3,2] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""), {}, False),
    "dot_batched_odd_dims": (module("""x = f64[4,2,3] parameter(0)
 y = f64[3,5,2] parameter(1)
 ROOT d = f64[2,4,5] dot(x, y), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={2}, rhs_contracting_dims={0}"""), {}, False),
    "dot_two_contracting": (module("""x = f64[3,4,2] parameter(0)
 y = f64[2,5,4] parameter(1)
 ROOT d = f64[3,5] dot(x, y), lhs_contracting_dims={1,2}, rhs_contracting_dims={2,0}"""), {}, False),
    "dot_outer": (module("""x = f64[3] parameter(0)
 y = f64[4] parameter(1)
 ROOT d = f64[3,4] dot(x, y)"""), {}, False),
    # convolution
    "conv_stride2_same": (conv("f64[1,5,5,2]", "f64[3,3,2,3]", "f64[1,3,3,3]",
                               "window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"), {}, False),
    "conv_rhs_dilation": (conv("f64[1,6,6,2]", "f64[2,2,2,2]", "f64[1,4,4,2]",
                               "window={size=2x2 rhs_dilate=2x2}, dim_labels=b01f_01io->b01f"), {}, False),
    "conv_lhs_dilation": (conv("f64[1,3,3,2]", "f64[3,3,2,2]", "f64[1,7,7,2]",
                               "window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f"), {}, False),
    "conv_depthwise": (conv("f64[1,5,5,3]", "f64[3,3,1,3]", "f64[1,5,5,3]",
                            "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=3"), {}, False),
    "conv_grouped": (conv("f64[2,4,4,4]", "f64[3,3,2,6]", "f64[2,4,4,6]",
                          "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2"), {}, False),
    "conv_nchw_stride": (conv("f64[2,3,5,5]", "f64[4,3,3,3]", "f64[2,4,2,2]",
                              "window={size=3x3 stride=2x2 pad=0_1x0_1}, dim_labels=bf01_oi01->bf01"), {}, False),
    "conv_1d": (conv("f64[2,9,3]", "f64[4,3,5]", "f64[2,5,5]",
                     "window={size=4 stride=2 pad=1_2}, dim_labels=b0f_0io->b0f"), {}, False),
    "conv_batch_group": (conv("f64[4,3,3,2]", "f64[2,2,2,4]", "f64[2,2,2,4]",
                              "window={size=2x2}, dim_labels=b01f_01io->b01f, batch_group_count=2"), {}, False),
    # reductions
    "reduce_sum": (module("""x = f64[3,4] parameter(0)
 z = f64[] parameter(1)
 ROOT r = f64[4] reduce(x, z), dimensions={0}, to_apply=add"""), {}, False),
    "reduce_max": (module("""x = f64[3,4] parameter(0)
 z = f64[] constant(-inf)
 ROOT r = f64[3] reduce(x, z), dimensions={1}, to_apply=max"""), {}, False),
    "reduce_min_all": (module("""x = f64[3,4] parameter(0)
 z = f64[] constant(inf)
 ROOT r = f64[] reduce(x, z), dimensions={0,1}, to_apply=min"""), {}, False),
    "reduce_prod": (module("""x = f64[3,4] parameter(0)
 z = f64[] constant(1)
 ROOT r = f64[4] reduce(x, z), dimensions={0}, to_apply=mul"""), {}, False),
    "argmax_value": (module("""x = f64[3,5] parameter(0)
 io = s32[3,5] iota(), iota_dimension=1
 ninf = f64[] constant(-inf)
 zero = s32[] constant(0)
 am = (f64[3], s32[3]) reduce(x, io, ninf, zero), dimensions={1}, to_apply=argmax
 v = f64[3] get-tuple-element(am), index=0
 i = s32[3] get-tuple-element(am), index=1
 fi = f64[3] convert(i)
 ROOT r = f64[3] multiply(v, fi)"""), {}, False),
    "softmax": (module("""x = f64[2,5] parameter(0)
 ninf = f64[] constant(-inf)
 m = f64[2] reduce(x, ninf), dimensions={1}, to_apply=max
 mb = f64[2,5] broadcast(m), dimensions={0}
 s = f64[2,5] subtract(x, mb)
 e = f64[2,5] exponential(s)
 zero = f64[] constant(0)
 se = f64[2] reduce(e, zero), dimensions={1}, to_apply=add
 sb = f64[2,5] broadcast(se), dimensions={0}
 ROOT p = f64[2,5] divide(e, sb)"""), {}, False),
    "max_pool_2x2": (reduce_window("f64[1,4,4,2]", "f64[1,2,2,2]", "window={size=1x2x2x1 stride=1x2x2x1}",
                                   "-inf", "max"), {}, False),
    "max_pool_3x3_same": (reduce_window("f64[5,5]", "f64[5,5]", "window={size=3x3 pad=1_1x1_1}", "-inf", "max"),
                          {}, False),
    "avg_pool_strided": (reduce_window("f64[5,5]", "f64[3,3]", "window={size=2x2 stride=2x2 pad=0_1x0_1}"), {}, False),
    "cumsum": (reduce_window("f64[6]", "f64[6]", "window={size=6 pad=5_0}"), {}, False),
    "window_sum_dilated": (reduce_window("f64[4,6]", "f64[7,3]",
                                         "window={size=2x2 stride=1x2 pad=1_0x0_1 lhs_dilate=2x1 rhs_dilate=1x2}"),
                           {}, False),
    # movement
    "broadcast_transpose_reshape": (module("""x = f64[2,3] parameter(0)
 b = f64[3,4,2] broadcast(x), dimensions={2,0}
 t = f64[4,2,3] transpose(b), dimensions={1,2,0}
 ROOT r = f64[8,3] reshape(t)"""), {}, False),
    "slice_strided": (module("""x = f64[7,5] parameter(0)
 ROOT s = f64[3,2] slice(x), slice={[1:7:2], [0:4:3]}"""), {}, False),
    "pad_interior_negative": (module("""x = f64[4,3] parameter(0)
 v = f64[] parameter(1)
 ROOT p = f64[9,6] pad(x, v), padding=1_-2_2x-1_2_1"""), {}, False),
    "concatenate_reverse": (module("""x = f64[2,3] parameter(0)
 y = f64[2,2] parameter(1)
 c = f64[2,5] concatenate(x, y), dimensions={1}
 ROOT r = f64[2,5] reverse(c), dimensions={0,1}"""), {}, False),
    "dynamic_slice": (module("""x = f64[6,4] parameter(0)
 i = s32[] parameter(1)
 j = s32[] constant(1)
 ROOT d = f64[3,2] dynamic-slice(x, i, j), dynamic_slice_sizes={3,2}"""), {1: np.int32(2)}, False),
    "dynamic_update_slice": (module("""x = f64[6,4] parameter(0)
 u = f64[2,4] parameter(1)
 i = s32[] parameter(2)
 j = s32[] constant(0)
 ROOT d = f64[6,4] dynamic-update-slice(x, u, i, j)"""), {2: np.int32(3)}, False),
    "gather_take": (module("""x = f64[5,3] parameter(0)
 idx = s32[4] parameter(1)
 ROOT g = f64[4,3] gather(x, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}"""),
                    {1: np.array([3, 0, 3, 1], np.int32)}, False),
    "scatter_add": (module("""x = f64[5,3] parameter(0)
 idx = s32[4] parameter(1)
 u = f64[4,3] parameter(2)
 ROOT s = f64[5,3] scatter(x, idx, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add"""),
                    {1: np.array([3, 0, 3, 1], np.int32)}, False),
    "sort": (module("""x = f64[3,5] parameter(0)
 ROOT s = f64[3,5] sort(x), dimensions={1}, to_apply=lt"""), {}, False),
    "sort_key_value": (module("""k = f64[6] parameter(0)
 v = f64[6] parameter(1)
 ROOT s = (f64[6], f64[6]) sort(k, v), dimensions={0}, to_apply=lt4"""), {}, False),
    "topk": (module("""x = f64[3,8] parameter(0)
 ROOT t = (f64[3,3], s32[3,3]) topk(x), k=3, largest=true"""), {}, False),
    # control flow
    "conditional_pred": (module("""p = pred[] parameter(0)
 x = f64[3] parameter(1)
 ROOT c = f64[3] conditional(p, x, x), true_computation=tb, false_computation=fb""", BRANCHES),
                         {0: np.bool_(True)}, False),
    "conditional_pred_false": (module("""p = pred[] parameter(0)
 x = f64[3] parameter(1)
 ROOT c = f64[3] conditional(p, x, x), true_computation=tb, false_computation=fb""", BRANCHES),
                               {0: np.bool_(False)}, False),
    "conditional_index": (module("""i = s32[] parameter(0)
 x = f64[3] parameter(1)
 y = f64[3] parameter(2)
 ROOT c = f64[3] conditional(i, x, y, x), branch_computations={tb, fb, b2}""", BRANCHES),
                          {0: np.int32(1)}, False),
    "fori_while_dus": (module(FORI_ENTRY, FORI), {}, False),
    "tuple_result": (module("""x = f64[3] parameter(0)
 y = f64[3] parameter(1)
 s = f64[3] sine(x)
 m = f64[3] multiply(x, y)
 ROOT t = (f64[3], f64[3]) tuple(s, m)"""), {}, False),
    # complex values inside (real in, real out): real, imag, complex, abs of complex, convert, fft
    "complex_real_imag_abs": (module("""x = f64[2,3] parameter(0)
 y = f64[2,3] parameter(1)
 z = c128[2,3] complex(x, y)
 zz = c128[2,3] multiply(z, z)
 e = c128[2,3] exponential(zz)
 a = f64[2,3] abs(e)
 r = f64[2,3] real(zz)
 i = f64[2,3] imag(e)
 ri = f64[2,3] multiply(r, i)
 ROOT s = f64[2,3] add(a, ri)"""), {}, False),
    "fft_fft_ifft": (module("""x = f64[2,3,4] parameter(0)
 y = f64[2,3,4] parameter(1)
 z = c128[2,3,4] complex(x, y)
 f = c128[2,3,4] fft(z), fft_type=FFT, fft_length={3,4}
 ff = c128[2,3,4] multiply(f, z)
 g = c128[2,3,4] fft(ff), fft_type=IFFT, fft_length={4}
 r = f64[2,3,4] real(g)
 i = f64[2,3,4] imag(g)
 ROOT t = (f64[2,3,4], f64[2,3,4]) tuple(r, i)"""), {}, False),
    "fft_rfft_even": (module("""x = f64[3,6] parameter(0)
 c = c128[3,6] convert(x)
 f = c128[3,6] fft(c), fft_type=FFT, fft_length={6}
 r = c128[3,4] fft(x), fft_type=RFFT, fft_length={6}
 fr = f64[3,6] real(f)
 a = f64[3,4] abs(r)
 ROOT t = (f64[3,6], f64[3,4]) tuple(fr, a)"""), {}, False),
    "fft_rfft_odd_2d": (module("""x = f64[2,3,5] parameter(0)
 r = c128[2,3,3] fft(x), fft_type=RFFT, fft_length={3,5}
 rr = c128[2,3,3] multiply(r, r)
 re = f64[2,3,3] real(rr)
 im = f64[2,3,3] imag(r)
 ROOT t = (f64[2,3,3], f64[2,3,3]) tuple(re, im)"""), {}, False),
    "fft_irfft_even": (module("""x = f64[3,4] parameter(0)
 y = f64[3,4] parameter(1)
 z = c128[3,4] complex(x, y)
 r = f64[3,6] fft(z), fft_type=IRFFT, fft_length={6}
 ROOT s = f64[3,6] sine(r)"""), {}, False),
    "fft_irfft_odd_2d": (module("""x = f64[2,3,3] parameter(0)
 y = f64[2,3,3] parameter(1)
 z = c128[2,3,3] complex(x, y)
 r = f64[2,3,5] fft(z), fft_type=IRFFT, fft_length={3,5}
 ROOT s = f64[2,3,5] multiply(r, r)"""), {}, False),
}

SECOND_ORDER = ["tanh", "divide", "dot_batched_odd_dims", "softmax", "conv_stride2_same", "conv_grouped",
                "max_pool_2x2", "avg_pool_strided", "gather_take", "sort", "conditional_pred", "fori_while_dus",
                "reduce_max", "pad_interior_negative", "topk", "scatter_add", "complex_real_imag_abs", "fft_fft_ifft",
                "fft_rfft_odd_2d", "fft_irfft_even"]


# -- harness ---------------------------------------------------------------------------------------------------
def run(mod, comp, *args):
    return xlapy.compile(computation_module(mod, comp), backend="interpreter")(*args)


def leaves(x):
    if isinstance(x, tuple):
        return [leaf for e in x for leaf in leaves(e)]
    return [np.asarray(x)]


def is_float_array(a) -> bool:
    return np.asarray(a).dtype.kind == "f"


def make_args(mod, fixed, positive, rng):
    args = []
    for i, p in enumerate(mod.entry.parameters):
        if i in fixed:
            args.append(np.asarray(fixed[i], dtype=p.shape.dtype))
        else:
            a = rng.standard_normal(p.shape.dims)
            args.append(np.abs(a) + 0.5 if positive else a)
    return args


def float_params(args):
    return [i for i, a in enumerate(args) if is_float_array(a)]


def directional(f, args, wrt, dirs, eps=1e-6):
    plus = list(args)
    minus = list(args)
    for i, d in zip(wrt, dirs):
        plus[i] = args[i] + eps * d
        minus[i] = args[i] - eps * d
    return [(p - m) / (2 * eps) for p, m in zip(leaves(f(*plus)), leaves(f(*minus)))]


def check_vjp(mod, comp, args, rng, wrt=None):
    """<vjp(ct), dx> == d/de <ct, f(x + e dx)>; returns the vjp computation."""
    wrt = float_params(args) if wrt is None else wrt
    vjp = vjp_computation(mod, comp, wrt)
    f = lambda *a: run(mod, comp, *a)
    primal = f(*args)
    cts = [rng.standard_normal(o.shape) if is_float_array(o) else np.zeros_like(o) for o in leaves(primal)]
    out = run(mod, vjp, *args, *cts)
    for got, want in zip(leaves(out[0]), leaves(primal)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    dirs = [rng.standard_normal(args[i].shape) for i in wrt]
    fd = sum(float(np.sum(c * d)) for c, d in zip(cts, directional(f, args, wrt, dirs)))
    ad = sum(float(np.sum(g * d)) for g, d in zip(out[1:], dirs))
    assert np.isclose(ad, fd, rtol=1e-6, atol=1e-6), f"VJP {ad} vs finite difference {fd}"
    return vjp, args + cts


def check_jvp(mod, comp, args, rng):
    jvp = jvp_computation(mod, comp)
    wrt = float_params(args)
    tangents = [rng.standard_normal(a.shape) if is_float_array(a) else np.zeros_like(a) for a in args]
    primal, tangent = run(mod, jvp, *args, *tangents)
    want = run(mod, comp, *args)
    for got, w in zip(leaves(primal), leaves(want)):
        np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-12)
    fd = directional(lambda *a: run(mod, comp, *a), args, wrt, [tangents[i] for i in wrt])
    for got, w in zip(leaves(tangent), fd):
        if is_float_array(got):
            np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-6)


def load(name):
    text, fixed, positive = CASES[name]
    mod = parse(text)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    return mod, make_args(mod, fixed, positive, rng), rng


@pytest.mark.parametrize("name", list(CASES))
def test_vjp_matches_finite_differences(name):
    mod, args, rng = load(name)
    check_vjp(mod, mod.entry, args, rng)


@pytest.mark.parametrize("name", list(CASES))
def test_jvp_matches_finite_differences(name):
    mod, args, rng = load(name)
    check_jvp(mod, mod.entry, args, rng)


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_grad_of_grad(name):
    mod, args, rng = load(name)
    vjp, vjp_args = check_vjp(mod, mod.entry, args, rng)
    # differentiate the VJP computation (w.r.t. the first float input) and check it the same way
    check_vjp(mod, vjp, vjp_args, rng, wrt=[float_params(args)[0]])


@pytest.mark.parametrize("name", ["tanh", "softmax", "max_pool_2x2", "conv_grouped", "sort", "fori_while_dus"])
def test_forward_over_reverse(name):
    mod, args, rng = load(name)
    vjp, vjp_args = check_vjp(mod, mod.entry, args, rng)
    check_jvp(mod, vjp, vjp_args, rng)
