"""WhileLoopSimplifier and WhileLoopConstantSinking: HLO text in, CHECK lines out; must-not-change cases;
idempotence; semantics kept on corner values (check_rewrite)."""
import numpy as np
import pytest

import xlapy
from xlapy.passes.while_loop_analysis import trip_count
from xlapy.passes.while_loop_constant_sinking import WhileLoopConstantSinking
from xlapy.passes.while_loop_simplifier import WhileLoopSimplifier
from xlapy.testing import check_rewrite, corner_values


def check_pass(make_pass, text, checks=None, **options):
    """The pass with DCE to a fixed point, through check_rewrite: CHECK lines (None: must not change),
    verification, idempotence, semantics on corner and random inputs."""
    return check_rewrite(text, [make_pass, "dce"], checks, fixed_point=True, **options)


LOOP = """HloModule m

body {{
  p = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x = f32[4] get-tuple-element(p), index=1
  d = f32[4] get-tuple-element(p), index=2
  x1 = f32[4] sine(x)
  d1 = f32[4] add(d, x)
  ROOT t = (s32[], f32[4], f32[4]) tuple(i1, x1, d1)
}}

cond {{
  p = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant({bound})
  ROOT lt = pred[] compare(i, n), direction=LT
}}

ENTRY e {{
  a = f32[4] parameter(0)
  start = s32[] constant({start})
  init = (s32[], f32[4], f32[4]) tuple(start, a, a)
  w = (s32[], f32[4], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index={result}
}}
"""


def test_trip_count_zero_is_init():
    # while with trip count 0 => init
    check_pass(WhileLoopSimplifier, LOOP.format(start=5, bound=3, result=1), """
        CHECK-NOT: while
        CHECK: %init = (s32[], f32[4], f32[4]) tuple(
        CHECK: ROOT %r = f32[4] get-tuple-element((s32[], f32[4], f32[4]) %init), index=1""")


def test_trip_count_one_inlines_body():
    # while with trip count 1 => body(init)
    check_pass(WhileLoopSimplifier, LOOP.format(start=2, bound=3, result=2), """
        CHECK-NOT: while
        CHECK: %d1.1 = f32[4] add(f32[4] %d.1, f32[4] %x.1)
        CHECK: %t.1 = (s32[], f32[4], f32[4]) tuple(
        CHECK: ROOT %r = f32[4] get-tuple-element((s32[], f32[4], f32[4]) %t.1), index=2""")


def test_dead_element_removed():
    # while(tuple(i, x, d)) with d read by nobody but itself => while(tuple(i, x))
    after = check_pass(WhileLoopSimplifier, LOOP.format(start=0, bound=3, result=1), """
        CHECK: (s32[], f32[4]) parameter(0)
        CHECK-NOT: f32[4], f32[4]
        CHECK: ROOT
        CHECK: (s32[], f32[4]) while""")
    assert "while(" in after.to_text()


def test_dead_counter_kept_when_condition_reads_it():
    # the result reads d; d reads x; the condition reads i: nothing is dead
    check_pass(WhileLoopSimplifier, LOOP.format(start=0, bound=3, result=2))


def test_unknown_bound_must_not_change():
    text = """HloModule m

body {
  p = (s32[], f32[3], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x = f32[3] get-tuple-element(p), index=1
  x1 = f32[3] multiply(x, x)
  n = s32[] get-tuple-element(p), index=2
  ROOT t = (s32[], f32[3], s32[]) tuple(i1, x1, n)
}

cond {
  p = (s32[], f32[3], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=2
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY e {
  x = f32[3] parameter(0)
  n = s32[] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[3], s32[]) tuple(zero, x, n)
  w = (s32[], f32[3], s32[]) while(init), condition=cond, body=body
  i = s32[] get-tuple-element(w), index=0
  y = f32[3] get-tuple-element(w), index=1
  ROOT r = (s32[], f32[3]) tuple(i, y)
}
"""
    check_pass(WhileLoopSimplifier, text)


