"""The vectorized forward convolutions' loops over a row's outputs (conv_simd.interior_blocks, edge_outputs,
valid_range_at, outer_taps; conv_vector's edge blocks read from strips, or from a padded copy of the input when
there are many) against the interpreter: interiors shorter than a block, remainder blocks, one
output left over (it joins the edge loop), rows with no interior at all, taps whose range is computed at run time
(stride, window dilation, negative and asymmetric padding, outputs that read nothing), kernel dims of one tap
with and without padding, channel tails; and conv_filter_gradient's taps outside the unchecked middle swept in one
checked loop, its full feature tiles in a loop, aligned blocks of pixels (one result position's b, or whole
rows of the last dims: the stem's 7 x 3, checked per pixel where no padded copy is made) (and a depthwise
filter gradient beside them); conv_gemm's patch rows
(a memset, a copy of the range read inside, a memset; one copy per position when that range is not contiguous:
window dilation, a strided filter gradient). Each table is one
module (one compile), the convolutions side by side in a tuple."""
import sys
from pathlib import Path

import numpy as np
import pytest

import xlapy
from xlapy.testing import assert_same

sys.path.insert(0, str(Path(__file__).parent))      # pytest's importlib mode does not: the shared module builders
from test_cpu_conv import _attrs, _dims, _out_shape     # noqa: E402

# (lhs dims, rhs dims, dim_labels, window, feature_group_count): conv_vector.py (at most 32 output features)
VECTOR = [
    ((1, 5, 5, 4), (3, 3, 4, 8), "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}", 1),          # interior of 3 < a block
    ((1, 4, 11, 3), (3, 3, 3, 20), "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}", 1),        # 9: 2 blocks, 1 left over
    ((1, 3, 8, 4), (3, 3, 4, 12), "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}", 1),         # 6: a block + 2
    ((1, 3, 3, 2), (5, 5, 2, 8), "b01f_01io->b01f", "{size=5x5 pad=2_2x2_2}", 1),          # no interior
    ((2, 9, 10, 3), (3, 3, 3, 5), "b01f_01io->b01f", "{size=3x3 stride=2x3 pad=2_-1x1_2 rhs_dilate=2x3}", 1),
    ((1, 4, 6, 3), (2, 3, 3, 16), "b01f_01io->b01f", "{size=2x3 pad=3_3x0_0}", 1),         # rows reading nothing
    ((2, 13, 5), (4, 5, 12), "b0f_0io->b0f", "{size=4 stride=2 pad=3_1 rhs_dilate=2}", 1),  # 1-D
    ((1, 3, 4, 6, 3), (1, 2, 3, 3, 8), "b012f_012io->b012f", "{size=1x2x3 pad=1_1x0_1x1_1}", 1),  # 1 tap, padded
    ((1, 8, 12, 5), (1, 1, 5, 24), "b01f_01io->b01f", "{size=1x1}", 1),                    # 1x1: no checks, no loops
    ((1, 4, 3), (9, 3, 8), "b0f_0io->b0f", "{size=9 pad=30_30}", 1),                       # 7+ edge blocks: padded copy
    ((1, 5, 6, 3), (3, 3, 3, 16), "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}", 1),         # 6 outputs: blocks dividing them
]
# conv_depthwise_forward.py (one channel per group)
DEPTHWISE = [
    ((1, 5, 7, 10), (3, 3, 1, 10), "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}", 10),       # interior of 5, tail 2
    ((1, 4, 17, 8), (3, 3, 1, 8), "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}", 8),         # 15: 3 blocks of 5
    ((1, 2, 9, 8), (3, 3, 1, 8), "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}", 8),          # 7: one block of 7
    ((1, 4, 13, 8), (3, 3, 1, 8), "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}", 8),         # 11: a block of 6 + 5
    ((1, 2, 15, 8), (3, 3, 1, 8), "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}", 8),         # 13: 2 blocks, 1 left over
    ((1, 3, 2, 8), (3, 5, 1, 8), "b01f_01io->b01f", "{size=3x5 pad=1_1x2_2}", 8),          # no interior
    ((1, 9, 12, 16), (3, 3, 1, 16), "b01f_01io->b01f", "{size=3x3 stride=2x1 pad=0_3x2_1 rhs_dilate=2x2}", 16),
    ((2, 11, 8), (9, 1, 8), "b0f_0io->b0f", "{size=9 pad=4_-2}", 8),                        # a looped last dim
]
# filter gradients with few features (conv_filter_gradient.py; the taps outside the unchecked middle in one
# checked loop, full feature tiles in a loop, tails) and a depthwise one (conv_depthwise.py)
FILTER_GRADIENTS = [
    ((2, 11, 11, 3), (2, 9, 9, 32), "f01b_i01o->01bf", "{size=9x9 pad=1_1x0_2}", 1),       # 2 full tiles, edges
    ((3, 12, 10, 2), (3, 10, 8, 24), "f01b_i01o->01bf", "{size=10x8 pad=2_0x1_1 rhs_dilate=1x2}", 1),  # full + tail
    ((2, 8, 9, 12), (2, 6, 7, 12), "f01b_i01o->01bf", "{size=6x7 pad=1_2x0_1}", 1, 12),    # depthwise (batch groups)
    ((2, 12, 11, 16), (2, 10, 9, 16), "f01b_i01o->01bf", "{size=10x9 pad=1_1x0_1}", 1),    # blocks of one q, edges
    ((2, 9, 9, 48), (2, 9, 9, 16), "f01b_i01o->01bf", "{size=9x9}", 1),                    # two blocks per q
    ((2, 16, 16, 3), (2, 8, 8, 16), "f01b_i01o->01bf", "{size=8x8 pad=3_2x3_2 rhs_dilate=2x2}", 1),  # stem: q x b
    ((2, 3, 13, 20), (2, 9, 8, 16), "fb01_i01o->01bf", "{size=9x8 pad=1_1x2_2 rhs_dilate=1x2}", 1),  # 5 q x b, edges
]

