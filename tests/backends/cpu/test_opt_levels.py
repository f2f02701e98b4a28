"""Each kernel's LLVM tier (opt_levels.py): light below LIGHT_WORK_LIMIT element operations per run, counting the
trips of the while loops around it; and a module whose kernels have both tiers compiles right."""
import numpy as np

import xlapy
from xlapy.backends.cpu import compiler, llvm_parallel, opt_levels
from xlapy.hlo import parse

TEXT = """HloModule tiers

small_f {
  p = f32[8] parameter(0)
  ROOT n = f32[8] negate(p)
}

big_f {
  p = f32[200000] parameter(0)
  ROOT e = f32[200000] exponential(p)
}

body_f {
  p = f32[400] parameter(0)
  ROOT a = f32[400] add(p, p)
}

cond {
  s = (s32[], f32[400]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(%TRIPS%)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[400]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = f32[400] get-tuple-element(s), index=1
  step = f32[400] fusion(v), kind=kLoop, calls=body_f
  ROOT t = (s32[], f32[400]) tuple(j, step)
}

ENTRY e {
  a = f32[8] parameter(0)
  b = f32[200000] parameter(1)
  c = f32[400] parameter(2)
  small = f32[8] fusion(a), kind=kLoop, calls=small_f
  big = f32[200000] fusion(b), kind=kLoop, calls=big_f
  zero = s32[] constant(0)
  init = (s32[], f32[400]) tuple(zero, c)
  w = (s32[], f32[400]) while(init), condition=cond, body=body%CONFIG%
  loop = f32[400] get-tuple-element(w), index=1
  ROOT r = (f32[8], f32[200000], f32[400]) tuple(small, big, loop)
}
"""


def _module(trips: int, known: bool):
    config = f', backend_config={{"known_trip_count":{{"n":"{trips}"}}}}' if known else ""
    return parse(TEXT.replace("%TRIPS%", str(trips)).replace("%CONFIG%", config))


def test_tiers_by_work_and_loop_trips():
    tiers = opt_levels.Tiers(_module(3, known=True))
    assert tiers.of("xlapy_kernel.small") == opt_levels.LIGHT
    assert tiers.of("xlapy_kernel.small.2") == opt_levels.LIGHT          # llvmlite's suffix for a taken name
    assert tiers.of("xlapy_kernel.big") == opt_levels.HOT
    assert tiers.of("xlapy_kernel.step") == opt_levels.LIGHT             # 3 trips of 400 elements
    assert opt_levels.Tiers(_module(3, known=False)).of("xlapy_kernel.step") == opt_levels.HOT   # LOOP_TRIPS
    assert opt_levels.Tiers(_module(1000, known=True)).of("xlapy_kernel.step") == opt_levels.HOT
    assert tiers.of("xlapy_task.7") == opt_levels.HOT and tiers.of("xlapy_kernel.nowhere") == opt_levels.HOT
    assert tiers.of("xlapy_entry") == opt_levels.HOT


def test_both_tiers_compile_right(monkeypatch):
    monkeypatch.setattr(compiler, "_WARM", True)
    monkeypatch.setattr(llvm_parallel, "MIN_MOVED_LINES", 0)
    monkeypatch.setattr(llvm_parallel, "MIN_PART_WEIGHT", 0)
    parts = []
    real = llvm_parallel.compile_part
    monkeypatch.setattr(llvm_parallel, "compile_part", lambda part: parts.append(part.tier) or real(part))
    module = _module(3, known=True)
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n).astype(np.float32) for n in (8, 200000, 400))
    exe = xlapy.compile(module, backend="cpu", llvm_level="optimized", cache=False)
    small, big, loop = exe(a, b, c)
    np.testing.assert_array_equal(small, -a)
    np.testing.assert_allclose(big, np.exp(b), rtol=2e-6)
    np.testing.assert_array_equal(loop, c * 8)
    assert opt_levels.LIGHT in parts and opt_levels.HOT in parts                 # the small kernel, the big one
    assert opt_levels.ENTRY in parts                                             # the entry function alone
