"""Loop-carried state in place (backends/cpu/loop_state.py): a while takes over an init buffer nothing reads after
it, and a body instruction computing a state element element for element from its old value writes it into the
state leaf. Every program is checked against the interpreter; the structural checks count the whole-buffer
copies (memcpy) in the emitted LLVM IR. The "must not change" cases: reads of the old value after the update, a
transposed read, a swap, an in-place update whose result the overwrite would clobber, an init read after the
loop or passed in by the caller."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import buffer_assignment
from xlapy.testing import assert_same
from xlapy.tools import npz

N, STEPS = 256, 5
COPY = f"i64 {4 * N}, i1 0"          # a memcpy of one whole f32[N] (or f32[16,16]) buffer
ST = f"(s32[], f32[{N}], f32[{N}])"


def _cond(state: str) -> str:
    """The loop condition: the counter, state element 0, below STEPS."""
    return f"""cond {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({STEPS})
  ROOT lt = pred[] compare(i, n), direction=LT
}}"""


def _module(body: str, entry: str = "", state: str = ST, fused: str = "") -> str:
    entry = entry or f"""  x = f32[{N}] parameter(0)
  y = f32[{N}] parameter(1)
  z = s32[] constant(0)
  t = {state} tuple(z, x, y)
  ROOT w = {state} while(t), condition=cond, body=body"""
    return f"""HloModule loop_state
{fused}
{_cond(state)}
body {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[{N}] get-tuple-element(s), index=1
  b = f32[{N}] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
{body}
}}

ENTRY e {{
{entry}
}}
"""


_ACCUMULATE = f"""fused_acc {{
  p0 = f32[{N}] parameter(0)
  p1 = f32[{N}] parameter(1)
  m = f32[{N}] multiply(p1, p1)
  ROOT r = f32[{N}] add(p0, m)
}}
"""


def _run(text: str, *args):
    cpu = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", run_pipeline=False)
    ref = xlapy.compile(xlapy.hlo.parse(text), backend="interpreter")
    got, want = npz.flatten(cpu(*args)), npz.flatten(ref(*args))
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_same(g, w, where=f"output {k}")
    return cpu.llvm_ir.count(COPY)


def _xy():
    rng = np.random.default_rng(0)
    return rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)


def test_accumulator_fusion_writes_its_state_leaf(monkeypatch):
    body = f"""  acc = f32[{N}] fusion(a, b), kind=kLoop, calls=fused_acc
  ROOT t = {ST} tuple(i1, acc, b)"""
    # x and y are copied into the state (the entry's result buffers) once; nothing is copied back per iteration
    assert _run(_module(body, fused=_ACCUMULATE), *_xy()) == 2
    monkeypatch.setattr(buffer_assignment, "IN_PLACE_UPDATES", False)
    assert _run(_module(body, fused=_ACCUMULATE), *_xy()) == 3


def test_elementwise_update_writes_its_state_leaf():
    body = f"""  acc = f32[{N}] add(a, b)
  ROOT t = {ST} tuple(i1, acc, b)"""
    assert _run(_module(body), *_xy()) == 2


@pytest.mark.parametrize("body", [
    # the old a is read after the update (post order: acc, then late)
    f"""  acc = f32[{N}] add(a, b)
  late = f32[{N}] multiply(a, a)
  ROOT t = {ST} tuple(i1, acc, late)""",
    # a swap: the old a is the new b
    f"""  acc = f32[{N}] add(a, b)
  ROOT t = {ST} tuple(i1, acc, a)""",
    f"""  ROOT t = {ST} tuple(i1, b, a)""",
    # an in-place update of a whose result is another element: overwriting a's buffer would clobber it
    f"""  u = f32[1] constant({{7}})
  d = f32[{N}] dynamic-update-slice(a, u, i)
  sq = f32[{N}] multiply(d, d)
  nd = f32[{N}] negate(d)
  ROOT t = {ST} tuple(i1, sq, nd)""",
])
def test_updates_that_must_not_overwrite_the_old_value(body):
    _run(_module(body), *_xy())


def test_a_transposed_read_of_the_old_value_is_not_in_place():
    st = "(s32[], f32[16,16], f32[16,16])"
    fused = """fused_t {
  p0 = f32[16,16] parameter(0)
  t = f32[16,16] transpose(p0), dimensions={1,0}
  ROOT r = f32[16,16] add(p0, t)
}
"""
    body = f"""  acc = f32[16,16] fusion(a), kind=kLoop, calls=fused_t
  ROOT t = {st} tuple(i1, acc, b)"""
    text = _module(body, fused=fused, state=st).replace(f"f32[{N}]", "f32[16,16]")
    x, y = (v.reshape(16, 16) for v in _xy())
    assert _run(text, x, y) == 3         # x and y copied in, acc copied back each iteration


def test_loop_takes_over_a_dead_init_and_copies_a_live_one():
    body = f"""  acc = f32[{N}] add(a, b)
  ROOT t = {ST} tuple(i1, acc, b)"""
    dead = f"""  x = f32[{N}] parameter(0)
  y = f32[{N}] parameter(1)
  e = f32[{N}] exponential(x)
  z = s32[] constant(0)
  t = {ST} tuple(z, e, y)
  w = {ST} while(t), condition=cond, body=body
  r = f32[{N}] get-tuple-element(w), index=1
  ROOT o = f32[{N}] negate(r)"""
    assert _run(_module(body, entry=dead), *_xy()) == 0      # e is taken over, y (read only) read in place
    live = dead.replace(f"  ROOT o = f32[{N}] negate(r)",
                        f"  o = f32[{N}] negate(r)\n  ROOT two = (f32[{N}], f32[{N}]) tuple(o, e)")
    assert _run(_module(body, entry=live), *_xy()) >= 1


def test_nested_tuple_state():
    st = f"(s32[], (f32[{N}], s32[]), f32[{N}])"
    text = f"""HloModule nested
{_cond(st)}
body {{
  s = {st} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  p = (f32[{N}], s32[]) get-tuple-element(s), index=1
  a = f32[{N}] get-tuple-element(p), index=0
  c = s32[] get-tuple-element(p), index=1
  b = f32[{N}] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  c1 = s32[] add(c, i)
  acc = f32[{N}] add(a, b)
  q = (f32[{N}], s32[]) tuple(acc, c1)
  ROOT t = {st} tuple(i1, q, b)
}}

