"""Cutting the pending graph: the live pending values become one HLO module, compiled once per structure and
replayed from the cache afterwards.

At a cut every pending value that Python still references (its weak reference is alive) is an output; the nodes
they need are the module's instructions, in recording order; the leaves they read are its parameters (one per
distinct leaf object). Nodes no live value needs are dropped: dead values are never computed. The module's cache
key is its structure alone:

| part | what |
|---|---|
| nodes | each node's op key (opcode, attributes, operand avals, flags, backend) and where its operands come from: (node number, result index) or a leaf number |
| leaves | each parameter's (shape, dtype, weak_type) |
| outputs | (node number, result index) of each live value, in creation order |

so the same op-by-op step on new values (a training loop) hits the cache and only runs the executable. Once the
cut has run, the nodes and the leaves they held are released: a leaf buffer no Python name still references is
freed right after the cut (the CPU backend does not alias parameters to results, so that is all donation can be).
"""
from __future__ import annotations

import gc
import threading
from dataclasses import dataclass
from typing import Any

from ... import trace_events
from ...errors import XlapyError
from .. import dtypes
from ..backend import registry_default
from ..compile_cache import CompileCache
from ..tracer import Packed, Trace, results_of, make_op
from . import state
from .graph import LazyArray, Node, leaf_value
from .reasons import CutReason, read_reason

_CACHE = CompileCache(lambda: dtypes.config.eager_cache_size)
STATS = {"cuts": 0, "nodes_computed": 0, "outputs": 0}
_SEEN: dict[tuple, int] = {}
_SEEN_LOCK = threading.Lock()
_EPOCH = [0]            # bumped by clear_lazy_cache: autojit's recorded calls hold executables, forgotten then


def epoch() -> int:
    return _EPOCH[0]


@dataclass
class Cut:
    """One cut, as the report shows it."""
    reason: CutReason
    ops: int            # nodes computed
    outputs: int
    leaves: int
    compiled: bool      # compiled at this cut
    op_by_op: bool      # run op by op (the structure's first cut: state.COMPILE_AT)
    module_name: str
    key: tuple


def lazy_stats() -> dict[str, int]:
    """{'cuts', 'compiles', 'hits', 'nodes_computed', 'outputs', 'entries'} of lazy mode in this process."""
    return dict(STATS, compiles=_CACHE.stats["compiles"], hits=_CACHE.stats["hits"], entries=len(_CACHE))


def clear_lazy_cache() -> None:
    """Forget every compiled cluster and how often each structure was cut (xlapy.clear_caches calls it)."""
    _CACHE.clear()
    _EPOCH[0] += 1
    with _SEEN_LOCK:
        _SEEN.clear()
    from .grad import clear_derived
    clear_derived()


def materialize(x: LazyArray) -> None:
    """Compute `x` (and every other live pending value of its graph): the read of x's value cut the graph."""
    reason = read_reason()
    _cut(x._node.graph, reason, x)


def sync(named: str = "xlapy.sync()") -> None:
    """Compute every value the calling thread has pending (`xlapy.sync()`)."""
    g = state.thread_graph_or_none()
    if g is not None and g.pending:
        _cut(g, read_reason(named), None)


class NeedsTrace(Exception):
    """A value of a gradient's recording (grad.py) was read: that function is traced instead, as outside lazy mode."""


def _cut(g: state.PendingGraph, reason: CutReason, requested: LazyArray | None) -> None:
    if g.abstract:
        raise NeedsTrace(str(reason))
    gc.collect(1)        # values held only by reference cycles (a traced reducer's closure) are dead: a stable key
    with g.lock:
        live, seen = [], set()
        for ref in g.pending:
            a = ref()
            if a is not None and a._node is not None and id(a) not in seen:
                seen.add(id(a))
                live.append(a)
        if requested is not None and id(requested) not in seen and requested._node is not None:
            live.append(requested)      # recorded before a failed cut: not in the list any more
        g.pending = []
        g.nodes = 0
        if live:
            _run(g, live, reason)