FORI_WITH_CALL = """HloModule m

step {
  k = s32[] parameter(0)
  one = s32[] constant(1)
  k1 = s32[] add(k, one)
  x = f32[4] parameter(1)
  kf = f32[] convert(k)
  kb = f32[4] broadcast(kf), dimensions={}
  x1 = f32[4] add(x, kb)
  ROOT t = (s32[], f32[4]) tuple(k1, x1)
}

body {
  p = (s32[], s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  k = s32[] get-tuple-element(p), index=1
  x = f32[4] get-tuple-element(p), index=2
  c = (s32[], f32[4]) call(k, x), to_apply=step
  k1 = s32[] get-tuple-element(c), index=0
  x1 = f32[4] get-tuple-element(c), index=1
  ROOT t = (s32[], s32[], f32[4]) tuple(i1, k1, x1)
}

cond {
  p = (s32[], s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(%d)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY e {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], s32[], f32[4]) tuple(zero, zero, x)
  w = (s32[], s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=2
}
"""


def test_fori_loop_with_call_one_trip_is_inlined():
    check_pass(WhileLoopSimplifier, FORI_WITH_CALL % 1, """
        CHECK-NOT: while(
        CHECK: call(""")


def test_fori_loop_many_trips_keeps_live_state():
    # the inner counter k feeds x through the call: nothing is dead, the loop stays
    check_pass(WhileLoopSimplifier, FORI_WITH_CALL % 7)


def test_trip_count_analysis():
    for n in (0, 1, 5):
        m = xlapy.hlo.parse(FORI_WITH_CALL % n)
        w = next(i for i in m.entry.instructions if i.opcode == "while")
        assert trip_count(w) == n
        assert trip_count(w, max_trips=n - 1 if n else 0) == (0 if n == 0 else None)


def test_unused_while_removed():
    text = LOOP.format(start=0, bound=3, result=1).replace(
        "ROOT r = f32[4] get-tuple-element(w), index=1", "r = f32[4] get-tuple-element(w), index=1\n  ROOT o = f32[4] negate(a)")
    check_pass(WhileLoopSimplifier, text, """
        CHECK-NOT: while
        CHECK: ROOT %o = f32[4] negate""")


def test_dead_elements_of_a_parameter_init():
    # init is not a tuple instruction: the kept elements are read with get-tuple-element
    text = LOOP.format(start=0, bound=3, result=1).replace(
        """  start = s32[] constant(0)
  init = (s32[], f32[4], f32[4]) tuple(start, a, a)""",
        """  init = (s32[], f32[4], f32[4]) parameter(1)""")
    corners = corner_values(np.float32)
    # the loop counter comes in with the arguments: small values, or the loop would run for ever
    args = [[np.ones(4, np.float32), (np.int32(1), np.arange(4, dtype=np.float32), np.ones(4, np.float32))],
            [corners[:4], (np.int32(-1), corners[4:8], corners[8:12])]]
    check_pass(WhileLoopSimplifier, text, """
        CHECK: ENTRY
        CHECK: get-tuple-element(
        CHECK: index=0
        CHECK: (s32[], f32[4]) while""", args=args)


def test_side_effecting_body_keeps_its_state():
    text = LOOP.format(start=0, bound=3, result=1).replace(
        "  d1 = f32[4] add(d, x)",
        '  d1 = f32[4] add(d, x)\n  s = () custom-call(d1), custom_call_target="log", custom_call_has_side_effect=true')
    check_rewrite(text, WhileLoopSimplifier, None)


