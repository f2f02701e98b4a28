"""ConditionalSimplifier, SortSimplifier, ReshapeMover: HLO text in, CHECK lines out; must-not-change cases;
idempotence; semantics kept on corner values (check_rewrite). And every corpus module with control flow or a
sort, after each control simplifier (WhileLoopSimplifier included), still gives XLA's recorded outputs."""
import re

import numpy as np
import pytest

import xlapy
from xlapy.passes import FixedPoint
from xlapy.passes.conditional_simplifier import ConditionalSimplifier
from xlapy.passes.dce import HloDCE
from xlapy.passes.reshape_mover import ReshapeMover
from xlapy.passes.sort_simplifier import SortSimplifier
from xlapy.passes.while_loop_simplifier import WhileLoopSimplifier
from xlapy.testing import CORPUS, assert_same, check_rewrite, hlo_module
from xlapy.tools import npz


def check_pass(make_pass, text, checks=None):
    """The pass with DCE to a fixed point, through check_rewrite: CHECK lines (None: must not change),
    verifier, idempotence, and the interpreter's results before == after on corner and random inputs."""
    return check_rewrite(text, [make_pass, "dce"], checks, fixed_point=True)


# -- ConditionalSimplifier -------------------------------------------------------------------------------------
BRANCHES = """
b0 {
  x = f32[4] parameter(0)
  ROOT r = f32[4] negate(x)
}

b1 {
  x = f32[4] parameter(0)
  ROOT r = f32[4] exponential(x)
}

b2 {
  x = f32[4] parameter(0)
  ROOT r = f32[4] sine(x)
}
"""


def indexed(index, n=3):
    ops = ", ".join(["a"] * n)
    comps = ", ".join(f"b{k}" for k in range(n))
    return hlo_module(f"""
        a = f32[4] parameter(0)
        {index}
        ROOT c = f32[4] conditional(k, {ops}), branch_computations={{{comps}}}""", BRANCHES)


COND_CASES = [
    # conditional(1, a, a, a), branch_computations={b0, b1, b2} => b1(a)
    ("constant_index", indexed("k = s32[] constant(1)"), "CHECK-NOT: conditional\nCHECK: ROOT %r.1 = f32[4] exponential(f32[4] %a)"),
    # an index past the end runs the last branch
    ("index_out_of_range", indexed("k = s32[] constant(7)"), "CHECK-NOT: conditional\nCHECK: ROOT %r.1 = f32[4] sine"),
    ("negative_index", indexed("k = s32[] constant(-1)"), "CHECK-NOT: conditional\nCHECK: ROOT %r.1 = f32[4] sine"),
    # conditional(i, a), branch_computations={b0} => b0(a)
    ("one_branch", indexed("k = s32[] parameter(1)", 1), "CHECK-NOT: conditional\nCHECK: ROOT %r.1 = f32[4] negate"),
    # conditional(false, a, a), true_computation=T, false_computation=F => F(a)
    ("constant_predicate", hlo_module("""
        a = f32[4] parameter(0)
        k = pred[] constant(false)
        ROOT c = f32[4] conditional(k, a, a), true_computation=b0, false_computation=b1""", BRANCHES),
     "CHECK-NOT: conditional\nCHECK: ROOT %r.1 = f32[4] exponential"),
    # a branch returning its parameter: the conditional becomes its operand
    ("identity_branch", hlo_module("""
        a = f32[4] parameter(0)
        k = pred[] constant(true)
        ROOT c = f32[4] conditional(k, a, a), true_computation=id, false_computation=b1""",
                                BRANCHES + "\nid {\n  ROOT x = f32[4] parameter(0)\n}\n"),
     "CHECK-NOT: conditional\nCHECK: ROOT %a = f32[4] parameter(0)"),
    # tuple-shaped branches with a nested call survive inlining
    ("tuple_branches", hlo_module("""
        a = f32[4] parameter(0)
        k = s32[] constant(0)
        t = (f32[4], f32[4]) tuple(a, a)
        c = (f32[4], f32[4]) conditional(k, t, t), branch_computations={tb0, tb1}
        ROOT g = f32[4] get-tuple-element(c), index=1""", BRANCHES + """
tb0 {
  p = (f32[4], f32[4]) parameter(0)
  x = f32[4] get-tuple-element(p), index=0
  y = f32[4] call(x), to_apply=b2
  ROOT r = (f32[4], f32[4]) tuple(x, y)
}

tb1 {
  ROOT p = (f32[4], f32[4]) parameter(0)
}
"""), "CHECK-NOT: conditional\nCHECK: call(\nCHECK: to_apply=%b2"),
]


