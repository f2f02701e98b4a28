"""CSE, DCE, TupleSimplifier, constant folding, layout assignment, copy insertion: text in, CHECK lines out, or
must not change (check_rewrite: semantics on corner values, idempotence)."""
import pytest

from xlapy.testing import check_rewrite


CASES = [
    ("cse", ["cse", "dce"], """HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  a = f32[4] exponential(p)
  b = f32[4] exponential(p), metadata={op_name="other"}
  ROOT s = f32[4] add(a, b)
}""", "CHECK: %a = f32[4] exponential\nCHECK-NOT: exponential\nCHECK: add(f32[4] %a, f32[4] %a)"),
    ("cse_constants", ["cse", "dce"], """HloModule m
ENTRY e {
  c1 = f32[] constant(1)
  c2 = f32[] constant(1)
  ROOT s = f32[] add(c1, c2)
}""", "CHECK: constant(1)\nCHECK-NOT: constant\nCHECK: add(f32[] %c1, f32[] %c1)"),
    ("dce", ["dce"], """HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  dead = f32[4] negate(p)
  ROOT r = f32[4] abs(p)
}""", "CHECK-NOT: negate"),
    ("dce_unreachable_computation", ["dce"], """HloModule m
unused {
  x = f32[] parameter(0)
  ROOT y = f32[] negate(x)
}
ENTRY e {
  ROOT p = f32[4] parameter(0)
}""", "CHECK-NOT: unused"),
    ("tuple_gte", ["tuple-simplifier", "dce"], """HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  q = s32[] parameter(1)
  t = (f32[4], s32[]) tuple(p, q)
  ROOT g = s32[] get-tuple-element(t), index=1
}""", "CHECK-NOT: tuple\nCHECK: ROOT %q"),
    ("fold", ["constant_folding", "dce"], """HloModule m
ENTRY e {
  a = f32[2] constant({1, 2})
  b = f32[2] constant({10, 20})
  s = f32[2] add(a, b)
  ROOT m = f32[2] multiply(s, s)
}""", "CHECK: constant({121, 484})\nCHECK-NOT: add"),
    ("fold_through_scalar_broadcast", ["constant_folding", "dce"], """HloModule m
ENTRY e {
  a = s32[] constant(3)
  b = s32[3] broadcast(a), dimensions={}
  ROOT n = s32[3] negate(b)
}""", "CHECK: s32[] constant(-3)\nCHECK: ROOT {{.*}} broadcast(\nCHECK-NOT: negate"),
    # a uniform result is a broadcast of a scalar, never a big literal (pad of broadcast zeros)
    ("fold_uniform_to_broadcast", ["constant_folding", "dce"], """HloModule m
ENTRY e {
  z = f32[] constant(-0)
  b = f32[64,64] broadcast(z), dimensions={}
  ROOT p = f32[64,80] pad(b, z), padding=0_0x8_8
}""", "CHECK: f32[] constant(-0)\nCHECK: ROOT {{.*}} f32[64,80]{{.*}} broadcast(\nCHECK-NOT: pad"),
    ("fold_mixed_signed_zeros_stays_literal", ["constant_folding", "dce"], """HloModule m
ENTRY e {
  z = f32[] constant(0)
  n = f32[] constant(-0)
  b = f32[2] broadcast(z), dimensions={}
  ROOT p = f32[3] pad(b, n), padding=0_1
}""", "CHECK: constant({0, 0, -0})"),
    ("layout", ["layout-assignment"], """HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  ROOT t = f32[3,2] transpose(p), dimensions={1,0}
}""", "CHECK: f32[2,3]{1,0} parameter(0)\nCHECK: f32[3,2]{1,0} transpose"),
    ("copy_root_parameter", ["copy-insertion"], """HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  q = f32[2] parameter(1)
  ROOT t = (f32[2], f32[2]) tuple(p, q)
}""", "CHECK: copy(f32[2] %p)\nCHECK: copy(f32[2] %q)\nCHECK: ROOT %tuple"),
    ("copy_while_init", ["copy-insertion"], """HloModule m
cond {
  s = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  x = f32[2] get-tuple-element(s), index=1
  y = f32[2] add(x, x)
  ROOT t = (s32[], f32[2]) tuple(j, y)
}
ENTRY e {
  z = s32[] constant(0)
  p = f32[2] parameter(0)
  init = (s32[], f32[2]) tuple(z, p)
  w = (s32[], f32[2]) while(init), condition=cond, body=body
  ROOT r = f32[2] get-tuple-element(w), index=1
}""", "CHECK: copy(s32[] %z)\nCHECK: copy(f32[2] %p)\nCHECK: while("),
]

UNCHANGED = [
    ("cse_side_effect", ["cse"], """HloModule m
ENTRY e {
  a = f32[2] custom-call(), custom_call_target="r", custom_call_has_side_effect=true
  b = f32[2] custom-call(), custom_call_target="r", custom_call_has_side_effect=true
  ROOT s = f32[2] add(a, b)
}"""),
    ("dce_keeps_side_effects", ["dce"], """HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  a = f32[2] custom-call(p), custom_call_target="log", custom_call_has_side_effect=true
  ROOT n = f32[2] negate(p)
}"""),
    ("fold_leaves_parameters", ["constant_folding"], """HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  c = f32[2] constant({1, 2})
  ROOT s = f32[2] add(p, c)
}"""),
    ("fold_leaves_rng", ["constant_folding"], """HloModule m
ENTRY e {
  s = u64[2] constant({1, 2})
  ROOT r = (u64[2], u32[4]) rng-bit-generator(s), algorithm=rng_three_fry
}"""),
]


@pytest.mark.parametrize("name, passes, text, checks", CASES, ids=[c[0] for c in CASES])
def test_pass(name, passes, text, checks):
    check_rewrite(text, passes, checks)


@pytest.mark.parametrize("name, passes, text", UNCHANGED, ids=[c[0] for c in UNCHANGED])
def test_must_not_change(name, passes, text):
    check_rewrite(text, passes, None)