def _collect(live: list[LazyArray]) -> list[Node]:
    nodes: dict[int, Node] = {}
    stack = [a._node for a in live]
    while stack:
        node = stack.pop()
        if id(node) in nodes:
            continue
        nodes[id(node)] = node
        for ref in node.operands:
            t = type(ref)
            if t is tuple:
                producer = ref[0]
                if type(producer) is Node and id(producer) not in nodes:
                    stack.append(producer)
            elif t is Packed:
                for r in ref:
                    if type(r) is tuple and type(r[0]) is Node and id(r[0]) not in nodes:
                        stack.append(r[0])
    return sorted(nodes.values(), key=lambda n: n.seq)


def _structure(nodes: list[Node], live: list[LazyArray]):
    """(key, leaves, output slots, slot of each live array)."""
    number = {id(n): i for i, n in enumerate(nodes)}
    leaves: list[Any] = []
    leaf_number: dict[int, int] = {}

    def encode(r: Any) -> Any:
        if type(r) is tuple and type(r[0]) is Node:
            return (number[id(r[0])], r[1])
        k = leaf_number.get(id(r))
        if k is None:
            k = leaf_number[id(r)] = len(leaves)
            leaves.append(r)
        return k

    entries = []
    for n in nodes:
        ops = tuple(("packed", tuple(encode(r) for r in ref)) if isinstance(ref, Packed) else encode(ref)
                    for ref in n.operands)
        entries.append((n.key, ops))
    slots: dict[tuple, int] = {}
    slot_of = []
    for a in live:
        s = (number[id(a._node)], a._index)
        slot_of.append(slots.setdefault(s, len(slots)))
    from ..eager import aval_of_value
    avals = tuple((v.shape, v.dtype, v.weak_type) for v in map(aval_of_value, leaves))
    backend = dtypes.config.default_backend or registry_default()
    key = (tuple(entries), avals, tuple(slots), backend, trace_events.session() is not None)
    return key, leaves, list(slots), slot_of


def _resolve_computations(attrs: dict | None) -> dict | None:
    """The attributes with each computation deep-copied: a computation belongs to one module, and a node's may
    be built into several (a cut that misses the cache, a gradient derived from a recorded function)."""
    from ...hlo import Computation
    from ..transforms import _detached

    def is_comps(v: Any) -> bool:
        return isinstance(v, (list, tuple)) and bool(v) and all(isinstance(c, Computation) for c in v)
    if not attrs or not any(isinstance(v, Computation) or is_comps(v) for v in attrs.values()):
        return attrs
    memo: dict = {}
    return {k: _detached(v, memo) if isinstance(v, Computation) else type(v)(_detached(c, memo) for c in v)
            if is_comps(v) else v for k, v in attrs.items()}


def build_computation(trace: Trace, nodes: list[Node], leaves: list[Any], slots: list[tuple],
                      args: dict[int, Any] | None = None, constants: dict[int, Any] | None = None) -> None:
    """Record `nodes` into `trace`: each leaf one parameter (after those already made), each node its op,
    `args` (placeholder node id -> tracer) standing for itself, `constants` (leaf id -> value) as constants;
    the root is the tuple of `slots`."""
    from ..eager import aval_of_value
    first = len(trace.comp.parameters)
    params = [trace.new_param(aval_of_value(v), f"Arg_{first + i}") for i, v in enumerate(leaves)]
    leaf_param = {id(v): p for v, p in zip(leaves, params)}
    values: dict[int, Any] = dict(args or {})

    def resolve(r: Any) -> Any:
        if type(r) is tuple and type(r[0]) is Node:
            v = values[id(r[0])]
            return v if r[1] == -1 else v[r[1]]
        if constants and id(r) in constants:
            return trace.lift(constants[id(r)])
        return leaf_param[id(r)]

    for n in nodes:
        if id(n) in values:
            continue
        operands = [Packed(resolve(r) for r in ref) if isinstance(ref, Packed) else resolve(ref) for ref in n.operands]
        inst = make_op(trace, n.opcode, operands, _resolve_computations(n.attrs), n.shape, n.name)
        values[id(n)] = results_of(trace, inst)
    outs = []
    for node_number, index in slots:
        v = values[id(nodes[node_number])]
        outs.append(v if index == -1 else v[index])
    trace.finish(outs, tuple_root=True)


