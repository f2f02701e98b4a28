"""Interpreter: dot, convolution and the batch norms, as HLO text against numpy references."""
import itertools

import ml_dtypes
import numpy as np
import pytest

import xlapy
from xlapy.hlo.attrs import ConvDimensionNumbers, Window
from xlapy.testing import CONV_CASES, hlo_module   # CONV_CASES: shared with the CPU backend's conv tests

RNG = np.random.default_rng(0)


def run(text: str, *args):
    return xlapy.compile(xlapy.hlo.parse(text), backend="interpreter", verify=False)(*args)


# -- dot ------------------------------------------------------------------------------------------

def _rand(shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return RNG.integers(info.min, int(info.max) + 1, size=shape, dtype=np.int64).astype(dt)
    return RNG.standard_normal(shape).astype(dt)


# (lhs shape/type, rhs shape/type, result type, dims attributes, numpy expectation on wide values)
DOT_CASES = [
    ("f32[3,4]", "f32[4,5]", "f32[3,5]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
     lambda a, b: a @ b),
    ("f32[2,3,4]", "f32[2,4,5]", "f32[2,3,5]",
     "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}",
     lambda a, b: a @ b),
    ("f32[4]", "f32[4,6]", "f32[6]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}", lambda a, b: a @ b),
    ("f32[4]", "f32[4]", "f32[]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}", lambda a, b: a @ b),
    ("f32[4,3]", "f32[5,4]", "f32[3,5]", "lhs_contracting_dims={0}, rhs_contracting_dims={1}",
     lambda a, b: a.T @ b.T),
    ("f64[2,3,4,5]", "f64[4,2,5,6]", "f64[2,3,6]",
     "lhs_batch_dims={0}, lhs_contracting_dims={2,3}, rhs_batch_dims={1}, rhs_contracting_dims={0,2}",
     lambda a, b: np.einsum("bmkl,kbln->bmn", a, b)),
    ("f32[3,2,4]", "f32[4,3]", "f32[3,2,3]", "lhs_contracting_dims={2}, rhs_contracting_dims={0}",
     lambda a, b: np.einsum("ijk,kl->ijl", a, b)),
    ("f32[3,2]", "f32[4,5]", "f32[3,2,4,5]", "lhs_contracting_dims={}, rhs_contracting_dims={}",
     lambda a, b: np.einsum("ij,kl->ijkl", a, b)),
    ("s32[3,4]", "s32[4,5]", "s32[3,5]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
     lambda a, b: (a @ b).astype(np.int32)),                    # wraps around in s32
    ("u8[3,7]", "u8[7,2]", "u8[3,2]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
     lambda a, b: (a @ b).astype(np.uint8)),
    ("s8[3,7]", "s8[7,2]", "s32[3,2]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
     lambda a, b: (a @ b).astype(np.int32)),
    ("u8[3,7]", "s8[7,2]", "s32[3,2]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
     lambda a, b: (a @ b).astype(np.int32)),
]

_TYPES = {"f32": np.float32, "f64": np.float64, "s32": np.int32, "u8": np.uint8, "s8": np.int8,
          "bf16": ml_dtypes.bfloat16, "f16": np.float16}


def _parse_shape(s):
    t, dims = s[:-1].split("[")
    return _TYPES[t], tuple(int(d) for d in dims.split(",") if d)


@pytest.mark.parametrize("lhs, rhs, out, dims, ref", DOT_CASES, ids=[c[3][:40] + c[0] for c in DOT_CASES])
def test_dot(lhs, rhs, out, dims, ref):
    (lt, ls), (rt, rs), (ot, _) = _parse_shape(lhs), _parse_shape(rhs), _parse_shape(out)
    a, b = _rand(ls, lt), _rand(rs, rt)
    text = hlo_module(f"ROOT r = {out} dot(p0, p1), {dims}", params=[lhs, rhs])
    got = run(text, a, b)
    wide = np.int64 if np.dtype(ot).kind in "iu" else np.float64
    want = np.asarray(ref(a.astype(wide), b.astype(wide))).astype(ot)
    assert got.dtype == np.dtype(ot) and got.shape == want.shape
    if np.dtype(ot).kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_dot_bf16_computes_in_f32_and_rounds_once():
    a = RNG.standard_normal((4, 33)).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal((33, 3)).astype(ml_dtypes.bfloat16)
    text = hlo_module("ROOT r = bf16[4,3] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                      params=["bf16[4,33]", "bf16[33,3]"])
    got = run(text, a, b)
    assert got.dtype == ml_dtypes.bfloat16
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_dot_f16_operands_to_f32_result():
    a, b = _rand((2, 5), np.float16), _rand((5, 3), np.float16)
    text = hlo_module("ROOT r = f32[2,3] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                      params=["f16[2,5]", "f16[5,3]"])
    got = run(text, a, b)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-6)


# -- convolution ----------------------------------------------------------------------------------

def naive_conv(lhs, rhs, labels, window, fgc=1, bgc=1):
    """XLA's convolution semantics, one output element and one kernel tap at a time."""
    dn, wdims = ConvDimensionNumbers.parse(labels), Window.parse(window).dims
    ins = [lhs.shape[d] for d in dn.input_spatial]
    ks = [rhs.shape[d] for d in dn.kernel_spatial]
    outs = []
    for s, k, w in zip(ins, ks, wdims):
        padded = ((s - 1) * w.base_dilation + 1 if s else 0) + w.padding_low + w.padding_high
        extent = (k - 1) * w.window_dilation + 1
        outs.append((padded - extent) // w.stride + 1 if padded >= extent else 0)
    nb, c, o = lhs.shape[dn.input_batch] // bgc, lhs.shape[dn.input_feature], rhs.shape[dn.kernel_output_feature]
    shape = [0] * lhs.ndim
    shape[dn.output_batch], shape[dn.output_feature] = nb, o
    for i, d in enumerate(dn.output_spatial):
        shape[d] = outs[i]
    out = np.zeros(shape)
    cg, og, ob = c // fgc, o // fgc, o // bgc
    for b, f, osp in itertools.product(range(nb), range(o), itertools.product(*map(range, outs))):
        total = 0.0
        for ksp in itertools.product(*map(range, ks)):
            pos = []
            for i, w in enumerate(wdims):
                u = osp[i] * w.stride - w.padding_low + ksp[i] * w.window_dilation
                if u % w.base_dilation or not 0 <= u // w.base_dilation < ins[i]:
                    break
                pos.append(u // w.base_dilation)
            else:
                tap = [w.size - 1 - ksp[i] if w.window_reversal else ksp[i] for i, w in enumerate(wdims)]
                for ci in range(cg):
                    li = [0] * lhs.ndim
                    li[dn.input_batch], li[dn.input_feature] = b + (f // ob) * nb, (f // og) * cg + ci
                    ri = [0] * lhs.ndim
                    ri[dn.kernel_output_feature], ri[dn.kernel_input_feature] = f, ci
                    for i in range(len(wdims)):
                        li[dn.input_spatial[i]], ri[dn.kernel_spatial[i]] = pos[i], tap[i]
                    total += float(lhs[tuple(li)]) * float(rhs[tuple(ri)])
        oi = [0] * lhs.ndim
        oi[dn.output_batch], oi[dn.output_feature] = b, f
        for i, d in enumerate(dn.output_spatial):
            oi[d] = osp[i]
        out[tuple(oi)] = total
    return out


def _shape_text(t, shape):
    return f"{t}[{','.join(map(str, shape))}]"




@pytest.mark.parametrize("ls, rs, labels, window, fgc, bgc", CONV_CASES,
                         ids=[f"{c[2]}{c[3]}g{c[4]}b{c[5]}" for c in CONV_CASES])
def test_convolution_matches_naive_reference(ls, rs, labels, window, fgc, bgc):
    lhs, rhs = _rand(ls, np.float32), _rand(rs, np.float32)
    want = naive_conv(lhs, rhs, labels, window, fgc, bgc)
    win = "" if window == "{}" else f"window={window}, "
    text = hlo_module(f"ROOT r = {_shape_text('f32', want.shape)} convolution(p0, p1), {win}dim_labels={labels}, "
                      f"feature_group_count={fgc}, batch_group_count={bgc}",
                      params=[_shape_text("f32", ls), _shape_text("f32", rs)])
    got = run(text, lhs, rhs)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_convolution_integer_wraps_in_result_type():
    lhs = RNG.integers(-128, 128, (1, 5, 5, 3)).astype(np.int8)
    rhs = RNG.integers(-128, 128, (3, 3, 3, 2)).astype(np.int8)
    want = naive_conv(lhs, rhs, "b01f_01io->b01f", "{size=3x3}").astype(np.int64)
    text = hlo_module("ROOT r = s8[1,3,3,2] convolution(p0, p1), window={size=3x3}, dim_labels=b01f_01io->b01f",
                      params=["s8[1,5,5,3]", "s8[3,3,3,2]"])
    np.testing.assert_array_equal(run(text, lhs, rhs), want.astype(np.int8))
    text32 = text.replace("s8[1,3,3,2]", "s32[1,3,3,2]")
    np.testing.assert_array_equal(run(text32, lhs, rhs), want.astype(np.int32))


def test_convolution_bf16():
    lhs = RNG.standard_normal((1, 6, 6, 4)).astype(ml_dtypes.bfloat16)
    rhs = RNG.standard_normal((3, 3, 4, 5)).astype(ml_dtypes.bfloat16)
    want = naive_conv(lhs, rhs, "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}")
    text = hlo_module("ROOT r = bf16[1,6,6,5] convolution(p0, p1), window={size=3x3 pad=1_1x1_1}, "
                      "dim_labels=b01f_01io->b01f", params=["bf16[1,6,6,4]", "bf16[3,3,4,5]"])
    got = run(text, lhs, rhs)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=1e-2)


def test_convolution_mobilenet_sized_is_fast():
    stem = hlo_module("ROOT r = f32[1,112,112,32] convolution(p0, p1), window={size=3x3 stride=2x2 pad=0_1x0_1}, "
                      "dim_labels=b01f_01io->b01f", params=["f32[1,224,224,3]", "f32[3,3,3,32]"])
    depthwise = hlo_module("ROOT r = f32[1,112,112,32] convolution(p0, p1), window={size=3x3 pad=1_1x1_1}, "
                           "dim_labels=b01f_01io->b01f, feature_group_count=32",
                           params=["f32[1,112,112,32]", "f32[3,3,1,32]"])
    x, k = _rand((1, 224, 224, 3), np.float32), _rand((3, 3, 3, 32), np.float32)
    y, kd = _rand((1, 112, 112, 32), np.float32), _rand((3, 3, 1, 32), np.float32)
    out = run(stem, x, k)
    dw = run(depthwise, y, kd)
    np.testing.assert_allclose(out[0, 5, 7], np.einsum("hwc,hwco->o", x[0, 10:13, 14:17], k), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw[0, 5, 7], np.einsum("hwc,hwc->c", y[0, 4:7, 6:9], kd[:, :, 0]), rtol=1e-4, atol=1e-4)


# -- batch norms ----------------------------------------------------------------------------------

def _bcast(v, fi, rank):
    shape = [1] * rank
    shape[fi] = -1
    return v.reshape(shape)


@pytest.mark.parametrize("fi", [1, 3])
def test_batch_norm_training(fi):
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    c = x.shape[fi]
    scale, offset = RNG.standard_normal(c).astype(np.float32), RNG.standard_normal(c).astype(np.float32)
    axes = tuple(d for d in range(4) if d != fi)
    text = hlo_module(f"""
        x = f32[2,3,4,5] parameter(0)
        s = f32[{c}] parameter(1)
        o = f32[{c}] parameter(2)
        ROOT r = (f32[2,3,4,5], f32[{c}], f32[{c}]) batch-norm-training(x, s, o), epsilon=0.001, feature_index={fi}""")
    out, mean, var = run(text, x, scale, offset)
    np.testing.assert_allclose(mean, x.mean(axis=axes), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, x.var(axis=axes), rtol=1e-4, atol=1e-5)   # biased
    want = (x - _bcast(x.mean(axis=axes), fi, 4)) / np.sqrt(_bcast(x.var(axis=axes), fi, 4) + 0.001)
    want = want * _bcast(scale, fi, 4) + _bcast(offset, fi, 4)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_batch_norm_inference():
    x = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    s, o, m = (RNG.standard_normal(3).astype(np.float32) for _ in range(3))
    v = RNG.random(3).astype(np.float32) + 0.5
    text = hlo_module("""
        x = f32[4,3,2] parameter(0)
        s = f32[3] parameter(1)
        o = f32[3] parameter(2)
        m = f32[3] parameter(3)
        v = f32[3] parameter(4)
        ROOT r = f32[4,3,2] batch-norm-inference(x, s, o, m, v), epsilon=0.01, feature_index=1""")
    b = lambda t: t.reshape(1, 3, 1)  # noqa: E731
    want = (x - b(m)) / np.sqrt(b(v) + 0.01) * b(s) + b(o)
    np.testing.assert_allclose(run(text, x, s, o, m, v), want, rtol=1e-5, atol=1e-5)


def test_batch_norm_grad_matches_numeric_gradient_formula():
    x = RNG.standard_normal((3, 4, 2)).astype(np.float64)
    gy = RNG.standard_normal((3, 4, 2))
    scale = RNG.standard_normal(2)
    mean, var = x.mean(axis=(0, 1)), x.var(axis=(0, 1))
    eps = 0.001
    text = hlo_module(f"""
        x = f64[3,4,2] parameter(0)
        s = f64[2] parameter(1)
        m = f64[2] parameter(2)
        v = f64[2] parameter(3)
        g = f64[3,4,2] parameter(4)
        ROOT r = (f64[3,4,2], f64[2], f64[2]) batch-norm-grad(x, s, m, v, g), epsilon={eps}, feature_index=2""")
    gx, gs, go = run(text, x, scale, mean, var, gy)
    # Reference: the gradient of y = (x - mean(x)) / sqrt(var(x) + eps) * scale + offset (numpy autodiff by hand).
    n = 12
    xhat = (x - mean) / np.sqrt(var + eps)
    want_gs = (gy * xhat).sum(axis=(0, 1))
    want_gx = scale / np.sqrt(var + eps) / n * (n * gy - gy.sum(axis=(0, 1)) - xhat * want_gs)
    np.testing.assert_allclose(go, gy.sum(axis=(0, 1)), rtol=1e-10)
    np.testing.assert_allclose(gs, want_gs, rtol=1e-10)
    np.testing.assert_allclose(gx, want_gx, rtol=1e-9, atol=1e-12)


# -- cholesky, triangular-solve, fft --------------------------------------------------------------

def _spd(n):
    m = RNG.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


@pytest.mark.parametrize("lower", ["true", "false"])
def test_cholesky(lower):
    a = _spd(4)
    text = hlo_module(f"ROOT r = f64[4,4] cholesky(p0), lower={lower}", params=["f64[4,4]"])
    got = run(text, a)
    if lower == "true":
        np.testing.assert_allclose(got @ got.T, a, rtol=1e-10)
        np.testing.assert_array_equal(got, np.tril(got))
    else:
        np.testing.assert_allclose(got.T @ got, a, rtol=1e-10)
        np.testing.assert_array_equal(got, np.triu(got))


@pytest.mark.parametrize("left, lower, unit, trans", [
    ("true", "true", "false", "NO_TRANSPOSE"), ("false", "true", "false", "NO_TRANSPOSE"),
    ("true", "false", "true", "TRANSPOSE"), ("false", "false", "false", "TRANSPOSE")])
def test_triangular_solve(left, lower, unit, trans):
    a = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
    b = RNG.standard_normal((4, 3) if left == "true" else (3, 4))
    b_shape = f"f64[{b.shape[0]},{b.shape[1]}]"
    text = hlo_module(f"ROOT r = {b_shape} triangular-solve(p0, p1), left_side={left}, lower={lower}, "
                      f"unit_diagonal={unit}, transpose_a={trans}", params=["f64[4,4]", b_shape])
    x = run(text, a, b)
    t = np.tril(a) if lower == "true" else np.triu(a)
    if unit == "true":
        np.fill_diagonal(t, 1)
    if trans == "TRANSPOSE":
        t = t.T
    np.testing.assert_allclose(t @ x if left == "true" else x @ t, b, rtol=1e-9, atol=1e-12)


def test_fft_kinds():
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    c = (x + 1j * RNG.standard_normal((2, 8))).astype(np.complex64)
    cases = [("FFT", "c64[2,8]", c, "c64[2,8]", np.fft.fft(c)), ("IFFT", "c64[2,8]", c, "c64[2,8]", np.fft.ifft(c)),
             ("RFFT", "f32[2,8]", x, "c64[2,5]", np.fft.rfft(x)),
             ("IRFFT", "c64[2,5]", np.fft.rfft(x).astype(np.complex64), "f32[2,8]", x)]
    for kind, in_shape, arg, out_shape, want in cases:
        text = hlo_module(f"ROOT r = {out_shape} fft(p0), fft_type={kind}, fft_length={{8}}", params=[in_shape])
        got = run(text, arg)
        assert got.dtype == want.astype(got.dtype).dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
