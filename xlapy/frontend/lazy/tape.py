"""autojit's warm replay: a recorded call's clusters, host ops and guards, replayed without running f's Python.

While autojit records a call, a `Tape` hangs on the thread's pending graph. Every value whose contents vary from
call to call is *watched* (graph.py): the arguments, each cut's outputs and each host op's results. Each gets a
register number, in the order the call made them, and the tape writes down what the call did with them:

| event | recorded | at replay | guard (its outcome picks the next step) |
|---|---|---|---|
| cut | the structure key, its executable, each leaf as a register or a constant | call the executable | none |
| host | a host op (host.py: np.unique, np.nonzero ...) on registers | run it on the values | its results' shapes and dtypes |
| read | a value Python read (bool/int/float/item, np.asarray outside a host op, print) | - | the whole value read |
| return | f's output pytree: registers (with their avals) and constants | build the Arrays | - |

A leaf that is no register (a Python scalar of f's code, a global Array, an Array numpy code made from a read
value) is a constant: a read is guarded by its whole value, so whatever Python computed from it is the same. This is
jit's contract: f's side effects happen when it is recorded, globals are read then. The events of the calls of one
input signature form a tree (`Step.next`, keyed by the guard outcomes): `replay` walks it from the arguments; a guard
outcome not seen yet, a cut not compiled yet, or any error is a miss, and autojit records the call again (its
events join the tree as a new continuation).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..array import Array, interned_aval, is_concrete_array
from ..pytree import tree_unflatten
from .graph import LazyArray

CUT, HOST, READ, RETURN = "cut", "host", "read", "return"
MAX_BRANCHES = 16           # continuations per guard: past that, the values read are too varied to replay


class Const:
    """A leaf that is no register: its numpy value, passed as it is at each replay."""
    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


class Step:
    """One event of a recorded call and the steps after it, by guard outcome (None: a step without a guard)."""
    __slots__ = ("kind", "what", "plan", "exe", "extra", "cluster", "next")

    def __init__(self, kind: str, what: Any, plan: tuple, exe: Any = None, extra: Any = None):
        self.kind, self.what, self.plan, self.exe, self.extra = kind, what, plan, exe, extra
        self.cluster = None         # the report's Cluster of a cut (autojit.py counts its runs)
        self.next: dict = {}

    def same_event(self, other: "Step") -> bool:
        """The same event at the same place: then the registers after it are numbered alike."""
        return self.kind == other.kind and (self.what is other.what or self.what == other.what)


def _outcome_of_value(v: np.ndarray) -> tuple:
    return (v.shape, v.dtype.str, v.tobytes())


def _outcome_of_results(outs: list) -> tuple:
    return tuple((o.shape, o.dtype.str) for o in outs)


class Tape:
    """The events of one call autojit records (see the module docstring)."""

    def __init__(self):
        self.registers: dict[int, int] = {}     # id(watched array) -> register
        self.count = 0
        self.keep: list[Any] = []               # the watched arrays (held: their ids stay theirs)
        self.events: list[tuple[Step, Any]] = []     # (step, its guard outcome)
        self.host_depth = 0
        self.valid = True

    # -- watching ---------------------------------------------------------------------------------------
    def _watch(self, a: LazyArray, value: Any, register: int) -> LazyArray:
        a._watch = (self, value)
        self.registers[id(a)] = register
        self.keep.append(a)
        return a

    def _new(self, value: Any, aval: Any, register: int) -> LazyArray:
        a = object.__new__(LazyArray)
        a.aval = aval
        a._node = None
        a._index = -1
        return self._watch(a, value, register)

    def argument(self, leaf: Any) -> LazyArray:
        """The watched stand-in for a concrete Array argument (the next register)."""
        from ..array import host_value
        register = self.count
        self.count += 1
        return self._new(host_value(leaf), leaf.aval, register)

    def alias(self, a: LazyArray, weak_type: bool) -> LazyArray:
        """`a` with another weak-type flag: the same register."""
        return self._new(a._watch[1], interned_aval(a.aval.shape, a.aval.dtype, weak_type), self.registers[id(a)])

    def plain(self, a: LazyArray) -> Array:
        """An ordinary Array of a watched value, for xlapy's own use (a cut run op by op): no guard."""
        out = object.__new__(Array)
        out._value = a._watch[1]
        out.aval = a.aval
        return out

    def release(self) -> None:
        """The call ended: every watched array becomes an ordinary computed value."""
        for a in self.keep:
            watch = a._watch
            if watch is not None and watch[0] is self:
                a._value = watch[1]
                a._watch = None
        self.keep = []

    def _leaf(self, v: Any) -> Any:
        """A cut's or host op's operand: its register, or a Const of its value."""
        if type(v) is LazyArray and v._watch is not None:
            if v._watch[0] is self:
                return self.registers[id(v)]
            self.valid = False          # another call's value (a nested recording): not replayable
            return Const(v._watch[1])
        from .graph import leaf_value
        return Const(np.asarray(v) if isinstance(v, (list, tuple)) else leaf_value(v))

    # -- events -----------------------------------------------------------------------------------------
    def cut(self, key: tuple, leaves: list, live: list, slot_of: list, outs: list, exe: Any) -> None:
        """A cut ran: its outputs become registers (in slot order) and watched values."""
        plan = tuple(self._leaf(v) for v in leaves)
        base = self.count
        self.count += len(outs)
        for a, s in zip(live, slot_of):
            a._node = None
            self._watch(a, outs[s], base + s)
        self.events.append((Step(CUT, key, plan, exe, len(outs)), None))

    def read(self, a: LazyArray, value: Any) -> Any:
        """Python read a watched value: outside a host op that is a guard on the whole value."""
        if self.host_depth == 0 and a._watch[0] is self:
            self.events.append((Step(READ, self.registers[id(a)], ()), _outcome_of_value(np.asarray(value))))
        return value

    def host(self, fun: Any, operands: tuple, static: dict) -> Any:
        """A host op (host.py) on the values of `operands`: its results are registers and watched values."""
        self.host_depth += 1
        try:
            values = [np.asarray(o) for o in operands]      # reads inside a host op are no guards
        finally:
            self.host_depth -= 1
        plan = tuple(self._leaf(o) for o in operands)
        res = fun(*values, **static)
        is_tuple = isinstance(res, tuple)
        outs = list(res) if is_tuple else [res]
        base = self.count
        self.count += len(outs)
        made = [self._new(o, interned_aval(o.shape, o.dtype, False), base + i) for i, o in enumerate(outs)]
        self.events.append((Step(HOST, fun, plan, None, (static, is_tuple)), _outcome_of_results(outs)))
        return tuple(made) if is_tuple else made[0]

    def finish(self, out_tree: Any, out_leaves: list) -> None:
        """f returned: each output leaf a register (with its aval) or a constant object."""
        specs = []
        for v in out_leaves:
            if type(v) is LazyArray and v._watch is not None and v._watch[0] is self:
                specs.append((self.registers[id(v)], v.aval))
            elif is_concrete_array(v) and not v.is_deleted():
                specs.append((Const(v._value), v.aval))     # a fresh Array of the same value at each replay
            else:
                specs.append((None, v))
        self.events.append((Step(RETURN, out_tree, tuple(specs), None, builder(out_tree)), None))


