"""WhileLoopSimplifier (XLA's `simplify-while-loops`).

Rules, tried in order on every while (the first that applies wins; run it in a FixedPoint with DCE):

| rewrite                                                          | when                                         |
|------------------------------------------------------------------|----------------------------------------------|
| unused while => (deleted)                                        | no users, not a root, no side effects        |
| while with trip count 0 => init                                  | condition(init) folds to false               |
| while with trip count 1 => body inlined once on init             | condition(init) true, condition(body(init)) false |
| while(tuple(a, d, b)) => while(tuple(a, b)), d dead              | neither the condition, the live elements of the body, nor the users read d |
| acc' = add(acc, DUS(zeros, u, i)) => DUS(acc, add(DS(acc, i), u), i) in the body | while_loop_accumulators.py (exact: acc never holds -0.0) |

Trip counts come from while_loop_analysis.trip_count (the condition's state must start constant). A
condition with side effects blocks the trip-count rules (it would run a different number of times); side
effects or control edges in the body or condition block dead-element removal.
"""
from __future__ import annotations

from ..hlo import Computation, Instruction, Module, Shape
from .build import constant, make
from .control_util import (add_computation_before, drop_if_uncalled, has_control_edges, has_side_effects,
                           inline_computation, orders_others, prune_to_root)
from .pipeline import Pass
from .while_loop_accumulators import rewrite_accumulators
from .while_loop_analysis import LoopDeps, trip_count


def _has_effects(inst: Instruction) -> bool:
    return has_side_effects(inst.attrs["body"]) or has_side_effects(inst.attrs["condition"])


def _is_dead_gte(user: Instruction) -> bool:
    return user.opcode == "get-tuple-element" and not user.users and not user.is_root


def remove_unused(comp: Computation, inst: Instruction) -> bool:
    # while(...) with no users and no side effects => (deleted)
    if inst.is_root or any(not _is_dead_gte(u) for u in inst.users) or _has_effects(inst):
        return False
    for user in list(inst.users):
        comp.remove_instruction(user)
    comp.remove_instruction(inst)
    return True


def remove_zero_or_one_trip(comp: Computation, inst: Instruction, deps: LoopDeps | None = None) -> bool:
    if has_side_effects(inst.attrs["condition"]):
        return False
    trips = trip_count(inst, max_trips=1, deps=deps)
    init = inst.operands[0]
    if trips == 0:
        # while with trip count 0 => init
        comp.replace_instruction(inst, init)
        return True
    if trips == 1:
        # while with trip count 1 => body(init), inlined
        result = inline_computation(comp, inst.attrs["body"], [init])
        comp.replace_instruction(inst, result)
        return True
    return False


def _live_indices(inst: Instruction, deps: LoopDeps) -> list[int] | None:
    """The state indices the loop needs, or None when nothing can be removed."""
    n = len(inst.shape.tuple_shapes)
    body, cond = inst.attrs["body"], inst.attrs["condition"]
    if inst.is_root or any(u.opcode != "get-tuple-element" for u in inst.users):
        return None
    for c in (body, cond):
        if has_side_effects(c) or has_control_edges(c):
            return None
        param = c.parameter(0)
        if c.root is param or any(u.opcode != "get-tuple-element" for u in param.users):
            return None      # the whole state is passed on somewhere: every element is read
    used = set(deps.cond_reads())
    used |= {u.attrs["index"] for u in inst.users if not _is_dead_gte(u)}
    if len(used) == n or not used:      # nothing to close over: no walk of the body
        return None
    body_deps = deps.body_deps()
    work = list(used)
    while work:
        for j in body_deps[work.pop()] - used:
            used.add(j)
            work.append(j)
    if len(used) == n or not used:
        return None
    return sorted(used)


def _placeholder(comp: Computation, shape: Shape) -> Instruction:
    """A value of `shape` (zeros) for an operand whose value is never used."""
    if shape.is_tuple:
        parts = [_placeholder(comp, s) for s in shape.tuple_shapes]
        return comp.add_instruction(make("tuple", parts, shape=shape))
    if shape.is_token:
        return comp.add_instruction(make("after-all", [], shape=shape))
    zero = constant(comp, 0, shape.element_type)
    if shape.rank == 0:
        return zero
    return comp.add_instruction(make("broadcast", [zero], {"dimensions": ()}, shape=shape))


