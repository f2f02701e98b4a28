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
whose value the consumer re-reads, and never a fusion that updates a buffer in place (IN_PLACE_ROOTS).
"""
from __future__ import annotations

from ...hlo import Computation, Instruction, Module
from ..pipeline import Pass
from . import fusible as F
from .fuse import (add_output, fuse_producer, fused_computation, fused_size, get_tuple_element,
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


# Fusions whose root updates one operand's buffer in place (a loop writes only the update window: XLA's in-place
# dynamic-update-slice and scatter fusions). Merged into a multi-output fusion they become loops over the whole
# buffer: an LSTM's per-step stores of its activations into [T, ...] stacks each copied 1 MiB per time step.
IN_PLACE_ROOTS = frozenset({"dynamic-update-slice", "scatter"})


def updates_in_place(inst: Instruction) -> bool:
    return is_fusion(inst) and fused_computation(inst).root.opcode in IN_PLACE_ROOTS


def _candidate(inst: Instruction) -> bool:
    """A loop fusion (one or several outputs) that does not update a buffer in place, or a single-output reduce
    not yet in a fusion."""
    if is_fusion(inst):
        return inst.attrs.get("kind") == "kLoop" and not updates_in_place(inst) and (
            not inst.shape.is_tuple or all(u.opcode == "get-tuple-element" for u in inst.users))
    return inst.opcode == "reduce" and not inst.shape.is_tuple and F.is_fusible(inst)


def _size(inst: Instruction, sizes: dict[Instruction, int]) -> int:
    """Instructions in inst's fusion (1 for an unfused instruction), counted once per round (sizes: the cache)."""
    n = sizes.get(inst)
    if n is None:
        n = sizes[inst] = fused_size(inst) if is_fusion(inst) else 1
    return n


def _loop_key(inst: Instruction, keys: dict):
    """loop_key, once per instruction per walk (keys: the cache, keyed by the instruction itself; a merge drops the
    entry of what it changed)."""
    if inst in keys:
        return keys[inst]
    key = keys[inst] = loop_key(inst)
    return key


def _n_outputs(inst: Instruction) -> int:
    if not is_fusion(inst):
        return 1
    root = fused_computation(inst).root
    return len(root.operands) if root.opcode == "tuple" else 1


class Reachability:
    """Which instructions of a computation reach which (XLA's HloReachabilityMap): a set of bits per instruction
    and a bitmask of its ancestors' bits, built once per walk in O(n * n/64); `reaches(a, b)` is one AND, and a
    merge updates the masks of what lies below the merged instructions, walking their users.

    Exact because of two rules, kept across merges: a reader's mask holds its operand's mask (masks grow downward),
    and holds at least one bit of each operand. A merged instruction owns the bits of all its parts, so what read
    any part still holds one of its bits: a merge only spreads what a part's readers may lack, the other parts'
    ancestors. (With one new bit for the merged instruction, which every mask below had to get, a merge in a
    training step's backward pass walked all the earlier layers' gradients: O(n) a merge, O(n^2) the pass.)"""

    def __init__(self, order: list[Instruction]):
        self.bits: dict[Instruction, int] = {}
        self.ancestors: dict[Instruction, int] = {}
        self._next = 0
        bits, ancestors = self.bits, self.ancestors
        for inst in order:
            mask = 0
            for op in (*inst.operands, *inst.control_predecessors):
                mask |= ancestors[op] | bits[op]
            self._add(inst, mask)

    def _add(self, inst: Instruction, ancestors: int) -> None:
        self.bits[inst] = 1 << self._next
        self.ancestors[inst] = ancestors
        self._next += 1

    def reaches(self, a: Instruction, b: Instruction) -> bool:
        """a is an ancestor of b (b reads a's value, directly or through others)."""
        return bool(self.ancestors[b] & self.bits[a])

    def merged(self, survivor: Instruction, *gone: Instruction) -> None:
        """`survivor` now computes what it and `gone` computed (a sibling merge, a producer fused as an output,
        a reduce wrapped in a fusion): it reads everything they read, and everything that read them (directly or
        through others) now reads it and everything it reads. Instructions the merge created (the
        get-tuple-elements users read it through) are added below it."""
        bits, ancestors = self.bits, self.ancestors
        parts = [i for i in (survivor, *gone) if i in bits]
        above = group = 0
        for i in parts:
            above |= ancestors[i]
            group |= bits[i]
        for g in gone:                  # (keyed by the instruction, not its id: no deleted one's id is reused)
            bits.pop(g, None)
            ancestors.pop(g, None)
        if not group:
            self._add(survivor, above)
            group = bits[survivor]
        bits[survivor] = group
        ancestors[survivor] = above = above & ~group
        fresh = set()
        for u in survivor.users:
            if u not in bits:
                # a get-tuple-element the merge made: never asked about as an ancestor (no candidate reads one),
                # so its own bit need not spread below it
                self._add(u, above | group)
                fresh.add(u)
        # what read a part (directly or through others) now reads all the survivor reads: the masks below it, found
        # by walking users (a scan of every mask per merge made the pass quadratic). Each already holds a bit of
        # the survivor (a part's), and masks grow downward, so a mask that holds `above` ends the walk there: a
        # consumer merged with its producer changes nothing below the consumer.
        seen = {survivor}
        stack = list(survivor.users)
        while stack:
            u = stack.pop()
            if u in seen:
                continue
            seen.add(u)
            if u not in fresh:
                mask = ancestors[u]
                if mask | above == mask:
                    continue
                ancestors[u] = mask | above
            stack.extend(u.users)