@pytest.mark.parametrize("name, text, checks", COND_CASES, ids=[c[0] for c in COND_CASES])
def test_conditional_simplifier(name, text, checks):
    after = check_pass(ConditionalSimplifier, text, checks)
    if name == "constant_index":
        assert [c.name for c in after.computations] == ["e"], "branches nothing calls are dropped"


def test_conditional_with_runtime_index_must_not_change():
    check_pass(ConditionalSimplifier, indexed("k = s32[] parameter(1)"))


# -- SortSimplifier --------------------------------------------------------------------------------------------
def compare_first(n):
    params = "\n  ".join(f"p{i} = {t}[] parameter({i})" for i, t in enumerate(["f32", "f32"] + ["s32", "s32"] * (n - 1)))
    return f"\nless {{\n  {params}\n  ROOT lt = pred[] compare(p0, p1), direction=LT\n}}\n"


SORT_CASES = [
    # gte(sort(k, v, w), 0), gte(.., 2) => gte(sort(k, w), 0), gte(.., 1)
    ("drop_middle", hlo_module("""
        k = f32[8] parameter(0)
        v = s32[8] parameter(1)
        w = s32[8] parameter(2)
        s = (f32[8], s32[8], s32[8]) sort(k, v, w), dimensions={0}, is_stable=true, to_apply=less
        s0 = f32[8] get-tuple-element(s), index=0
        s1 = s32[8] get-tuple-element(s), index=1
        s2 = s32[8] get-tuple-element(s), index=2
        ROOT t = (f32[8], s32[8]) tuple(s0, s2)""", compare_first(3)),
     "CHECK: (f32[8], s32[8]) sort(f32[8] %k, s32[8] %w)\nCHECK: ROOT %t"),
    # gte(sort(k, v), 0) => sort(k)
    ("keys_only", hlo_module("""
        k = f32[2,8] parameter(0)
        v = s32[2,8] iota(), iota_dimension=1
        s = (f32[2,8], s32[2,8]) sort(k, v), dimensions={1}, to_apply=less
        ROOT s0 = f32[2,8] get-tuple-element(s), index=0""", compare_first(2).replace("s32", "s32")),
     "CHECK: ROOT %s.1 = f32[2,8] sort(f32[2,8] %k), dimensions={1}\nCHECK-NOT: iota"),
]


@pytest.mark.parametrize("name, text, checks", SORT_CASES, ids=[c[0] for c in SORT_CASES])
def test_sort_simplifier(name, text, checks):
    after = check_pass(SortSimplifier, text, checks)
    comparator = [c for c in after.computations if c.name.startswith("less")]
    assert len(comparator) == 1 and len(comparator[0].parameters) == 2 * (1 if name == "keys_only" else 2)


SORT_UNCHANGED = [
    # argsort: the keys are unused but the comparator reads them
    ("argsort", hlo_module("""
        k = f32[8] parameter(0)
        v = s32[8] iota(), iota_dimension=0
        s = (f32[8], s32[8]) sort(k, v), dimensions={0}, to_apply=less
        ROOT s1 = s32[8] get-tuple-element(s), index=1""", compare_first(2))),
    # a sort that is the root keeps every operand
    ("root", hlo_module("""
        k = f32[8] parameter(0)
        v = s32[8] parameter(1)
        ROOT s = (f32[8], s32[8]) sort(k, v), dimensions={0}, to_apply=less""", compare_first(2))),
]


@pytest.mark.parametrize("name, text", SORT_UNCHANGED, ids=[c[0] for c in SORT_UNCHANGED])
def test_sort_simplifier_must_not_change(name, text):
    check_pass(SortSimplifier, text)


