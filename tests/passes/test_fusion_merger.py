"""FusionMerger and MultiOutputFusion: HLO text with fusions in, CHECK lines out, a must-not-change case
for each refusal, semantics checked on the interpreter, a second run changes nothing (check_rewrite)."""
import pytest

from xlapy.passes.fusion import FusionMerger, MultiOutputFusion
from xlapy.testing import check_rewrite, hlo_module, reducer

NEG = "neg_c {\n  p0 = f32[8,16] parameter(0)\n  ROOT n = f32[8,16] negate(p0)\n}\n"
EXP = "exp_c {\n  p0 = f32[8,16] parameter(0)\n  ROOT x = f32[8,16] exponential(p0)\n}\n"
ADD2 = "add_c {\n  p0 = f32[8,16] parameter(0)\n  p1 = f32[8,16] parameter(1)\n  ROOT s = f32[8,16] add(p0, p1)\n}\n"
MUL2 = ("mul_c {\n  p0 = f32[8,16] parameter(0)\n  p1 = f32[8,16] parameter(1)\n"
        "  ROOT s = f32[8,16] multiply(p0, p1)\n}\n")
BCAST = ("bcast_c {\n  p0 = f32[8] parameter(0)\n  b = f32[8,16] broadcast(p0), dimensions={0}\n"
         "  ROOT n = f32[8,16] negate(b)\n}\n")
EXP8 = "exp8 {\n  p0 = f32[8] parameter(0)\n  ROOT x = f32[8] exponential(p0)\n}\n"
SUM, MAX = reducer("add"), reducer("max")
RSUM = ("rsum {\n  p0 = f32[8,16] parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[8] reduce(p0, z), dimensions={1}, to_apply=add\n}\n")
DUS, DUS2 = (f"{name} {{\n  p0 = f32[64,16] parameter(0)\n  p1 = f32[16] parameter(1)\n  i = s32[] parameter(2)\n"
              f"  r = f32[1,16] reshape(p1)\n  z = s32[] constant(0)\n"
              f"  ROOT d = f32[64,16] dynamic-update-slice(p0, r, i, z)\n}}\n" for name in ("dus_c", "dus_d"))
SCAT = ("scat_c {\n  p0 = s32[16,1] parameter(0)\n  p1 = f32[16,16] parameter(1)\n  z = f32[] constant(0)\n"
        "  zb = f32[8,16] broadcast(z), dimensions={}\n  n = f32[16,16] negate(p1)\n"
        "  ROOT s = f32[8,16] scatter(zb, p0, n), update_window_dims={1}, inserted_window_dims={0}, "
        "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n")
RMAX = ("rmax {\n  p0 = f32[8,16] parameter(0)\n  z = f32[] constant(-inf)\n"
        "  ROOT r = f32[8] reduce(p0, z), dimensions={1}, to_apply=max\n}\n")


