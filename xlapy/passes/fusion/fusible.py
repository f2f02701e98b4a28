"""The CPU fusibility rules (XLA:CPU's cpu_instruction_fusion.cc), as tables and small predicates.

    LOOP_FUSIBLE      opcodes the elemental emitter generates per output element (plus every elementwise op)
    CHEAP / EXPENSIVE is an instruction costly enough that it must never be computed twice (IsExpensive)
    element_use       how a consumer reads an operand's elements: once ("use") or several times ("reuse")

The decisions built from them live in instruction_fusion.py; the mechanics in fuse.py.
"""
from __future__ import annotations

from ...hlo import Computation, Instruction

# Producers and consumers of loop fusion besides the elementwise ops (CanBeLoopFused; XLA counts a constant
# as elementwise: only scalar ones are fused, see instruction_fusion.REFUSALS).
LOOP_FUSIBLE = frozenset({
    "bitcast", "broadcast", "concatenate", "constant", "dynamic-slice", "dynamic-update-slice", "gather", "iota", "pad",
    "reduce", "reshape", "reverse", "slice", "transpose",
})

# Never fusion producers or consumers, whatever the tables above say (control flow, calls, side effects).
NEVER_FUSE = frozenset({
    "parameter", "tuple", "get-tuple-element", "while", "conditional", "call", "custom-call", "domain",
    "sort", "rng", "rng-bit-generator", "rng-get-and-update-state", "after-all", "add-dependency",
    "opt-barrier", "infeed", "outfeed", "send", "send-done", "recv", "recv-done",
})

# Cheap whatever their element type (CpuInstructionFusion::IsExpensive returns false).
CHEAP = frozenset({
    "add", "and", "bitcast", "bitcast-convert", "broadcast", "ceil", "clamp", "count-leading-zeros", "compare",
    "complex", "concatenate", "constant", "copy", "dynamic-reshape", "dynamic-slice", "dynamic-update-slice",
    "floor", "get-tuple-element", "imag", "iota", "is-finite", "maximum", "minimum", "multiply", "negate", "not",
    "or", "pad", "popcnt", "real", "reduce-precision", "reshape", "reverse", "round-nearest-afz",
    "round-nearest-even", "select", "shift-left", "shift-right-arithmetic", "shift-right-logical", "slice",
    "stochastic-convert", "subtract", "transpose", "tuple", "xor",
})

# Cheap for real numbers, expensive for complex ones.
CHEAP_UNLESS_COMPLEX = frozenset({"abs", "sign", "cosine", "sine", "tan"})

# Operand slots a consumer reads one element of per output element, keeping the index ("use");
# every slot not listed of a non-elementwise op is assumed to be re-read ("reuse").
_READ_ONCE_SLOTS = {
    "reshape": (0,), "transpose": (0,), "reverse": (0,), "slice": (0,), "bitcast": (0,), "copy": (0,),
    "pad": (0,), "reduce": "first_half", "concatenate": "all", "dynamic-slice": (0,),
    "dynamic-update-slice": (0, 1),
    "scatter": "second_half",   # the indices and the updates, once per update (instruction_fusion._scatter_input)
}


def is_expensive(inst: Instruction) -> bool:
    """XLA:CPU's IsExpensive: computing it twice costs real time (transcendentals, divides, reductions...)."""
    op = inst.opcode
    if op in CHEAP:
        return False
    element = None if inst.shape.is_tuple else inst.shape.ptype
    if op in CHEAP_UNLESS_COMPLEX:
        return element is not None and element.is_complex
    if op == "convert":
        # f32 -> bf16 checks for NaN and rounds; the other conversions are a few instructions.
        return element is not None and element.name == "bf16" and inst.operands[0].shape.element_type == "f32"
    if op in ("divide", "remainder"):
        # Integer division by a constant becomes multiplies and shifts.
        return not (element is not None and element.is_integral and _is_constant_scalar(inst.operands[1]))
    return True


def _is_constant_scalar(inst: Instruction) -> bool:
    if inst.opcode == "broadcast":
        inst = inst.operands[0]
    return inst.opcode == "constant" and inst.shape.is_array and inst.shape.numel == 1


def contains_expensive(comp: Computation) -> bool:
    return any(is_expensive(i) for i in comp.instructions if i.opcode != "parameter")