# -- ReshapeMover ----------------------------------------------------------------------------------------------
MOVER_CASES = [
    # add(reshape(a), reshape(b)) => reshape(add(a, b))
    ("reshape_add", hlo_module("""
        a = f32[2,6] parameter(0)
        b = f32[2,6] parameter(1)
        ra = f32[3,4] reshape(a)
        rb = f32[3,4] reshape(b)
        ROOT s = f32[3,4] add(ra, rb)"""),
     "CHECK: f32[2,6] add(f32[2,6] %a, f32[2,6] %b)\nCHECK: ROOT %s.2 = f32[3,4] reshape(f32[2,6] %s.1)"),
    # multiply(transpose(a), transpose(b)) => transpose(multiply(a, b))
    ("transpose_multiply", hlo_module("""
        a = f32[2,3] parameter(0)
        b = f32[2,3] parameter(1)
        ta = f32[3,2] transpose(a), dimensions={1,0}
        tb = f32[3,2] transpose(b), dimensions={1,0}
        ROOT m = f32[3,2] multiply(ta, tb)"""),
     "CHECK: f32[2,3] multiply(f32[2,3] %a, f32[2,3] %b)\nCHECK: ROOT %m.2 = f32[3,2] transpose(f32[2,3] %m.1), dimensions={1,0}"),
    # add(reshape(a), broadcast(s)) => reshape(add(a, broadcast'(s)))
    ("scalar_broadcast", hlo_module("""
        a = f32[2,6] parameter(0)
        c = f32[] constant(2)
        bc = f32[3,4] broadcast(c), dimensions={}
        ra = f32[3,4] reshape(a)
        ROOT s = f32[3,4] add(ra, bc)"""),
     "CHECK: f32[2,6] broadcast(f32[] %c)\nCHECK: f32[2,6] add(f32[2,6] %a\nCHECK: ROOT %s.2 = f32[3,4] reshape(f32[2,6] %s.1)"),
    # subtract(transpose(a, p), c) => transpose(subtract(a, transpose(c, inverse(p))), p)
    ("constant_operand", hlo_module("""
        a = f32[2,3,4] parameter(0)
        c = f32[4,2,3] constant({...})
        ta = f32[4,2,3] transpose(a), dimensions={2,0,1}
        ROOT s = f32[4,2,3] subtract(ta, c)""").replace("{...}", str(
        np.arange(24).reshape(4, 2, 3).tolist()).replace("[", "{").replace("]", "}")),
     "CHECK: f32[2,3,4] transpose(f32[4,2,3] %c), dimensions={1,2,0}\nCHECK: ROOT %s.2 = f32[4,2,3] transpose(f32[2,3,4] %s.1), dimensions={2,0,1}"),
    # select(reshape(p), reshape(a), reshape(b)) => reshape(select(p, a, b)); pred and f32 reshapes match by dims
    ("select_mixed_types", hlo_module("""
        p = pred[6] parameter(0)
        a = f32[6] parameter(1)
        b = f32[6] parameter(2)
        rp = pred[2,3] reshape(p)
        ra = f32[2,3] reshape(a)
        rb = f32[2,3] reshape(b)
        ROOT s = f32[2,3] select(rp, ra, rb)"""),
     "CHECK: f32[6] select(pred[6] %p, f32[6] %a, f32[6] %b)\nCHECK: ROOT %s.2 = f32[2,3] reshape(f32[6] %s.1)"),
    # a chain sinks all the way down: exp(reshape(a)) * reshape(b) => reshape(exp(a) * b)
    ("chain", hlo_module("""
        a = f32[2,6] parameter(0)
        b = f32[2,6] parameter(1)
        ra = f32[12] reshape(a)
        rb = f32[12] reshape(b)
        e = f32[12] exponential(ra)
        c = pred[12] compare(e, rb), direction=GT
        ROOT s = f32[12] convert(c)"""),
     "CHECK: exponential(f32[2,6] %a)\nCHECK: pred[2,6] compare\nCHECK: f32[2,6] convert\nCHECK: ROOT %s.2 = f32[12] reshape"),
]


@pytest.mark.parametrize("name, text, checks", MOVER_CASES, ids=[c[0] for c in MOVER_CASES])
def test_reshape_mover(name, text, checks):
    check_pass(ReshapeMover, text, checks)


