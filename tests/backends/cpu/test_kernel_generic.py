"""Generic kernels (kernel_generic.py): fusions of one structure at different shapes compile to one generic
function that takes the sizes that differ as i64 arguments; the entry calls it with each fusion's own. Results equal the
interpreter's at both levels and with two LLVM threads; a fusion that differs in more than sizes (another
constant) keeps a kernel of its own; XLAPY_KERNEL_GENERIC=0 (ENABLED) emits every kernel as before."""
import re

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import kernel_generic
from xlapy.testing import assert_same

# three fusions of one structure (x * scale + bias, clamped at 0, per channel) at three shapes, and one whose
# constant differs (a kernel of its own)
FUSED = """
NAME {
  x = f32[ROWS,COLS]{1,0} parameter(0)
  s = f32[COLS]{0} parameter(1)
  bs = f32[ROWS,COLS]{1,0} broadcast(s), dimensions={1}
  m = f32[ROWS,COLS]{1,0} multiply(x, bs)
  k = f32[] constant(KONST)
  kb = f32[ROWS,COLS]{1,0} broadcast(k), dimensions={}
  a = f32[ROWS,COLS]{1,0} add(m, kb)
  z = f32[] constant(0)
  zb = f32[ROWS,COLS]{1,0} broadcast(z), dimensions={}
  ROOT r = f32[ROWS,COLS]{1,0} maximum(a, zb)
}
"""

ENTRY = """
ENTRY e {
  x0 = f32[8,48]{1,0} parameter(0)
  s0 = f32[48]{0} parameter(1)
  x1 = f32[4,96]{1,0} parameter(2)
  s1 = f32[96]{0} parameter(3)
  x2 = f32[2,144]{1,0} parameter(4)
  s2 = f32[144]{0} parameter(5)
  f0 = f32[8,48]{1,0} fusion(x0, s0), kind=kLoop, calls=f_8_48
  f1 = f32[4,96]{1,0} fusion(x1, s1), kind=kLoop, calls=f_4_96
  f2 = f32[2,144]{1,0} fusion(x2, s2), kind=kLoop, calls=f_2_144
  f3 = f32[4,96]{1,0} fusion(x1, s1), kind=kLoop, calls=g_4_96
  ROOT t = (f32[8,48]{1,0}, f32[4,96]{1,0}, f32[2,144]{1,0}, f32[4,96]{1,0}) tuple(f0, f1, f2, f3)
}
"""


def module_text() -> str:
    parts = ["HloModule generic"]
    for name, r, c, k in (("f_8_48", 8, 48, "0.5"), ("f_4_96", 4, 96, "0.5"), ("f_2_144", 2, 144, "0.5"),
                          ("g_4_96", 4, 96, "-0.25")):
        parts.append(FUSED.replace("NAME", name).replace("ROWS", str(r)).replace("COLS", str(c)).replace("KONST", k))
    return "\n".join(parts) + ENTRY


def _args():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in ((8, 48), (48,), (4, 96), (96,), (2, 144), (144,))]


def compile_and_count(level):
    module = xlapy.hlo.parse(module_text())
    before = dict(kernel_generic.STATS)
    exe = xlapy.compile(module, backend="cpu", run_pipeline=False, cache=False, llvm_level=level)
    return exe, {k: kernel_generic.STATS[k] - before[k] for k in before}


@pytest.mark.parametrize("level", ["quick", "optimized"])
def test_one_generic_kernel_for_three_shapes(level):
    exe, counts = compile_and_count(level)
    assert counts == {"groups": 1, "members": 3}
    text = exe.llvm_ir
    assert text.count(f'define internal void @"{kernel_generic.GENERIC_PREFIX}') == 1
    assert text.count(f'call void @"{kernel_generic.GENERIC_PREFIX}') == 3              # the entry calls it thrice
    assert '@"xlapy_kernel.f0"' not in text and '@"xlapy_kernel.f3"' in text           # f3: its own kernel
    args = _args()
    want = xlapy.compile(xlapy.hlo.parse(module_text()), backend="interpreter")(*args)
    for i, (g, w) in enumerate(zip(exe(*args), want)):
        assert_same(g, w, where=f"output {i}", rtol=1e-6)


def test_generic_kernels_in_llvm_parts(monkeypatch):
    """The generic function is a part's root of its own; the kernels that call it declare it (llvm_parallel)."""
    from xlapy.backends.cpu import llvm_parallel
    monkeypatch.setattr(llvm_parallel, "MIN_MOVED_LINES", 0)
    monkeypatch.setattr(llvm_parallel, "MIN_PART_WEIGHT", 0)
    monkeypatch.setattr(llvm_parallel, "END_PART_WEIGHT", 0)        # a part per unit
    monkeypatch.setattr(llvm_parallel, "END_SHARE", 1000)
    parts = []
    compile_part = llvm_parallel.compile_part
    monkeypatch.setattr(llvm_parallel, "compile_part", lambda part: (parts.append(part.text), compile_part(part))[1])
    monkeypatch.setenv("XLAPY_PARALLEL_LLVM", "1")
    exe, counts = compile_and_count("optimized")
    assert counts["groups"] == 1
    generic = re.compile(r'^(define|declare) [^@]*@"xlapy_p\d+_' + re.escape(kernel_generic.GENERIC_PREFIX), re.M)
    found = [m.group(1) for t in parts for m in generic.finditer(t)]
    assert found.count("define") == 1 and found.count("declare") == 1      # a part defines it, the entry calls it
    assert not any(re.search(r'define [^@]*@"xlapy_p\d+_xlapy_kernel\.f[012]"', t) for t in parts)   # no members
    args = _args()
    want = xlapy.compile(xlapy.hlo.parse(module_text()), backend="interpreter")(*args)
    for g, w in zip(exe(*args), want):
        assert_same(g, w, rtol=1e-6)


def test_off_emits_every_kernel(monkeypatch):
    monkeypatch.setattr(kernel_generic, "ENABLED", False)
    exe, counts = compile_and_count("quick")
    assert counts == {"groups": 0, "members": 0}
    assert kernel_generic.GENERIC_PREFIX not in exe.llvm_ir


def test_candidates_are_the_fusions_of_one_structure():
    module = xlapy.hlo.parse(module_text())
    found = kernel_generic.candidates(module)
    assert {"xlapy_kernel.f0", "xlapy_kernel.f1", "xlapy_kernel.f2"} <= found     # f3 may be: its text decides