def is_fusible(inst: Instruction, control_edges: bool = True) -> bool:
    """May `inst` be a fusion producer or consumer at all (XLA's IsFusible, minus control flow)?
    control_edges=False: the caller knows that its computation has none (no scan of inst's users: a constant
    broadcast that every layer reads is asked once per reader, quadratic in depth)."""
    # (has_side_effect but for custom-call's attribute: custom-calls are in NEVER_FUSE)
    if inst.opcode in NEVER_FUSE or inst.control_predecessors or inst.info.has_side_effect:
        return False
    if not control_edges:
        return True
    for user in inst.users:              # a plain loop: this runs for every candidate pair
        preds = user.control_predecessors
        if preds and inst in preds:
            return False
    return True


def can_be_loop_fused(inst: Instruction) -> bool:
    """The ops whose element generators the CPU emitter composes (CanBeLoopFused)."""
    return is_fusible(inst) and loop_fusible_kind(inst)


def loop_fusible_kind(inst: Instruction) -> bool:
    """can_be_loop_fused for an instruction known to be fusible: its opcode and an array result."""
    return not inst.shape.is_tuple and (inst.info.is_elementwise or inst.opcode in LOOP_FUSIBLE)


def is_non_scalar_constant(inst: Instruction) -> bool:
    return inst.opcode == "constant" and (inst.shape.is_tuple or inst.shape.numel > 1)


def byte_size(inst: Instruction) -> int:
    return inst.shape.array_bytes


def effectively_unary(inst: Instruction) -> bool:
    """Elementwise with at most one operand that is not a scalar or a broadcast of one: duplicating it reads
    no more input than its one real operand."""
    if not inst.info.is_elementwise and inst.opcode not in ("broadcast", "reshape", "transpose", "bitcast"):
        return False
    big = [o for o in inst.operands
           if not (o.shape.is_array and o.shape.numel == 1)
           and not (o.opcode == "broadcast" and o.operands[0].shape.numel == 1)]
    return len(big) <= 1


# -- how a consumer reads its operands ------------------------------------------------------------------
def element_use(consumer: Instruction, index: int, known_use: set | None = None) -> str:
    """"use" when each element of operand `index` is read at most once per output element in index order,
    "reuse" when elements are read several times (broadcast that expands, dot, gather, windows...).
    known_use: fused values already found to have no re-read below them (see _param_use), or None."""
    if consumer.opcode == "fusion":
        comp = consumer.attrs["calls"]
        return _param_use(comp.parameter(index), known_use)
    if consumer.info.is_elementwise:
        return "use"
    if consumer.opcode == "broadcast":
        return "reuse" if consumer.shape.numel > consumer.operands[0].shape.numel else "use"
    slots = _READ_ONCE_SLOTS.get(consumer.opcode)
    if slots == "all":
        return "use"
    if slots == "first_half":
        return "use" if index < len(consumer.operands) // 2 else "reuse"
    if slots == "second_half":      # n operands, then what they are updated from
        return "use" if index >= len(consumer.operands) // 2 else "reuse"
    if slots is not None and index in slots:
        return "use"
    return "reuse"


def _param_use(param: Instruction, known_use: set | None = None) -> str:
    """How a fused computation reads a parameter: "reuse" when some path through the fused instructions
    re-reads its elements, or when it has several users (each one reads every element again).
    With `known_use` (a set the caller keeps), the fused values this finds with no re-read below them are added
    to it and not walked again: valid while nothing gains a user below them (InstructionFusion only adds values
    above a fusion's instructions; a parameter may gain users, and is never added)."""
    if len(param.users) > 1:
        return "reuse"
    seen: set[int] = set()
    walked: list[Instruction] = []
    stack = [param]
    while stack:
        value = stack.pop()
        for user in value.users:
            if any(op is value and element_use(user, i) == "reuse" for i, op in enumerate(user.operands)):
                return "reuse"
            if id(user) in seen or (known_use is not None and user in known_use):
                continue
            seen.add(id(user))
            walked.append(user)
            stack.append(user)
    if known_use is not None:
        known_use.update(walked)          # (users of a parameter are never parameters)
    return "use"


def reuses_operand_elements(consumer: Instruction, index: int, known_use: set | None = None) -> bool:
    return element_use(consumer, index, known_use) == "reuse"
