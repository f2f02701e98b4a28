"""Batching (vmap) as an HLO -> HLO transformation: one small driver over the batching rule tables.

    batch_into(b, comp, args, dims) -> (value, dim)
        emit comp's instructions into b's computation on the batched `args` (each with its batch dim: an int,
        None for "not batched", a tuple of those for a tuple value); returns the batched root and its dim.
    batch_computation(module, comp, param_dims, size, force=None) -> (Computation, out dims)
        a new computation of `module` taking comp's parameters batched as `param_dims` (batched leaves at
        dimension 0); with `force` (a structure of 0/None), the result leaves are batched exactly there.

The driver walks the computation in post order. An instruction whose operands are all unbatched is copied as
it is (constants, iota and anything computed from unbatched values stay unbatched: "not batched" is tracked,
never materialized). Any other instruction asks the rule of its opcode for its batched value and batch dim;
rules live in the `rules_*.py` tables by op family (RULES: opcode -> rule(b, inst, operands, dims)), merged
with `merge_rule_tables`. Rules move batch dims to 0 where that is simplest and keep them where they are when
that is free (elementwise ops, dot). A missing rule raises BatchingError naming the opcode. Calls and fusions
are inlined; while loops, conditionals and the per-example fallback (common.per_example) build new
computations in b's module.
"""
from __future__ import annotations

from typing import Any, Sequence

from ...hlo import Computation, Instruction, Module
from ...hlo.tables import merge_rule_tables, module_tables
from ...passes.build import new_computation
from .rules_collective import over_batch_axis
from .common import (BatchingError, BatchingTypeError, BatchingValueError, Batcher, Dim, batched_shape,
                     is_unbatched, zero_dims)


def _rule_table() -> dict[str, Any]:
    from . import (rules_collective, rules_control, rules_elementwise, rules_linalg, rules_movement,
                   rules_reduction)
    return merge_rule_tables("batching rules", *module_tables(
        "RULES", rules_elementwise, rules_movement, rules_reduction, rules_linalg, rules_control, rules_collective))


BATCHING_RULES: dict[str, Any] = {}


def batching_rules() -> dict[str, Any]:
    if not BATCHING_RULES:
        BATCHING_RULES.update(_rule_table())
    return BATCHING_RULES


COLLECTIVE_MESSAGE = ("collectives over a vmap axis (axis_name={name!r}) are not supported yet: '{opcode}' "
                      "(instruction {inst}) would reduce across the batch")


def batch_into(b: Batcher, comp: Computation, args: Sequence[Instruction], dims: Sequence[Dim]) -> tuple:
    """Emit comp batched into b's computation reading `args` with batch dims `dims`; (root value, root dim)."""
    rules = batching_rules()
    values: dict[int, Instruction] = {}
    bdims: dict[int, Dim] = {}
    for inst in comp.post_order():
        if inst.opcode == "parameter":
            values[id(inst)] = args[inst.parameter_number]
            bdims[id(inst)] = dims[inst.parameter_number]
            continue
        ops = [values[id(o)] for o in inst.operands]
        ods = [bdims[id(o)] for o in inst.operands]
        if all(is_unbatched(d) for d in ods) and not over_batch_axis(b, inst):
            values[id(inst)] = b.add_instruction(inst.clone_with(ops))
            bdims[id(inst)] = None if not inst.shape.is_tuple else (None,) * len(inst.shape.tuple_shapes)
            continue
        rule = rules.get(inst.opcode)
        if rule is None:
            if inst.opcode in COLLECTIVE_OPCODES:     # one the front end did not emit (rules_collective.py)
                raise BatchingError(COLLECTIVE_MESSAGE.format(name=b.axis_name, opcode=inst.opcode, inst=inst.name))
            raise BatchingError(f"batching rule missing for opcode '{inst.opcode}' (instruction {inst.name}: "
                                f"{inst.shape.to_text()})")
        value, d = rule(b, inst, ops, ods)
        values[id(inst)] = value
        bdims[id(inst)] = d
    return values[id(comp.root)], bdims[id(comp.root)]


COLLECTIVE_OPCODES = frozenset("""all-gather all-gather-start all-gather-done all-reduce all-reduce-start
    all-reduce-done all-to-all ragged-all-to-all collective-broadcast collective-permute collective-permute-start
    collective-permute-done reduce-scatter""".split())


def batch_computation(module: Module, comp: Computation, param_dims: Sequence[Dim], size: int,
                      force: Dim | None = None, axis_name: Any = None, name: str | None = None) -> tuple:
    """A new computation of `module`: comp with its parameters batched as param_dims (batched leaves at 0).
    Returns (computation, result dims); with `force`, the result is batched exactly as `force` says."""
    new = new_computation(module, name or f"{comp.name}.batched")
    b = Batcher(new, size, axis_name)
    params = [b.parameter(i, batched_shape(p.shape, d, size).without_layout(), p.name)
              for i, (p, d) in enumerate(zip(comp.parameters, param_dims))]
    root, d = batch_into(b, comp, params, param_dims)
    if force is not None:
        root, d = b.forced(root, d, force), force
    else:
        root, d = b.canonical(root, d)
    new.root = root
    new.remove_dead()
    return new, d


__all__ = ["BatchingError", "BatchingTypeError", "BatchingValueError", "Batcher", "COLLECTIVE_OPCODES",
           "batch_computation", "batch_into", "batching_rules", "zero_dims"]
