"""conv_sum_vector: convolutions with fewer output features than a quarter of a vector's lanes, vectorized over
their sums (the last kernel dim's taps x the input features). Each case must take that kernel ("csv.acc" in the
IR) and match the interpreter: edge blocks with masked loads at both ends, a run that is not whole vectors (a
masked tail), a run long enough to loop, a strided last dim, outer-dim dilation, a block at both edges, wide
padding (more edge blocks than MAX_EDGE_BLOCKS: the padded copy), an input layout whose last dim is not outside
its features (the padded copy), an output layout that is not dense (lanes stored one at a time), f64, and rows
split over threads."""
from __future__ import annotations

import math

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu.vector_width import loop_vector_bytes

LANES = loop_vector_bytes() // 4


def module(x, w, out, window, dtype="f32", x_layout="", out_layout="") -> str:
    dims = lambda s: ",".join(map(str, s))  # noqa: E731
    return (f"HloModule m\nENTRY e {{\n  x = {dtype}[{dims(x)}]{x_layout} parameter(0)\n"
            f"  w = {dtype}[{dims(w)}] parameter(1)\n"
            f"  ROOT c = {dtype}[{dims(out)}]{out_layout} convolution(x, w), window={{{window}}}, "
            f"dim_labels=b01f_01io->b01f\n}}\n")


# (x, w, out, window, dtype, x layout, out layout)
CASES = {
    "stem phase 16->3": ((2, 8, 12, 16), (4, 4, 16, 3), (2, 8, 12, 3), "size=4x4 pad=1_2x1_2", "f32", "", ""),
    "masked tail 20->1": ((2, 5, 9, 20), (3, 1, 20, 1), (2, 5, 9, 1), "size=3x1 pad=1_1x0_0", "f32", "", ""),
    "long run 64->2": ((1, 4, 10, 64), (3, 3, 64, 2), (1, 4, 10, 2), "size=3x3 pad=1_1x1_1", "f32", "", ""),
    "stride 2 32->3": ((2, 9, 17, 32), (3, 3, 32, 3), (2, 5, 9, 3), "size=3x3 stride=2x2 pad=1_1x1_1", "f32", "",
                       ""),
    "outer dilation": ((1, 9, 8, 16), (3, 2, 16, 1), (1, 5, 8, 1), "size=3x2 pad=0_0x1_0 rhs_dilate=2x1", "f32", "",
                       ""),
    "edges in one block": ((1, 3, 4, 16), (3, 3, 16, 4), (1, 3, 8, 4), "size=3x3 pad=1_1x3_3", "f32", "", ""),
    "wide padding": ((1, 3, 2, 16), (1, 3, 16, 4), (1, 3, 18, 4), "size=1x3 pad=0_0x9_9", "f32", "", ""),
    "input layout": ((2, 5, 6, 16), (3, 3, 16, 2), (2, 5, 6, 2), "size=3x3 pad=1_1x1_1", "f32", "{3,1,2,0}", ""),
    "output layout": ((2, 5, 6, 16), (3, 3, 16, 3), (2, 5, 6, 3), "size=3x3 pad=1_1x1_1", "f32", "",
                      "{2,1,3,0}"),
}
PADDED = {"wide padding", "input layout"}      # the rest read the input in place
if LANES >= 8:
    CASES["f64 16->2"] = ((2, 6, 8, 16), (3, 3, 16, 2), (2, 6, 8, 2), "size=3x3 pad=1_1x1_1", "f64", "", "")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", list(CASES))
def test_matches_the_interpreter(case, threads):
    x_shape, w_shape, out_shape, window, dtype, x_layout, out_layout = CASES[case]
    if out_shape[-1] * 4 > loop_vector_bytes() // (4 if dtype == "f32" else 8):
        pytest.skip("too many output features for this host's vectors")
    text = module(x_shape, w_shape, out_shape, window, dtype, x_layout, out_layout)
    rng = np.random.default_rng(7)
    ty = np.float32 if dtype == "f32" else np.float64
    x, w = rng.standard_normal(x_shape).astype(ty), rng.standard_normal(w_shape).astype(ty)
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", run_pipeline=False, num_threads=threads)
    assert '"csv.acc' in exe.llvm_ir and ('"pad.header"' in exe.llvm_ir) == (case in PADDED)
    want = xlapy.compile(xlapy.hlo.parse(text), backend="interpreter")(x, w)
    np.testing.assert_allclose(exe(x, w), want, rtol=1e-5 if dtype == "f32" else 1e-12,
                               atol=1e-5 if dtype == "f32" else 1e-12)


def test_edge_lanes_in_the_padding_never_read_non_finite_neighbours():
    """The first block's masked lanes lie before the input and the last's after it; an inf next to the window
    (a neighbouring row's last column) must not reach an output through a zero weight."""
    text = module((1, 4, 6, 16), (3, 3, 16, 2), (1, 4, 6, 2), "size=3x3 pad=1_1x1_1")
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((1, 4, 6, 16)).astype(np.float32), rng.standard_normal((3, 3, 16, 2)).astype(np.float32)
    x[0, 1, 5, :] = np.inf                     # row 1's last column: only outputs of rows 0..2, columns 4..5 see it
    got = np.asarray(xlapy.compile(xlapy.hlo.parse(text), backend="cpu", run_pipeline=False, num_threads=1)(x, w))
    assert np.isfinite(got[0, :, :4]).all() and np.isfinite(got[0, 3]).all()


def test_sums_are_at_least_as_accurate_as_one_chain():
    """Lane partial sums added by halves: against exact arithmetic, the stem's input-gradient phase (16 -> 3, 4x4)
    had 1.4e-7 rms relative error through conv_vector (one chain per output) on these inputs; here below 1e-7."""
    text = module((8, 32, 32, 16), (4, 4, 16, 3), (8, 32, 32, 3), "size=4x4 pad=1_2x1_2")
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", run_pipeline=False, num_threads=1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 32, 32, 16)).astype(np.float32)
    w = (rng.standard_normal((4, 4, 16, 3)) / 16).astype(np.float32)
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 2), (1, 2), (0, 0)))
    want = sum(np.einsum("nhwc,cf->nhwf", xp[:, i:i + 32, j:j + 32], w[i, j].astype(np.float64))
               for i in range(4) for j in range(4))
    got = np.asarray(exe(x, w), np.float64)
    assert math.sqrt(((got - want) ** 2).sum() / (want ** 2).sum()) < 1e-7
