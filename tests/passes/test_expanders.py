"""Expander and canonicalization passes: HLO text in, CHECK lines out; cases that must not change; a second
run changes nothing; the result verifies (check_rewrite); the interpreter gives the same answer before and
after: bit for bit on corner values where the expansion is exact, within a tolerance on random inputs where it
rounds differently; and on the JAX corpus (against XLA's recorded outputs)."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.passes import run_passes
from xlapy.passes.batchnorm_expander import BatchNormExpander
from xlapy.passes.call_inliner import CallInliner
from xlapy.passes.conv_canonicalization import ConvCanonicalization
from xlapy.passes.dce import HloDCE
from xlapy.passes.dot_decomposer import DotDecomposer
from xlapy.passes.logistic_expander import LogisticExpander
from xlapy.passes.map_inliner import MapInliner
from xlapy.passes.transpose_folding import TransposeFolding, free_dims_in_order
from xlapy.passes.zero_sized import ZeroSizedHloElimination
from xlapy.testing import CORPUS, assert_same, assert_same_semantics, check_rewrite, hlo_module

# (id, pass factory, module text, checks)
CASES = [
    ("logistic", LogisticExpander, hlo_module("""
p = f32[4,5] parameter(0)
ROOT l = f32[4,5] logistic(p)"""), """
CHECK-NOT: logistic
CHECK: constant(1)
CHECK: %negate = f32[4,5] negate(f32[4,5] %p)
CHECK: %exponential = f32[4,5] exponential(f32[4,5] %negate)
CHECK: add(f32[4,5] %broadcast, f32[4,5] %exponential)
CHECK: ROOT %divide = f32[4,5] divide(f32[4,5] %broadcast, f32[4,5] %add)"""),
    ("logistic_f16", LogisticExpander, hlo_module("""
p = f16[7] parameter(0)
ROOT l = f16[7] logistic(p)"""), "CHECK: f16[] constant(1)\nCHECK: ROOT %divide = f16[7] divide"),
    ("bn_training", BatchNormExpander, hlo_module("""
