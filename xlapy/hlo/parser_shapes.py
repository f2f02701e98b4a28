"""Shape and layout text -> Shape, read at a Cursor: `f32[2,3]{1,0}`, `s32[<=4,?]`, `(f32[], token[])`.

Grammar:
  shape   ( shape, ... ) | TYPE [ dim, ... ] [layout]
  dim     N | <=N (bounded dynamic) | ? (unbounded dynamic, stored as -1)
  layout  { minor_to_major, ... [: tail] }    the tail (tiling, memory space, ...) is kept as its text
"""
from __future__ import annotations

import re

from .lexer import INT, Cursor
from .shape import PRIMITIVE_TYPES, Layout, Shape

_TYPE_BRACKET = re.compile(r"([a-z][a-z0-9]*)\[")
_DIM = re.compile(r"<=\d+|\?|\d+")
_LAYOUT_START = re.compile(r"\{\s*(?:\d|:|\})")
_LAYOUT_TAIL = re.compile(r"[^{}]*")


def shape_ahead(cur: Cursor) -> bool:
    """Does a shape start here (a tuple's '(' or `type[`)?"""
    return cur.peek_char() == "(" or bool(cur.peek(_TYPE_BRACKET))


def parse_shape(cur: Cursor) -> Shape:
    if cur.accept("("):
        # not cur.items: one frame a nesting level keeps the depth parse() accepts where it was
        subs: list[Shape] = []
        if not cur.accept(")"):
            while True:
                subs.append(parse_shape(cur))
                if cur.accept(")"):
                    break
                cur.expect(",", "between tuple shape elements")
        return Shape.tuple_of(subs)
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
    return Shape(etype, tuple(dims), layout, (), tuple(dynamic) if any(dynamic) else ())


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