ENTRY e {{
  x = f32[{N}] parameter(0)
  y = f32[{N}] parameter(1)
  z = s32[] constant(0)
  p = (f32[{N}], s32[]) tuple(x, z)
  t = {st} tuple(z, p, y)
  ROOT w = {st} while(t), condition=cond, body=body
}}
"""
    assert _run(text, *_xy()) == 2


@pytest.mark.parametrize("after", [
    # y, a read-only leaf, stays the caller's array: an update after the loop must not write into it
    f"""  r = f32[{N}] get-tuple-element(w), index=2
  u = f32[1] constant({{9}})
  k = s32[] constant(3)
  d = f32[{N}] dynamic-update-slice(r, u, k)
  ROOT n = f32[{N}] negate(d)""",
    # e, a read-only leaf, is read after an update of the loop's result
    f"""  r = f32[{N}] get-tuple-element(w), index=2
  u = f32[1] constant({{9}})
  k = s32[] constant(3)
  d = f32[{N}] dynamic-update-slice(r, u, k)
  n = f32[{N}] negate(d)
  f = f32[{N}] negate(e)
  ROOT o = (f32[{N}], f32[{N}]) tuple(n, f)""",
])
def test_read_only_leaves_stay_in_the_init_buffer(after):
    body = f"""  acc = f32[{N}] add(a, b)
  ROOT t = {ST} tuple(i1, acc, b)"""
    leaf = "e" if "negate(e)" in after else "y"
    entry = f"""  x = f32[{N}] parameter(0)
  y = f32[{N}] parameter(1)
  e = f32[{N}] exponential(y)
  z = s32[] constant(0)
  t = {ST} tuple(z, x, {leaf})
  w = {ST} while(t), condition=cond, body=body
{after}"""
    x, y = _xy()
    keep = y.copy()
    _run(_module(body, entry=entry), x, y)
    np.testing.assert_array_equal(y, keep)


# -- an update scheduled after the reads of the old value ------------------------------------------------------
def test_update_moves_after_reads_of_the_old_value_and_runs_in_place():
    """TensorFlow's gradient loops: the list is updated (a DUS fusion) and the old list is read afterwards by an
    instruction that does not depend on the update. Emitted after that read, the update writes its window in
    place (aliasing._sink_in_place_updates): no whole-buffer copy per iteration."""
    fused = f"""fused_set {{
  p0 = f32[{N}] parameter(0)
  p1 = s32[] parameter(1)
  z = f32[] constant(0)
  zb = f32[1] broadcast(z), dimensions={{}}
  ROOT d = f32[{N}] dynamic-update-slice(p0, zb, p1)
}}
"""
    body = f"""  upd = f32[{N}] fusion(a, i), kind=kLoop, calls=fused_set
  old = f32[1] dynamic-slice(a, i), dynamic_slice_sizes={{1}}
  ob = f32[{N}] broadcast(f32[] reshape(old)), dimensions={{}}
  nb = f32[{N}] add(b, ob)
  ROOT t = {ST} tuple(i1, upd, nb)"""
    text = _module(body, fused=fused)
    x, y = _xy()
    assert _run(text, x, y) == 2         # x and y into the result buffers; nothing per iteration


def test_update_stays_before_a_reader_that_depends_on_it():
    body = f"""  u = f32[1] constant({{7}})
  d = f32[{N}] dynamic-update-slice(a, u, i)
  both = f32[{N}] add(a, d)
  ROOT t = {ST} tuple(i1, d, both)"""
    _run(_module(body), *_xy())


def test_update_moves_without_its_tuple_when_the_tuple_needs_a_later_value():
    st = f"(s32[], (f32[{N}], f32[{N}]), f32[{N}])"
    text = f"""HloModule moved_tuple
{_cond(st)}
body {{
  s = {st} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  p = (f32[{N}], f32[{N}]) get-tuple-element(s), index=1
  a = f32[{N}] get-tuple-element(p), index=0
  b = f32[{N}] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  u = f32[1] constant({{3}})
  d = f32[{N}] dynamic-update-slice(a, u, i)
  old = f32[1] dynamic-slice(a, i), dynamic_slice_sizes={{1}}
  ob = f32[{N}] broadcast(f32[] reshape(old)), dimensions={{}}
  late = f32[{N}] add(b, ob)
  q = (f32[{N}], f32[{N}]) tuple(d, late)
  ROOT t = {st} tuple(i1, q, late)
}}

ENTRY e {{
  x = f32[{N}] parameter(0)
  y = f32[{N}] parameter(1)
  z = s32[] constant(0)
  p = (f32[{N}], f32[{N}]) tuple(x, y)
  t = {st} tuple(z, p, y)
  ROOT w = {st} while(t), condition=cond, body=body
}}
"""
    _run(text, *_xy())
