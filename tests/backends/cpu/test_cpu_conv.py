"""Convolution on the CPU backend against the interpreter: every dim_labels / window / group configuration on
the direct loop nest, the im2col + GEMM path for big float ones, element types, layouts."""
import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import runtime
from xlapy.testing import CONV_CASES, assert_same

RNG = np.random.default_rng(0)


def _rand(shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return RNG.integers(max(info.min, -100), min(info.max, 100) + 1, size=shape).astype(dt)
    return RNG.standard_normal(shape).astype(dt)


def _dims(shape):
    return ",".join(map(str, shape))


def conv_module(lt, ls, rt, rs, ot, os_, attrs, lhs_layout="", rhs_layout="", out_layout="") -> str:
    return (f"HloModule m\nENTRY e {{\n  a = {lt}[{_dims(ls)}]{lhs_layout} parameter(0)\n"
            f"  b = {rt}[{_dims(rs)}]{rhs_layout} parameter(1)\n"
            f"  ROOT r = {ot}[{_dims(os_)}]{out_layout} convolution(a, b), {attrs}\n}}\n")


def _out_shape(ls, rs, labels, window, fgc, bgc):
    """The result dims, from the verifier's shape inference."""
    from xlapy.hlo.attrs import ConvDimensionNumbers, Window
    dn = ConvDimensionNumbers.parse(labels)
    wd = Window.parse(window).dims if window != "{}" else ()
    out = [0] * len(ls)
    out[dn.output_batch] = ls[dn.input_batch] // bgc
    out[dn.output_feature] = rs[dn.kernel_output_feature]
    for i, w in enumerate(wd):
        size = ls[dn.input_spatial[i]]
        dilated = (size - 1) * w.base_dilation + 1 + w.padding_low + w.padding_high
        extent = (w.size - 1) * w.window_dilation + 1
        out[dn.output_spatial[i]] = max((dilated - extent) // w.stride + 1, 0) if dilated >= extent else 0
    return out


def _attrs(labels, window, fgc, bgc):
    win = "" if window == "{}" else f"window={window}, "
    return f"{win}dim_labels={labels}, feature_group_count={fgc}, batch_group_count={bgc}"


# (lhs dims, rhs dims, dim_labels, window, feature_group_count, batch_group_count): the interpreter's table
# (xlapy.testing.CONV_CASES) plus cases that exercise the CPU backend's own paths
CASES = [*CONV_CASES,
    ((1, 5, 5, 2), (4, 4, 2, 3), "b01f_01io->b01f", "{size=4x4 pad=-1_-1x0_0 rhs_reversal=1x1}", 1, 1),
    ((1, 6, 6, 4), (3, 3, 4, 1), "b01f_01oi->b01f", "{size=3x3 pad=1_1x1_1 rhs_dilate=2x2}", 4, 1),
    # big enough for im2col + GEMM
    ((2, 12, 12, 16), (3, 3, 16, 32), "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}", 1, 1),
    ((2, 16, 13, 11), (24, 16, 3, 3), "bf01_oi01->bf01", "{size=3x3 stride=2x1 pad=1_0x0_2 rhs_reversal=0x1}", 1, 1),
    ((1, 20, 20, 64), (1, 1, 64, 64), "b01f_01io->b01f", "{size=1x1}", 1, 1),                # pointwise
    ((2, 64, 9, 9), (48, 64, 1, 1), "bf01_oi01->bf01", "{size=1x1}", 1, 1),
    ((1, 10, 10, 32), (3, 3, 32, 40), "b01f_01io->b01f", "{size=3x3 pad=2_2x2_2 lhs_dilate=2x2}", 1, 1),
    ((2, 20, 24), (5, 24, 40), "b0f_0io->b0f", "{size=5 pad=2_2}", 1, 1),
    # 8-32 output features (conv_vector.py): a stem, feature tails, an unrolled and a looped last dim, 3-D
    ((2, 19, 21, 3), (7, 7, 3, 16), "b01f_01io->b01f", "{size=7x7 stride=2x2 pad=3_3x3_2}", 1, 1),
    ((2, 30, 5), (9, 5, 12), "b0f_0io->b0f", "{size=9 pad=4_4 rhs_dilate=2}", 1, 1),
    ((1, 6, 7, 9), (2, 3, 9, 24), "b01f_01io->b01f", "{size=2x3 stride=1x2 pad=0_1x1_1}", 1, 1),
    ((1, 4, 5, 6, 3), (2, 2, 3, 3, 8), "b012f_012io->b012f", "{size=2x2x3 pad=1_0x0_1x1_1}", 1, 1),
    # depthwise (conv_depthwise_forward.py): channel tails, stride, asymmetric padding, blocks and edges, 1-D
    DEPTHWISE := ((2, 9, 20, 11), (3, 3, 1, 11), "b01f_01io->b01f", "{size=3x3 stride=2x2 pad=1_1x0_1}", 11, 1),
    ((2, 30, 16), (5, 1, 16), "b0f_0io->b0f", "{size=5 pad=2_2 rhs_dilate=2}", 16, 1),
    # depthwise filter gradients (conv_depthwise.py): channel tails, strides, rhs dilation, Q blocks, 1-D
    DEPTHWISE_FILTER_GRAD := ((2, 9, 9, 13), (2, 9, 9, 13), "f01b_i01o->01bf", "{size=9x9 pad=1_1x1_1}", 1, 13),
    ((2, 8, 8, 20), (2, 4, 4, 20), "f01b_i01o->01bf", "{size=4x4 pad=1_0x1_0 rhs_dilate=2x2}", 1, 20),
    DEPTHWISE_FILTER_GRAD_1D := ((3, 11, 16), (3, 5, 16), "f0b_i0o->0bf", "{size=5 stride=2 pad=2_1}", 1, 16),
    ((1, 7, 7, 8), (1, 7, 7, 8), "f01b_i01o->01bf", "{size=7x7 pad=2_2x2_2}", 1, 8),
    # filter gradients through the GEMM's filter-gradient arrangement (conv_gemm.py): patches, none, strided
    ((4, 12, 12, 16), (4, 12, 12, 24), "f01b_i01o->01bf", "{size=12x12 pad=1_1x1_1}", 1, 1),
    ((4, 10, 10, 32), (4, 10, 10, 48), "f01b_i01o->01bf", "{size=10x10}", 1, 1),
    ((2, 16, 16, 16), (2, 8, 8, 32), "f01b_i01o->01bf", "{size=8x8 pad=1_0x1_0 rhs_dilate=2x2}", 1, 1),
    ((4, 16, 16, 3), (4, 8, 8, 8), "f01b_i01o->01bf", "{size=8x8 pad=3_2x3_2 rhs_dilate=2x2}", 1, 1),   # M-major
    # filter gradients with at most 32 features (conv_filter_gradient.py): a stem, feature tails, 1-D, 3-D
    FILTER_GRAD_STEM := ((4, 19, 21, 3), (4, 10, 11, 16), "f01b_i01o->01bf", "{size=10x11 pad=3_3x3_2 rhs_dilate=2x2}",
                         1, 1),
    FILTER_GRAD_STEM_8 := ((8, 19, 21, 3), (8, 10, 11, 16), "f01b_i01o->01bf",      # threads' chunks: 1-2 images
                           "{size=10x11 pad=3_3x3_2 rhs_dilate=2x2}", 1, 1),
    FILTER_GRAD_TAILS := ((3, 9, 9, 5), (3, 9, 9, 13), "f01b_i01o->01bf", "{size=9x9 pad=1_1x1_1}", 1, 1),
    ((2, 70, 6), (2, 68, 20), "f0b_i0o->0bf", "{size=68 pad=1_1}", 1, 1),
    ((2, 6, 7, 8, 2), (2, 5, 5, 4, 8), "f012b_i012o->012bf", "{size=5x5x4 pad=1_0x0_1x1_1}", 1, 1),
    # 48 features with short sums (conv_vector.py's WIDE_FEATURES)
    ((2, 9, 10, 16), (1, 1, 16, 48), "b01f_01io->b01f", "{size=1x1}", 1, 1),
    # input gradients with the forward kernel read in place (GEMM, B transposed)
    INPUT_GRAD_1X1 := ((2, 5, 6, 72), (1, 1, 80, 72), "b01f_01oi->b01f", "{size=1x1}", 1, 1),
    INPUT_GRAD_3X3 := ((1, 6, 5, 72), (3, 3, 80, 72), "b01f_01oi->b01f", "{size=3x3 pad=1_1x1_1 rhs_reversal=1x1}",
                       1, 1),
]


@pytest.mark.parametrize("ls, rs, labels, window, fgc, bgc", CASES,
                         ids=[f"{c[2]}{c[3]}g{c[4]}b{c[5]}".replace(" ", "_") for c in CASES])
def test_convolution_f32(cpu, ls, rs, labels, window, fgc, bgc):
    out = _out_shape(ls, rs, labels, window, fgc, bgc)
    text = conv_module("f32", ls, "f32", rs, "f32", out, _attrs(labels, window, fgc, bgc))
    cpu.check(text, _rand(ls, np.float32), _rand(rs, np.float32), rtol=1e-4)


@pytest.mark.parametrize("lt, rt, ot", [("bf16", "bf16", "bf16"), ("f16", "f16", "f16"), ("f64", "f64", "f64"),
                                        ("s32", "s32", "s32"), ("s8", "s8", "s32"), ("u8", "u8", "u8"),
                                        ("bf16", "bf16", "f32")])
def test_convolution_types(cpu, lt, rt, ot):
    dt = cpu.DTYPES
    for ls, rs, labels, window, fgc, bgc in (CASES[1], CASES[3], CASES[6], CASES[8], CASES[16]):
        out = _out_shape(ls, rs, labels, window, fgc, bgc)
        text = conv_module(lt, ls, rt, rs, ot, out, _attrs(labels, window, fgc, bgc))
        cpu.check(text, _rand(ls, dt[lt]), _rand(rs, dt[rt]),
                  rtol={"bf16": 2e-2, "f16": 5e-3}.get(ot, 1e-3 if ot == "f32" else None))


@pytest.mark.parametrize("layouts", [("{0,1,2,3}", "{3,2,1,0}", "{1,2,0,3}"), ("{3,0,2,1}", "{2,3,0,1}", "{0,3,2,1}")])
def test_convolution_layouts(cpu, layouts):
    for ls, rs, labels, window, fgc, bgc in (CASES[1], CASES[7], CASES[16], CASES[18]):
        out = _out_shape(ls, rs, labels, window, fgc, bgc)
        text = conv_module("f32", ls, "f32", rs, "f32", out, _attrs(labels, window, fgc, bgc), *layouts)
        cpu.check(text, _rand(ls, np.float32), _rand(rs, np.float32), rtol=1e-4)


def test_big_float_convolutions_call_gemm():
    """More than 32 output features: the GEMM (BLAS, or the emitted loops dot_plan picks), not the direct loops."""
    if runtime.blas_function("gemm", "f32") is None:
        pytest.skip("no BLAS in this process")
    for ls, rs, labels, window, fgc, bgc in (CASES[18], CASES[20]):
        out = _out_shape(ls, rs, labels, window, fgc, bgc)
        text = conv_module("f32", ls, "f32", rs, "f32", out, _attrs(labels, window, fgc, bgc))
        exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", run_pipeline=False)
        assert '%"cv.header"' not in exe.llvm_ir
    assert "sgemm" in exe.llvm_ir                                      # 40 features, a 46 KB kernel


def test_convolution_after_the_pipeline(cpu):
    """The CPU pipeline canonicalizes labels (transposes around a b01f_01io->b01f convolution)."""
    ls, rs, labels, window, fgc, bgc = CASES[17]
    out = _out_shape(ls, rs, labels, window, fgc, bgc)
    text = conv_module("f32", ls, "f32", rs, "f32", out, _attrs(labels, window, fgc, bgc))
    cpu.check(text, _rand(ls, np.float32), _rand(rs, np.float32), pipeline=True, rtol=1e-4)


def test_filter_gradient_input_in_any_layout(cpu):
    """conv_filter_gradient reads the input through its element strides: a column-major input."""
    ls, rs, labels, window, fgc, bgc = FILTER_GRAD_TAILS
    out = _out_shape(ls, rs, labels, window, fgc, bgc)
    text = conv_module("f32", ls, "f32", rs, "f32", out, _attrs(labels, window, fgc, bgc), "{0,1,2,3}")
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", run_pipeline=False)
    assert '"fgt.header"' in exe.llvm_ir
    cpu.check(text, _rand(ls, np.float32), _rand(rs, np.float32), rtol=1e-4)


def test_input_gradient_kernel_read_in_place(cpu):
    """conv_canonicalization keeps JAX's input-gradient labels (b01f_01oi) for the GEMM: no transpose per call."""
    for ls, rs, labels, window, fgc, bgc in (INPUT_GRAD_1X1, INPUT_GRAD_3X3):
        out = _out_shape(ls, rs, labels, window, fgc, bgc)
        text = conv_module("f32", ls, "f32", rs, "f32", out, _attrs(labels, window, fgc, bgc))
        exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu")
        assert "transpose" not in exe.module.to_text()
        assert "sgemm" in exe.llvm_ir or runtime.blas_function("gemm", "f32") is None
        cpu.check(text, _rand(ls, np.float32), _rand(rs, np.float32), pipeline=True, rtol=1e-4)


def test_depthwise_filter_gradient_f64_and_narrow(cpu):
    """f64 takes the vector kernels with 4 lanes; bf16 the direct loops."""
    for case in (DEPTHWISE_FILTER_GRAD, FILTER_GRAD_TAILS):
        ls, rs, labels, window, fgc, bgc = case
        out = _out_shape(ls, rs, labels, window, fgc, bgc)
        for t, rtol in (("f64", None), ("bf16", 2e-2)):
            text = conv_module(t, ls, t, rs, t, out, _attrs(labels, window, fgc, bgc))
            cpu.check(text, _rand(ls, cpu.DTYPES[t]), _rand(rs, cpu.DTYPES[t]), rtol=rtol)


def test_batch_grouped_convolution_after_the_pipeline(cpu):
    """A batch-grouped convolution in other labels is canonicalized into the filter-gradient form."""
    ls, rs, labels, window, fgc, bgc = ((6, 7, 7, 2), (3, 3, 2, 6), "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}", 1, 6)
    out = _out_shape(ls, rs, labels, window, fgc, bgc)
    text = conv_module("f32", ls, "f32", rs, "f32", out, _attrs(labels, window, fgc, bgc))
    cpu.check(text, _rand(ls, np.float32), _rand(rs, np.float32), pipeline=True, rtol=1e-4)


def test_convolutions_split_over_threads(monkeypatch):
    """The depthwise and few-feature filter gradients (per-chunk partial sums; the stems' chunks each copying the
    padded images they read), the depthwise kernel and the direct loops (chunks of rows or output pixels) on 3
    threads: the same numbers as the interpreter."""
    from xlapy.backends.cpu import parallel
    monkeypatch.setattr(parallel, "MIN_BYTES_PER_TASK", 256)
    cases = (DEPTHWISE_FILTER_GRAD, DEPTHWISE_FILTER_GRAD_1D, DEPTHWISE, CASES[6], CASES[8], FILTER_GRAD_STEM,
             FILTER_GRAD_STEM_8)
    for ls, rs, labels, window, fgc, bgc in cases:
        out = _out_shape(ls, rs, labels, window, fgc, bgc)
        module = xlapy.hlo.parse(conv_module("f32", ls, "f32", rs, "f32", out, _attrs(labels, window, fgc, bgc)))
        x, w = _rand(ls, np.float32), _rand(rs, np.float32)
        exe = xlapy.compile(module, backend="cpu", run_pipeline=False, num_threads=3)
        assert "xlapy_task" in exe.llvm_ir
        want = xlapy.compile(module, backend="interpreter")(x, w)
        assert_same(exe(x, w), want, rtol=1e-4)