# im2col rows (conv_gemm._emit_patch_rows): forward and filter-gradient arrangements, contiguous or not
PATCHES = [
    ((2, 10, 11, 8), (3, 3, 8, 40), "b01f_01io->b01f", "{size=3x3 pad=2_1x2_2 rhs_dilate=2x2}", 1),  # per position
    ((2, 16, 16, 8), (3, 3, 8, 40), "b01f_01io->b01f", "{size=3x3 stride=2x2 pad=-1_2x1_-1}", 1),   # negative pad
    ((2, 40, 16), (5, 16, 48), "b0f_0io->b0f", "{size=5 pad=3_1}", 1),                               # 1-D
    ((1, 5, 6, 7, 8), (2, 3, 3, 8, 40), "b012f_012io->b012f", "{size=2x3x3 pad=1_0x1_1x0_2}", 1),    # 3-D
    ((4, 15, 15, 16), (4, 6, 6, 40), "f01b_i01o->01bf", "{size=6x6 stride=2x2 pad=1_0x1_1}", 1),    # strided fgrad
]


def _module(cases, dtype: str) -> str:
    lines, shapes = [], []
    for i, (ls, rs, labels, window, fgc, *bgc) in enumerate(cases):
        bgc = bgc[0] if bgc else 1
        out = _out_shape(ls, rs, labels, window, fgc, bgc)
        shapes.append(f"{dtype}[{_dims(out)}]")
        lines += [f"  x{i} = {dtype}[{_dims(ls)}] parameter({2 * i})",
                  f"  w{i} = {dtype}[{_dims(rs)}] parameter({2 * i + 1})",
                  f"  c{i} = {shapes[-1]} convolution(x{i}, w{i}), {_attrs(labels, window, fgc, bgc)}"]
    root = f"  ROOT t = ({', '.join(shapes)}) tuple({', '.join(f'c{i}' for i in range(len(cases)))})"
    return "HloModule m\nENTRY e {\n" + "\n".join(lines + [root]) + "\n}\n"


@pytest.mark.parametrize("cases, markers, dtype", [
    (VECTOR, ["cvv.acc", "cvv.strip", "pad."], "f32"), (DEPTHWISE, ["dwf.acc"], "f32"),
    (DEPTHWISE[:2] + VECTOR[3:6], ["dwf.acc", "cvv.strip"], "f64"),
    (FILTER_GRADIENTS, ["fg.acc", "dw.acc"], "f32"), (PATCHES, ["imr.", "imp."], "f32")],
    ids=["vector", "depthwise", "f64", "filter-gradients", "patches"])
def test_row_loops_match_the_interpreter(cases, markers, dtype):
    module = xlapy.hlo.parse(_module(cases, dtype))
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s).astype({"f32": np.float32, "f64": np.float64}[dtype])
            for ls, rs, *_ in cases for s in (ls, rs)]
    exe = xlapy.compile(module, backend="cpu", run_pipeline=False, num_threads=1)
    assert all(f'"{marker}' in exe.llvm_ir for marker in markers)
    got, want = exe(*args), xlapy.compile(module, backend="interpreter")(*args)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, where=f"convolution {i}: {cases[i]}", rtol=1e-4 if dtype == "f32" else 1e-12)


def test_depthwise_blocks_divide_the_interior_when_they_can():
    """conv_depthwise_forward._block: whole blocks (one copy of the block code) when a divisor of the interior lies
    in (O_BLOCK // 2, EXACT_BLOCK], else O_BLOCK with a remainder block or a leftover output."""
    from xlapy.backends.cpu.conv_depthwise_forward import _block
    assert {n: _block(n) for n in (14, 16, 30, 7, 15, 8)} == {14: 7, 16: 4, 30: 6, 7: 7, 15: 5, 8: 4}
    assert _block(11) == 6 and _block(13) == 6


def test_filter_gradient_blocks_are_aligned_when_they_can_be():
    """conv_filter_gradient.aligned_block: m positions of one result dim (m dividing it) times every dim inside it,
    more than half the budget: the stem's rows of 7 positions x 3, a result position's 24 of 48, 3 x 8; none when
    the best is half the budget or less (5 x 5 x 3 with 12: 3)."""
    from xlapy.backends.cpu.conv_filter_gradient import aligned_block
    assert [aligned_block(s, n) for s, n in (([7, 7, 3], 24), ([1, 1, 48], 24), ([3, 3, 8], 24), ([3, 3, 32], 12),
                                              ([7, 10, 3], 24), ([5, 5, 3], 12))] == [21, 24, 24, 8, 15, 0]
