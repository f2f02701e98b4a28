"""The rewrite driver only tries the rules whose root opcode can match, in table order, and rules without a root
opcode (Any, ConstantScalar, Op(None)) everywhere; match() builds no failure reasons, explain() still does."""
from xlapy.hlo import parse
from xlapy.passes.pattern import Any, ConstantScalar, Op
from xlapy.passes.rewrite import _by_opcode, apply_rules_to

TEXT = """HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  z = f32[4] constant({0, 0, 0, 0})
  a = f32[4] add(x, z)
  ROOT n = f32[4] negate(a)
}"""


def test_rules_are_indexed_by_root_opcode_in_table_order():
    add_rule = (Op("add", Any("x"), ConstantScalar(0)), lambda i, c: c["x"])
    generic = (Any(), lambda i, c: None)
    neg_or_add = (Op({"negate", "add"}), lambda i, c: None)
    keyed, other = _by_opcode([add_rule, generic, neg_or_add])
    assert keyed["add"] == [add_rule, generic, neg_or_add]
    assert keyed["negate"] == [generic, neg_or_add]
    assert other == [generic]


def test_rewrite_applies_and_visits_every_opcode():
    module = parse(TEXT)
    seen = []
    rules = [(Op("add", Any("x"), ConstantScalar(0)), lambda i, c: c["x"]),
             (Any(), lambda i, c: seen.append(i.opcode))]
    assert apply_rules_to(module.entry, rules)
    assert module.entry.root.operands[0].opcode == "parameter"
    assert set(seen) >= {"parameter", "constant", "negate"}


def test_explain_still_gives_reasons():
    module = parse(TEXT)
    neg = module.entry.root
    pat = Op("add", Any(), Any())
    assert pat.match(neg) is None
    assert "negate, not add" in pat.explain(neg)