def _narrowed(comp: Computation, live: list[int], new_shape: Shape, is_body: bool) -> Computation:
    """A copy of the body or condition reading (and for the body, producing) only the `live` elements."""
    new = comp.clone(suffix="")
    old_param = new.parameter(0)
    param = Instruction("parameter", new_shape, (), {}, old_param.name, parameter_number=0)
    new.add_instruction(param)
    position = {old: k for k, old in enumerate(live)}
    for gte in list(old_param.users):
        i = gte.attrs["index"]
        if i in position:
            gte.replace_all_uses_with(new.add_instruction(
                make("get-tuple-element", [param], {"index": position[i]}, shape=gte.shape, name=gte.name)))
        elif gte.users:
            # a dead element can still be read into a tuple (or call) whose live parts ignore it, which
            # element_deps sees through: stand a zero in for it so the old parameter goes away
            gte.replace_all_uses_with(_placeholder(new, gte.shape))
    if is_body:
        root = new.root
        if root.opcode == "tuple":
            elements = [root.operands[i] for i in live]
        else:
            elements = [new.add_instruction(make("get-tuple-element", [root], {"index": i},
                                                 shape=root.shape.tuple_shapes[i])) for i in live]
        new.root = new.add_instruction(make("tuple", elements, shape=new_shape, name=root.name))
    prune_to_root(new)
    if param.parent is not new:          # the condition read nothing of the state: keep its parameter
        new.add_instruction(param)
    new.instructions.remove(param)
    new.instructions.insert(0, param)
    return new


def remove_dead_elements(module: Module, comp: Computation, inst: Instruction, deps: LoopDeps | None = None) -> bool:
    # while(tuple(a, d, b)) => while(tuple(a, b)), gte(while, 2) => gte(while', 1); d dead
    if not inst.shape.is_tuple:
        return False
    live = _live_indices(inst, deps or LoopDeps(inst))
    if live is None:
        return False
    body, cond = inst.attrs["body"], inst.attrs["condition"]
    new_shape = Shape.tuple_of([inst.shape.tuple_shapes[i] for i in live])
    init = inst.operands[0]
    if init.opcode == "tuple":
        elements = [init.operands[i] for i in live]
    else:
        elements = [comp.add_instruction(make("get-tuple-element", [init], {"index": i},
                                              shape=init.shape.tuple_shapes[i])) for i in live]
    new_init = comp.add_instruction(make("tuple", elements, shape=new_shape, name=init.name))
    new_body = add_computation_before(module, _narrowed(body, live, new_shape, True), body)
    new_cond = add_computation_before(module, _narrowed(cond, live, new_shape, False), cond)
    attrs = dict(inst.attrs)
    attrs["body"], attrs["condition"] = new_body, new_cond
    new_while = comp.add_instruction(make("while", [new_init], attrs, shape=new_shape, name=inst.name))
    position = {old: k for k, old in enumerate(live)}
    for user in list(inst.users):
        i = user.attrs["index"]
        if i in position:
            user.replace_all_uses_with(comp.add_instruction(
                make("get-tuple-element", [new_while], {"index": position[i]}, shape=user.shape, name=user.name)))
        if not user.is_root:
            comp.remove_instruction(user)
    comp.remove_instruction(inst)
    drop_if_uncalled(module, body, cond)
    return True


class WhileLoopSimplifier(Pass):
    name = "simplify-while-loops"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in list(module.computation_post_order()):
            if comp not in module.computations:
                continue
            for inst in comp.post_order_of("while"):
                if inst.parent is not comp or inst.control_predecessors or orders_others(inst):
                    continue
                # the trip-count and dead-element rules share one analysis of the (unchanged) loop
                deps = LoopDeps(inst)
                changed |= (remove_unused(comp, inst) or remove_zero_or_one_trip(comp, inst, deps)
                            or remove_dead_elements(module, comp, inst, deps) or rewrite_accumulators(inst))
        return changed