BOUND_IN_STATE = """HloModule m

body {
  p = (s32[], f32[4], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x = f32[4] get-tuple-element(p), index=1
  x1 = f32[4] sine(x)
  n = s32[] get-tuple-element(p), index=2
  ROOT t = (s32[], f32[4], s32[]) tuple(i1, x1, n)
}

cond {
  p = (s32[], f32[4], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=2
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY e {
  a = f32[4] parameter(0)
  zero = s32[] constant(0)
  bound = s32[] constant(4)
  init = (s32[], f32[4], s32[]) tuple(zero, a, bound)
  w = (s32[], f32[4], s32[]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
"""


def test_constant_sinking():
    # gte(param, 2) in the condition => constant(4), element 2 being 4 on every iteration
    check_pass(WhileLoopConstantSinking, BOUND_IN_STATE, """
        CHECK: %cond
        CHECK: constant(4)
        CHECK: ROOT %lt = pred[] compare(s32[] %i, s32[] %bound.1)""")


def test_constant_sinking_frees_the_element():
    # ... and then the element is dead: while((i, x, n)) => while((i, x))
    check_rewrite(BOUND_IN_STATE, [WhileLoopConstantSinking, WhileLoopSimplifier, "dce"],
                  "CHECK: ENTRY\nCHECK: (s32[], f32[4]) while(", fixed_point=True)


def test_constant_sinking_must_not_change_a_shared_body():
    text = BOUND_IN_STATE.replace("  ROOT r = f32[4] get-tuple-element(w), index=1", """  w2 = (s32[], f32[4], s32[]) while(init), condition=cond, body=body
  r1 = f32[4] get-tuple-element(w), index=1
  r2 = f32[4] get-tuple-element(w2), index=1
  ROOT r = f32[4] add(r1, r2)""")
    check_rewrite(text, WhileLoopConstantSinking, None)


ARRAY_STATE = """HloModule m

body {
  p = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT i1 = s32[] add(p, one)
}

cond {
  p = s32[] parameter(0)
  n = s32[] constant(%d)
  ROOT lt = pred[] compare(p, n), direction=LT
}

ENTRY e {
  start = s32[] constant(0)
  x = s32[] parameter(0)
  w = s32[] while(start), condition=cond, body=body
  ROOT r = s32[] add(w, x)
}
"""


@pytest.mark.parametrize("n, checks", [(0, "CHECK-NOT: while\nCHECK: ROOT %r = s32[] add(s32[] %start, s32[] %x)"),
                                       (1, "CHECK-NOT: while\nCHECK: %i1.1 = s32[] add(s32[] %start, s32[] %one.1)")])
def test_array_state_loop(n, checks):
    check_pass(WhileLoopSimplifier, ARRAY_STATE % n, checks)


def test_array_state_loop_of_many_trips_must_not_change():
    check_pass(WhileLoopSimplifier, ARRAY_STATE % 5)


def test_identity_body_must_not_change():
    # a body whose root is its parameter: the loop never ends unless it starts false; nothing is removed
    text = """HloModule m

body {
  ROOT p = (s32[], f32[4]) parameter(0)
}

cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY e {
  a = f32[4] parameter(0)
  i = s32[] parameter(1)
  init = (s32[], f32[4]) tuple(i, a)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = s32[] get-tuple-element(w), index=0
}
"""
    check_rewrite(text, WhileLoopSimplifier, None)


def test_constant_false_condition_on_a_parameter_state():
    # the condition ignores the state and is false: trip count 0 even though the init is not constant
    text = LOOP.format(start=0, bound=3, result=1).replace(
        "  n = s32[] constant(3)\n  ROOT lt = pred[] compare(i, n), direction=LT", "  ROOT f = pred[] constant(false)").replace(
        "  start = s32[] constant(0)\n  init = (s32[], f32[4], f32[4]) tuple(start, a, a)",
        "  init = (s32[], f32[4], f32[4]) parameter(1)")
    check_rewrite(text, WhileLoopSimplifier,
                  "CHECK-NOT: while(\nCHECK: ROOT %r = f32[4] get-tuple-element((s32[], f32[4], f32[4]) %init)")
