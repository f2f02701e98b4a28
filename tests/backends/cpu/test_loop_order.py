"""How loop fusions index and in which order they iterate (elemental.py's reshape, emitter.py's
transposed_read_order): a reshape maps each group of merged or split dims alone (common_factors), so a dimension
both shapes share passes through and the row loop vectorizes, on one thread or many; a fusion that transposes many
arrays iterates in their order and writes the result strided. Results are checked against the interpreter,
structure through the IR (never through timings)."""
import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu.elemental import common_factors
from xlapy.backends.cpu.emitter import transposed_read_order


@pytest.mark.parametrize("a, b, groups", [
    ([4, 64, 192], [256, 192], [((0, 2), (0, 1)), ((2, 3), (1, 2))]),
    ([6], [2, 3], [((0, 1), (0, 2))]),
    ([2, 3, 4], [6, 4], [((0, 2), (0, 1)), ((2, 3), (1, 2))]),
    ([2, 6], [3, 4], [((0, 2), (0, 2))]),                     # no finer split: one group
    ([2, 1, 3], [6], [((0, 3), (0, 1))]),
    ([3, 1], [3], [((0, 2), (0, 1))]),                         # a unit dim joins the group before it
    ([32, 1, 24], [32, 24], [((0, 2), (0, 1)), ((2, 3), (1, 2))]),
    ([1, 6], [6], [((0, 1), (0, 0)), ((1, 2), (0, 1))]),       # ... or starts one of its own
    ([5, 7], [5, 7], [((0, 1), (0, 1)), ((1, 2), (1, 2))]),
    ([0, 3], [3, 0], [((0, 2), (0, 2))]),                      # empty: one group
])
def test_common_factors(a, b, groups):
    assert common_factors(a, b) == groups
    for (a0, a1), (b0, b1) in groups:
        assert np.prod(a[a0:a1], dtype=np.int64) == np.prod(b[b0:b1], dtype=np.int64)


def _module(shapes: list[str], body: str, root_shape: str) -> str:
    params = "\n".join(f"  p{i} = {s} parameter({i})" for i, s in enumerate(shapes))
    args = ", ".join(f"{s} p{i}" for i, s in enumerate(shapes))
    names = ", ".join(f"p{i}" for i in range(len(shapes)))
    return f"""HloModule m
fused {{
{params}
{body}
}}
ENTRY e {{
{params}
  ROOT f = {root_shape} fusion({names}), kind=kLoop, calls=fused
}}
"""


def _run(text: str, threads: int, rtol: float = 0.0):
    module = xlapy.hlo.parse(text)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.shape.dims).astype(np.float32) for p in module.entry.parameters]
    exe = xlapy.compile(module, backend="cpu", num_threads=threads)
    np.testing.assert_allclose(exe(*args), xlapy.compile(module, backend="interpreter")(*args), rtol=rtol, atol=0)
    return exe


RESHAPE_ADD = _module(["f32[4,64,192]", "f32[4,64,192]", "f32[4,64]"], """
  s = f32[4,64,192] add(p0, p1)
  b = f32[4,64,192] broadcast(p2), dimensions={0,1}
  m = f32[4,64,192] multiply(s, b)
  ROOT r = f32[256,192] reshape(m)""", "f32[256,192]")


@pytest.mark.parametrize("threads", [1, 2])
def test_reshape_fusion_keeps_rows_vectorized(threads):
    exe = _run(RESHAPE_ADD, threads)
    ir = exe.llvm_ir_optimized
    assert "fadd <" in ir and "fmul <" in ir          # the row loop is vectorized, on one thread or two
    if threads == 2:
        assert "xlapy_pool_run" in exe.llvm_ir


TRANSPOSES = {
    "transpose": (["f32[48,80]", "f32[48,80]"], """
  s = f32[48,80] add(p0, p1)
  ROOT t = f32[80,48] transpose(s), dimensions={1,0}""", "f32[80,48]", [1, 0]),
    "transpose 3d": (["f32[4,16,24]", "f32[4,16,24]", "f32[4,16,24]"], """
  s = f32[4,16,24] add(p0, p1)
  m = f32[4,16,24] multiply(s, p2)
  ROOT t = f32[24,4,16] transpose(m), dimensions={2,0,1}""", "f32[24,4,16]", [1, 2, 0]),
    "reshape of transpose": (["f32[4,64,192]", "f32[4,64,192]", "f32[256,192]"], """
  s = f32[4,64,192] add(p0, p1)
  r = f32[4,64,192] reshape(p2)
  m = f32[4,64,192] multiply(s, r)
  t = f32[192,4,64] transpose(m), dimensions={2,0,1}
  ROOT o = f32[192,256] reshape(t)""", "f32[192,256]", [1, 0]),
    "unit dims": (["f32[1,24,32]", "f32[1,24,32]"], """
  s = f32[1,24,32] subtract(p0, p1)
  t = f32[32,1,24] transpose(s), dimensions={2,0,1}
  ROOT o = f32[32,24] reshape(t)""", "f32[32,24]", [1, 0]),
}


