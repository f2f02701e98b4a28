"""Merging rule tables. Each layer keeps its rules in one dict per op family (opcode -> rule) and merges the
families into the one table its driver reads: shape inference, the interpreter, JVP and VJP. A plain `{**a, **b}`
would let a second rule for an opcode silently replace the first; merge_rule_tables refuses, naming both sources,
so the rule for an opcode is always the one found by reading its family's table.
"""
from __future__ import annotations

from types import ModuleType
from typing import Mapping, TypeVar

Rule = TypeVar("Rule")


class DuplicateRuleError(ValueError):
    """Two tables define a rule for the same opcode."""


def merge_rule_tables(what: str, *tables: tuple[str, Mapping[str, Rule]]) -> dict[str, Rule]:
    """One dict of every (source name, table) pair's rules; DuplicateRuleError names `what`, the opcode and both
    sources when an opcode is defined twice."""
    merged: dict[str, Rule] = {}
    source: dict[str, str] = {}
    for name, table in tables:
        for opcode, rule in table.items():
            if opcode in merged:
                raise DuplicateRuleError(f"two {what} for opcode {opcode!r}: one in {source[opcode]}, "
                                         f"one in {name}")
            merged[opcode] = rule
            source[opcode] = name
    return merged


def module_tables(attribute: str, *modules: ModuleType) -> list[tuple[str, Mapping]]:
    """(`module.attribute` as a name, the table) for each module: the family tables a driver merges."""
    return [(f"{m.__name__}.{attribute}", getattr(m, attribute)) for m in modules]
