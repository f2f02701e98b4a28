"""The lexer's string and braced-value patterns are possessive (hlo/lexer.py: _STRING, _RAW_BRACED): the same
values as before, one regex step per run of plain text, and no backtracking when a value is not of that form
(a nested brace, a string left open) so the general path takes it."""
import time

import pytest

import xlapy
from xlapy.hlo.lexer import _RAW_BRACED, _STRING

MODULE = """HloModule m
ENTRY e {{
  p = f32[4] parameter(0)
  ROOT a = f32[4] add(p, p), metadata={meta}
}}"""


@pytest.mark.parametrize("meta", [
    'op_type="Add" op_name="a/b}c" source_line=3',          # a brace inside a string
    'op_name="q\\"uo\\\\te\\"d" source_file="x.py"',         # escaped quotes and backslashes
    'op_name=""',                                            # an empty string
])
def test_metadata_values_read_whole(meta):
    m = xlapy.hlo.parse(MODULE.format(meta="{" + meta + "}"))
    assert m.entry.root.attrs["metadata"] == "{" + meta + "}"
    assert xlapy.hlo.parse(m.to_text()).to_text() == m.to_text()


def test_patterns_match_what_they_did():
    assert _STRING.match('"a\\"b" rest').group(0) == '"a\\"b"'
    assert _STRING.match('"open') is None
    assert _RAW_BRACED.match('{a="x}y" b=1}, next').group(0) == '{a="x}y" b=1}'
    assert _RAW_BRACED.match('{a={b}}') is None                 # nested: the general path reads it
    assert _RAW_BRACED.match('{a="x} junk') is None             # never closed on the line


def test_a_value_that_does_not_match_fails_fast():
    text = "{" + "a" * 20000 + '"' + "b" * 20000              # a string never closed: no backtracking
    t = time.perf_counter()
    assert _RAW_BRACED.match(text) is None and _STRING.match(text, 20001) is None
    assert time.perf_counter() - t < 0.5
