"""Attribute values, read at a Cursor by the kind attr_table gives the attribute's name.

One reader a kind (see attr_table for the kinds and their text); a name the table does not know is kept
as its raw text. Computation names are left as parser_resolve.Ref until every computation is read.
"""
from __future__ import annotations

import re
from typing import Callable

from . import attrs as A
from .attr_table import kind_of
from .lexer import FLOAT, INT, NAME, WORD, Cursor
from .parser_resolve import Ref
from .parser_shapes import parse_shape

_DIM_LABELS = re.compile(r"[0-9a-z?]+_[0-9a-z?]+->[0-9a-z?]+")
_PADDING = re.compile(r"[-\d_x]+")
_MAX_INT_LIST_DEPTH = 8
_FLAT_INTS = re.compile(r"\{[ \t]*([-+]?\d+(?:[ \t]*,[ \t]*[-+]?\d+)*)?[ \t]*\}")     # `{1, 2}` in one match


def parse_attr_value(cur: Cursor, key: str):
    """The value of attribute `key` (after its '='), typed by its kind."""
    pos = cur.pos
    try:
        return _READERS.get(kind_of(key), _raw)(cur, key)
    except ValueError as e:
        raise cur.error(f"bad value for attribute {key}: {e}", f"a valid {key}", pos) from None


def name_list(cur: Cursor) -> list[Ref]:
    """`{a, %b}` -> refs (called computations, control predecessors)."""
    cur.expect("{")
    return cur.items("}", "between names", lambda: _name_ref(cur, "expected a name", "a name"))


def _name_ref(cur: Cursor, message: str, expected: str) -> Ref:
    m = cur.peek(NAME)
    if not m:
        raise cur.error(message, expected)
    cur.pos = m.end()
    return Ref(m.group(0).lstrip("%"), m.start())


def _comp(cur: Cursor, key: str) -> Ref:
    return _name_ref(cur, f"expected a computation name for {key}", "a computation name")


def _calls(cur: Cursor, key: str):
    """`calls=%c` or `calls={%a, %b}`."""
    return name_list(cur) if cur.peek_char() == "{" else _comp(cur, key)


def _bool(cur: Cursor, key: str) -> bool:
    pos = cur.pos
    word = cur.take(WORD, f"true or false for {key}")
    if word not in ("true", "false"):
        raise cur.error(f"{key} must be true or false", "true or false", pos)
    return word == "true"


def _int_list(cur: Cursor, key: str, depth: int = 0) -> tuple:
    """`{1, 2}`, or nested lists of them: `{{1,2},{3}}`."""
    if depth > _MAX_INT_LIST_DEPTH:
        raise cur.error(f"{key} is nested too deeply", "a flat list of integers")
    cur.skip()
    m = _FLAT_INTS.match(cur.text, cur.pos)
    if m:
        cur.pos = m.end()
        return tuple(int(x) for x in m.group(1).split(",")) if m.group(1) else ()
    cur.expect("{", f"to open {key}")

    def entry():
        if cur.peek_char() == "{":
            return _int_list(cur, key, depth + 1)
        return int(cur.take(INT, f"an integer in {key}"))
    return tuple(cur.items("}", f"between entries of {key}", entry))


def _words(cur: Cursor, key: str) -> tuple[str, ...]:
    cur.expect("{", f"to open {key}")
    return tuple(cur.items("}", f"between entries of {key}", lambda: cur.take(WORD, f"a word in {key}")))


def _raw(cur: Cursor, key: str) -> str:
    return cur.raw_value()


_READERS: dict[str, Callable[[Cursor, str], object]] = {
    "int": lambda cur, key: int(cur.take(INT, f"an integer for {key}")),
    "float": lambda cur, key: float(cur.take(FLOAT, f"a number for {key}")),
    "bool": _bool,
    "word": lambda cur, key: cur.take(WORD, f"a word for {key}"),
    "string": lambda cur, key: cur.string(),
    "ints": _int_list,
    "words": _words,
    "comp": _comp,
    "comps": lambda cur, key: name_list(cur),
    "calls": _calls,
    "window": lambda cur, key: A.Window.parse(cur.raw_value()),
    "dim_labels": lambda cur, key: A.ConvDimensionNumbers.parse(
        cur.take(_DIM_LABELS, "dim_labels like b01f_01io->b01f")),
    "slice": lambda cur, key: A.parse_slice(cur.raw_value()),
    "padding": lambda cur, key: A.parse_padding(cur.take(_PADDING, "padding like 0_1x2_3")),
    "shape": lambda cur, key: parse_shape(cur),
}
