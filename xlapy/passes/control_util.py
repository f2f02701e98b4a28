"""Helpers shared by the control-flow simplifiers: inlining a called computation at a call site, side-effect
queries over called computations, pruning a computation to what its root needs, and adding or dropping
computations while keeping the module's print order (a computation is printed before its callers).
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..hlo import Computation, Instruction, Module
from ..hlo.ir import dependencies


def has_side_effects(comp: Computation, _seen: set[int] | None = None) -> bool:
    """True if `comp` or anything it calls holds a side-effecting instruction."""
    seen = set() if _seen is None else _seen
    if id(comp) in seen:
        return False
    seen.add(id(comp))
    for inst in comp.instructions:
        if inst.has_side_effect:
            return True
        callees = inst.called_computations()      # (none, mostly: no generator per instruction)
        if callees:
            for c in callees:
                if has_side_effects(c, seen):
                    return True
    return False


def has_control_edges(comp: Computation) -> bool:
    return comp.has_control_edges()


def inline_computation(caller: Computation, callee: Computation, operands: Sequence[Instruction]) -> Instruction:
    """Copy `callee`'s instructions into `caller`, parameter n reading operands[n]; returns the copy of its root.
    Called computations are shared, not copied; dead instructions of the callee come along (DCE drops them)."""
    mapping: dict[int, Instruction] = {}
    for inst in callee.post_order():
        if inst.opcode == "parameter":
            mapping[id(inst)] = operands[inst.parameter_number]
            continue
        new = inst.clone_with([mapping[id(o)] for o in inst.operands])
        new.control_predecessors = [mapping[id(p)] for p in inst.control_predecessors
                                    if mapping[id(p)].parent is caller and p.opcode != "parameter"]
        caller.add_instruction(new)
        mapping[id(inst)] = new
    return mapping[id(callee.root)]


def prune_to_root(comp: Computation) -> None:
    """Delete every instruction the root does not reach (parameters included): for computations whose
    parameter was replaced, with no side effects."""
    live = dependencies([comp.root])
    for inst in reversed(comp.post_order()):
        if id(inst) not in live:
            for user in list(inst.users):      # users are dead too, and come earlier in this order
                user.detach()
            comp.remove_instruction(inst)


def call_counts(module: Module) -> Counter:
    """id(computation) -> how many times the module's instructions name it as a called computation: one walk of
    the module for a pass asking about every loop (a count per question walked the module each time)."""
    return Counter(id(c) for inst in module.instructions() for c in inst.called_computations())


def is_called(module: Module, comp: Computation) -> bool:
    return any(comp in inst.called_computations() for inst in module.instructions())


def add_computation_before(module: Module, comp: Computation, before: Computation) -> Computation:
    """Add `comp` to `module`, placed just before `before` in print order."""
    module.add_computation(comp)
    module.computations.remove(comp)
    module.computations.insert(module.computations.index(before) if before in module.computations else 0, comp)
    return comp


def drop_if_uncalled(module: Module, *comps: Computation) -> None:
    """Remove each of `comps` that nothing in the module calls any longer (and that is not the entry)."""
    for comp in comps:
        if comp in module.computations and comp is not module.entry and not is_called(module, comp):
            module.remove_computation(comp)


def orders_others(inst: Instruction) -> bool:
    """True if some instruction names `inst` as a control predecessor (then it must stay)."""
    return (inst.parent is not None and inst.parent.has_control_edges()
            and any(inst in u.control_predecessors for u in inst.parent.instructions))
