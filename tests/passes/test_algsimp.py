"""AlgebraicSimplifier: HLO text in, CHECK lines out; cases that must not change; semantics on corner values
(check_rewrite)."""
import pytest

import xlapy
from xlapy.passes.algsimp import AlgebraicSimplifier
from xlapy.testing import check_rewrite, hlo_module

SIMPLIFY = ["algsimp", "dce"]        # run to a fixed point, as the simplification pipeline does

# (name, module, checks); the rule's comment names the rewrite.
CASES = [
    ("int_add_zero", hlo_module("""
p = s32[4] parameter(0)
z = s32[] constant(0)
zb = s32[4] broadcast(z), dimensions={}
ROOT a = s32[4] add(zb, p)"""), "CHECK: ROOT %p = s32[4] parameter(0)"),
    ("float_add_negzero", hlo_module("""
p = f32[4] parameter(0)
z = f32[] constant(-0)
zb = f32[4] broadcast(z), dimensions={}
ROOT a = f32[4] add(p, zb)"""), "CHECK: ROOT %p"),
    ("mul_one", hlo_module("""
p = f32[4] parameter(0)
o = f32[] constant(1)
ob = f32[4] broadcast(o), dimensions={}
ROOT a = f32[4] multiply(ob, p)"""), "CHECK: ROOT %p"),
    ("int_mul_zero", hlo_module("""
p = s32[4] parameter(0)
z = s32[] constant(0)
zb = s32[4] broadcast(z), dimensions={}
ROOT a = s32[4] multiply(p, zb)"""), "CHECK: constant(0)\nCHECK: ROOT %broadcast"),
    ("neg_neg", hlo_module("""
p = f32[4] parameter(0)
n = f32[4] negate(p)
ROOT a = f32[4] negate(n)"""), "CHECK: ROOT %p"),
    ("div_by_two_is_mul_half", hlo_module("""
p = f32[4] parameter(0)
t = f32[] constant(2)
tb = f32[4] broadcast(t), dimensions={}
ROOT a = f32[4] divide(p, tb)"""), "CHECK: constant(0.5)\nCHECK: ROOT\nCHECK: multiply"),
    ("transpose_transpose", hlo_module("""
p = f32[2,3,4] parameter(0)
t = f32[4,2,3] transpose(p), dimensions={2,0,1}
ROOT a = f32[2,3,4] transpose(t), dimensions={1,2,0}"""), "CHECK: ROOT %p"),
    ("transpose_of_dot_swaps_operands", hlo_module("""
g = f32[128,512] parameter(0)
x = f32[128,784] parameter(1)
d = f32[512,784] dot(g, x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
ROOT t = f32[784,512] transpose(d), dimensions={1,0}"""),
     "CHECK-NOT: transpose\nCHECK: ROOT\nCHECK: dot(f32[128,784] %x, f32[128,512] %g), lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
    ("dot_of_free_concat_splits", hlo_module("""
a = f32[2048,32] parameter(0)
b = f32[2048,32] parameter(1)
c = f32[2048,64] concatenate(a, b), dimensions={1}
g = f32[2048,16] parameter(2)
ROOT d = f32[64,16] dot(c, g), lhs_contracting_dims={0}, rhs_contracting_dims={0}"""),
     "CHECK-NOT: f32[2048,64]\nCHECK-DAG: f32[32,16] dot(f32[2048,32] %a, f32[2048,16] %g)\n"
     "CHECK-DAG: f32[32,16] dot(f32[2048,32] %b, f32[2048,16] %g)\nCHECK: ROOT\nCHECK-SAME: concatenate("),
    ("dot_of_free_concat_on_the_rhs", hlo_module("""
a = f32[2048,32] parameter(0)
b = f32[2048,32] parameter(1)
c = f32[2048,64] concatenate(a, b), dimensions={1}
g = f32[2048,16] parameter(2)
ROOT d = f32[16,64] dot(g, c), lhs_contracting_dims={0}, rhs_contracting_dims={0}"""),
     "CHECK-NOT: f32[2048,64]\nCHECK-DAG: f32[16,32] dot(f32[2048,16] %g, f32[2048,32] %a)\n"
     "CHECK-DAG: f32[16,32] dot(f32[2048,16] %g, f32[2048,32] %b)\nCHECK: ROOT\nCHECK-SAME: dimensions={1}"),
    ("reshape_reshape", hlo_module("""
p = f32[2,6] parameter(0)
r = f32[12] reshape(p)
ROOT a = f32[3,4] reshape(r)"""), "CHECK-NOT: f32[12]\nCHECK: ROOT\nCHECK: reshape(f32[2,6] %p)"),
    ("slice_full", hlo_module("""
p = f32[4,3] parameter(0)
ROOT s = f32[4,3] slice(p), slice={[0:4], [0:3]}"""), "CHECK: ROOT %p"),
    ("slice_slice", hlo_module("""
p = f32[10] parameter(0)
s = f32[6] slice(p), slice={[2:8]}
ROOT t = f32[2] slice(s), slice={[1:3]}"""), "CHECK: slice={[3:5]}"),
    ("select_true", hlo_module("""
p = f32[4] parameter(0)
q = f32[4] parameter(1)
t = pred[] constant(true)
ROOT s = f32[4] select(t, p, q)"""), "CHECK: ROOT %p"),
    ("compare_self_int", hlo_module("""
p = s32[4] parameter(0)
ROOT c = pred[4] compare(p, p), direction=LE"""), "CHECK: constant(true)"),
    ("convert_same", hlo_module("""
p = f32[4] parameter(0)
ROOT c = f32[4] convert(p)"""), "CHECK: ROOT %p"),
    ("constant_to_right", hlo_module("""
p = f32[4] parameter(0)
c = f32[4] constant({1, 2, 3, 4})
ROOT a = f32[4] add(c, p)"""), "CHECK: add(f32[4] %p, f32[4] %c)"),
    ("compare_constant_flip", hlo_module("""
p = f32[4] parameter(0)
c = f32[4] constant({1, 2, 3, 4})
ROOT a = pred[4] compare(c, p), direction=LT"""), "CHECK: compare(f32[4] %p, f32[4] %c), direction=GT"),
    ("pad_nothing", hlo_module("""
p = f32[4] parameter(0)
z = f32[] constant(0)
ROOT a = f32[4] pad(p, z), padding=0_0"""), "CHECK: ROOT %p"),
    ("dynamic_slice_constant", hlo_module("""
p = f32[8] parameter(0)
i = s32[] constant(7)
ROOT d = f32[3] dynamic-slice(p, i), dynamic_slice_sizes={3}"""), "CHECK: slice={[5:8]}"),
    ("reduce_of_broadcast_max", hlo_module("""
p = f32[3] parameter(0)
b = f32[3,5] broadcast(p), dimensions={0}
z = f32[] constant(-inf)
ROOT r = f32[3] reduce(b, z), dimensions={1}, to_apply=max""", reducers=["max"]),
     "CHECK-NOT: reduce(\nCHECK: maximum(f32[3]"),
]

# Float rewrites that are NOT exact under IEEE rules: the module must stay as it is.
UNCHANGED = [
    ("float_add_poszero", hlo_module("""
p = f32[4] parameter(0)
z = f32[] constant(0)
zb = f32[4] broadcast(z), dimensions={}
ROOT a = f32[4] add(p, zb)""")),
    ("float_mul_zero", hlo_module("""
p = f32[4] parameter(0)
z = f32[] constant(0)
zb = f32[4] broadcast(z), dimensions={}
ROOT a = f32[4] multiply(p, zb)""")),
    ("float_sub_self", hlo_module("""
p = f32[4] parameter(0)
ROOT a = f32[4] subtract(p, p)""")),
    ("float_compare_self", hlo_module("""
p = f32[4] parameter(0)
ROOT c = pred[4] compare(p, p), direction=EQ""")),
    ("div_by_three", hlo_module("""
p = f32[4] parameter(0)
t = f32[] constant(3)
tb = f32[4] broadcast(t), dimensions={}
ROOT a = f32[4] divide(p, tb)""")),
    ("float_reduce_of_broadcast_add", hlo_module("""
p = f32[3] parameter(0)
b = f32[3,5] broadcast(p), dimensions={0}
z = f32[] constant(0)
ROOT r = f32[3] reduce(b, z), dimensions={1}, to_apply=add""", reducers=["add"])),
    ("transpose_of_shared_dot", hlo_module("""
g = f32[4,5] parameter(0)
x = f32[4,3] parameter(1)
d = f32[5,3] dot(g, x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
t = f32[3,5] transpose(d), dimensions={1,0}
ROOT r = (f32[5,3], f32[3,5]) tuple(d, t)""")),
    ("transpose_of_batched_dot", hlo_module("""
a = f32[2,4,5] parameter(0)
b = f32[2,5,3] parameter(1)
d = f32[2,4,3] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
ROOT t = f32[2,3,4] transpose(d), dimensions={0,2,1}""")),
    # an LSTM's gate weights concatenated: four small GEMMs would cost more than the one concatenate
    ("dot_of_small_free_concat", hlo_module("""
w0 = f32[128,128] parameter(0)
w1 = f32[128,128] parameter(1)
w = f32[128,256] concatenate(w0, w1), dimensions={1}
h = f32[16,128] parameter(2)
ROOT d = f32[16,256] dot(h, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}""")),
]


# Rewrites exact in real arithmetic whose float results may round differently: the reference dot is numpy's BLAS,
# whose order of the contracted sum depends on the operands' orientation and the machine's kernel (bit for bit
# on AVX-512, not on AVX2). These compare within a tolerance instead of bit for bit.
REASSOCIATING = {"transpose_of_dot_swaps_operands": dict(rtol=1e-5, atol=1e-4),
                 "dot_of_free_concat_splits": dict(rtol=1e-5, atol=1e-3),
                 "dot_of_free_concat_on_the_rhs": dict(rtol=1e-5, atol=1e-3)}    # 128 terms of ~1 each


@pytest.mark.parametrize("name, text, checks", CASES, ids=[c[0] for c in CASES])
def test_rewrite(name, text, checks):
    check_rewrite(text, SIMPLIFY, checks, fixed_point=True, **REASSOCIATING.get(name, {}))


@pytest.mark.parametrize("name, text", UNCHANGED, ids=[c[0] for c in UNCHANGED])
def test_ieee_strict_leaves_alone(name, text):
    check_rewrite(text, SIMPLIFY, None, fixed_point=True)


def test_fast_math_applies_float_identities():
    # fast math gives up IEEE semantics (-0 + 0 is +0, not -0) for speed: no semantics check
    fast = [lambda: AlgebraicSimplifier(fast_math=True), "dce"]
    check_rewrite(UNCHANGED[0][1], fast, "CHECK: ROOT %p", fixed_point=True, semantics=False)


def test_explain_says_why_a_pattern_failed():
    from xlapy.passes.pattern import Any, ConstantScalar, Op
    m = xlapy.hlo.parse(UNCHANGED[0][1])
    root = m.entry.root
    assert Op("add", Any("a"), ConstantScalar(0)).match(root) is not None
    assert "not -0" in Op("add", Any("a"), ConstantScalar(-0.0)).explain(root) or \
        "holds" in Op("add", Any("a"), ConstantScalar(-0.0)).explain(root)
    assert "is add, not multiply" in Op("multiply", Any(), Any()).explain(root)
