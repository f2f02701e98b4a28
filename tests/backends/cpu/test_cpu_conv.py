"""Convolution on the CPU backend against the interpreter: every dim_labels / window / group configuration on
the direct loop nest, the im2col + GEMM path for big float ones, element types, layouts."""
import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import runtime
from xlapy.testing import CONV_CASES

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
    if runtime.blas_function("gemm", "f32") is None:
        pytest.skip("no BLAS in this process")
    for ls, rs, labels, window, fgc, bgc in (CASES[16], CASES[18]):
        out = _out_shape(ls, rs, labels, window, fgc, bgc)
        text = conv_module("f32", ls, "f32", rs, "f32", out, _attrs(labels, window, fgc, bgc))
        exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", run_pipeline=False)
        assert "sgemm" in exe.llvm_ir


def test_convolution_after_the_pipeline(cpu):
    """The CPU pipeline canonicalizes labels (transposes around a b01f_01io->b01f convolution)."""
    ls, rs, labels, window, fgc, bgc = CASES[17]
    out = _out_shape(ls, rs, labels, window, fgc, bgc)
    text = conv_module("f32", ls, "f32", rs, "f32", out, _attrs(labels, window, fgc, bgc))
    cpu.check(text, _rand(ls, np.float32), _rand(rs, np.float32), pipeline=True, rtol=1e-4)
