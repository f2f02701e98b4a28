"""The rewrite driver: apply a table of (pattern, fn) rules to every instruction, in post order.

fn(inst, caps) returns the instruction that should replace `inst` (an existing one, or a new one made with
build.make/emit), or None when the rule does not apply after all. New instructions that are not yet in the
computation are added; replaced instructions are left for DCE. One sweep per call: passes run the driver
inside a FixedPoint, so rules compose without the driver looping itself.
"""
from __future__ import annotations

import itertools
from typing import Callable, Sequence

from ..errors import XlapyError
from ..hlo import Computation, Instruction, Module
from .pattern import Pattern

Rule = tuple[Pattern, Callable[[Instruction, dict], "Instruction | None"]]


def _adopt(comp: Computation, inst: Instruction) -> None:
    """Add `inst` and any of its operands that are new (parent None) to `comp`, operands first."""
    if inst.parent is not None:
        return
    for op in inst.operands:
        _adopt(comp, op)
    comp.add_instruction(inst)


def _by_opcode(rules: Sequence[Rule]) -> tuple[dict[str, list[Rule]], list[Rule]]:
    """The rules that can match each opcode, in table order (a rule whose pattern names its root opcodes is
    listed under those only), and the rules for any other opcode: matching skips the rules that cannot apply."""
    keyed: dict[str, list[Rule]] = {}
    for pattern, _ in rules:
        for op in (getattr(pattern, "opcodes", None) or ()):
            keyed.setdefault(op, [])
    for op, table in keyed.items():
        table.extend(r for r in rules if getattr(r[0], "opcodes", None) is None or op in r[0].opcodes)
    return keyed, [r for r in rules if getattr(r[0], "opcodes", None) is None]


_TABLES: dict[tuple, tuple] = {}     # rule tables by the ids of their rules (which the entry keeps alive)


def _tables(rules: Sequence[Rule]) -> tuple[dict[str, list[Rule]], list[Rule]]:
    """_by_opcode(rules), computed once per rule list (every pass run sweeps every computation with it)."""
    key = tuple(map(id, itertools.chain.from_iterable(rules)))
    hit = _TABLES.get(key)
    if hit is None:
        if len(_TABLES) > 64:
            _TABLES.clear()
        hit = _TABLES[key] = (_by_opcode(rules), list(rules))
    return hit[0]


def apply_rules_to(comp: Computation, rules: Sequence[Rule], trace: list | None = None) -> bool:
    changed = False
    keyed, generic = _tables(rules)
    for inst in comp.post_order():
        if inst.parent is not comp:      # removed by an earlier rewrite in this sweep
            continue
        for pattern, fn in keyed.get(inst.opcode, generic):
            caps = pattern.match(inst)
            if caps is None:
                continue
            new = fn(inst, caps)
            if new is None or new is inst:
                continue
            if not new.shape.compatible(inst.shape):
                raise XlapyError(f"rewrite rule {getattr(fn, '__name__', fn)} turned {inst.name} "
                                 f"({inst.shape}) into {new.name} of shape {new.shape}")
            if new.parent is None:
                new.shape = inst.shape   # keep the layout of the value it replaces
                _adopt(comp, new)
            inst.replace_all_uses_with(new)
            if trace is not None:
                trace.append((getattr(fn, "__name__", str(fn)), inst.name, new.name))
            changed = True
            break
    return changed


def apply_rules(module: Module, rules: Sequence[Rule], trace: list | None = None) -> bool:
    changed = False
    for comp in list(module.computations):
        changed |= apply_rules_to(comp, rules, trace)
    return changed
