"""Shape and layout text -> Shape, read at a Cursor: `f32[2,3]{1,0}`, `s32[<=4,?]`, `(f32[], token[])`.

Grammar:
  shape   ( shape, ... ) | TYPE [ dim, ... ] [layout]
  dim     N | <=N (bounded dynamic) | ? (unbounded dynamic, stored as -1)
  layout  { minor_to_major, ... [: tail] }    the tail (tiling, memory space, ...) is kept as its text

Shapes repeat (every operand of a TF dump carries its shape), so a shape's text is read once: `_SEEN` maps the
text of a plain array shape (`f32[2,3]{1,0}`) or of a whole tuple shape (up to its closing parenthesis, on one
line) to its Shape (a frozen value, safe to share). Only text the full reader took exactly is remembered, so
a hit returns what reading it again would.
"""
from __future__ import annotations

import re

from .lexer import INT, Cursor
from .shape import PRIMITIVE_TYPES, Layout, Shape

_TYPE_BRACKET = re.compile(r"([a-z][a-z0-9]*)\[")
_DIM = re.compile(r"<=\d+|\?|\d+")
_LAYOUT_START = re.compile(r"\{\s*(?:\d|:|\})")
_LAYOUT_TAIL = re.compile(r"[^{}]*")
_PLAIN_ARRAY = re.compile(r"[a-z][a-z0-9]*\[(?:\d+(?:,\d+)*)?\](\{(?:\d+(?:,\d+)*)?\})?")
_PARENS = re.compile(r"[()\n]")
_SEEN: dict[str, Shape] = {}
_SEEN_LIMIT = 1 << 14


def shape_ahead(cur: Cursor) -> bool:
    """Does a shape start here (a tuple's '(' or `type[`)?"""
    cur.skip()
    return cur.text.startswith("(", cur.pos) or _TYPE_BRACKET.match(cur.text, cur.pos) is not None


def parse_shape(cur: Cursor, nested: bool = False) -> Shape:
    cur.skip()
    text, start = cur.text, cur.pos
    end, resume = _text_end(cur, text, start, nested)
    if end:
        shape = _SEEN.get(text[start:end])
        if shape is not None:
            cur.pos = resume
            return shape
    if cur.accept("("):
        # one function (no wrapper, not cur.items): one frame a nesting level keeps the depth parse() accepts
        subs: list[Shape] = []
        if not cur.accept(")"):
            while True:
                subs.append(parse_shape(cur, True))
                if cur.accept(")"):
                    break
                cur.expect(",", "between tuple shape elements")
        return _remember(cur, text, start, end, resume, Shape.tuple_of(subs))
    pos = cur.pos
    m = cur.peek(_TYPE_BRACKET)
    if not m or m.group(1) not in PRIMITIVE_TYPES:
        raise cur.error("expected a shape", "a shape such as f32[2,3]", pos)
    etype = m.group(1)
    cur.pos = m.end()
    sizes = cur.items("]", "between dimensions", lambda: _dim(cur))
    dims = [d for d, _ in sizes]
    dynamic = [is_dynamic for _, is_dynamic in sizes]
    layout = None
    if cur.peek(_LAYOUT_START):
        layout = _layout(cur, len(dims))
    if etype in ("token", "opaque") and dims:
        raise cur.error(f"{etype} shapes have no dimensions", f"{etype}[]", pos)
    shape = Shape(etype, tuple(dims), layout, (), tuple(dynamic) if any(dynamic) else ())
    return _remember(cur, text, start, end, resume, shape)


def _text_end(cur: Cursor, text: str, start: int, nested: bool) -> tuple[int, int]:
    """(end, resume): where the shape text at `start` ends if it is one `_SEEN` may hold (else 0), and where
    reading it leaves the cursor. Held: a plain array shape (not followed by a layout the plain form does not
    cover; without a layout, reading it looks past the blanks after it), or, outermost only, a tuple closed on
    its line."""
    if text.startswith("(", start):
        if nested:     # the outermost tuple's text covers its elements; scanning each again would be quadratic
            return 0, 0
        depth = 0
        for m in _PARENS.finditer(text, start):
            if m.group() == "\n":
                return 0, 0
            depth += 1 if m.group() == "(" else -1
            if not depth:
                return m.end(), m.end()
        return 0, 0
    m = _PLAIN_ARRAY.match(text, start)
    if not m:
        return 0, 0
    if m.group(1) is not None:
        return m.end(), m.end()
    resume = cur.next_token_pos(m.end())
    return (0, 0) if text.startswith("{", resume) else (m.end(), resume)


def _remember(cur: Cursor, text: str, start: int, end: int, resume: int, shape: Shape) -> Shape:
    if end and cur.pos == resume:
        if len(_SEEN) >= _SEEN_LIMIT:
            _SEEN.clear()
        _SEEN[text[start:end]] = shape
    return shape


def _dim(cur: Cursor) -> tuple[int, bool]:
    """(size, is_dynamic); an unbounded dynamic size is -1."""
    d = cur.take(_DIM, "a dimension size")
    if d == "?":
        return -1, True
    if d.startswith("<="):
        return int(d[2:]), True
    return int(d), False


def _layout(cur: Cursor, rank: int) -> Layout:
    pos = cur.pos
    cur.expect("{")
    m2m: list[int] = []
    tail = ""
    while True:
        if cur.accept("}"):
            break
        if cur.accept(":"):
            tail = cur.take(_LAYOUT_TAIL, "a layout tail").strip()
            cur.expect("}", "to close the layout")
            break
        m2m.append(int(cur.take(INT, "a dimension number")))
        if cur.peek_char() == ",":
            cur.accept(",")
    if len(m2m) != rank and (m2m or rank == 0 or not tail):
        raise cur.error(f"layout has {len(m2m)} dimensions, the shape has {rank}", f"{rank} dimensions", pos)
    if sorted(m2m) != list(range(len(m2m))):
        raise cur.error("layout must be a permutation of the dimensions", "a permutation", pos)
    return Layout(tuple(m2m), tail)
