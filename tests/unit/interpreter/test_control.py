"""Control flow and calls on the interpreter: while, conditional, call, map, fusion, custom-call, ids."""
import numpy as np
import pytest

import xlapy

f32, s32 = np.float32, np.int32

WHILE = """HloModule m

cond {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[3] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x1 = f32[3] add(x, x)
  ROOT t = (s32[], f32[3]) tuple(i1, x1)
}

ENTRY e {
  i0 = s32[] parameter(0)
  x0 = f32[3] parameter(1)
  init = (s32[], f32[3]) tuple(i0, x0)
  ROOT w = (s32[], f32[3]) while(init), condition=cond, body=body
}
"""


@pytest.mark.parametrize("start, doublings", [(0, 10), (7, 3), (12, 0)])
def test_while_loops_until_the_condition_fails(hlo, start, doublings):
    i, x = hlo.run_text(WHILE, np.array(start, s32), np.array([1, 2, 3], f32))
    hlo.assert_exact(i, np.array(max(start, 10), s32))
    hlo.assert_exact(x, np.array([1, 2, 3], f32) * 2**doublings)


BRANCHES = """HloModule m

neg {
  a = f32[2] parameter(0)
  ROOT n = f32[2] negate(a)
}

dbl {
  b = f32[2] parameter(0)
  ROOT d = f32[2] add(b, b)
}

idn {
  c = f32[2] parameter(0)
  ROOT k = f32[2] copy(c)
}

ENTRY e {
  sel = SELECTOR parameter(0)
  x = f32[2] parameter(1)
  y = f32[2] parameter(2)
  z = f32[2] parameter(3)
  ROOT r = f32[2] conditional(sel, OPERANDS), BRANCHES
}
"""
X, Y, Z = np.array([1, 2], f32), np.array([3, 4], f32), np.array([5, 6], f32)


@pytest.mark.parametrize("pred, want", [(True, -X), (False, Y + Y)])
def test_conditional_on_pred(hlo, pred, want):
    text = (BRANCHES.replace("SELECTOR", "pred[]").replace("OPERANDS", "x, y")
            .replace("BRANCHES", "true_computation=neg, false_computation=dbl"))
    hlo.assert_exact(hlo.run_text(text, np.array(pred), X, Y, Z), want)


@pytest.mark.parametrize("index, want", [(0, -X), (1, Y + Y), (2, Z), (3, Z), (-1, Z), (2**31 - 1, Z)])
def test_conditional_on_index_runs_last_branch_when_out_of_range(hlo, index, want):
    text = (BRANCHES.replace("SELECTOR", "s32[]").replace("OPERANDS", "x, y, z")
            .replace("BRANCHES", "branch_computations={neg, dbl, idn}"))
    hlo.assert_exact(hlo.run_text(text, np.array(index, s32), X, Y, Z), want)


CALLS = """HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

madd {
  p = f32[3] parameter(0)
  q = f32[3] parameter(1)
  m = f32[3] multiply(p, q)
  ROOT s = f32[3] add(m, q)
}

ENTRY e {
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  ROOT r = f32[3] OP
}
"""


@pytest.mark.parametrize("op", ["call(x, y), to_apply=madd", "fusion(x, y), kind=kLoop, calls=madd"])
def test_call_and_fusion_evaluate_the_called_computation(hlo, op):
    x, y = np.array([1, 2, 3], f32), np.array([4, 5, 6], f32)
    hlo.assert_exact(hlo.run_text(CALLS.replace("OP", op), x, y), x * y + y)


def test_map_applies_a_scalar_computation_elementwise(hlo):
    x, y = np.array([1, 2, 3], f32), np.array([4, 5, 6], f32)
    text = CALLS.replace("OP", "map(x, y), dimensions={0}, to_apply=add")
    hlo.assert_exact(hlo.run_text(text, x, y), x + y)


IDENTITIES = [
    ("opt-barrier", "  ROOT r = (f32[2]) opt-barrier(t)", lambda x: (x,)),
    ("add-dependency", "  tok = token[] after-all()\n  ROOT r = f32[2] add-dependency(x, tok)", lambda x: x),
    ("partition-id", "  ROOT r = u32[] partition-id()", lambda x: np.array(0, np.uint32)),
    ("replica-id", "  ROOT r = u32[] replica-id()", lambda x: np.array(0, np.uint32)),
]


@pytest.mark.parametrize("name, body, want", IDENTITIES, ids=[i[0] for i in IDENTITIES])
def test_identity_like_ops(hlo, name, body, want):
    text = f"HloModule m\n\nENTRY e {{\n  x = f32[2] parameter(0)\n  t = (f32[2]) tuple(x)\n{body}\n}}\n"
    x = np.array([1, 2], f32)
    got, expected = hlo.run_text(text, x), want(x)
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        got, expected = got[0], expected[0]
    hlo.assert_exact(got, expected)


def test_unknown_custom_call_target_raises_naming_it(hlo):
    text = ('HloModule m\n\nENTRY e {\n  x = f32[2] parameter(0)\n'
            '  ROOT r = f32[2] custom-call(x), custom_call_target="my_kernel"\n}\n')
    with pytest.raises(xlapy.ExecutionError, match=r"custom-call r: target 'my_kernel' is not supported"):
        hlo.run_text(text, np.zeros(2, f32))
