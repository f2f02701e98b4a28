"""TupleSimplifier: get-tuple-element(tuple(a0, a1, ...)), index=i => a_i; tuple(gte(t,0), ..., gte(t,n-1)) => t."""
from __future__ import annotations

from ..hlo import Module
from .pipeline import Pass

_TUPLE_OPS = frozenset({"get-tuple-element", "tuple"})


def _is_tuple_of_all_elements(inst) -> object | None:
    """If inst = tuple(gte(t, 0), ..., gte(t, n-1)) with t of matching shape, return t."""
    if not inst.operands:
        return None
    src = None
    for i, op in enumerate(inst.operands):
        if op.opcode != "get-tuple-element" or op.attrs.get("index") != i:
            return None
        if src is None:
            src = op.operands[0]
        elif op.operands[0] is not src:
            return None
    if src.shape.is_tuple and len(src.shape.tuple_shapes) == len(inst.operands) and src.shape.compatible(inst.shape):
        return src
    return None


class TupleSimplifier(Pass):
    name = "tuple-simplifier"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in module.computations:
            for inst in comp.post_order_of(_TUPLE_OPS):
                repl = None
                if inst.opcode == "get-tuple-element" and inst.operands[0].opcode == "tuple":
                    # get-tuple-element(tuple(..., a_i, ...)), index=i => a_i
                    repl = inst.operands[0].operands[inst.attrs["index"]]
                elif inst.opcode == "tuple":
                    # tuple(gte(t,0), ..., gte(t,n-1)) => t
                    repl = _is_tuple_of_all_elements(inst)
                if repl is not None and repl is not inst:
                    inst.replace_all_uses_with(repl)
                    changed = True
        return changed
