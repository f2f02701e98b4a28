"""conv-base-dilation-decomposition: a convolution of a dilated input (lhs_dilate) becomes one convolution of the
undilated input per output phase, interleaved. Each case runs the module before and after the pass on the
interpreter, and through the CPU backend's whole pipeline, and compares; the rewritten module has no lhs_dilate
left and multiplies 1/s^n as often."""
from dataclasses import replace

import numpy as np
import pytest

import xlapy
from xlapy.hlo import parse
from xlapy.hlo.attrs import ConvDimensionNumbers, Window
from xlapy.hlo.cost import instruction_flops
from xlapy.passes.conv_base_dilation import ConvBaseDilationDecomposition
from xlapy.passes.registry import make_pass

# (input dims, kernel dims, window, dim_labels, feature_group_count)
CASES = {
    "1d s2 k4 pad2": ([2, 7, 3], [4, 3, 5], "{size=4 pad=2_2 lhs_dilate=2}", "b0f_0io->b0f", 1),
    "1d s3 k2": ([1, 5, 2], [2, 2, 3], "{size=2 pad=1_1 lhs_dilate=3}", "b0f_0io->b0f", 1),
    "1d k1: phases without taps": ([1, 6, 2], [1, 2, 2], "{size=1 pad=0_1 lhs_dilate=2}", "b0f_0io->b0f", 1),
    "1d asymmetric pads": ([2, 9, 2], [3, 2, 2], "{size=3 pad=0_3 lhs_dilate=2}", "b0f_0io->b0f", 1),
    "1d small low pad": ([1, 8, 1], [5, 1, 1], "{size=5 pad=1_0 lhs_dilate=2}", "b0f_0io->b0f", 1),
    "2d conv transpose 4x4 s2": ([2, 8, 8, 4], [4, 4, 4, 6], "{size=4x4 pad=2_2x2_2 lhs_dilate=2x2}",
                                 "b01f_01io->b01f", 1),
    "2d strided-conv input gradient": ([2, 4, 4, 3], [3, 3, 3, 5], "{size=3x3 pad=2_3x2_3 lhs_dilate=2x2}",
                                       "b01f_01io->b01f", 1),
    "2d mixed dilation": ([1, 5, 6, 2], [3, 2, 2, 2], "{size=3x2 pad=1_1x0_1 lhs_dilate=2x1}", "b01f_01io->b01f", 1),
    "2d NCHW labels": ([2, 3, 5, 5], [4, 3, 3, 3], "{size=3x3 pad=1_1x1_1 lhs_dilate=2x2}", "bf01_oi01->bf01", 1),
    "2d grouped": ([1, 6, 6, 4], [3, 3, 2, 4], "{size=3x3 pad=1_2x1_2 lhs_dilate=2x2}", "b01f_01io->b01f", 2),
}


def _module(lhs, rhs, window, labels, groups):
    dn = ConvDimensionNumbers.parse(labels)
    win = Window.parse(window)
    out = [0] * len(lhs)
    out[dn.output_batch] = lhs[dn.input_batch]
    out[dn.output_feature] = rhs[dn.kernel_output_feature]
    for i, wd in enumerate(win.dims):
        n = (lhs[dn.input_spatial[i]] - 1) * wd.base_dilation + 1
        out[dn.output_spatial[i]] = n + wd.padding_low + wd.padding_high - wd.size + 1
    dims = lambda d: ",".join(map(str, d))     # noqa: E731
    return parse(f"""HloModule m
ENTRY e {{
  x = f32[{dims(lhs)}] parameter(0)
  w = f32[{dims(rhs)}] parameter(1)
  ROOT c = f32[{dims(out)}] convolution(x, w), window={window}, dim_labels={labels}, feature_group_count={groups}
}}
""")


class _EveryWindow(ConvBaseDilationDecomposition):
    """The pass without its window-size condition: decompose() is exact for any window."""

    def matches(self, inst):
        if inst.opcode != "convolution":
            return False
        saved = inst.attrs["window"]
        wide = Window(tuple(replace(wd, size=max(wd.size, 2 * wd.base_dilation)) for wd in saved.dims))
        inst.attrs["window"] = wide
        try:
            return super().matches(inst)
        finally:
            inst.attrs["window"] = saved


def _flops(module) -> int:
    return sum(instruction_flops(i)[0] for i in module.instructions() if i.opcode == "convolution")


@pytest.mark.parametrize("name", CASES)
def test_decomposition_matches(name):
    module = _module(*CASES[name])
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.shape.dims).astype(np.float32) for p in module.entry.parameters]
    expected = xlapy.compile(module, backend="interpreter")(*args)
    rewritten = module.clone()
    window = module.entry.root.attrs["window"]
    taps = 1 if module.entry.root.attrs["feature_group_count"] == 1 else 2      # the pass's rule: every phase has taps
    wide = all(wd.size >= taps * wd.base_dilation for wd in window.dims if wd.base_dilation > 1)
    assert make_pass("conv-base-dilation-decomposition").run(rewritten.clone()) == wide
    assert _EveryWindow().run(rewritten)
    xlapy.hlo.verify(rewritten)
    convs = [i for i in rewritten.instructions() if i.opcode == "convolution"]
    assert convs and all(wd.base_dilation == 1 for c in convs for wd in c.attrs["window"].dims)
    assert _flops(rewritten) < _flops(module)
    np.testing.assert_allclose(xlapy.compile(rewritten, backend="interpreter")(*args), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(xlapy.compile(module, backend="cpu", pipeline="cpu")(*args), expected,
                               rtol=1e-5, atol=1e-5)
    assert parse(rewritten.to_text()).to_text() == rewritten.to_text()


def test_strided_convolution_is_left_alone():
    module = _module([1, 8, 8, 2], [3, 3, 2, 2], "{size=3x3 pad=1_1x1_1}", "b01f_01io->b01f", 1)
    assert not make_pass("conv-base-dilation-decomposition").run(module)
