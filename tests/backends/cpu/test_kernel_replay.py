"""Kernel replay (kernel_replay.py): an instruction structurally equal to one emitted before calls that kernel from
a recipe instead of being emitted again. Results equal the interpreter's; structures that differ in a constant, in
which operands are one buffer, or in whether an update may happen in place are not confused; check mode (emit and
compare with the recipe) agrees on every case."""
import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import kernel_replay
from xlapy.testing import assert_same

# four blocks of one structure (-a*b + k, then a reduce over rows), fed by different parameters, plus one
# that differs only in a constant inside its fusion, and one whose two operands are the same buffer
BLOCKS = """
HloModule blocks

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

FUSED

ENTRY e {
  p0 = f32[16,33]{1,0} parameter(0)
  p1 = f32[16,33]{1,0} parameter(1)
  p2 = f32[16,33]{1,0} parameter(2)
  f0 = f32[16,33]{1,0} fusion(p0, p1), kind=kLoop, calls=fused
  f1 = f32[16,33]{1,0} fusion(f0, p2), kind=kLoop, calls=fused
  f2 = f32[16,33]{1,0} fusion(p2, f1), kind=kLoop, calls=fused
  f3 = f32[16,33]{1,0} fusion(f2, f0), kind=kLoop, calls=fused
  f4 = f32[16,33]{1,0} fusion(f3, f3), kind=kLoop, calls=fused
  f5 = f32[16,33]{1,0} fusion(f4, p1), kind=kLoop, calls=fused2
  z = f32[] constant(0)
  r0 = f32[16]{0} reduce(f3, z), dimensions={1}, to_apply=add
  r1 = f32[16]{0} reduce(f5, z), dimensions={1}, to_apply=add
  ROOT t = (f32[16,33]{1,0}, f32[16]{0}, f32[16]{0}, f32[16,33]{1,0}) tuple(f4, r0, r1, f1)
}
"""


FUSED = """
NAME {
  a = f32[16,33]{1,0} parameter(0)
  b = f32[16,33]{1,0} parameter(1)
  e = f32[16,33]{1,0} negate(a)
  m = f32[16,33]{1,0} multiply(e, b)
  k = f32[] constant(KONST)
  kb = f32[16,33]{1,0} broadcast(k), dimensions={}
  ROOT r = f32[16,33]{1,0} add(m, kb)
}
"""


def blocks_module() -> str:
    fused = FUSED.replace("NAME", "fused").replace("KONST", "0.5")
    fused2 = FUSED.replace("NAME", "fused2").replace("KONST", "-0.25")
    return BLOCKS.replace("FUSED", fused + fused2)


# a while loop whose body updates its state by two DUS fusions of one structure: the first may write in place
# (its operand is dead afterwards), the second may not (the old value is read after it)
DUS = """
HloModule dus

dus_fused {
  buf = f32[8,4]{1,0} parameter(0)
  row = f32[1,4]{1,0} parameter(1)
  i = s32[] parameter(2)
  z = s32[] constant(0)
  ROOT d = f32[8,4]{1,0} dynamic-update-slice(buf, row, i, z)
}

cond {
  s = (s32[], f32[8,4]{1,0}, f32[8,4]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(8)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[8,4]{1,0}, f32[8,4]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[8,4]{1,0} get-tuple-element(s), index=1
  b = f32[8,4]{1,0} get-tuple-element(s), index=2
  one = s32[] constant(1)
  j = s32[] add(i, one)
  fj = f32[] convert(j)
  row = f32[1,4]{1,0} broadcast(fj), dimensions={}
  a2 = f32[8,4]{1,0} fusion(a, row, i), kind=kLoop, calls=dus_fused
  b2 = f32[8,4]{1,0} fusion(b, row, i), kind=kLoop, calls=dus_fused
  keep = f32[8,4]{1,0} add(b, b2)
  ROOT t = (s32[], f32[8,4]{1,0}, f32[8,4]{1,0}) tuple(j, a2, keep)
}

ENTRY e {
  z = s32[] constant(0)
  a = f32[8,4]{1,0} parameter(0)
  b = f32[8,4]{1,0} parameter(1)
  s = (s32[], f32[8,4]{1,0}, f32[8,4]{1,0}) tuple(z, a, b)
  w = (s32[], f32[8,4]{1,0}, f32[8,4]{1,0}) while(s), condition=cond, body=body
  ROOT r = f32[8,4]{1,0} get-tuple-element(w), index=2
}
"""


def run(text: str, *args):
    module = xlapy.hlo.parse(text)
    before = dict(kernel_replay.STATS)
    got = xlapy.compile(module, backend="cpu", run_pipeline=False, cache=False, llvm_level="quick")(*args)
    want = xlapy.compile(module, backend="interpreter")(*args)
    counts = {k: kernel_replay.STATS[k] - before[k] for k in before}
    return got, want, counts


def _args(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * 0.3).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("mode", ["1", "check"])
def test_repeated_blocks_replay_and_match_the_interpreter(monkeypatch, mode):
    monkeypatch.setattr(kernel_replay, "MODE", mode)
    got, want, counts = run(blocks_module(), *_args((16, 33), (16, 33), (16, 33)))
    for i, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, where=f"output {i}", rtol=1e-6)
    if mode == "1":
        # f2 and f3 replay f0 (same structure, distinct buffers) and r1 replays r0; f1 writes a result of the
        # entry (a preassigned buffer), f4 reads one buffer twice, f5 has another constant: emitted
        assert counts["replayed"] == 3
        assert counts["emitted"] >= 4


def test_replay_off_emits_every_kernel(monkeypatch):
    monkeypatch.setattr(kernel_replay, "MODE", "0")
    got, want, counts = run(blocks_module(), *_args((16, 33), (16, 33), (16, 33)))
    assert counts["replayed"] == 0
    for g, w in zip(got, want):
        assert_same(g, w, rtol=1e-6)


@pytest.mark.parametrize("mode", ["1", "check"])
def test_in_place_guard_separates_updates(monkeypatch, mode):
    monkeypatch.setattr(kernel_replay, "MODE", mode)
    got, want, _ = run(DUS, *_args((8, 4), (8, 4), seed=1))
    assert_same(got, want)


def test_profiled_compiles_never_replay(monkeypatch):
    monkeypatch.setattr(kernel_replay, "MODE", "1")
    module = xlapy.hlo.parse(blocks_module())
    before = kernel_replay.STATS["replayed"]
    xlapy.compile(module, backend="cpu", run_pipeline=False, cache=False, llvm_level="quick", profile=True)
    assert kernel_replay.STATS["replayed"] == before
