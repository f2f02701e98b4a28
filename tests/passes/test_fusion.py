"""InstructionFusion: HLO text in, CHECK lines out (check_rewrite). One must-not-fuse case per refusal rule; the
seed example, softmax, layernorm and the TF MobileNet cluster against what XLA:CPU makes of them."""
import pytest

import xlapy
from xlapy.passes import FixedPoint, Pipeline
from xlapy.passes.algsimp import AlgebraicSimplifier
from xlapy.passes.cse import HloCSE
from xlapy.passes.dce import HloDCE
from xlapy.passes.fusion import InstructionFusion, cpu_fusion_passes, fuse_into, fused_instructions
from xlapy.passes.fusion.instruction_fusion import refusals
from xlapy.testing import (CORPUS, assert_same, assert_same_semantics, check_rewrite, filecheck, hlo_module,
                           reducer, shared_path)
from xlapy.tools import npz

ADD, MAX = reducer("add"), reducer("max")
SHORT = {"print_operand_shape": False}      # operands as XLA:CPU's dumps print them: `%name`


def fuse(text):
    m = xlapy.hlo.parse(text)
    fusion = InstructionFusion()
    changed = Pipeline("fusion-test", [fusion, HloDCE()], check_invariants=True).run(m)
    return m, fusion, changed


