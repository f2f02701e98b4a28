"""Loop-carried accumulators (passes/while_loop_accumulators.py, run by WhileLoopSimplifier): TensorFlow's
add(acc, dynamic-update-slice(zeros, u, i)) becomes a dynamic-update-slice of acc's window, where that is exact
(IEEE-strict: acc never holds -0.0); and copy insertion's copy of a shared (list, size) init, leaf by leaf.
HLO text in, CHECK lines out, must-not-change cases, semantics on corner values (check_rewrite)."""
import pytest

from xlapy.passes.while_loop_simplifier import WhileLoopSimplifier
from xlapy.testing import check_rewrite

# TensorFlow's shape of it: the accumulator rides in a (list, size) pair; {update} is add(acc, d) or add(d, acc)
LOOP = """HloModule m

body {{
  p = (s32[], ({t}[8,4], s32[]), {t}[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  l = ({t}[8,4], s32[]) get-tuple-element(p), index=1
  acc = {t}[8,4] get-tuple-element(l), index=0
  n = s32[] get-tuple-element(l), index=1
  x = {t}[4] get-tuple-element(p), index=2
  y = {t}[4] {op}(x)
  u = {t}[1,4] reshape(y)
  zero = {t}[] constant({zero})
  zeros = {t}[8,4] broadcast(zero), dimensions={{}}
  z0 = s32[] constant(0)
  d = {t}[8,4] dynamic-update-slice(zeros, u, i, z0)
  acc1 = {t}[8,4] {update}
  {extra}
  l1 = ({t}[8,4], s32[]) tuple(acc1, n)
  ROOT t = (s32[], ({t}[8,4], s32[]), {t}[4]) tuple(i1, l1, x)
}}

cond {{
  p = (s32[], ({t}[8,4], s32[]), {t}[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(8)
  ROOT lt = pred[] compare(i, n), direction=LT
}}

ENTRY e {{
  x = {t}[4] parameter(0)
  {init}
  n = s32[] constant(8)
  l = ({t}[8,4], s32[]) tuple(a, n)
  start = s32[] constant(0)
  init = (s32[], ({t}[8,4], s32[]), {t}[4]) tuple(start, l, x)
  w = (s32[], ({t}[8,4], s32[]), {t}[4]) while(init), condition=cond, body=body
  wl = ({t}[8,4], s32[]) get-tuple-element(w), index=1
  ROOT r = {t}[8,4] get-tuple-element(wl), index=0
}}
"""
ZEROS_INIT = "c = {t}[] constant(0)\n  a = {t}[8,4] broadcast(c), dimensions={{}}"
PARAM_INIT = "a = {t}[8,4] parameter(1)"


def loop(t="f32", op="sine", zero="0", update="add(acc, d)", extra="", init=ZEROS_INIT):
    return LOOP.format(t=t, op=op, zero=zero, update=update, extra=extra, init=init.format(t=t))


def check(text, checks=None):
    return check_rewrite(text, [WhileLoopSimplifier, "dce"], checks, fixed_point=True)


IN_PLACE = """
    CHECK: %acc1.window = {t}[1,4] dynamic-slice({t}[8,4] %acc, s32[] %i, s32[] %z0)
    CHECK: %acc1.sum = {t}[1,4] add({t}[1,4] {first}, {t}[1,4] {second})
    CHECK-NOT: broadcast
    CHECK: = {t}[8,4] dynamic-update-slice({t}[8,4] %acc, {t}[1,4] %acc1.sum, s32[] %i, s32[] %z0)
    CHECK: %cond"""


def in_place(t="f32", acc_first=True):
    first, second = ("%acc1.window", "%u") if acc_first else ("%u", "%acc1.window")
    return IN_PLACE.format(t=t, first=first, second=second)


def test_zero_list_added_into_a_zero_initialized_accumulator():
    # acc' = add(acc, DUS(broadcast(+0), u, i)) => DUS(acc, add(DS(acc, i), u), i): acc starts at +0, never -0
    check(loop(), in_place())


def test_either_operand_order_keeps_its_order():
    check(loop(update="add(d, acc)"), in_place(acc_first=False))


def test_negative_zero_list_is_exact_for_any_accumulator():
    # acc + (-0.0) is acc for every acc, so the init may be anything (a parameter)
    check(loop(zero="-0", init=PARAM_INIT), in_place())


def test_integer_accumulator_is_exact_for_any_init():
    check(loop(t="s32", op="negate", init=PARAM_INIT), in_place(t="s32"))


@pytest.mark.parametrize("case", [
    # a parameter may hold -0.0, where acc + (+0.0) gives +0.0 and the window update would keep -0.0
    dict(init=PARAM_INIT),
    # so may a -0.0 init
    dict(init="c = {t}[] constant(-0)\n  a = {t}[8,4] broadcast(c), dimensions={{}}"),
    # the list holds something other than zeros
    dict(zero="1"),
    # the sum adds the list to something other than acc
    dict(extra="m = f32[8,4] multiply(acc, acc)", update="add(m, d)"),
])
def test_must_not_change(case):
    check(loop(**case))


SHARED_LIST = """HloModule m

body {
  p = (s32[], (f32[8,4], s32[])) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  l = (f32[8,4], s32[]) get-tuple-element(p), index=1
  acc = f32[8,4] get-tuple-element(l), index=0
  n = s32[] get-tuple-element(l), index=1
  acc1 = f32[8,4] add(acc, acc)
  l1 = (f32[8,4], s32[]) tuple(acc1, n)
  ROOT t = (s32[], (f32[8,4], s32[])) tuple(i1, l1)
}

cond {
  p = (s32[], (f32[8,4], s32[])) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY e {
  c = f32[] constant(1)
  a = f32[8,4] broadcast(c), dimensions={}
  n = s32[] constant(8)
  l = (f32[8,4], s32[]) tuple(a, n)
  start = s32[] constant(0)
  w1 = (s32[], (f32[8,4], s32[])) while((s32[], (f32[8,4], s32[])) tuple(start, l)), condition=cond, body=body
  w2 = (s32[], (f32[8,4], s32[])) while((s32[], (f32[8,4], s32[])) tuple(start, l)), condition=cond, body=body
  ROOT r = ((s32[], (f32[8,4], s32[])), (s32[], (f32[8,4], s32[]))) tuple(w1, w2)
}
"""


def test_shared_list_init_is_copied_leaf_by_leaf():
    # copy((list, size)) => tuple(broadcast of its own, copy(size)): no copy of the list's bytes
    check_rewrite(SHARED_LIST, ["copy-insertion"], """
        CHECK-NOT: copy((f32[8,4], s32[])
        CHECK: f32[8,4] broadcast(f32[] %c)
        CHECK: s32[] copy(s32[] %n)
        CHECK: while(""", idempotent=False)
