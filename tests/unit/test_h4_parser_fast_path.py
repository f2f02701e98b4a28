"""The parser's one-match path for `SHAPE opcode(operands)` (parser._FAST_BODY): it reads most instructions of JAX's
and TensorFlow's text, and gives what the general path gives (instructions, text positions in errors)."""
import pytest

from xlapy.errors import HloParseError
from xlapy.hlo import parse
from xlapy.hlo import parser as P

TEXT = """HloModule m

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  b = f32[2,3] parameter(1)
  c = f32[] constant(1)
  n = f32[2,3]{1,0} negate(a), metadata={op_name="n"}
  m = f32[2,3]{1,0} multiply(f32[2,3]{1,0} %n, f32[2,3] b)
  bc = f32[2,3]{1,0} broadcast(f32[] c), dimensions={}
  z = f32[2,3]{1,0}   add( m ,bc )
  r = f32[2]{0} reduce(z, c), dimensions={1}, to_apply=add
  t = (f32[2]{0}, f32[2,3]{1,0}) tuple(r, z)
  ROOT g = f32[2]{0} get-tuple-element(t), index=0
}
"""


def _general_only(monkeypatch):
    monkeypatch.setattr(P.Parser, "_fast_op_body", lambda self, comp, pend, name: None)


def test_fast_path_reads_the_same_module(monkeypatch):
    fast = parse(TEXT).to_text()
    _general_only(monkeypatch)
    assert parse(TEXT).to_text() == fast


def test_fast_path_takes_plain_instructions_in_one_match(monkeypatch):
    """Once their shapes were read, plain instructions make no call per operand (the general path's _operand)."""
    lines = ["HloModule chain", "ENTRY e {", "  x0 = f32[8]{0} parameter(0)"]
    lines += [f"  x{i} = f32[8]{{0}} add(x{i - 1}, f32[8]{{0}} x{i - 1})" for i in range(1, 101)]
    lines += ["  ROOT r = f32[8]{0} negate(x100)", "}"]
    calls = []
    real = P.Parser._operand
    monkeypatch.setattr(P.Parser, "_operand", lambda self, *a: calls.append(1) or real(self, *a))
    module = parse("\n".join(lines))
    assert len(module.entry.instructions) == 102
    assert len(calls) <= 4                # the first add's operands, before its shapes were seen


@pytest.mark.parametrize("bad, token", [
    ("m = f32[2,3]{1,0} multiply(f32[2,3]{1,0} %n, f32[2,3] nope)", "nope"),
    ("z = f32[2,3]{1,0}   add( m ,nope )", "nope"),
    ("n = f32[2,3]{1,0} negate(a, a), metadata={op_name=\"n\"}", "negate"),
])
def test_fast_path_errors_point_where_the_general_path_points(monkeypatch, bad, token):
    """An undefined operand or a wrong operand count is reported at the same line, column and token."""
    good = {"m": "  m = f32[2,3]{1,0} multiply(f32[2,3]{1,0} %n, f32[2,3] b)",
            "z": "  z = f32[2,3]{1,0}   add( m ,bc )",
            "n": "  n = f32[2,3]{1,0} negate(a), metadata={op_name=\"n\"}"}[bad[0]]
    text = TEXT.replace(good, "  " + bad)
    assert text != TEXT

    def error():
        with pytest.raises(HloParseError) as info:
            parse(text)
        return str(info.value)
    fast = error()
    assert token in fast
    _general_only(monkeypatch)
    assert error() == fast


RAW_CASES = [
    '{op_type="Relu6" op_name="a/b" source_file="x.py" source_line=12}, next=1',
    '{op_name="a, {b}" k="q\\"uote"}\n',
    '{a=1 b=2}  ,x',
    '{op_name="x"} trailing words, y',
    '{op_name="x"}\n  continued}',
    '{op_name="x" (unbalanced}',
    '{op_name="x"',
]


@pytest.mark.parametrize("text", RAW_CASES)
@pytest.mark.parametrize("stop_at_newline", [True, False])
def test_raw_value_in_one_match_is_what_the_scan_gives(monkeypatch, text, stop_at_newline):
    """raw_value's one-match form for `{...}` values gives the value, the cursor position and the errors that
    its bracket scan gives."""
    import re

    from xlapy.hlo import lexer

    def read():
        cur = lexer.Cursor(text)
        try:
            return cur.raw_value(stop_at_newline), cur.pos
        except HloParseError as e:
            return str(e)
    fast = read()
    monkeypatch.setattr(lexer, "_RAW_BRACED", re.compile(r"(?!)"))
    assert read() == fast


def test_raw_value_takes_metadata_in_one_match(monkeypatch):
    """A metadata value with strings needs no scan of its brackets (one finditer per value, not per string)."""
    from xlapy.hlo import lexer
    scans = []
    real = lexer._RAW_SPECIAL

    class Counting:
        def finditer(self, *a):
            scans.append(1)
            return real.finditer(*a)
    monkeypatch.setattr(lexer, "_RAW_SPECIAL", Counting())
    cur = lexer.Cursor('{op_type="Relu6" op_name="a/b" source_file="x.py" source_line=12}, next=1')
    assert cur.raw_value() == '{op_type="Relu6" op_name="a/b" source_file="x.py" source_line=12}'
    assert not scans