x = f32[2,3,4] parameter(0)
s = f32[3] parameter(1)
o = f32[3] parameter(2)
ROOT t = (f32[2,3,4], f32[3], f32[3]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1"""), """
CHECK: %scalar_add_computation
CHECK: ROOT %add = f32[] add
CHECK: ENTRY
CHECK-NOT: batch-norm
CHECK: f32[] constant(8)
CHECK: broadcast(f32[3] %s), dimensions={1}
CHECK: reduce(f32[2,3,4] %x, f32[] %constant), dimensions={0,2}, to_apply=%scalar_add_computation
CHECK: multiply(f32[2,3,4] %x, f32[2,3,4] %x)
CHECK: rsqrt(
CHECK: ROOT %tuple = (f32[2,3,4], f32[3], f32[3]) tuple(f32[2,3,4] %add.2, f32[3] %divide, f32[3] %subtract)"""),
    ("bn_inference", BatchNormExpander, hlo_module("""
x = f32[2,5,5,3] parameter(0)
s = f32[3] parameter(1)
o = f32[3] parameter(2)
m = f32[3] parameter(3)
var = f32[3] parameter(4)
ROOT y = f32[2,5,5,3] batch-norm-inference(x, s, o, m, var), epsilon=0.01, feature_index=3"""), """
CHECK-NOT: batch-norm
CHECK-NOT: reduce
CHECK: constant(0.01)
CHECK: %rsqrt = f32[3] rsqrt(
CHECK: multiply(f32[3] %s, f32[3] %rsqrt)
CHECK: dimensions={3}
CHECK: ROOT %add.1 = f32[2,5,5,3] add("""),
    ("bn_grad", BatchNormExpander, hlo_module("""
x = f32[6,3] parameter(0)
s = f32[3] parameter(1)
m = f32[3] parameter(2)
var = f32[3] parameter(3)
dy = f32[6,3] parameter(4)
ROOT g = (f32[6,3], f32[3], f32[3]) batch-norm-grad(x, s, m, var, dy), epsilon=0.001, feature_index=1"""),
     """
CHECK: %scalar_add_computation
CHECK-NOT: batch-norm
CHECK: reduce(f32[6,3] %dy, f32[] %constant.1), dimensions={0}
CHECK: ROOT %tuple = (f32[6,3], f32[3], f32[3]) tuple("""),
    ("dot_general", DotDecomposer, hlo_module("""
a = f32[2,5,3,4] parameter(0)
b = f32[4,2,3,6] parameter(1)
ROOT d = f32[2,5,6] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2,3}, rhs_batch_dims={1}, rhs_contracting_dims={2,0}"""),
     """
CHECK: %reshape = f32[2,5,12] reshape(f32[2,5,3,4] %a)
CHECK: transpose(f32[4,2,3,6] %b), dimensions={1,2,0,3}
CHECK: f32[2,12,6] reshape(
CHECK: ROOT %d.1 = f32[2,5,6] dot(f32[2,5,12] %reshape, f32[2,12,6] %reshape.1), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"""),
    ("dot_outer_product", DotDecomposer, hlo_module("""
a = f32[3] parameter(0)
b = f32[4] parameter(1)
ROOT d = f32[3,4] dot(a, b)"""), """
CHECK: f32[3,1] reshape(f32[3] %a)
CHECK: f32[1,4] reshape(f32[4] %b)
CHECK: ROOT %d.1 = f32[3,4] dot(f32[3,1] %reshape, f32[1,4] %reshape.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""),
    ("dot_batch_not_leading", DotDecomposer, hlo_module("""
a = f32[5,2,3] parameter(0)
b = f32[2,3,4] parameter(1)
ROOT d = f32[2,5,4] dot(a, b), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"""),
     """
CHECK: f32[2,5,3] transpose(f32[5,2,3] %a), dimensions={1,0,2}
CHECK-NOT: reshape
CHECK: ROOT %d.1 = f32[2,5,4] dot(f32[2,5,3] %transpose, f32[2,3,4] %b), lhs_batch_dims={0}"""),
    # a weight gradient x^T dy over [batch, time, features]: both operands contract their leading dims, so they
    # are read as K x M / K x N (reshapes) rather than transposed copies
    ("dot_weight_gradient_in_place", DotDecomposer, hlo_module("""
x = f32[4,5,6] parameter(0)
dy = f32[4,5,7] parameter(1)
ROOT d = f32[6,7] dot(x, dy), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}"""), """
CHECK-NOT: transpose
CHECK: f32[20,6] reshape(f32[4,5,6] %x)
CHECK: f32[20,7] reshape(f32[4,5,7] %dy)
CHECK: ROOT %d.1 = f32[6,7] dot(f32[20,6] %reshape, f32[20,7] %reshape.1), lhs_contracting_dims={0}, rhs_contracting_dims={0}"""),
    ("dot_rhs_contracting_last_in_place", DotDecomposer, hlo_module("""
a = f32[4,5,6] parameter(0)
b = f32[3,5,6] parameter(1)
ROOT d = f32[4,3] dot(a, b), lhs_contracting_dims={1,2}, rhs_contracting_dims={1,2}"""), """
CHECK-NOT: transpose
CHECK: ROOT %d.1 = f32[4,3] dot(f32[4,30] %reshape, f32[3,30] %reshape.1), lhs_contracting_dims={1}, rhs_contracting_dims={1}"""),
    ("dot_weight_gradient_strict", lambda: DotDecomposer(strict=True), hlo_module("""
x = f32[4,5,6] parameter(0)
dy = f32[4,5,7] parameter(1)
ROOT d = f32[6,7] dot(x, dy), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}"""), """
CHECK: f32[6,4,5] transpose(f32[4,5,6] %x), dimensions={2,0,1}
CHECK: ROOT %d.1 = f32[6,7] dot(f32[6,20] %reshape, f32[20,7] %reshape.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""),
    ("dot_strict_transposes_kxm", lambda: DotDecomposer(strict=True), hlo_module("""
a = f32[3,5] parameter(0)
b = f32[4,3] parameter(1)
ROOT d = f32[5,4] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={1}"""), """
CHECK: f32[5,3] transpose(f32[3,5] %a), dimensions={1,0}
CHECK: f32[3,4] transpose(f32[4,3] %b), dimensions={1,0}
CHECK: ROOT %d.1 = f32[5,4] dot(f32[5,3] %transpose, f32[3,4] %transpose.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""),
    ("conv_nchw", ConvCanonicalization, hlo_module("""
x = f32[2,3,8,8] parameter(0)
w = f32[4,3,3,3] parameter(1)
ROOT c = f32[2,4,6,6] convolution(x, w), window={size=3x3}, dim_labels=bf01_oi01->bf01"""), """
CHECK: f32[2,8,8,3] transpose(f32[2,3,8,8] %x), dimensions={0,2,3,1}
CHECK: f32[3,3,3,4] transpose(f32[4,3,3,3] %w), dimensions={2,3,1,0}
CHECK: %c.1 = f32[2,6,6,4] convolution(f32[2,8,8,3] %transpose, f32[3,3,3,4] %transpose.1), window={size=3x3}, dim_labels=b01f_01io->b01f
CHECK: ROOT %transpose.2 = f32[2,4,6,6] transpose(f32[2,6,6,4] %c.1), dimensions={0,3,1,2}"""),
    ("conv_nchw_filter_gradient", ConvCanonicalization, hlo_module("""
x = f32[2,16,8,8] parameter(0)
g = f32[2,4,6,6] parameter(1)
ROOT c = f32[4,16,3,3] convolution(x, g), window={size=6x6}, dim_labels=fb01_io01->fb01"""), """
CHECK: f32[2,8,8,16] transpose(f32[2,16,8,8] %x), dimensions={0,2,3,1}
CHECK: f32[2,6,6,4] transpose(f32[2,4,6,6] %g), dimensions={0,2,3,1}
CHECK: f32[3,3,16,4] convolution(f32[2,8,8,16] %transpose, f32[2,6,6,4] %transpose.1), window={size=6x6}, dim_labels=f01b_i01o->01bf
CHECK: ROOT %transpose.2 = f32[4,16,3,3] transpose(f32[3,3,16,4] %c.1), dimensions={3,2,0,1}"""),
    ("conv_1d_grouped_strided", ConvCanonicalization, hlo_module("""
x = f32[2,4,9] parameter(0)
w = f32[6,2,3] parameter(1)
ROOT c = f32[2,6,5] convolution(x, w), window={size=3 stride=2 pad=1_1}, dim_labels=bf0_oi0->bf0, feature_group_count=2"""),
     "CHECK: window={size=3 stride=2 pad=1_1}, dim_labels=b0f_0io->b0f, feature_group_count=2\nCHECK: ROOT %transpose.2"),
    ("fold_dot_lhs", TransposeFolding, hlo_module("""
a = f32[3,5] parameter(0)
b = f32[3,4] parameter(1)
t = f32[5,3] transpose(a), dimensions={1,0}
ROOT d = f32[5,4] dot(t, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""), """
CHECK-NOT: transpose
CHECK: ROOT %d.1 = f32[5,4] dot(f32[3,5] %a, f32[3,4] %b), lhs_contracting_dims={0}, rhs_contracting_dims={0}"""),
    ("fold_dot_batched_rhs", TransposeFolding, hlo_module("""
a = f32[2,5,3] parameter(0)
b = f32[2,4,3] parameter(1)
t = f32[2,3,4] transpose(b), dimensions={0,2,1}
ROOT d = f32[2,5,4] dot(a, t), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"""),
     "CHECK-NOT: transpose\nCHECK: dot(f32[2,5,3] %a, f32[2,4,3] %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
     "rhs_batch_dims={0}, rhs_contracting_dims={2}"),
    # DotDecomposer's transpose of a transpose (gpt2's tied embedding read as [K, N] by one dot, [N, K] by the
    # other): both fold, and the embedding is read in place rather than copied
    ("fold_dot_transpose_of_transpose", TransposeFolding, hlo_module("""
e = f32[6,4] parameter(0)
g = f32[5,6] parameter(1)
t = f32[4,6] transpose(e), dimensions={1,0}
tt = f32[6,4] transpose(t), dimensions={1,0}
ROOT d = f32[5,4] dot(g, tt), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""),
     "CHECK-NOT: transpose\nCHECK: ROOT %d.1 = f32[5,4] dot(f32[5,6] %g, f32[6,4] %e), lhs_contracting_dims={1}, "
     "rhs_contracting_dims={0}"),
    ("fold_dot_two_free_dims_in_order", lambda: TransposeFolding(free_dims_in_order), hlo_module("""
a = f32[4,5,3] parameter(0)
b = f32[3,6] parameter(1)
t = f32[3,4,5] transpose(a), dimensions={2,0,1}
ROOT d = f32[4,5,6] dot(t, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}"""),
     "CHECK-NOT: transpose\nCHECK: dot(f32[4,5,3] %a, f32[3,6] %b), lhs_contracting_dims={2}, rhs_contracting_dims={0}"),
    ("fold_conv_input_and_kernel", TransposeFolding, hlo_module("""
x = f32[2,3,8,8] parameter(0)
w = f32[4,3,3,3] parameter(1)
tx = f32[2,8,8,3] transpose(x), dimensions={0,2,3,1}
tw = f32[3,3,3,4] transpose(w), dimensions={2,3,1,0}
ROOT c = f32[2,6,6,4] convolution(tx, tw), window={size=3x3}, dim_labels=b01f_01io->b01f"""), """
CHECK-NOT: transpose
CHECK: convolution(f32[2,3,8,8] %x, f32[4,3,3,3] %w), window={size=3x3}, dim_labels=bf01_oi01->b01f"""),
    ("zero_sized", ZeroSizedHloElimination, hlo_module("""
p = f32[0,3] parameter(0)
q = f32[0,3] parameter(1)
a = f32[0,3] add(p, q)
z = f32[] constant(0)
r = f32[3] reduce(a, z), dimensions={0}, to_apply=add
ROOT t = (f32[0,3], f32[3]) tuple(a, r)""", reducers=["add"]), """
CHECK-NOT: add(f32[0,3]
CHECK: %constant.2 = f32[0,3] constant({
CHECK: reduce(f32[0,3] %constant.2, f32[] %z)
CHECK: ROOT %t = (f32[0,3], f32[3]) tuple(f32[0,3] %constant.2, f32[3] %r)"""),
    ("call", CallInliner, hlo_module("""
p = f32[4] parameter(0)
q = f32[4] parameter(1)
ROOT c = f32[4] call(p, q), to_apply=f""", """
f {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  m = f32[4] multiply(a, b)
  ROOT r = f32[4] add(m, a)
}
"""), """
CHECK-NOT: %f
CHECK: ENTRY %e
CHECK-NOT: call
CHECK: %m.1 = f32[4] multiply(f32[4] %p, f32[4] %q)
CHECK: ROOT %r.1 = f32[4] add(f32[4] %m.1, f32[4] %p)"""),
    ("call_nested_twice", CallInliner, hlo_module("""
p = f32[4] parameter(0)
c1 = f32[4] call(p), to_apply=outer
ROOT c2 = f32[4] call(c1), to_apply=outer""", """
inner {
  x = f32[4] parameter(0)
  ROOT n = f32[4] negate(x)
}
outer {
  y = f32[4] parameter(0)
  i = f32[4] call(y), to_apply=inner
  ROOT e = f32[4] exponential(i)
}
"""), """
CHECK-NOT: call
CHECK: ENTRY %e
CHECK: negate(f32[4] %p)
CHECK: exponential(
CHECK: negate(
CHECK: ROOT %e.2 = f32[4] exponential("""),
    ("call_returns_parameter", CallInliner, hlo_module("""
p = f32[4] parameter(0)
q = f32[4] parameter(1)
c = f32[4] call(p, q), to_apply=second
ROOT s = f32[4] sine(c)""", """
second {
  a = f32[4] parameter(0)
  ROOT b = f32[4] parameter(1)
}
"""), "CHECK-NOT: call\nCHECK: ROOT %s = f32[4] sine(f32[4] %q)"),
    ("map_add", MapInliner, hlo_module("""
p = f32[3,4] parameter(0)
q = f32[3,4] parameter(1)
ROOT m = f32[3,4] map(p, q), dimensions={0,1}, to_apply=add""", reducers=["add"]),
     "CHECK: ENTRY\nCHECK-NOT: map(\nCHECK: ROOT %s.1 = f32[3,4] add(f32[3,4] %p, f32[3,4] %q)"),
    ("map_compare_swapped", MapInliner, hlo_module("""
p = f32[5] parameter(0)
q = f32[5] parameter(1)
ROOT m = pred[5] map(p, q), dimensions={0}, to_apply=gt""", """
gt {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT c = pred[] compare(y, x), direction=GT
}
"""), "CHECK: ENTRY\nCHECK: ROOT %c.1 = pred[5] compare(f32[5] %q, f32[5] %p), direction=GT"),
    ("map_parameter", MapInliner, hlo_module("""
p = f32[5] parameter(0)
q = f32[5] parameter(1)
m = f32[5] map(p, q), dimensions={0}, to_apply=second
ROOT n = f32[5] negate(m)""", """
second {
  x = f32[] parameter(0)
  ROOT y = f32[] parameter(1)
}
"""), "CHECK: ROOT %n = f32[5] negate(f32[5] %q)"),
    ("map_constant", MapInliner, hlo_module("""
p = f32[5] parameter(0)
ROOT m = f32[5] map(p), dimensions={0}, to_apply=seven""", """
seven {
  x = f32[] parameter(0)
  ROOT c = f32[] constant(7)
}
"""), "CHECK: ENTRY\nCHECK: f32[] constant(7)\nCHECK: ROOT %broadcast = f32[5] broadcast("),
]

TEXT = {c[0]: c[2] for c in CASES}

# (id, pass factory, module text): the pass must return False and leave the text as it was.
UNCHANGED = [
    ("logistic_absent", LogisticExpander, hlo_module("p = f32[4] parameter(0)\nROOT e = f32[4] exponential(p)")),
    ("bn_training_disabled", lambda: BatchNormExpander(rewrite_training_op=False), TEXT["bn_training"]),
    ("dot_matmul", DotDecomposer, hlo_module("""
a = f32[5,3] parameter(0)
b = f32[3,4] parameter(1)
ROOT d = f32[5,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}""")),
    ("dot_batched", DotDecomposer, hlo_module("""
a = f32[2,5,3] parameter(0)
b = f32[2,3,4] parameter(1)
ROOT d = f32[2,5,4] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}""")),
    ("dot_matvec", DotDecomposer, hlo_module("""
a = f32[5,3] parameter(0)
b = f32[3] parameter(1)
ROOT d = f32[5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}""")),
    ("dot_kxm_not_strict", DotDecomposer, TEXT["dot_strict_transposes_kxm"]),
    ("conv_canonical", ConvCanonicalization, TEXT["conv_nchw"].replace("bf01_oi01->bf01", "b01f_01io->b01f")
     .replace("f32[2,3,8,8]", "f32[2,8,8,3]").replace("f32[4,3,3,3]", "f32[3,3,3,4]").replace("f32[2,4,6,6]", "f32[2,6,6,4]")),
    ("fold_would_reorder_free_dims", lambda: TransposeFolding(free_dims_in_order), hlo_module("""
a = f32[4,5,3] parameter(0)
b = f32[3,6] parameter(1)
t = f32[5,4,3] transpose(a), dimensions={1,0,2}
ROOT d = f32[5,4,6] dot(t, b), lhs_contracting_dims={2}, rhs_contracting_dims={0}""")),
    ("fold_dot_rank1_operand", TransposeFolding, hlo_module("""
a = f32[3,5] parameter(0)
b = f32[3] parameter(1)
t = f32[5,3] transpose(a), dimensions={1,0}
ROOT d = f32[5] dot(t, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}""")),
    ("fold_conv_disabled", lambda: TransposeFolding(fold_convolutions=False), TEXT["fold_conv_input_and_kernel"]),
    ("fold_row_column_only", TransposeFolding, TEXT["fold_dot_two_free_dims_in_order"]),
    ("zero_sized_constant_only", ZeroSizedHloElimination, hlo_module("""
c = f32[0] constant({})
p = f32[4] parameter(0)
ROOT t = (f32[0], f32[4]) tuple(c, p)""")),
    ("call_absent", CallInliner, hlo_module("p = f32[4] parameter(0)\nROOT n = f32[4] negate(p)")),
    ("map_two_ops", MapInliner, hlo_module("""
p = f32[5] parameter(0)
ROOT m = f32[5] map(p), dimensions={0}, to_apply=twice""", """
twice {
  x = f32[] parameter(0)
  a = f32[] add(x, x)
  ROOT b = f32[] multiply(a, x)
}
""")),
]


# Expansions that round differently from the op they replace compare within a tolerance; the batch norms
# (which subtract a mean) on random values only, with positive variances. Every other expansion is exact.
BATCH_NORM = dict(corners=False, rtol=1e-4, atol=1e-4, positive=lambda name: name.startswith("var"))
ROUNDING = {"logistic": dict(rtol=1e-4, atol=1e-4), "logistic_f16": dict(rtol=2e-3, atol=2e-3),
            "bn_training": BATCH_NORM, "bn_inference": BATCH_NORM, "bn_grad": BATCH_NORM}


@pytest.mark.parametrize("name, make_pass, text, checks", CASES, ids=[c[0] for c in CASES])
def test_rewrite(name, make_pass, text, checks):
    check_rewrite(text, make_pass, checks, **ROUNDING.get(name, {}))


@pytest.mark.parametrize("name, make_pass, text", UNCHANGED, ids=[c[0] for c in UNCHANGED])
def test_unchanged(name, make_pass, text):
    check_rewrite(text, make_pass, None)


def test_names_match_xla():
    names = [p.name for p in (BatchNormExpander(), LogisticExpander(), DotDecomposer(), ConvCanonicalization(),
                              TransposeFolding(), ZeroSizedHloElimination(), CallInliner(), MapInliner())]
    assert names == ["batchnorm_expander", "logistic-expander", "dot_decomposer", "convolution-canonicalization",
                     "transpose-folding", "zero_sized_hlo_elimination", "call-inliner", "map-inline"]


def test_call_inliner_single_call_site():
    # inner has one call site, outer two: only inner is inlined
    m = check_rewrite(TEXT["call_nested_twice"], lambda: CallInliner(single_call_site=True),
                      "CHECK: %outer\nCHECK: negate(\nCHECK: ENTRY\nCHECK: call(\nCHECK: call(")
    assert "%inner" not in m.to_text()


# -- the JAX corpus: each pass (or pair) on every module with the op it rewrites, against XLA's outputs --------
CORPUS_PASSES = {
    "dot_decomposer": ([DotDecomposer], " dot("),
    "dot_decomposer_strict+transpose_folding": ([lambda: DotDecomposer(strict=True), HloDCE,
                                                 lambda: TransposeFolding(free_dims_in_order)], " dot("),
    "conv_canonicalization": ([ConvCanonicalization], " convolution("),
    "conv_canonicalization+transpose_folding": ([ConvCanonicalization, HloDCE, TransposeFolding], " convolution("),
    "transpose_folding": ([TransposeFolding], " transpose("),
    "call_inliner": ([CallInliner], " call("),
    "map_inliner": ([MapInliner], " map("),
    "logistic_expander": ([LogisticExpander], " logistic("),
    "batchnorm_expander": ([BatchNormExpander], " batch-norm-"),
    "zero_sized": ([ZeroSizedHloElimination], "0"),   # every module: where nothing changes, the text must not
}


def _corpus_cases():
    folder = CORPUS / "jax"
    if not folder.is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason="tests/corpus/jax is absent"))]
    skip_file = folder / "UNEXECUTABLE.txt"
    skip = {ln.split()[0] for ln in skip_file.read_text().splitlines()
            if ln.strip() and not ln.startswith("#")} if skip_file.exists() else set()
    cases = []
    for hlo in sorted(folder.glob("*.hlo")):
        if hlo.stem in skip:
            continue
        text = hlo.read_text()
        for key, (passes, needle) in CORPUS_PASSES.items():
            if needle in text:
                cases.append(pytest.param(key, hlo, id=f"{key}/{hlo.stem}"))
    return cases or [pytest.param(None, None, marks=pytest.mark.skip(reason="no corpus module uses these ops"))]


@pytest.mark.parametrize("key, hlo", _corpus_cases())
def test_corpus(key, hlo):
    from xlapy.tools import npz
    npz_path = hlo.with_suffix(".npz")
    if not hlo.exists() or not npz_path.exists():
        pytest.skip(f"{hlo.stem}: corpus files are being regenerated")
    text = hlo.read_text()
    m = xlapy.hlo.parse(text)
    before = m.to_text()
    passes = [p() for p in CORPUS_PASSES[key][0]]
    if not run_passes(m, passes, name=key):
        assert m.to_text() == before, "a pass that reports no change changed the module"
        return
    data = npz.load(npz_path)
    result = npz.flatten(xlapy.compile(m, backend="interpreter")(*npz.numbered(data, "arg")))
    expected = npz.numbered(data, "out")
    assert len(result) == len(expected)
    for i, (got, want) in enumerate(zip(result, expected)):
        assert_same(got, want, where=f"{hlo.name} after {key}: out{i}")


# -- random dot dimension numbers: DotDecomposer (both modes) and TransposeFolding keep the value ------------
def random_dot_module(rng) -> str:
    nb, nc, lf, rf = (int(rng.integers(0, 3)) for _ in range(4))
    sizes = [int(s) for s in rng.integers(1, 4, nb + nc + lf + rf)]
    batch, contract = sizes[:nb], sizes[nb:nb + nc]
    lhs_free, rhs_free = sizes[nb + nc:nb + nc + lf], sizes[nb + nc + lf:]
    lperm, rperm = rng.permutation(nb + nc + lf), rng.permutation(nb + nc + rf)
    lhs_logical = batch + contract + lhs_free          # logical dim i sits at position lperm[i]
    rhs_logical = batch + contract + rhs_free
    lhs_dims, rhs_dims = [0] * len(lperm), [0] * len(rperm)
    for i, p in enumerate(lperm):
        lhs_dims[p] = lhs_logical[i]
    for i, p in enumerate(rperm):
        rhs_dims[p] = rhs_logical[i]
    lhs_free_sorted = sorted(range(nb + nc, nb + nc + lf), key=lambda i: lperm[i])
    rhs_free_sorted = sorted(range(nb + nc, nb + nc + rf), key=lambda i: rperm[i])
    out = batch + [lhs_logical[i] for i in lhs_free_sorted] + [rhs_logical[i] for i in rhs_free_sorted]

    def dims(xs):
        return "{" + ",".join(str(int(x)) for x in xs) + "}"

    def shape(ds):
        return "f32[" + ",".join(map(str, ds)) + "]"
    attrs = [f"lhs_batch_dims={dims(lperm[:nb])}", f"lhs_contracting_dims={dims(lperm[nb:nb + nc])}",
             f"rhs_batch_dims={dims(rperm[:nb])}", f"rhs_contracting_dims={dims(rperm[nb:nb + nc])}"]
    return hlo_module(f"""
a = {shape(lhs_dims)} parameter(0)
b = {shape(rhs_dims)} parameter(1)
ROOT d = {shape(out)} dot(a, b), {", ".join(attrs)}""")


@pytest.mark.parametrize("seed", range(12))
def test_random_dots(seed):
    text = random_dot_module(np.random.default_rng(seed))
    for passes in ([DotDecomposer()], [DotDecomposer(strict=True)],
                   [DotDecomposer(strict=True), HloDCE(), TransposeFolding(free_dims_in_order)]):
        m = xlapy.hlo.parse(text)
        run_passes(m, passes)
        assert_same_semantics(text, m, seed=seed, rtol=1e-5, atol=1e-5)     # a reshaped dot sums in another order
        if len(passes) == 1:
            assert passes[0].run(m) is False, "a second DotDecomposer run changed the module"