@pytest.mark.parametrize("name", TRANSPOSES)
@pytest.mark.parametrize("threads", [1, 2])
def test_transposing_fusion_reads_in_operand_order(name, threads):
    shapes, body, root, order = TRANSPOSES[name]
    text = _module(shapes, body, root)
    comp = xlapy.hlo.parse(text).computation("fused")
    assert transposed_read_order(comp) == order
    _run(text, threads)


def test_single_array_transpose_keeps_output_order():
    text = _module(["f32[48,80]"], "  ROOT t = f32[80,48] transpose(p0), dimensions={1,0}", "f32[80,48]")
    assert transposed_read_order(xlapy.hlo.parse(text).computation("fused")) is None


def test_reshape_mixing_transposed_groups_keeps_output_order():
    # the transposed read visits dims 0 and 2 of t in a row, but the reshape merges dims 0 and 1
    text = _module(["f32[4,6,5]", "f32[4,6,5]"], """
  s = f32[4,6,5] add(p0, p1)
  t = f32[4,5,6] transpose(s), dimensions={0,2,1}
  ROOT o = f32[20,6] reshape(t)""", "f32[20,6]")
    assert transposed_read_order(xlapy.hlo.parse(text).computation("fused")) is None
    for threads in (1, 2):
        _run(text, threads)


# a GroupNorm + SiLU between NHWC and NCHW (the U-Net's): a broadcast column-major operand and transposes leave
# the loop's addresses without affine bounds, so only `noalias` buffers let LLVM vectorize it
GROUP_NORM_SILU = _module(["f32[4,16,16,64]", "f32[4,64]{0,1}", "f32[64]"], """
  t = f32[4,64,16,16] transpose(p0), dimensions={0,3,1,2}
  c = f32[4,64,16,16] broadcast(p1), dimensions={0,1}
  s = f32[4,64,16,16] add(t, c)
  w = f32[4,64,16,16] broadcast(p2), dimensions={1}
  m = f32[4,64,16,16] multiply(s, w)
  n = f32[4,64,16,16] negate(m)
  e = f32[4,64,16,16] exponential(n)
  one = f32[] constant(1)
  ones = f32[4,64,16,16] broadcast(one), dimensions={}
  d = f32[4,64,16,16] add(e, ones)
  g = f32[4,64,16,16] divide(m, d)
  ROOT r = f32[4,16,16,64] transpose(g), dimensions={0,2,3,1}""", "f32[4,16,16,64]")


def test_threaded_loop_gets_noalias_buffers_and_vectorizes():
    exe = _run(GROUP_NORM_SILU, 2, rtol=2e-6)         # exp: the vectorized approximation (math_approx.py)
    assert "xlapy_pool_run" in exe.llvm_ir
    body = next(line for line in exe.llvm_ir.splitlines() if line.startswith("define") and ".body" in line)
    assert body.count("noalias") >= 2          # the worker's body takes the kernel's buffers as noalias arguments
    assert "fmul <" in exe.llvm_ir_optimized and "fdiv <" in exe.llvm_ir_optimized


def test_padded_transpose_reads_in_operand_order():
    # gpt2's attention gradient: the arrays are padded by one row before the transpose, so a little smaller
    text = _module(["f32[4,63,96]", "f32[4,63,96]"], """
  s = f32[4,63,96] add(p0, p1)
  z = f32[] constant(0)
  p = f32[4,64,96] pad(s, z), padding=0_0x0_1x0_0
  t = f32[96,4,64] transpose(p), dimensions={2,0,1}
  ROOT o = f32[96,256] reshape(t)""", "f32[96,256]")
    assert transposed_read_order(xlapy.hlo.parse(text).computation("fused")) == [1, 0]
    for threads in (1, 2):
        _run(text, threads)