MOVER_UNCHANGED = [
    # reshapes of different input shapes are not equivalent
    ("different_inputs", hlo_module("""
        a = f32[2,6] parameter(0)
        b = f32[3,4] parameter(1)
        ra = f32[12] reshape(a)
        rb = f32[12] reshape(b)
        ROOT s = f32[12] add(ra, rb)""")),
    # the reshape has another user (a dot) that is not a candidate: moving would duplicate it
    ("shared_reshape", hlo_module("""
        a = f32[2,6] parameter(0)
        b = f32[2,6] parameter(1)
        ra = f32[3,4] reshape(a)
        rb = f32[3,4] reshape(b)
        s = f32[3,4] add(ra, rb)
        d = f32[3,3] dot(ra, s), lhs_contracting_dims={1}, rhs_contracting_dims={1}
        ROOT t = (f32[3,4], f32[3,3]) tuple(s, d)""")),
    # transposes with different permutations
    ("different_permutations", hlo_module("""
        a = f32[2,2] parameter(0)
        b = f32[2,2] parameter(1)
        ta = f32[2,2] transpose(a), dimensions={1,0}
        ROOT s = f32[2,2] add(ta, b)""")),
    # a reshape of a constant is trivial itself: nothing to gain
    ("reshape_of_constant", hlo_module("""
        a = f32[4] parameter(0)
        c = f32[2,2] constant({{1, 2}, {3, 4}})
        rc = f32[4] reshape(c)
        ROOT s = f32[4] add(a, rc)""")),
]


@pytest.mark.parametrize("name, text", MOVER_UNCHANGED, ids=[c[0] for c in MOVER_UNCHANGED])
def test_reshape_mover_must_not_change(name, text):
    check_pass(ReshapeMover, text)


# -- the corpus ------------------------------------------------------------------------------------------------
CONTROL = re.compile(r" (while|conditional|sort)\(")
PASSES = [WhileLoopSimplifier, ConditionalSimplifier, SortSimplifier, ReshapeMover]


def _corpus():
    folder = CORPUS / "jax"
    paths = [p for p in sorted(folder.glob("*.hlo")) if p.with_suffix(".npz").exists()] if folder.exists() else []
    return [pytest.param(p, id=p.stem) for p in paths if CONTROL.search(p.read_text())]


@pytest.mark.parametrize("hlo_path", _corpus() or [pytest.param(None, id="corpus-absent")])
def test_corpus_after_control_simplifiers(hlo_path):
    if hlo_path is None or not hlo_path.exists():
        pytest.skip("no corpus module with while/conditional/sort")
    data = npz.load(hlo_path.with_suffix(".npz"))
    args, expected = npz.numbered(data, "arg"), npz.numbered(data, "out")
    for make_pass in PASSES:
        m = xlapy.hlo.parse(hlo_path.read_text())
        changed = make_pass().run(m)
        FixedPoint("simplify", [make_pass(), HloDCE()], check_invariants=True).run(m)
        assert not make_pass().run(m), f"{make_pass.name} is not idempotent"
        if not changed:
            continue      # the unchanged module's results are test_interpreter_corpus's business
        result = npz.flatten(xlapy.compile(xlapy.hlo.parse(m.to_text()), backend="interpreter")(*args))
        assert len(result) == len(expected)
        for i, (got, want) in enumerate(zip(result, expected)):
            assert_same(got, want, where=f"{hlo_path.name} out{i} after {make_pass.name}")


@pytest.mark.parametrize("bound", [0, 1])
def test_corpus_fori_loop_with_short_trip_counts(bound):
    """JAX's fori_loop (a call inside the body, the counter in the state) with its bound made 0 or 1: the
    loop goes, and the result is what the loop computed."""
    path = CORPUS / "jax" / "fori_loop.hlo"
    if not path.exists():
        pytest.skip("tests/corpus/jax/fori_loop.hlo is absent")
    text = path.read_text()
    bound_line = re.search(r"(constant\.\d+ = s32\[\] constant\()7(\))", text)
    if bound_line is None:
        pytest.skip("fori_loop.hlo no longer has the bound 7")
    text = text.replace(bound_line.group(0), f"{bound_line.group(1)}{bound}{bound_line.group(2)}")
    after = check_pass(WhileLoopSimplifier, text, "CHECK: ENTRY\nCHECK-NOT: while(")
    assert not any(i.opcode == "while" for i in after.instructions())
