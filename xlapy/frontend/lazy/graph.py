"""Recording: an op outside a trace in lazy mode becomes a Node of the thread's pending graph, its results
LazyArrays that owe their value to it.

A Node is (the op's structural key, opcode, attributes, operands); an operand is another node's result
(`(node, index)`) or a leaf: the concrete operand object itself (an Array, a numpy value, a Python scalar), which
becomes a parameter of the compiled cluster. The key is eager's op key (eager.py: opcode, attributes, operand
avals, flags, backend), so the result avals are inferred once per key (`_SHAPES`) and a recorded op costs a
dictionary look-up; the first time, the op is built on parameters exactly as eager builds it, so a shape error
is raised at the op, naming it and the user's line, as in eager mode.
"""
from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any, Sequence

from ...hlo import Computation
from ..array import Array, interned_aval
from ..tracer import Packed, ShapedArray, Trace, aval_of_shape, make_op
from . import state

_SHAPES: dict[tuple, tuple] = {}        # op key -> (is_tuple, result avals)
_MAX_SHAPES = 1 << 14


class Node:
    __slots__ = ("key", "opcode", "operands", "attrs", "shape", "name", "seq", "graph", "__weakref__")

    def __init__(self, key, opcode, operands, attrs, shape, name, seq, graph):
        self.key, self.opcode, self.operands, self.attrs = key, opcode, operands, attrs
        self.shape, self.name, self.seq, self.graph = shape, name, seq, graph


class LazyArray(Array):
    """An Array whose value is not computed yet: `_node`/`_index` say which recorded op computes it. Reading the
    value (`_value`: np.asarray, print, item, bool, float, a jit call, ...) cuts the graph (cut.py); afterwards it
    is an ordinary Array (its `_node` is None).

    While autojit records a call (lazy/tape.py), its arguments, cut outputs and host-op results are *watched*:
    `_watch` holds (the tape, the value) and `_value` stays unset, so every read of the value passes through
    `__getattr__` and the tape sees it (a guard of the recorded call). The tape unwatches them when the call ends."""
    __slots__ = ("_node", "_index", "_watch", "__weakref__")

    def __getattr__(self, name: str):
        if name == "_value":
            if self._node is not None:
                from .cut import materialize
                materialize(self)
                return self._value
            watch = self._watch
            if watch is not None:
                return watch[0].read(self, watch[1])
        return Array.__getattr__(self, name)

    def is_deleted(self) -> bool:
        return self._node is None and self._watch is None and Array.is_deleted(self)

    def delete(self) -> None:
        self._node = None                   # the value is no longer wanted: the next cut skips it
        if self._watch is not None:         # a recorded call's value (never in `_value`)
            self._watch = None
            return
        Array.delete(self)

    def block_until_ready(self) -> "LazyArray":
        self._value  # noqa: B018 -- the read computes it
        return self

    def with_weak_type(self, weak_type: bool) -> Array:
        if self._watch is not None:
            return self._watch[0].alias(self, weak_type)
        if self._node is None:
            return Array(self._value, weak_type=weak_type)
        return new_lazy(self._node, self._index, interned_aval(self.aval.shape, self.aval.dtype, weak_type))


def new_lazy(node: Node, index: int, aval: ShapedArray) -> LazyArray:
    out = object.__new__(LazyArray)
    out.aval = aval
    out._node = node
    out._index = index
    out._watch = None
    node.graph.add(out)
    return out


def is_pending(x: Any) -> bool:
    return type(x) is LazyArray and x._node is not None


def is_watched(x: Any) -> bool:
    """A value of a call autojit is recording (lazy/tape.py): its reads are the call's guards."""
    return type(x) is LazyArray and x._watch is not None


def is_deferred(x: Any) -> bool:
    """Pending or watched: code that would read the value on the host should record ops on it instead."""
    return type(x) is LazyArray and (x._node is not None or x._watch is not None)


def leaf_value(v: Any) -> Any:
    """The numpy value of a cut's leaf, read by xlapy itself (a watched value's read here is no guard)."""
    if type(v) is LazyArray and v._watch is not None:
        return v._watch[1]
    from ..array import host_value
    return host_value(v)


def _operand_ref(v: Any, g: "state.PendingGraph") -> Any:
    """A node operand: (node, index) for a value pending in `g`, else the leaf object (a value pending in another
    graph, another thread's or the one around a gradient's recording, is a leaf: read when this graph is cut).
    A deleted (donated) Array raises here, at the op, as in eager mode."""
    t = type(v)
    if t is LazyArray:
        node = v._node
        if node is not None:
            return (node, v._index) if node.graph is g else v
        if v._watch is not None:
            return v                        # a leaf of the recorded call: its value is read by the cut
    if t is Array or t is LazyArray:
        v._value  # noqa: B018 -- raises "Array has been deleted" for a donated one
    return v