# (name, entry body, extra computations, CHECK lines (None: must not change), refusal reason expected in the
# pass's decisions)
CASES = [
    ("chain_into_reduce", """
p = f32[8,16] parameter(0)
q = f32[8,16] parameter(1)
m = f32[8,16] multiply(p, q)
e = f32[8,16] exponential(m)
z = f32[] constant(0)
ROOT r = f32[8] reduce(e, z), dimensions={1}, to_apply=add""", ADD, """
CHECK: %fused_computation (param_0
CHECK: multiply(
CHECK: exponential(
CHECK: constant(0)
CHECK: ROOT %r = f32[8] reduce(
CHECK: ENTRY
CHECK: ROOT %exponential_reduce_fusion = f32[8] fusion(%p, %q), kind=kLoop, calls=%fused_computation""", None),
    ("cheap_multi_user_producer_is_duplicated", """
p = f32[4] parameter(0)
m = f32[4] multiply(p, p)
n = f32[4] negate(m)
a = f32[4] abs(m)
ROOT t = (f32[4], f32[4]) tuple(n, a)""", "", """
CHECK: multiply(%param_0
CHECK: ROOT %a = f32[4] abs(
CHECK: multiply(%param_0
CHECK: ROOT %n = f32[4] negate(
CHECK: ENTRY
CHECK-NOT: multiply(
CHECK: ROOT %t""", None),
    ("expensive_producer_is_not_duplicated", """
p = f32[4] parameter(0)
e = f32[4] exponential(p)
n = f32[4] negate(e)
a = f32[4] abs(e)
ROOT t = (f32[4], f32[4]) tuple(n, a)""", "", None, "expensive producer would be duplicated"),
    ("expensive_producer_into_reusing_consumer", """
p = f32[4] parameter(0)
e = f32[4] exponential(p)
b = f32[4,8] broadcast(e), dimensions={0}
ROOT n = f32[4,8] negate(b)""", "", """
CHECK: broadcast(%param_0
CHECK: ENTRY
CHECK: %e = f32[4] exponential(%p)
CHECK: ROOT %broadcast_negate_fusion = f32[4,8] fusion(%e)""", "expensive producer, consumer reuses its elements"),
    ("dot_producer", """
a = f32[4,4] parameter(0)
b = f32[4,4] parameter(1)
d = f32[4,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
ROOT n = f32[4,4] negate(d)""", "", None, "producer is not loop-fusible"),
    ("convolution_producer", """
a = f32[1,4,4,1] parameter(0)
b = f32[2,2,1,1] parameter(1)
c = f32[1,3,3,1] convolution(a, b), window={size=2x2}, dim_labels=b01f_01io->b01f
ROOT n = f32[1,3,3,1] negate(c)""", "", None, "producer is not loop-fusible"),
    ("reduce_window_producer", """
p = f32[8] parameter(0)
z = f32[] constant(0)
w = f32[4] reduce-window(p, z), window={size=2 stride=2}, to_apply=add
ROOT n = f32[4] negate(w)""", ADD, None, "producer is not loop-fusible"),
    ("non_scalar_constant", """
p = f32[4] parameter(0)
c = f32[4] constant({1, 2, 3, 4})
ROOT a = f32[4] add(p, c)""", "", None, "non-scalar constant"),
    ("scalar_constant_into_a_non_fusion", """
p = f32[] parameter(0)
c = f32[] constant(2)
ROOT m = f32[] multiply(p, c)""", "", None, "constant into a non-fusion"),
    ("tuple_and_get_tuple_element", """
p = f32[4] parameter(0)
q = f32[4] parameter(1)
t = (f32[4], f32[4]) tuple(p, q)
g = f32[4] get-tuple-element(t), index=0
ROOT n = f32[4] negate(g)""", "", None, "producer is not fusible"),
    ("custom_call_producer", """
p = f32[4] parameter(0)
c = f32[4] custom-call(p), custom_call_target="foo"
ROOT n = f32[4] negate(c)""", "", None, "producer is not fusible"),
    ("call_producer", """
p = f32[] parameter(0)
q = f32[] parameter(1)
c = f32[] call(p, q), to_apply=add
ROOT n = f32[] negate(c)""", ADD, None, "producer is not fusible"),
    ("rng_producer", """
a = f32[] parameter(0)
b = f32[] parameter(1)
r = f32[4] rng(a, b), distribution=rng_uniform
ROOT n = f32[4] negate(r)""", "", None, "producer is not fusible"),
    ("sort_producer", """
p = f32[4] parameter(0)
s = f32[4] sort(p), dimensions={0}, to_apply=lt
ROOT n = f32[4] negate(s)""", "lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                               "  ROOT c = pred[] compare(a, b), direction=LT\n}\n",
     None, "producer is not fusible"),
    ("all_reduce_producer", """
p = f32[4] parameter(0)
r = f32[4] all-reduce(p), to_apply=add
ROOT n = f32[4] negate(r)""", ADD, None, "producer is not fusible"),
    ("concatenate_of_many_operands", """
p = f32[2] parameter(0)
c = f32[18] concatenate(p, p, p, p, p, p, p, p, p), dimensions={0}
ROOT n = f32[18] negate(c)""", "", None, "concatenate fusion is inefficient"),
    ("max_shift_exp_producer_stays_materialized", """
p = f32[4,8] parameter(0)
q = f32[4,8] parameter(1)
a = f32[4,8] add(p, q)
lo = f32[] constant(-inf)
m = f32[4] reduce(a, lo), dimensions={1}, to_apply=max
b = f32[4,8] broadcast(m), dimensions={0}
s = f32[4,8] subtract(a, b)
ROOT e = f32[4,8] exponential(s)""", MAX, """
CHECK: ENTRY
CHECK: %a = f32[4,8] add(%p, %q)""", "producer must not be duplicated"),
    ("matrix_vector_dot_plus_bias_is_output_fused", """
a = f32[4,8] parameter(0)
v = f32[8] parameter(1)
bias = f32[4] parameter(2)
d = f32[4] dot(a, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
ROOT r = f32[4] add(d, bias)""", "", """
CHECK: dot(
CHECK: ROOT %r = f32[4] add(
CHECK: ROOT %dot_add_fusion = f32[4] fusion(%bias, %a, %v), kind=kOutput""", None),
    ("segment_sum_updates_fuse_into_the_scatter", """
h = f32[6,4] parameter(0)
src = s32[16,1] parameter(1)
dst = s32[16,1] parameter(2)
bias = f32[4] parameter(3)
g = f32[16,4] gather(h, src), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
bb = f32[16,4] broadcast(bias), dimensions={1}
m = f32[16,4] add(g, bb)
z = f32[] constant(0)
zb = f32[6,4] broadcast(z), dimensions={}
ROOT s = f32[6,4] scatter(zb, dst, m), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add""", ADD, """
CHECK: gather(
CHECK: add(
CHECK: ROOT %s = f32[6,4] scatter(
CHECK: ENTRY
CHECK: ROOT %{{.*}}scatter_fusion = f32[6,4] fusion(""", None),
    ("scatter_operand_is_not_fused_into_the_scatter", """
p = f32[6,4] parameter(0)
dst = s32[16,1] parameter(1)
u = f32[16,4] parameter(2)
n = f32[6,4] negate(p)
ROOT s = f32[6,4] scatter(n, dst, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add""", ADD, None,
     "consumer is not loop-fusible"),
]


@pytest.mark.parametrize("name, body, extra, checks, reason", CASES, ids=[c[0] for c in CASES])
def test_instruction_fusion(name, body, extra, checks, reason):
    made = []

    def fusion():            # keeps each run's pass, whose decisions name the refusals
        made.append(InstructionFusion())
        return made[-1]
    check_rewrite(hlo_module(body, extra), [fusion, "dce"], checks, print_options=SHORT)
    if reason is not None:
        assert reason in refusals(made[0]).values(), refusals(made[0])


def test_fusions_print_like_xla_and_parse_back():
    m, _, _ = fuse(hlo_module(CASES[0][1], ADD))
    text = m.to_text()
    assert xlapy.hlo.parse(text).to_text() == text
    fused = m.computation("fused_computation")
    assert [p.name.split(".")[0] for p in fused.parameters] == ["param_0", "param_1"]


def test_identical_operands_share_one_parameter():
    text = hlo_module("""
p = f32[4] parameter(0)
m = f32[4] multiply(p, p)
ROOT a = f32[4] add(m, p)""")
    m = xlapy.hlo.parse(text)
    root = m.entry.root
    f = fuse_into(root, root.operands[0])
    assert [o.name for o in f.operands] == ["p"]
    assert len(f.attrs["calls"].parameters) == 1
    assert [i.opcode for i in fused_instructions(f)] == ["multiply", "add"]
    xlapy.hlo.verify(m)
    assert_same_semantics(text, m)


