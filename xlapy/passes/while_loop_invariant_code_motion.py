"""WhileLoopInvariantCodeMotion (XLA's `while-loop-invariant-code-motion`): an instruction of a while body whose
operands do not change from one iteration to the next is computed once, before the loop, and its value rides
along in the loop state. An LSTM's body concatenates its four gate kernels and a GRU's transposes its weights on
every time step; hoisted, they run once per call.

| rewrite                                                                      | when                            |
|------------------------------------------------------------------------------|---------------------------------|
| body: h = op(invariants) => h = gte(param, n); while state += (op(init's)) | every operand of op is invariant: gte(param, i) whose element i the body root passes through unchanged, a constant, or another invariant instruction |

As in XLA, some ops are not worth a loop-state element of their own (`NOT_WORTH_HOISTING_ALONE`: constants,
broadcasts, reshapes, bitcasts, iotas, tuples, get-tuple-elements): they are invariant, and move out when an
instruction that is worth it reads them, but never alone. Side-effecting instructions, control flow (while,
conditional, call) and custom calls stay. Only the values a remaining body instruction reads join the state;
the rest of what moved out is dead in the body (DCE drops it).

Only loops whose body and condition nothing else calls are edited, their state a tuple that both read only
through get-tuple-element, the body's root a tuple, and no control edges. The loop's users see the old state:
`tuple(gte(while', 0), ..., gte(while', n-1))`, which the tuple simplifier folds away.
"""
from __future__ import annotations

from collections import Counter

from ..hlo import Computation, Instruction, Module, Shape
from .build import make
from .control_util import call_counts, has_control_edges, has_side_effects, orders_others
from .pipeline import Pass

NOT_WORTH_HOISTING_ALONE = frozenset({"constant", "broadcast", "reshape", "bitcast", "iota", "tuple",
                                      "get-tuple-element"})
NEVER_HOISTED = frozenset({"parameter", "while", "conditional", "call", "custom-call", "rng", "rng-bit-generator",
                           "rng-get-and-update-state", "after-all", "partition-id", "replica-id"})


def _invariant_indices(body: Computation) -> set[int]:
    """State indices the body's root passes through unchanged: root element i is gte(param, i)."""
    param, root = body.parameter(0), body.root
    return {i for i, op in enumerate(root.operands)
            if op.opcode == "get-tuple-element" and op.operands[0] is param and op.attrs["index"] == i}


def _movable(inst: Instruction) -> bool:
    return (inst.opcode not in NEVER_HOISTED and not inst.has_side_effect and not inst.control_predecessors
            and not any(has_side_effects(c) for c in inst.called_computations()))


def invariant_instructions(body: Computation) -> tuple[list[Instruction], set[int]]:
    """(the instructions worth hoisting, in post order; ids of every invariant instruction of the body)."""
    param = body.parameter(0)
    indices = _invariant_indices(body)
    invariant = {id(u) for u in param.users if u.attrs["index"] in indices}
    hoisted: list[Instruction] = []
    for inst in body.post_order():
        if id(inst) in invariant or inst is body.root or not _movable(inst):
            continue
        if not all(id(op) in invariant for op in inst.operands):
            continue
        invariant.add(id(inst))
        if inst.opcode not in NOT_WORTH_HOISTING_ALONE:
            hoisted.append(inst)
    return hoisted, invariant


def _editable(module_calls: Counter, inst: Instruction) -> bool:
    body, cond = inst.attrs["body"], inst.attrs["condition"]
    if not inst.shape.is_tuple or inst.control_predecessors or orders_others(inst):
        return False
    if module_calls[id(body)] != 1 or module_calls[id(cond)] != 1 or body.root.opcode != "tuple":
        return False
    for comp in (body, cond):
        param = comp.parameter(0)
        if has_control_edges(comp) or comp.root is param:
            return False
        if any(u.opcode != "get-tuple-element" for u in param.users):
            return False
    return True


