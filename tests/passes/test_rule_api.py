"""Rules as XLA and tinygrad write them: `@rule(pattern)` on the rewrite, captures as keyword arguments, patterns
that constrain element types (and say why one did not match), rule sets indexed by opcode that combine with +,
and every algebraic-simplifier rule one rewrite with its `# A => B` comment."""
from __future__ import annotations

import inspect

import pytest

from xlapy.hlo import parse
from xlapy.passes.algsimp import FAST_MATH_RULES, RULES, AlgebraicSimplifier
from xlapy.passes.pattern import COMPLEX, FLOATS, INTS, PRED, REAL, Any, ConstantScalar, Op, element_types
from xlapy.passes.rewrite import Rule, RuleSet, apply_rules, rule

TEXT = """HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  i = s32[4] parameter(1)
  z = f32[] constant(-0)
  zb = f32[4] broadcast(z), dimensions={}
  fa = f32[4] add(x, zb)
  iz = s32[] constant(0)
  izb = s32[4] broadcast(iz), dimensions={}
  ia = s32[4] add(i, izb)
  c = f32[4] convert(ia)
  ROOT t = (f32[4], f32[4]) tuple(fa, c)
}"""


def instructions():
    module = parse(TEXT)
    return module, {inst.name: inst for inst in module.entry.instructions}


def test_captures_arrive_as_keyword_arguments():
    @rule(Op("add", Any("a"), ConstantScalar(name="z")))
    def add_constant(inst, a, z):
        # A + C => A (a test rule)
        return a
    _, insts = instructions()
    assert isinstance(add_constant, Rule) and add_constant.name == "add_constant"
    assert add_constant.apply(insts["fa"]) is insts["x"]
    assert add_constant.apply(insts["c"]) is None
    assert add_constant(insts["fa"], a=insts["x"], z=insts["zb"]) is insts["x"]


def test_a_function_must_take_exactly_the_captures():
    with pytest.raises(TypeError, match=r"captures \['a', 'z'\].*takes \['a'\]"):
        @rule(Op("add", Any("a"), ConstantScalar(name="z")))
        def forgets_z(inst, a):
            return a


def test_dtype_constrains_the_element_type_by_name_set_or_category():
    _, insts = instructions()
    fa, ia = insts["fa"], insts["ia"]
    assert Op("add", dtype=FLOATS).match(fa) is not None and Op("add", dtype=FLOATS).match(ia) is None
    assert Op("add", dtype=INTS).match(ia) is not None
    assert Any("a", dtype="f32").match(fa) == {"a": fa}
    assert Any(dtype={"f16", "bf16"}).match(fa) is None
    assert Op("add", Any(dtype="s32"), ConstantScalar(0, dtype=INTS)).match(ia) is not None
    assert Op("add", dtype=REAL).match(fa) is not None and Op("add", dtype=COMPLEX).match(fa) is None
    assert Op("tuple", dtype=REAL).match(insts["t"]) is None


def test_explain_says_why_a_dtype_did_not_match():
    _, insts = instructions()
    why = Op("add", Any("a"), Any(), dtype=INTS | PRED).explain(insts["fa"])
    assert "fa has element type f32" in why and "wants ints|pred" in why
    assert "is a tuple" in Op("tuple", dtype=FLOATS).explain(insts["t"])
    assert "has element type f32, pattern Any(a, dtype=s32) wants s32" in \
        Op("add", Any("a", dtype="s32"), Any()).explain(insts["fa"])


def test_categories_are_sets_of_names_and_unknown_names_fail_early():
    assert {"f32", "bf16", "f8e4m3fn"} <= FLOATS and "pred" not in INTS and "c64" in COMPLEX
    assert (INTS | PRED).label == "ints|pred" and "pred" in INTS | PRED
    assert element_types("f32") == {"f32"}
    with pytest.raises(ValueError, match="f33"):
        Any(dtype="f33")


def test_constant_scalar_tells_signed_zeros_apart_in_every_float_type():
    for et in ("f32", "bf16", "f16"):
        module = parse(f"HloModule m\nENTRY e {{\n  ROOT z = {et}[] constant(-0)\n}}")
        z = module.entry.root
        assert ConstantScalar(-0.0).match(z) is not None, et
        assert ConstantScalar(0.0).match(z) is None, et
        assert ConstantScalar(0).match(z) is None, et


def test_rule_sets_combine_with_plus_in_order():
    first = rule(Op("add", Any("a")))(lambda inst, a: None)
    second = rule(Op("negate"))(lambda inst: None)
    anything = rule(Any())(lambda inst: None)
    combined = RuleSet([first, anything]) + RuleSet([second])
    assert list(combined) == [first, anything, second] and len(combined) == 3
    assert combined.for_opcode("add") == (first, anything)
    assert combined.for_opcode("negate") == (anything, second)
    assert combined.for_opcode("copy") == (anything,)


def test_the_driver_records_rule_names():
    module, _ = instructions()
    simplifier = AlgebraicSimplifier()
    assert simplifier.run(module)
    applied = {name for name, _, _ in simplifier.trace}
    assert {"add_negative_zero", "add_zero"} <= applied


def test_apply_rules_rejects_a_rewrite_of_another_shape():
    @rule(Op("convert", Any("a")))
    def wrong(inst, a):
        # convert(A) => A (wrong: changes the element type)
        return a
    module, _ = instructions()
    with pytest.raises(Exception, match="rewrite rule wrong turned c"):
        apply_rules(module, RuleSet([wrong]))


@pytest.mark.parametrize("r", list(FAST_MATH_RULES), ids=lambda r: r.name)
def test_every_simplifier_rule_states_its_rewrite(r):
    comments = [line.strip() for line in inspect.getsource(r.fn).splitlines() if line.strip().startswith("#")]
    assert comments and "=>" in comments[0], f"rule {r.name} has no `# A => B` comment"


def test_simplifier_rule_names_are_unique():
    names = [r.name for r in FAST_MATH_RULES]
    assert len(names) == len(set(names))
    assert set(names) >= {r.name for r in RULES}