def test_too_large_fusions_are_split():
    body = ["p = f32[4] parameter(0)"] + [f"n{i} = f32[4] negate({'p' if i == 0 else f'n{i - 1}'})"
                                           for i in range(250)]
    body[-1] = "ROOT " + body[-1]
    m, fusion, _ = fuse(hlo_module("\n".join(body)))
    assert "fusion would be too large" in refusals(fusion).values()
    assert all(len(fused_instructions(f)) <= 200 for f in m.entry.instructions if f.opcode == "fusion")


# -- real programs against XLA:CPU's decisions ------------------------------------------------------------
def optimized(path):
    m = xlapy.hlo.parse(path.read_text())
    simplify = FixedPoint("simplification", [AlgebraicSimplifier(), HloCSE(), HloDCE()])
    Pipeline("p", [simplify, *cpu_fusion_passes(), HloDCE()], check_invariants=True).run(m)
    return m


def fusions(m):
    return [i for i in m.instructions() if i.opcode == "fusion"]


def test_seed_sum_xyz_is_one_fusion():
    m = optimized(CORPUS / "jax" / "seed_sum_xyz.hlo")
    filecheck(m.to_text(print_operand_shape=False), """
CHECK: %fused_computation ([[P0:param_0[.0-9]*]]: f32[2,3], [[P1:param_1[.0-9]*]]: f32[2,3], [[P2:param_2[.0-9]*]]: f32[2,3]) -> f32[] {
CHECK: multiply(%[[P1]], %[[P2]])
CHECK: add(%[[P0]], %mul.1)
CHECK: ROOT %reduce_sum.7 = f32[] reduce(
CHECK: ENTRY
CHECK-NOT: multiply
CHECK: ROOT %add_reduce_fusion = f32[] fusion(%x.1, %y.1, %z.1), kind=kLoop, calls=%fused_computation""")
    assert len(fusions(m)) == 1     # XLA:CPU: ROOT %add_reduce_fusion = fusion(%x.1, %y.1, %z.1), kind=kLoop


@pytest.mark.parametrize("name, most_fusions", [("softmax", 6), ("layernorm", 2), ("f16_sum_mean_softmax", 8)])
def test_normalizations_become_a_few_fusions(name, most_fusions):
    m = optimized(CORPUS / "jax" / f"{name}.hlo")
    assert 1 <= len(fusions(m)) <= most_fusions, m.to_text()
    loose = [i.opcode for c in m.computations if not c.name.startswith("fused_computation")
             for i in c.instructions if i.info.is_elementwise]
    reducer_ops = {"add", "maximum", "minimum", "multiply"}
    assert set(loose) <= reducer_ops, f"elementwise ops left outside fusions: {loose}"


def test_layernorm_matches_xla_fusion_structure():
    # XLA:CPU: add_rsqrt_fusion(x, reduce) and broadcast_add_fusion(b, g, add_rsqrt_fusion, x, reduce).
    m = optimized(CORPUS / "jax" / "layernorm.hlo")
    filecheck(m.to_text(print_operand_shape=False), """
CHECK: ENTRY
CHECK: %add_rsqrt_fusion = f32[4,1]{1,0} fusion(%x.1, %reduce_sum.14)
CHECK: ROOT %broadcast_add_fusion = f32[4,16]{1,0} fusion(%b.1, %g.1, %add_rsqrt_fusion, %x.1, %reduce_sum.14)""")


def test_tf_mobilenet_cluster_elementwise_chains_are_fused():
    path = shared_path("testdata", "tf_mobilenet_cluster.hlo")
    if path is None:
        pytest.skip("../shared/testdata is absent")
    from xlapy.passes.batchnorm_expander import BatchNormExpander
    m = xlapy.hlo.parse(path.read_text())
    simplify = FixedPoint("simplification", [AlgebraicSimplifier(), HloCSE(), HloDCE()])
    Pipeline("p", [BatchNormExpander(), simplify, *cpu_fusion_passes(), HloDCE()], check_invariants=True).run(m)
    entry_ops = [i.opcode for i in m.entry.instructions]
    assert not [op for op in entry_ops if xlapy.hlo.opinfo(op).is_elementwise], entry_ops
    relus = [f for f in fusions(m) if any(i.opcode == "maximum" for i in fused_instructions(f))]
    assert len(relus) >= 5            # each conv's batch-norm + relu chain is one loop fusion
    data = npz.load(CORPUS / "tf" / "tf_mobilenet_cluster.npz")
    got = npz.flatten(xlapy.compile(m, backend="interpreter")(*npz.numbered(data, "arg")))
    for g, w in zip(got, npz.numbered(data, "out")):
        assert_same(g, w)