def _build(name: str, nodes: list[Node], leaves: list[Any], slots: list[tuple]):
    from ..eager import build_module
    trace = Trace("main")
    build_computation(trace, nodes, leaves, slots)
    return build_module(name, trace.comp)


def _compile(module, backend: str):
    from ...backends import compile as compile_module
    with trace_events.span(f"compile {module.name}", "compile", backend=backend):
        return compile_module(module, backend=backend)


def _op_by_op(nodes: list[Node], slots: list[tuple]) -> list[Any]:
    """The values of `slots`, running each node as an eager op (a structure's first cut: eager.py's per-op
    executables are small and mostly cached already, so this costs what eager mode costs)."""
    from ..eager import run_eagerly
    values: dict[int, Any] = {}

    def resolve(r: Any) -> Any:
        if type(r) is tuple and type(r[0]) is Node:
            v = values[id(r[0])]
            return v if r[1] == -1 else v[r[1]]
        if type(r) is LazyArray and r._watch is not None:
            return r._watch[0].plain(r)         # a recorded call's value, read by the cut (no guard)
        return r
    with state.eager_block():
        for n in nodes:
            operands = [Packed(resolve(r) for r in ref) if isinstance(ref, Packed) else resolve(ref)
                        for ref in n.operands]
            values[id(n)] = run_eagerly(n.opcode, operands, _resolve_computations(n.attrs), shape=n.shape,
                                        name=n.name)
    outs = []
    for node_number, index in slots:
        v = values[id(nodes[node_number])]
        outs.append((v if index == -1 else v[index])._value)
    return outs


def _seen(key: tuple) -> int:
    """How many cuts of this structure have run so far, this one included (bounded: the oldest forgotten)."""
    with _SEEN_LOCK:
        count = _SEEN.pop(key, 0) + 1
        _SEEN[key] = count
        if len(_SEEN) > 4 * dtypes.config.eager_cache_size:
            _SEEN.pop(next(iter(_SEEN)))
    return count


def _run(g: state.PendingGraph, live: list[LazyArray], reason: CutReason) -> None:
    nodes = _collect(live)
    key, leaves, slots, slot_of = _structure(nodes, live)
    name = g.sinks[-1].module_name() if g.sinks else "lazy_cluster"
    backend = key[3]
    compiled = []

    def make():
        compiled.append(True)
        return _compile(_build(name, nodes, leaves, slots), backend)
    try:
        exe = _CACHE.get(key)
        op_by_op = exe is None and _seen(key) < state.COMPILE_AT[0]
        if op_by_op:
            out = _op_by_op(nodes, slots)
        else:
            exe = exe or _CACHE.get_or_make(key, make)
            out = exe(*[leaf_value(v) for v in leaves])
    except XlapyError as e:
        ops = ", ".join(sorted({n.name or n.opcode for n in nodes})[:12])
        message = f"{e}\n(while computing the lazy values pending at {reason}: {len(nodes)} ops: {ops})"
        try:
            error = type(e)(message)
        except TypeError:
            error = XlapyError(message)
        raise error from None
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    if g.tape is not None:          # autojit records this call: the outputs are watched (tape.py)
        g.tape.cut(key, leaves, live, slot_of, outs, exe)
    else:
        for a, s in zip(live, slot_of):
            a._value = outs[s]
            a._node = None
    STATS["cuts"] += 1
    STATS["nodes_computed"] += len(nodes)
    STATS["outputs"] += len(slots)
    if g.sinks:
        record = Cut(reason, len(nodes), len(slots), len(leaves), bool(compiled), op_by_op, name, key)
        for sink in g.sinks:
            sink.cut(record)