def _freeze_computations(attrs: dict) -> tuple:
    """A key for attributes that hold computations (a `call`'s to_apply, a loop body): each computation by its
    text, remembered per computation object (grad outside jit binds one `call` per step)."""
    from ..eager import _freeze
    items = []
    for k in sorted(attrs):
        v = attrs[k]
        if isinstance(v, Computation):
            items.append((k, ("comp", computation_key(v))))
        elif isinstance(v, (list, tuple)) and v and all(isinstance(c, Computation) for c in v):
            items.append((k, ("comps", tuple(computation_key(c) for c in v))))
        else:
            items.append((k, _freeze(v)))
    return tuple(items)


_COMP_KEYS: "OrderedDict[int, tuple[Computation, str]]" = OrderedDict()   # id -> (the computation, its text)
_MAX_COMP_KEYS = 256


def computation_key(comp: Computation) -> str:
    """The text of `comp` and what it calls, remembered for the last _MAX_COMP_KEYS computations (held, so an
    id is not reused while it is a key here)."""
    known = _COMP_KEYS.get(id(comp))
    if known is not None and known[0] is comp:
        _COMP_KEYS.move_to_end(id(comp))
        return known[1]
    from ...hlo.printer import computation_to_text
    texts, seen, stack = [], {id(comp)}, [comp]
    while stack:                # the computation and every computation it calls, depth first
        c = stack.pop()
        texts.append(computation_to_text(c))
        for inst in c.instructions:
            for callee in inst.called_computations():
                if id(callee) not in seen:
                    seen.add(id(callee))
                    stack.append(callee)
    text = "\n".join(texts)
    _COMP_KEYS[id(comp)] = (comp, text)
    while len(_COMP_KEYS) > _MAX_COMP_KEYS:
        _COMP_KEYS.popitem(last=False)
    return text


_EAGER: list = []        # eager.py, which imports this module: found on the first op


def op_key(opcode: str, operands: Sequence[Any], avals: Sequence[ShapedArray], attrs: dict | None, shape,
           name: str | None, backend: str) -> tuple | None:
    if not _EAGER:
        from .. import eager
        _EAGER.append(eager)
    _op_key, _freeze = _EAGER[0]._op_key, _EAGER[0]._freeze
    if not attrs or not any(type(v) is Computation or (type(v) in (list, tuple) and v and type(v[0]) is Computation)
                            for v in attrs.values()):
        return _op_key(opcode, operands, avals, attrs, shape, name, backend)
    base = _op_key(opcode, operands, avals, None, None, name, backend)
    try:
        frozen_shape = None if shape is None else _freeze(shape)
        return ("with-computations", base, _freeze_computations(attrs or {}), frozen_shape)
    except _EAGER[0]._Unhashable:
        return None         # an attribute with no value-hashable form: the op runs eagerly (its operands computed)


def _infer(key: tuple, opcode: str, operands: Sequence[Any], avals: Sequence[ShapedArray], attrs, shape,
           name) -> tuple:
    """(is_tuple, result avals, the weakly typed aval of a single result) of the op, built once per key on
    parameters as eager builds it."""
    known = _SHAPES.get(key)
    if known is not None:
        return known
    trace = Trace("main")
    params = iter([trace.new_param(a, f"Arg_{i}") for i, a in enumerate(avals)])
    param_operands = [Packed(next(params) for _ in o) if isinstance(o, Packed) else next(params) for o in operands]
    inst = make_op(trace, opcode, param_operands, attrs, shape, name)
    if inst.shape.is_tuple:
        outs = tuple(aval_of_shape(s) for s in inst.shape.tuple_shapes)
        known = (True, tuple(interned_aval(a.shape, a.dtype, False) for a in outs), None)
    else:
        a = aval_of_shape(inst.shape)
        known = (False, (interned_aval(a.shape, a.dtype, False),), interned_aval(a.shape, a.dtype, True))
    if len(_SHAPES) < _MAX_SHAPES:
        _SHAPES[key] = known
    return known


def record(opcode: str, operands: Sequence[Any], attrs: dict | None, values: Sequence[Any],
           avals: Sequence[ShapedArray], key: tuple, shape, name: str | None, weak_type: bool) -> Any:
    """Record one op in the calling thread's pending graph; returns its LazyArray (a list of them for a tuple)."""
    is_tuple, outs, weak = _SHAPES.get(key) or _infer(key, opcode, operands, avals, attrs, shape, name)
    g = state.graph()
    refs = [Packed(_operand_ref(v, g) for v in o) if isinstance(o, Packed) else _operand_ref(o, g) for o in operands]
    with g.lock:
        g.seq += 1
        g.nodes += 1
        node = Node(key, opcode, refs, attrs, shape, name, g.seq, g)
        if is_tuple:
            result: Any = [new_lazy(node, i, a) for i, a in enumerate(outs)]
        else:
            result = new_lazy(node, -1, weak if weak_type else outs[0])
        full = g.nodes >= state.MAX_NODES[0] and not g.abstract
    if full:
        sys.modules[__package__ + ".cut"].sync("size limit")
    return result