# (name, pass, computations, entry body, CHECK lines; None = must not change)
CASES = [
    ("merge_cheap_fusion_into_its_fusion_users", FusionMerger, [NEG, ADD2, MUL2], """
p = f32[8,16] parameter(0)
q = f32[8,16] parameter(1)
f = f32[8,16] fusion(p), kind=kLoop, calls=neg_c
a = f32[8,16] fusion(f, q), kind=kLoop, calls=add_c
b = f32[8,16] fusion(f, p), kind=kLoop, calls=mul_c
ROOT t = (f32[8,16], f32[8,16]) tuple(a, b)""", """
CHECK: negate(
CHECK: add(
CHECK: negate(
CHECK: multiply(
CHECK: ENTRY
CHECK-NOT: neg_c
CHECK: ROOT %t"""),
    ("no_merge_expensive_into_two_users", FusionMerger, [EXP, ADD2, MUL2], """
p = f32[8,16] parameter(0)
q = f32[8,16] parameter(1)
f = f32[8,16] fusion(p), kind=kLoop, calls=exp_c
a = f32[8,16] fusion(f, q), kind=kLoop, calls=add_c
b = f32[8,16] fusion(f, p), kind=kLoop, calls=mul_c
ROOT t = (f32[8,16], f32[8,16]) tuple(a, b)""", None),
    ("no_merge_when_a_user_is_not_a_fusion", FusionMerger, [NEG, ADD2], """
p = f32[8,16] parameter(0)
f = f32[8,16] fusion(p), kind=kLoop, calls=neg_c
a = f32[8,16] fusion(f, p), kind=kLoop, calls=add_c
ROOT t = (f32[8,16], f32[8,16]) tuple(a, f)""", None),
    ("no_merge_expensive_into_a_reusing_user", FusionMerger, [EXP8, BCAST], """
p = f32[8] parameter(0)
f = f32[8] fusion(p), kind=kLoop, calls=exp8
ROOT b = f32[8,16] fusion(f), kind=kLoop, calls=bcast_c""", None),
    ("sibling_reductions_share_their_input", MultiOutputFusion, [SUM, MAX, RSUM, RMAX], """
p = f32[8,16] parameter(0)
s = f32[8] fusion(p), kind=kLoop, calls=rsum
x = f32[8] fusion(p), kind=kLoop, calls=rmax
ROOT t = (f32[8], f32[8]) tuple(s, x)""", """
CHECK: ROOT %tuple = (f32[8], f32[8]) tuple(
CHECK: ENTRY
CHECK: %s = (f32[8], f32[8]) fusion(%p), kind=kLoop
CHECK: get-tuple-element(%s), index=0
CHECK: get-tuple-element(%s), index=1"""),
    ("no_sibling_fusion_of_dependent_fusions", MultiOutputFusion, [NEG, ADD2], """
p = f32[8,16] parameter(0)
f = f32[8,16] fusion(p), kind=kLoop, calls=neg_c
ROOT a = f32[8,16] fusion(f, p), kind=kLoop, calls=add_c""", None),
    ("no_sibling_fusion_of_different_loops", MultiOutputFusion, [SUM, NEG, RSUM], """
p = f32[8,16] parameter(0)
s = f32[8] fusion(p), kind=kLoop, calls=rsum
n = f32[8,16] fusion(p), kind=kLoop, calls=neg_c
ROOT t = (f32[8], f32[8,16]) tuple(s, n)""", None),
    # an LSTM's per-step stores into two activation stacks: merged, each would copy its whole stack per step
    ("no_sibling_fusion_of_in_place_updates", MultiOutputFusion, [DUS, DUS2], """
a = f32[64,16] parameter(0)
b = f32[64,16] parameter(1)
h = f32[16] parameter(2)
i = s32[] parameter(3)
u = f32[64,16] fusion(a, h, i), kind=kLoop, calls=dus_c
v = f32[64,16] fusion(b, h, i), kind=kLoop, calls=dus_d
ROOT t = (f32[64,16], f32[64,16]) tuple(u, v)""", None),
    # a scatter fusion (a segment sum, its updates fused) is not computed per element of its users
    ("scatter_fusion_is_not_merged", FusionMerger, [SUM, SCAT, NEG], """
i = s32[16,1] parameter(0)
u = f32[16,16] parameter(1)
f = f32[8,16] fusion(i, u), kind=kLoop, calls=scat_c
ROOT a = f32[8,16] fusion(f), kind=kLoop, calls=neg_c""", None),
    ("producer_consumer_exports_the_producer", MultiOutputFusion, [NEG, ADD2], """
p = f32[8,16] parameter(0)
q = f32[8,16] parameter(1)
f = f32[8,16] fusion(p), kind=kLoop, calls=neg_c
a = f32[8,16] fusion(f, q), kind=kLoop, calls=add_c
ROOT t = (f32[8,16], f32[8,16]) tuple(a, f)""", """
CHECK: negate(
CHECK: add(
CHECK: ROOT %tuple = (f32[8,16], f32[8,16]) tuple(
CHECK: ENTRY
CHECK: %a = (f32[8,16], f32[8,16]) fusion(%q, %p)
CHECK-NOT: neg_c
CHECK: ROOT %t"""),
]


@pytest.mark.parametrize("name, make_pass, comps, body, checks", CASES, ids=[c[0] for c in CASES])
def test_merging(name, make_pass, comps, body, checks):
    check_rewrite(hlo_module(body, *comps), [make_pass, "dce"], checks, print_options={"print_operand_shape": False})
