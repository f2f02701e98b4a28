"""`xlapy ops`: where each layer's rule for an opcode is (file:line), or why it has none; with no opcode, the
coverage matrix of every opcode by every layer. JAX's "one place to look" for a primitive, read from the tables
(tools/op_coverage.py) without moving any rule out of its layer.
"""
from __future__ import annotations

import difflib
import functools
import inspect
from pathlib import Path
from typing import Callable

from ..errors import XlapyError
from ..hlo.opcodes import OPCODES
from .op_coverage import (BY_DRIVER, EXPANDED, LAYERS, NOT_DIFFERENTIABLE, UNSUPPORTED, Layer, Reason, pass_class,
                          resolve)

_ROOT = Path(__file__).resolve().parents[2]          # the directory holding the xlapy package
MARKS = {"rule": "+", EXPANDED: "E", UNSUPPORTED: "U", NOT_DIFFERENTIABLE: "N", BY_DRIVER: "D"}   # matrix cells


def source_location(fn: Callable) -> str:
    """`path:line qualname` of a function (a partial's function, a class), path relative to the repository."""
    fn = inspect.unwrap(fn.func if isinstance(fn, functools.partial) else fn)
    try:
        path = Path(inspect.getsourcefile(fn)).resolve()
        line = inspect.getsourcelines(fn)[1]
    except (OSError, TypeError):
        return f"(no source) {fn!r}"
    shown = path.relative_to(_ROOT) if path.is_relative_to(_ROOT) else path
    return f"{shown}:{line} {getattr(fn, '__qualname__', repr(fn))}"


def reason_location(reason: Reason) -> str:
    """Where a reason points: the expanding pass's class or the driver function; '' for the other kinds."""
    if reason.kind == EXPANDED:
        return source_location(pass_class(reason.target))
    if reason.kind == BY_DRIVER:
        return source_location(resolve(reason.target))
    return ""


def check_opcode(opcode: str) -> None:
    if opcode not in OPCODES:
        near = difflib.get_close_matches(opcode, OPCODES, n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else " (see `xlapy ops` for the list)"
        raise XlapyError(f"unknown opcode {opcode!r}{hint}")


def _layer_lines(ly: Layer, opcode: str) -> list[str]:
    if ly.absent:
        return [ly.absent]
    rules = ly.rules(opcode)
    if rules:
        return [f"{source_location(fn)}" + (f"  [{label}]" if len(ly.tables()) > 1 else "") for label, fn in rules]
    reason = ly.no_rule.get(opcode)
    if reason is None:
        return ["no rule and no reason (tools/op_coverage.py is out of date)"]
    where = reason_location(reason)
    return [reason.text()] + ([f"  see {where}"] if where else [])


def describe(opcode: str) -> str:
    """Every layer's rule for `opcode` as file:line, or the reason it has none."""
    check_opcode(opcode)
    info = OPCODES[opcode]
    arity = "variadic" if info.arity < 0 else str(info.arity)
    traits = ", ".join(sorted(info.traits)) or "none"
    out = [f"{opcode}: arity {arity}; traits: {traits}"]
    width = max(len(ly.name) for ly in LAYERS)
    for ly in LAYERS:
        for i, line in enumerate(_layer_lines(ly, opcode)):
            out.append(f"  {(ly.name if i == 0 else ''):<{width}}  {line}")
    return "\n".join(out)


def _mark(ly: Layer, covered: set[str], opcode: str) -> str:
    if opcode in covered:
        return MARKS["rule"]
    reason = ly.no_rule.get(opcode)
    return MARKS[reason.kind] if reason is not None else "?"


def matrix() -> str:
    """One row per opcode, one column per existing layer; a legend and per-layer totals below."""
    layers = [ly for ly in LAYERS if not ly.absent]
    covered = {ly.name: ly.covered() for ly in layers}
    width = max(len(op) for op in OPCODES)
    out = [f"{'opcode':<{width}}  " + "  ".join(ly.name for ly in layers)]
    counts = {ly.name: dict.fromkeys(MARKS.values(), 0) for ly in layers}
    for op in OPCODES:
        cells = []
        for ly in layers:
            mark = _mark(ly, covered[ly.name], op)
            counts[ly.name][mark] = counts[ly.name].get(mark, 0) + 1
            cells.append(f"{mark:^{len(ly.name)}}")
        out.append(f"{op:<{width}}  " + "  ".join(cells).rstrip())
    out.append("")
    out.append("legend: " + ", ".join(f"{m} {'has a rule' if k == 'rule' else k}" for k, m in MARKS.items()))
    for ly in layers:
        shown = ", ".join(f"{n} {m}" for m, n in counts[ly.name].items() if n)
        out.append(f"{ly.name}: {shown}")
    out.extend(f"{ly.name}: {ly.absent}" for ly in LAYERS if ly.absent)
    out.append(f"{len(OPCODES)} opcodes x {len(layers)} layers; `xlapy ops OPCODE` shows where each rule is")
    return "\n".join(out)