def insert(root: dict, events: list[tuple[Step, Any]]) -> list[Step]:
    """Add a recorded call's events to the tree under `root` (outcome -> first step); returns the steps on its
    path. A step that is the same event as the one already there keeps that one's other continuations."""
    path = []
    children, outcome = root, None
    for step, next_outcome in events:
        known = children.get(outcome)
        if known is not None and known.same_event(step):
            known.plan, known.extra = step.plan, step.extra
            if step.exe is not None:
                known.exe = step.exe
            step = known
        elif known is None and len(children) >= MAX_BRANCHES:
            return path                 # too many continuations here: this call stays unrecorded
        else:
            children[outcome] = step
        path.append(step)
        children, outcome = step.next, next_outcome
    return path


class Miss(Exception):
    """A replay found no recorded continuation (or a cut not compiled yet)."""


def replay(root: dict, arguments: list) -> Any:
    """Run the recorded tree on the argument values; returns (the output pytree, the cut steps run)."""
    regs = list(arguments)
    step = root.get(None)
    cuts = []
    while step is not None:
        kind = step.kind
        if kind is CUT:
            exe = step.exe
            if exe is None:
                raise Miss
            out = exe(*[regs[p] if type(p) is int else p.value for p in step.plan])
            if isinstance(out, (tuple, list)):
                regs.extend(out)
            else:
                regs.append(out)
            cuts.append(step)
            step = step.next.get(None)
        elif kind is HOST:
            static, is_tuple = step.extra
            res = step.what(*[regs[p] if type(p) is int else p.value for p in step.plan], **static)
            outs = list(res) if is_tuple else [res]
            regs.extend(outs)
            step = step.next.get(_outcome_of_results(outs))
        elif kind is READ:
            step = step.next.get(_outcome_of_value(np.asarray(regs[step.what])))
        else:
            leaves = []
            for register, spec in step.plan:
                if register is None:
                    leaves.append(spec)
                else:
                    a = object.__new__(Array)
                    a._value = regs[register] if type(register) is int else register.value
                    a.aval = spec
                    leaves.append(a)
            return step.extra(leaves), cuts
    raise Miss


def builder(treedef: Any) -> Any:
    """leaves -> the pytree of `treedef`: tuples, lists, dicts and None built directly (a warm call's output),
    any other node by tree_unflatten."""
    def make(t: Any) -> Any:
        kind = t.node_type
        if kind is None:
            return next
        if kind is type(None):
            return lambda it: None
        parts = [make(c) for c in t.children]
        if any(p is None for p in parts):
            return None
        if kind is tuple:
            return lambda it: tuple([p(it) for p in parts])
        if kind is list:
            return lambda it: [p(it) for p in parts]
        if kind is dict:
            keys = t.aux
            return lambda it: {k: p(it) for k, p in zip(keys, parts)}
        return None
    root = make(treedef)
    if root is None:
        return lambda leaves: tree_unflatten(treedef, leaves)
    return lambda leaves: root(iter(leaves))


__all__ = ["Tape", "Step", "Miss", "insert", "replay"]
