"""CallInliner: every `call` is replaced by a copy of its callee's body, wired to the call's operands.

    r = call(a, b), to_apply=f  =>  f's instructions cloned into the caller, f's parameter i reading the
                                    call's operand i; uses of r read the clone of f's root

Computations are visited callees first, so nested calls are inlined into their callee before that callee
is inlined into its callers. Composite calls (is_composite=true) stay. With `single_call_site`, only
computations called from exactly one call are inlined. Afterwards DCE removes the computations (and
instructions) that nobody uses any more, as XLA's pass does.
"""
from __future__ import annotations

from collections import Counter

from ..hlo import Instruction, Module
from .control_util import has_control_edges
from .dce import HloDCE
from .op_expander import replace
from .pipeline import Pass


def inline_call(call: Instruction, control_edges: bool = True) -> dict[int, Instruction]:
    """Clone the callee into the caller and replace `call`; returns callee instruction id -> its clone.
    control_edges=False: the caller knows that neither computation has control edges."""
    (callee,) = call.called_computations()
    caller = call.parent
    mapping: dict[int, Instruction] = {}
    for inst in callee.post_order():
        if inst.opcode == "parameter":
            mapping[id(inst)] = call.operands[inst.parameter_number]
            continue
        clone = inst.clone_with([mapping[id(o)] for o in inst.operands])
        clone.control_predecessors = [mapping[id(p)] for p in inst.control_predecessors]
        mapping[id(inst)] = caller.add_instruction(clone)
    replace(caller, call, mapping[id(callee.root)], "call-inliner", control_edges)
    return mapping


def _inlinable(inst: Instruction) -> bool:
    return inst.opcode == "call" and not inst.attrs.get("is_composite") and len(inst.called_computations()) == 1


class CallInliner(Pass):
    name = "call-inliner"

    def __init__(self, single_call_site: bool = False):
        self.single_call_site = single_call_site

    def run(self, module: Module) -> bool:
        call_sites = Counter(id(c) for inst in module.instructions() if inst.opcode == "call"
                             for c in inst.called_computations())
        changed = False
        for comp in module.computation_post_order():
            # whether comp has control edges, asked once (not per inlined call: quadratic in the calls); an
            # inlined callee brings its own along
            edges = None
            for inst in comp.post_order():
                if inst.parent is not comp or not _inlinable(inst):
                    continue
                if self.single_call_site and call_sites[id(inst.called_computations()[0])] != 1:
                    continue
                if edges is None:
                    edges = has_control_edges(comp)
                edges = edges or has_control_edges(inst.called_computations()[0])
                inline_call(inst, edges)
                changed = True
        if changed:
            HloDCE().run(module)
        return changed
