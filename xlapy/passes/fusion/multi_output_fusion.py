"""MultiOutputFusion (XLA name `multi_output_fusion`): one loop over shared inputs instead of two.

Sibling fusion: two loop fusions (or reduces) reading the same big operand, neither reaching the other,
with the same loop (the same output dims, or reductions of the same input dims over the same dimensions),
become one fusion whose root is a tuple; their users read get-tuple-element of it.

    a = fusion(x), calls=f        b = fusion(x), calls=g     =>   m = fusion(x), calls={f; g; tuple(f, g)}
                                                                   a' = gte(m, 0)   b' = gte(m, 1)

Producer-consumer fusion: a cheap loop fusion p that InstructionFusion/FusionMerger left alone because some
user needs its value is fused into a consumer loop fusion c with the same loop, and exported as an extra
output: c = fusion(p, ...) => m = fusion(p's operands, ...) with root tuple(c, p); p's other users read
gte(m, 1). Legal only when no other user of p leads to c (that would make a cycle).

Conservative on purpose: kLoop fusions only, array-shaped partners, caps on size, no expensive producer
whose value the consumer re-reads.
"""
from __future__ import annotations

from ...hlo import Computation, Instruction, Module
from ..pipeline import Pass
from . import fusible as F
from .fuse import (add_output, fuse_producer, fused_computation, fused_instructions, get_tuple_element,
                   inline_computation, is_fusion, outputs, remove_fusion_computation, wrap_in_fusion)
from .instruction_fusion import MAX_FUSED_INSTRUCTIONS, MAX_FUSION_PARAMETERS, fusible_computations

MAX_OUTPUTS = 8


def loop_key(inst: Instruction):
    """What the emitted loop nest iterates over: a reduce's input dims and reduced dims, else the output dims."""
    root = fused_computation(inst).root if is_fusion(inst) else inst
    if root.opcode == "tuple":
        keys = {loop_key_of_value(o) for o in root.operands}
        return keys.pop() if len(keys) == 1 else None
    return loop_key_of_value(root)


def loop_key_of_value(value: Instruction):
    if value.shape.is_tuple:
        return None
    if value.opcode == "reduce":
        return ("reduce", value.operands[0].shape.dims, tuple(value.attrs["dimensions"]))
    return ("loop", value.shape.dims)


def _candidate(inst: Instruction) -> bool:
    """A loop fusion (one or several outputs), or a single-output reduce not yet in a fusion."""
    if is_fusion(inst):
        return inst.attrs.get("kind") == "kLoop" and (not inst.shape.is_tuple
                                                     or all(u.opcode == "get-tuple-element" for u in inst.users))
    return inst.opcode == "reduce" and not inst.shape.is_tuple and F.is_fusible(inst)


def _size(inst: Instruction) -> int:
    return len(fused_instructions(inst)) if is_fusion(inst) else 1


def _n_outputs(inst: Instruction) -> int:
    return len(outputs(inst)) if is_fusion(inst) else 1


def _ancestors(inst: Instruction) -> set[int]:
    seen: set[int] = set()
    stack = list(inst.operands) + list(inst.control_predecessors)
    while stack:
        x = stack.pop()
        if id(x) not in seen:
            seen.add(id(x))
            stack.extend(x.operands)
            stack.extend(x.control_predecessors)
    return seen


def _shared_operand_is_big(x: Instruction) -> bool:
    return x.shape.is_array and x.shape.numel > 1 and x.opcode not in ("constant", "iota", "broadcast")


def _fits(a: Instruction, b: Instruction) -> bool:
    params = set(map(id, a.operands)) | set(map(id, b.operands))
    return (_size(a) + _size(b) <= MAX_FUSED_INSTRUCTIONS and len(params) <= MAX_FUSION_PARAMETERS
            and _n_outputs(a) + _n_outputs(b) <= MAX_OUTPUTS)


def _as_fusion(inst: Instruction) -> Instruction:
    return inst if is_fusion(inst) else wrap_in_fusion(inst, "kLoop", f"{inst.opcode}_fusion")


def merge_siblings(a: Instruction, b: Instruction) -> Instruction:
    """Fuse `b` into `a` as extra outputs; `b` is deleted. Returns the multi-output fusion."""
    a, b = _as_fusion(a), _as_fusion(b)
    inner = fused_computation(b)
    mapping = inline_computation(a, inner, b.operands)
    indices = [add_output(a, mapping[id(v)]) for v in outputs(b)]
    comp = b.parent
    if b.shape.is_tuple:
        for gte in list(b.users):
            gte.replace_all_uses_with(get_tuple_element(a, indices[gte.attrs["index"]]))
            comp.remove_instruction(gte)
    else:
        b.replace_all_uses_with(get_tuple_element(a, indices[0]))
    comp.remove_instruction(b)
    remove_fusion_computation(comp.parent, b)
    return a


def fuse_producer_as_output(consumer: Instruction, producer: Instruction) -> Instruction:
    """Fuse `producer` into `consumer` and export its value; its other users read it from the result."""
    value = fuse_producer(consumer, producer)
    index = add_output(consumer, value)
    producer.replace_all_uses_with(get_tuple_element(consumer, index))
    comp = producer.parent
    comp.remove_instruction(producer)
    if is_fusion(producer):
        remove_fusion_computation(comp.parent, producer)
    return consumer


class MultiOutputFusion(Pass):
    name = "multi_output_fusion"

    def __init__(self):
        self.decisions: list[tuple[str, str, str]] = []   # (first, second, "siblings" or "producer-consumer")

    def run(self, module: Module) -> bool:
        self.decisions = []
        changed = False
        for comp in fusible_computations(module):
            while self._one_sibling_merge(comp) or self._one_producer_consumer_merge(comp):
                changed = True
        return changed

    def _one_sibling_merge(self, comp: Computation) -> bool:
        for x in comp.post_order():
            if not _shared_operand_is_big(x):
                continue
            users = [u for u in x.users if _candidate(u)]
            for i, a in enumerate(users):
                for b in users[i + 1:]:
                    key = loop_key(a)
                    if key is None or key != loop_key(b) or not _fits(a, b):
                        continue
                    if id(a) in _ancestors(b) or id(b) in _ancestors(a):
                        continue
                    self.decisions.append((a.name, b.name, "siblings"))
                    merge_siblings(a, b)
                    return True
        return False

    def _one_producer_consumer_merge(self, comp: Computation) -> bool:
        for c in comp.post_order():
            if not (is_fusion(c) and c.attrs.get("kind") == "kLoop" and not c.shape.is_tuple):
                continue
            for index, p in enumerate(c.operands):
                if not self._producer_ok(p, c, index):
                    continue
                self.decisions.append((p.name, c.name, "producer-consumer"))
                fuse_producer_as_output(c, p)
                return True
        return False

    @staticmethod
    def _producer_ok(p: Instruction, c: Instruction, index: int) -> bool:
        if not (is_fusion(p) and p.attrs.get("kind") == "kLoop" and not p.shape.is_tuple):
            return False
        others = [u for u in p.users if u is not c]
        if not others and not p.is_root:
            return False
        if F.contains_expensive(fused_computation(p)) and F.reuses_operand_elements(c, index):
            return False
        if loop_key(p) != loop_key(c) or not _fits(p, c):
            return False
        ancestors = _ancestors(c)
        return not any(id(u) in ancestors for u in others)
