"""While-loop analysis (XLA's while_loop_analysis): which loop-state elements a computation reads, and the
trip count of a loop whose condition depends only on state that starts constant.

Two small abstract interpretations over a computation, both looking through `tuple`, `get-tuple-element`
and `call`:
  element_deps   -> for each element of the root, the set of parameter-tuple indices it depends on
  partial_eval   -> the value of the root (numpy arrays, tuples of them) where it is computable from the
                    known parts of the arguments; UNKNOWN where it is not
The trip count runs the condition and the body on the part of the state the condition needs (the
indices it reads, closed under the body's dependencies), starting from the init's constants.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import XlapyError
from ..hlo import ELIDED, Computation, Instruction

Deps = Any          # frozenset[int] for an array value; tuple[Deps, ...] for a tuple value
UNKNOWN = None      # a value partial_eval cannot compute

MAX_ELEMENTS = 1 << 16        # larger values are not evaluated at compile time
_NEVER_EVAL = frozenset({"parameter", "rng", "rng-bit-generator", "rng-get-and-update-state", "custom-call",
                         "infeed", "outfeed", "send", "recv", "while", "after-all", "partition-id",
                         "replica-id"})


# -- dependencies ---------------------------------------------------------------------------------------------
def flatten_deps(d: Deps) -> frozenset[int]:
    if isinstance(d, tuple):
        return frozenset().union(*(flatten_deps(x) for x in d)) if d else frozenset()
    return d


def param_deps(shape) -> Deps:
    """The dependencies of a loop-state parameter: element i depends on index i."""
    if shape.is_tuple:
        return tuple(frozenset({i}) for i in range(len(shape.tuple_shapes)))
    return frozenset({0})


def element_deps(comp: Computation, args: Sequence[Deps]) -> Deps:
    """The dependencies of `comp`'s root, its parameters having dependencies `args`."""
    deps: dict[int, Deps] = {}
    for inst in comp.post_order():
        operands = inst.operands
        if inst.opcode in _STRUCTURAL:
            ops = [deps[id(o)] for o in operands]
            if inst.opcode == "parameter":
                d = args[inst.parameter_number]
            elif inst.opcode == "tuple":
                d = tuple(ops)
            elif inst.opcode == "call":
                d = element_deps(inst.attrs["to_apply"], ops)
            elif isinstance(ops[0], tuple):     # get-tuple-element of a tuple value: its element's
                d = ops[0][inst.attrs["index"]]
            else:
                d = ops[0]
        elif len(operands) == 1:        # (most instructions: one array operand, its set as it is)
            d = deps[id(operands[0])]
            if type(d) is tuple:
                d = flatten_deps(d)
        elif len(operands) == 2:        # (most of the rest: two array operands)
            a, b = deps[id(operands[0])], deps[id(operands[1])]
            if type(a) is tuple:
                a = flatten_deps(a)
            if type(b) is tuple:
                b = flatten_deps(b)
            d = a if a is b or a >= b else (b if b >= a else a | b)
        else:
            d = frozenset().union(*(flatten_deps(deps[id(o)]) for o in operands)) if operands else _NONE
        deps[id(inst)] = d
    return deps[id(comp.root)]


_STRUCTURAL = frozenset({"parameter", "tuple", "get-tuple-element", "call"})    # element_deps looks inside these
_NONE: frozenset[int] = frozenset()


def indices_read(comp: Computation) -> frozenset[int]:
    """The loop-state indices a condition (or any one-parameter computation) reads to compute its root."""
    return flatten_deps(element_deps(comp, [param_deps(comp.parameter(0).shape)]))


def body_element_deps(body: Computation, n: int) -> list[frozenset[int]]:
    """For each of the n elements of the body's result, the state indices it is computed from."""
    out = element_deps(body, [param_deps(body.parameter(0).shape)])
    if isinstance(out, tuple) and len(out) == n:
        return [flatten_deps(d) for d in out]
    return [flatten_deps(out)] * n


# -- partial evaluation ---------------------------------------------------------------------------------------
def _known(v) -> bool:
    if isinstance(v, tuple):
        return all(_known(x) for x in v)
    return v is not UNKNOWN


def _reached_in_order(roots: Sequence[Instruction]) -> list[Instruction]:
    """What `roots` read, directly or not, themselves included: each after its operands (a post order of that
    part of the computation only)."""
    order: list[Instruction] = []
    seen: set[int] = set()
    for start in roots:
        if id(start) in seen:
            continue
        seen.add(id(start))
        stack = [(start, iter(start.operands))]
        while stack:
            node, it = stack[-1]
            for op in it:
                if id(op) not in seen:
                    seen.add(id(op))
                    stack.append((op, iter(op.operands)))
                    break
            else:
                order.append(node)
                stack.pop()
    return order


def partial_eval(comp: Computation, args: Sequence[Any], wanted: Sequence[int] | None = None, _ev=None) -> Any:
    """The root's value from partly known `args` (UNKNOWN marks unknown parts). With `wanted` and a tuple
    root, only those root elements are computed; the others come back UNKNOWN."""
    from ..backends.interpreter.evaluator import Evaluator
    ev = _ev or Evaluator(comp.parent)
    root = comp.root
    # only what the wanted value reads is evaluated, each after its operands (the trip count evaluates a loop's
    # counter, not the whole body); everything else is UNKNOWN
    if wanted is not None and root.opcode == "tuple":
        order = _reached_in_order([root.operands[i] for i in wanted]) + [root]
    else:
        order = _reached_in_order([root])
    values: dict[int, Any] = {}
    for inst in order:
        ops = [values.get(id(o), UNKNOWN) for o in inst.operands]
        values[id(inst)] = _eval_one(inst, ops, args, ev)
    return values[id(root)]


