"""Independent while loops of the entry run at once on two pool threads (concurrent_loops.py): which loops pair,
and that a paired module computes what the interpreter does, bit for bit what the unpaired build does, whichever
thread runs which loop."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import concurrent_loops
from xlapy.tools import npz

N, T = 256, 400
S = f"(s32[], f32[{N}], f32[{N}])"

# a loop: state (i, h, x) -> (i+1, tanh(h * 0.9 + x), x) for T steps
LOOP = """{name}_body {{
  s = {S} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[{N}] get-tuple-element(s), index=1
  x = f32[{N}] get-tuple-element(s), index=2
  c = f32[] constant({decay})
  cb = f32[{N}] broadcast(c), dimensions={{}}
  m = f32[{N}] multiply(h, cb)
  a = f32[{N}] add(m, x)
  hn = f32[{N}] tanh(a)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = {S} tuple(i1, hn, x)
}}
{name}_cond {{
  s = {S} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({T})
  ROOT lt = pred[] compare(i, n), direction=LT
}}
"""


def _loops(*names_decays) -> str:
    return "".join(LOOP.format(name=n, decay=d, S=S, N=N, T=T) for n, d in names_decays)


# two independent loops; the second's inputs (x2 = exp(p)) come after the first loop in post order. Both read
# the computed buffer h0 = p * 2, dead after the second: the first in every step (its x), the second as its
# initial h. Unpaired, the second loop would update h0 in place; paired it must copy it, or the first loop would
# read the second's updates
INDEPENDENT = f"""HloModule two_loops
{_loops(("f", 0.9), ("b", 0.5))}
ENTRY e {{
  p = f32[{N}] parameter(0)
  q = f32[{N}] parameter(1)
  z = s32[] constant(0)
  two = f32[] constant(2)
  twos = f32[{N}] broadcast(two), dimensions={{}}
  h0 = f32[{N}] multiply(p, twos)
  t1 = {S} tuple(z, q, h0)
  w1 = {S} while(t1), condition=f_cond, body=f_body
  x2 = f32[{N}] exponential(p)
  t2 = {S} tuple(z, h0, x2)
  w2 = {S} while(t2), condition=b_cond, body=b_body
  r1 = f32[{N}] get-tuple-element(w1), index=1
  r2 = f32[{N}] get-tuple-element(w2), index=1
  ROOT o = (f32[{N}], f32[{N}]) tuple(r1, r2)
}}
"""

# the second loop starts from the first one's result: they cannot run at once
DEPENDENT = f"""HloModule chained_loops
{_loops(("f", 0.9), ("b", 0.5))}
ENTRY e {{
  p = f32[{N}] parameter(0)
  q = f32[{N}] parameter(1)
  z = s32[] constant(0)
  t1 = {S} tuple(z, p, q)
  w1 = {S} while(t1), condition=f_cond, body=f_body
  r1 = f32[{N}] get-tuple-element(w1), index=1
  t2 = {S} tuple(z, r1, q)
  w2 = {S} while(t2), condition=b_cond, body=b_body
  ROOT r2 = f32[{N}] get-tuple-element(w2), index=1
}}
"""


def _args(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(N).astype(np.float32) for _ in range(2)]


def _compile(text: str, monkeypatch, on: bool = True, threads: int = 2):
    monkeypatch.setenv("XLAPY_CONCURRENT_LOOPS", "1" if on else "0")
    monkeypatch.setenv("XLAPY_CACHE_DIR", "off")
    return xlapy.compile(xlapy.hlo.parse(text), backend="cpu", num_threads=threads)


def _pairs(text: str) -> int:
    module = xlapy.hlo.parse(text)
    order = module.entry.post_order()
    return len(concurrent_loops.schedule(order, 2)[1])


def test_independent_loops_pair_and_dependent_ones_do_not():
    assert _pairs(INDEPENDENT) == 1
    assert _pairs(DEPENDENT) == 0


def test_the_schedule_moves_what_the_second_loop_reads_before_the_first():
    module = xlapy.hlo.parse(INDEPENDENT)
    order, pairs = concurrent_loops.schedule(module.entry.post_order(), 2)
    names = [x.name for x in order]
    (first,) = [x for x in order if id(x) in pairs]
    assert names.index("x2") < names.index(first.name) and names[names.index(first.name) + 1] == pairs[id(first)].name
    position = {id(x): k for k, x in enumerate(order)}
    assert all(position[id(o)] < position[id(x)] for x in order for o in x.operands)      # still topological


@pytest.mark.parametrize("text", [INDEPENDENT, DEPENDENT], ids=["independent", "dependent"])
def test_paired_loops_match_the_interpreter_and_the_unpaired_build(text, monkeypatch):
    paired = _compile(text, monkeypatch, on=True)
    unpaired = _compile(text, monkeypatch, on=False)
    ref = xlapy.compile(xlapy.hlo.parse(text), backend="interpreter")
    if text is INDEPENDENT:
        assert "loops.first" in paired.llvm_ir and "loops.first" not in unpaired.llvm_ir
    for seed in range(20):          # many calls: whichever thread takes which loop, same bits
        args = _args(seed)
        got, alone, want = (npz.flatten(f(*args)) for f in (paired, unpaired, ref))
        for g, a, w in zip(got, alone, want, strict=True):
            np.testing.assert_array_equal(g, a)
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_one_thread_pairs_nothing(monkeypatch):
    exe = _compile(INDEPENDENT, monkeypatch, on=True, threads=1)
    assert "loops.first" not in exe.llvm_ir
    assert concurrent_loops.schedule(xlapy.hlo.parse(INDEPENDENT).entry.post_order(), 1)[1] == {}


@pytest.mark.parametrize("flag", [", custom_call_has_side_effect=true", ""], ids=["side_effect", "custom_call"])
def test_a_loop_with_a_side_effect_or_a_callback_stays_alone(flag):
    text = INDEPENDENT.replace("  hn = f32[{N}] tanh(a)".format(N=N),
                               f"  hn = f32[{N}] custom-call(a), custom_call_target=\"x\"{flag}")
    assert "custom-call" in text
    assert _pairs(text) == 0