def _shared_operand_is_big(x: Instruction) -> bool:
    return x.shape.is_array and x.shape.numel > 1 and x.opcode not in ("constant", "iota", "broadcast")


def _fits(a: Instruction, b: Instruction, sizes: dict[Instruction, int]) -> bool:
    return (_size(a, sizes) + _size(b, sizes) <= MAX_FUSED_INSTRUCTIONS
            and _n_outputs(a) + _n_outputs(b) <= MAX_OUTPUTS
            and len(set(a.operands).union(b.operands)) <= MAX_FUSION_PARAMETERS)   # distinct operands


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
    """Each sequential computation is walked in post order with one reachability map kept exact across merges:
    every shared operand's sibling users are merged pairwise as far as they fit, then every consumer takes the
    producers it may export. Walks repeat until one changes nothing (a merge can make an earlier pair legal).
    Merging one pair and restarting from scratch, as this pass first did, cost O(merges * n^2): 835 s of a
    7,400-instruction ResNet-50 training step."""
    name = "multi_output_fusion"

    def __init__(self):
        self.decisions: list[tuple[str, str, str]] = []   # (first, second, "siblings" or "producer-consumer")

    def run(self, module: Module) -> bool:
        self.decisions = []
        changed = False
        for comp in fusible_computations(module):
            while self._walk(comp):
                changed = True
        return changed

    def _walk(self, comp: Computation) -> bool:
        order = comp.post_order()
        reach = Reachability(order)
        sizes: dict[Instruction, int] = {}
        keys: dict[Instruction, object] = {}
        changed = False
        for x in order:
            if x.parent is comp and _shared_operand_is_big(x):
                changed |= self._merge_siblings_of(x, reach, sizes, keys)
        for c in comp.post_order():
            if is_fusion(c) and c.attrs.get("kind") == "kLoop" and not c.shape.is_tuple:
                changed |= self._export_a_producer_into(c, reach, sizes)    # c is then multi-output: once
        return changed

    def _merge_siblings_of(self, x: Instruction, reach: Reachability, sizes: dict[Instruction, int], keys: dict) -> bool:
        """Merge x's candidate users pairwise: each absorbs the later ones it is compatible with."""
        users = [u for u in x.users if _candidate(u)]
        changed = False
        i = 0
        while i < len(users):
            a, j = users[i], i + 1
            key = _loop_key(a, keys)
            while key is not None and j < len(users):
                b = users[j]
                if key != _loop_key(b, keys) or not _fits(a, b, sizes) or reach.reaches(a, b) or reach.reaches(b, a):
                    j += 1
                    continue
                self.decisions.append((a.name, b.name, "siblings"))
                merged = merge_siblings(a, b)
                reach.merged(merged, *((b,) if merged is a else (a, b)))
                sizes.pop(a, None)
                keys.pop(a, None)
                users[i] = a = merged
                del users[j]
                changed = True
            i += 1
        return changed

    def _export_a_producer_into(self, c: Instruction, reach: Reachability, sizes: dict[Instruction, int]) -> bool:
        for index, p in enumerate(c.operands):
            if self._producer_ok(p, c, index, reach, sizes):
                self.decisions.append((p.name, c.name, "producer-consumer"))
                fuse_producer_as_output(c, p)
                reach.merged(c, p)
                sizes.pop(c, None)
                return True
        return False

    @staticmethod
    def _producer_ok(p: Instruction, c: Instruction, index: int, reach: Reachability, sizes: dict[Instruction, int]) -> bool:
        if not (is_fusion(p) and p.attrs.get("kind") == "kLoop" and not p.shape.is_tuple):
            return False
        if updates_in_place(p) or updates_in_place(c):
            return False
        others = [u for u in p.users if u is not c]
        if not others and not p.is_root:
            return False
        if F.contains_expensive(fused_computation(p)) and F.reuses_operand_elements(c, index):
            return False
        if loop_key(p) != loop_key(c) or not _fits(p, c, sizes):
            return False
        return not any(reach.reaches(u, c) for u in others)