def _copy_out(parent: Computation, init: Instruction, inst: Instruction, mapping: dict[int, Instruction]) -> Instruction:
    """`inst` of the body computed in `parent` from the loop's init (mapping: body id -> parent value)."""
    if id(inst) in mapping:
        return mapping[id(inst)]
    if inst.opcode == "get-tuple-element" and inst.operands[0].opcode == "parameter":
        i = inst.attrs["index"]
        value = (init.operands[i] if init.opcode == "tuple" else
                 parent.add_instruction(make("get-tuple-element", [init], {"index": i}, shape=inst.shape)))
    else:
        operands = [_copy_out(parent, init, op, mapping) for op in inst.operands]
        value = parent.add_instruction(inst.clone_with(operands))
    mapping[id(inst)] = value
    return value


def _widen_parameter(comp: Computation, shape: Shape) -> Instruction:
    """Give `comp` a parameter 0 of `shape` (the old state's elements first); its readers read the new one."""
    old = comp.parameter(0)
    new = comp.add_instruction(Instruction("parameter", shape, (), {}, old.name, parameter_number=0))
    for user in list(old.users):
        user.replace_uses_of(old, new)
    comp.remove_instruction(old)
    comp.instructions.remove(new)
    comp.instructions.insert(0, new)
    return new


def hoist(parent: Computation, loop: Instruction) -> bool:
    body, cond = loop.attrs["body"], loop.attrs["condition"]
    hoisted, _ = invariant_instructions(body)
    moved = {id(h) for h in hoisted}
    # only what a body instruction staying behind (or the root) reads joins the loop state
    live_in = [h for h in hoisted if h.is_root or any(id(u) not in moved for u in h.users)]
    if not live_in:
        return False
    n = len(loop.shape.tuple_shapes)
    shape = Shape.tuple_of(list(loop.shape.tuple_shapes) + [h.shape for h in live_in])
    init = loop.operands[0]
    mapping: dict[int, Instruction] = {}
    values = [_copy_out(parent, init, h, mapping) for h in live_in]

    param = _widen_parameter(body, shape)
    _widen_parameter(cond, shape)
    reads = []
    for k, h in enumerate(live_in):
        read = body.add_instruction(make("get-tuple-element", [param], {"index": n + k}, shape=h.shape))
        # h = op(invariants) => gte(param, n + k), the value computed before the loop
        h.replace_all_uses_with(read)
        reads.append(read)
    old_root = body.root
    body.root = body.add_instruction(make("tuple", list(old_root.operands) + reads, shape=shape, name=old_root.name))
    body.remove_instruction(old_root)

    old = [init.operands[i] if init.opcode == "tuple" else
           parent.add_instruction(make("get-tuple-element", [init], {"index": i}, shape=loop.shape.tuple_shapes[i]))
           for i in range(n)]
    new_init = parent.add_instruction(make("tuple", old + values, shape=shape, name=init.name))
    new_loop = parent.add_instruction(make("while", [new_init], dict(loop.attrs), shape=shape, name=loop.name))
    state = [parent.add_instruction(make("get-tuple-element", [new_loop], {"index": i}, shape=s))
             for i, s in enumerate(loop.shape.tuple_shapes)]
    parent.replace_instruction(loop, parent.add_instruction(make("tuple", state, shape=loop.shape)))
    return True


class WhileLoopInvariantCodeMotion(Pass):
    name = "while-loop-invariant-code-motion"

    def run(self, module: Module) -> bool:
        calls = None                    # counted when the module has a loop
        changed = False
        for comp in list(module.computations):
            for inst in comp.post_order_of("while"):
                if calls is None:
                    calls = call_counts(module)
                if _editable(calls, inst):
                    changed |= hoist(comp, inst)
        return changed


__all__ = ["WhileLoopInvariantCodeMotion", "invariant_instructions", "NOT_WORTH_HOISTING_ALONE"]
