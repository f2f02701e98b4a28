"""A RuleSet indexes its rules by root opcode once: the driver tries, for an instruction, only the rules whose
root opcode can match, in table order, and rules without a root opcode (Any, ConstantScalar, Op(None))
everywhere; match() builds no failure reasons, explain() still does."""
from xlapy.hlo import parse
from xlapy.passes.pattern import Any, ConstantScalar, Op
from xlapy.passes.rewrite import RuleSet, apply_rules_to, rule

TEXT = """HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  z = f32[4] constant({0, 0, 0, 0})
  a = f32[4] add(x, z)
  ROOT n = f32[4] negate(a)
}"""


def test_rules_are_indexed_by_root_opcode_in_table_order():
    add_rule = rule(Op("add", Any("x"), ConstantScalar(0)))(lambda inst, x: x)
    generic = rule(Any())(lambda inst: None)
    neg_or_add = rule(Op({"negate", "add"}))(lambda inst: None)
    rules = RuleSet([add_rule, generic, neg_or_add])
    assert rules.for_opcode("add") == (add_rule, generic, neg_or_add)
    assert rules.for_opcode("negate") == (generic, neg_or_add)
    assert rules.for_opcode("multiply") == (generic,)


def test_rewrite_applies_and_visits_every_opcode():
    module = parse(TEXT)
    seen = []
    rules = RuleSet([rule(Op("add", Any("x"), ConstantScalar(0)))(lambda inst, x: x),
                     rule(Any())(lambda inst: seen.append(inst.opcode))])
    assert apply_rules_to(module.entry, rules)
    assert module.entry.root.operands[0].opcode == "parameter"
    assert set(seen) >= {"parameter", "constant", "negate"}


def test_explain_still_gives_reasons():
    module = parse(TEXT)
    neg = module.entry.root
    pat = Op("add", Any(), Any())
    assert pat.match(neg) is None
    assert "negate, not add" in pat.explain(neg)


def test_one_sweep_also_rewrites_what_a_rewrite_made():
    """reshape(reshape(reshape(x))) with x's shape: each reshape_reshape makes a new reshape, which the sweep tries
    at once (same_shape_noop), so one sweep leaves x, where sweeps that skipped new instructions needed three."""
    from xlapy.passes.algsimp import RULES
    module = parse("""HloModule m
ENTRY main {
  x = f32[4,6] parameter(0)
  a = f32[24] reshape(x)
  b = f32[2,12] reshape(a)
  c = f32[4,6] reshape(b)
  ROOT n = f32[4,6] negate(c)
}""")
    trace = []
    assert apply_rules_to(module.entry, RULES, trace)
    assert module.entry.root.operands[0].opcode == "parameter", trace
    assert not apply_rules_to(module.entry, RULES)
