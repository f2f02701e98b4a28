"""Malformed HLO text raises HloParseError with 1-based line:column, the offending token and what was expected."""
from __future__ import annotations

import pytest

from xlapy import HloParseError
from xlapy.hlo import parse

H = "HloModule m\n\nENTRY e {\n"          # instructions start on line 4
P = H + "  p = f32[4] parameter(0)\n"      # ... and on line 5 after this parameter

# text | line | column | fragment of the message | token
CASES = [
    ("", 1, 1, "expected 'HloModule'", "<end of input>"),
    ("HloMod m", 1, 1, "expected 'HloModule'", "HloMod"),
    ("HloModule m, foo", 1, 17, "expected '=' after module attribute foo", "<end of input>"),
    (H, 4, 1, "computation e is not closed", "<end of input>"),
    (H + "  ROOT p = f32[] frobnicate(0)\n}", 4, 18, "unknown opcode 'frobnicate'", "frobnicate"),
    (H + "  ROOT a = f32[] add(x, y)\n}", 4, 22, "undefined instruction x", "x"),
    (P + "  ROOT a = f32[4] add(p)\n}", 5, 19, "add takes 2 operand(s), got 1", "add"),
    (P + "  ROOT c = f32[4] call(p), to_apply=nowhere\n}", 5, 37, "undefined computation nowhere", "nowhere"),
    (H + "  ROOT p = f32[2,] parameter(0)\n}", 4, 18, "expected a dimension size", "]"),
    (H + "  ROOT p = f99[2] parameter(0)\n}", 4, 12, "expected a shape", "f99"),
    (H + "  ROOT p = f32[2]{0,1} parameter(0)\n}", 4, 18, "layout has 2 dimensions, the shape has 1", "{"),
    (H + "  ROOT p = f32[2]{1} parameter(0)\n}", 4, 18, "layout must be a permutation", "{"),
    (H + "  ROOT c = f32[3] constant({1, 2})\n}", 4, 28, "literal has 2 values, shape f32[3] needs 3", "{"),
    (H + "  ROOT c = f32[2] constant({1, x})\n}", 4, 28, "invalid f32 value 'x'", "{"),
    (H + "  ROOT c = s8[] constant(300)\n}", 4, 26, "value 300 is out of range for s8", "300"),
    (H + "  ROOT c = u8[] constant(-1)\n}", 4, 26, "value -1 is out of range for u8", "-1"),
    (H + "  ROOT c = f32[] constant(1e39)\n}", 4, 27, "out of range for f32", "1e39"),
    (H + "  ROOT c = f32[2,2] constant({1, 2, 3, 4})\n}", 4, 30, "nesting does not match shape f32[2,2]", "{"),
    (H + "  ROOT c = pred[] constant(maybe)\n}", 4, 28, "invalid pred value 'maybe'", "maybe"),
    (H + "  ROOT c = f32[] constant(1\n}", 5, 1, "expected ')' after the literal", "}"),
    (H + "  p = f32[] parameter(0)\n  p = f32[] parameter(1)\n}", 5, 3, "instruction p is defined twice", "p"),
    (H + "  ROOT p = f32[] parameter(0)\n  ROOT q = f32[] parameter(1)\n}", 5, 3, "two ROOT instructions", "ROOT"),
    (P + "  ROOT b = f32[4] reverse(p), dimensions={0,x}\n}", 5, 45, "expected an integer in dimensions", "x"),
    (P + "  ROOT b = f32[4] sort(p), is_stable=maybe\n}", 5, 38, "is_stable must be true or false", "maybe"),
    (P + "  ROOT b = f32[4] reverse(p), dimensions={0}, dimensions={0}\n}", 5, 47,
     "attribute dimensions is given twice", "dimensions"),
    (P + "  ROOT b = f32[4] reverse(p) dimensions={0}\n}", 5, 41, "expected an opcode", "{"),
    (P + '  ROOT c = f32[] custom-call(p), custom_call_target="foo\n}', 5, 53, "expected a quoted string", '"foo'),
    (H + "  a = f32[] add(b, b)\n  ROOT b = f32[] add(a, a)\n}", 4, 13, "a cycle", "add"),
    (H + "  ROOT w = f32[] convolution(), window={size=2x2 stride=1}\n}", 4, 40,
     "window field stride has 1 entries, size has 2", "{"),
    (H + "  ROOT r = add(f32[] parameter(0), f32[] parameter(1)), foo\n}", 4, 55, "expected an attribute", ","),
    (H + "  ROOT r = reduce(f32[2] parameter(0), f32[] parameter(1)), dimensions={0}\n}", 4, 12,
     "cannot infer the shape of reduce", "reduce"),
    ("HloModule m\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\nENTRY f {\n  ROOT q = f32[] parameter(0)\n}",
     6, 1, "one ENTRY computation", "ENTRY"),
    (H + "  ROOT p = token[2] parameter(0)\n}", 4, 12, "token shapes have no dimensions", "token"),
    (H + "  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p), control-predecessors={q}\n}", 5, 51,
     "undefined control predecessor q", "q"),
    (H + "  ROOT c = f32[] constant(0)\n}}", 5, 2, "expected a computation", "}"),
    (H + "  ROOT c = constant(0)\n}", 4, 12, "a constant needs a shape", "constant"),
    (H + '  ROOT c = f32[] parameter(0), metadata={op_name="x")\n}', 4, 53, "mismatched bracket", ")"),
]


@pytest.mark.parametrize("text,line,column,fragment,token", CASES)
def test_malformed_text(text, line, column, fragment, token):
    with pytest.raises(HloParseError) as info:
        parse(text)
    err = info.value
    assert (err.line, err.column) == (line, column), str(err)
    assert fragment in str(err)
    assert err.token == token
    assert err.expected
    assert str(err).startswith(f"{line}:{column}: ")


def test_error_is_an_xlapy_error():
    from xlapy import XlapyError
    with pytest.raises(XlapyError):
        parse("HloModule m\nENTRY e {\n}")