def _eval_one(inst: Instruction, ops: list, args: Sequence[Any], ev) -> Any:
    if inst.opcode == "parameter":
        return args[inst.parameter_number]
    if inst.opcode == "constant":
        return UNKNOWN if inst.literal is ELIDED else inst.literal
    if inst.opcode == "tuple":
        return tuple(ops)
    if inst.opcode == "get-tuple-element":
        return ops[0][inst.attrs["index"]] if isinstance(ops[0], tuple) else UNKNOWN
    if inst.opcode == "call":
        return partial_eval(inst.attrs["to_apply"], ops, _ev=ev)
    if (inst.opcode in _NEVER_EVAL or inst.has_side_effect or not all(_known(o) for o in ops)
            or any(s.is_array and s.numel > MAX_ELEMENTS for s in inst.shape.leaves())):
        return UNKNOWN
    fn = ev.table.get(inst.opcode)
    if fn is None:
        return UNKNOWN
    try:
        with np.errstate(all="ignore"):
            return fn(inst, ops, ev)
    except (XlapyError, ArithmeticError, ValueError, TypeError, IndexError):
        return UNKNOWN


def known_value(inst: Instruction) -> Any:
    """The value of `inst` where it is a constant, or a tuple / get-tuple-element of constants; parts that
    are not constant are UNKNOWN."""
    if inst.opcode == "constant":
        return UNKNOWN if inst.literal is ELIDED else inst.literal
    if inst.opcode == "tuple":
        return tuple(known_value(o) for o in inst.operands)
    if inst.opcode == "get-tuple-element":
        v = known_value(inst.operands[0])
        return v[inst.attrs["index"]] if isinstance(v, tuple) else UNKNOWN
    return UNKNOWN


# -- trip count -----------------------------------------------------------------------------------------------
def _restrict(state, keep: frozenset[int]):
    if isinstance(state, tuple):
        return tuple(v if i in keep else UNKNOWN for i, v in enumerate(state))
    return state


class LoopDeps:
    """The element dependencies of one while's condition and body, each computed on first use and then kept: the
    simplifier asks for both in its trip-count rule and again in its dead-element rule, with the loop unchanged
    between (a walk of a big body each time). Valid while the loop's computations are not edited."""

    def __init__(self, while_inst: Instruction):
        self.inst = while_inst
        shape = while_inst.shape
        self.n = len(shape.tuple_shapes) if shape.is_tuple else 1
        self._cond: frozenset[int] | None = None
        self._body: list[frozenset[int]] | None = None

    def cond_reads(self) -> frozenset[int]:
        if self._cond is None:
            self._cond = indices_read(self.inst.attrs["condition"])
        return self._cond

    def body_deps(self) -> list[frozenset[int]]:
        if self._body is None:
            self._body = body_element_deps(self.inst.attrs["body"], self.n)
        return self._body


def trip_count(while_inst: Instruction, max_trips: int = 64, deps: LoopDeps | None = None) -> int | None:
    """The exact number of iterations of `while_inst`, if its condition depends only on state that starts
    constant and it stops within `max_trips` iterations; None otherwise. `deps`: the loop's LoopDeps, if the
    caller keeps one."""
    body, cond = while_inst.attrs["body"], while_inst.attrs["condition"]
    deps = deps or LoopDeps(while_inst)
    shape = while_inst.shape
    n = deps.n
    needed = set(deps.cond_reads())
    state = known_value(while_inst.operands[0])
    if shape.is_tuple and not isinstance(state, tuple):
        state = (UNKNOWN,) * n          # fine when the condition needs none of it
    # what the condition reads directly must start known (the closure below only adds to it): an unknown
    # counter needs no walk of the body
    if not shape.is_tuple and not _known(state):
        return None
    if shape.is_tuple and not all(_known(state[i]) for i in needed):
        return None
    body_deps = deps.body_deps()
    grew = True
    while grew:
        grew = False
        for i in list(needed):
            extra = body_deps[i] - needed
            if extra:
                needed |= extra
                grew = True
    keep = frozenset(needed)
    state = _restrict(state, keep)
    if not shape.is_tuple and not _known(state):
        return None
    if shape.is_tuple and (not isinstance(state, tuple) or not all(_known(state[i]) for i in keep)):
        return None
    from ..backends.interpreter.evaluator import Evaluator
    ev = Evaluator(body.parent)
    for trips in range(max_trips + 1):
        go = partial_eval(cond, [state], _ev=ev)
        if not _known(go):
            return None
        if not bool(np.asarray(go).reshape(-1)[0]):
            return trips
        if trips == max_trips:
            return None
        state = partial_eval(body, [state], sorted(keep) if shape.is_tuple else None, _ev=ev)
        state = _restrict(state, keep)
        if shape.is_tuple and (not isinstance(state, tuple) or not all(_known(state[i]) for i in keep)):
            return None
        if not shape.is_tuple and not _known(state):
            return None
    return None
