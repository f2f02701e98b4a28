"""autojit: auto-clustering (TensorFlow's `tf_xla_auto_jit`) next to jit's must-compile (`jit_compile=True`).

`xlapy.autojit(f)(*args)` runs f with lazy recording (lazy/): its ops collect into a pending graph instead of
running, and where jit would raise ConcretizationError (unique, nonzero without size=, a boolean mask, an `if`
on a value, int()/float()/item(), a host callback that needs numpy values) the read of a value cuts the graph.
The ops before the cut are one cluster, compiled and run; the breaking op then runs on the host with concrete
values, as in eager mode; the ops after it record into the next cluster, cut at the next read or at f's
return. Each cluster is cached by its structure (ops, shapes, dtypes, wiring: lazy/cut.py).

A warm call does not run f's Python (lazy/tape.py): a recorded call wrote down, per input signature (pytree
structure, each array's shape/dtype/weak type, each other leaf's value), its clusters' executables, its host ops
(lazy/host.py: unique, nonzero) and its guards (each value Python read: `if`, int(), np.asarray outside a host op).
The warm call replays that: cluster, host op on the concrete values, the continuation its results' shapes (or
the values read) select, ... A guard outcome not recorded yet (a new unique length, the other branch) records
the call again, adding that continuation. As under jit, f's side effects happen when it is recorded and the
globals it reads are read then.

numpy arguments become xlapy Arrays first (jit traces them too), so f's ops on them are recorded rather than run
by numpy. Inside a trace (autojit called under jit or grad) f is simply traced, as a nested jit is inlined.

`report()` lists the clusters seen, each with what ended it (the read, the xlapy function that made it and
the user's source line), its size and its compile and run counts; `XLA_FLAGS=--xla_dump_to=DIR` dumps each
cluster's HLO when it is compiled, under the module name `autojit_<f>_<k>` (k: the cluster's place in a call).
"""
from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from . import dtypes
from .array import Array, host_value, interned_aval, is_concrete_array
from .lazy import cut as lazy_cut
from .lazy import state as lazy_state
from .lazy import tape as lazy_tape
from .lazy.reasons import CutReason
from .pytree import tree_flatten, tree_unflatten
from .tracer import current_trace

MAX_SIGNATURES = 64         # recorded input signatures per function (the oldest forgotten)
GIVE_UP_AFTER = 4           # a signature whose last 4 calls missed is recorded, not replayed, for the next 16 calls
RETRY_AFTER = 16


@dataclass
class Cluster:
    """One compiled piece of an autojit function, as the report shows it."""
    number: int                 # its place among the clusters, in the order first seen
    position: int               # its place in a call (1: the first cluster of a call)
    ops: int
    inputs: int
    outputs: int
    ended_by: CutReason
    compiles: int = 0
    runs: int = 0
    op_by_op: int = 0           # runs before it was compiled (lazy/state.py's COMPILE_AT)
    module_name: str = ""


@dataclass
class _Call:
    """The cuts of one call in progress (a lazy PendingGraph sink)."""
    owner: "AutoJitted"
    position: int = 0
    last: str = ""
    cuts: list = field(default_factory=list)

    def module_name(self) -> str:
        return f"autojit_{self.owner.name}_{self.position + 1}"

    def cut(self, record: lazy_cut.Cut) -> None:
        self.position += 1
        self.last = f"ended by {record.reason}"
        self.owner._note(self.position, record)


class AutoJitted:
    """The result of autojit(f): call it like f; `report()` shows its clusters."""

    def __init__(self, fun: Callable):
        self.fun = fun
        self.name = "".join(c if c.isalnum() or c == "_" else "_" for c in getattr(fun, "__name__", "fun"))
        self.calls = 0
        self.stats = {"recorded": 0, "replayed": 0, "misses": 0}
        self._clusters: dict[tuple, Cluster] = {}
        self._programs: dict[tuple, list] = {}     # signature -> [tree of recorded steps, misses in a row]
        self._epoch = lazy_cut.epoch()
        self._lock = threading.Lock()
        functools.update_wrapper(self, fun, updated=())

    def __call__(self, *args, **kwargs):
        if current_trace() is not None:         # under jit / grad / vmap: traced like any function
            return self.fun(*args, **kwargs)
        g = lazy_state.graph()
        if g.pending:
            lazy_cut.sync("values pending before an autojit call")
        if g.tape is not None:              # called while another autojit records: part of that recording
            return self._record(g, *_flatten(args, kwargs), None)
        leaves = tree = None
        found = _fast_signature(args, kwargs)
        if found is None:
            leaves, tree = _flatten(args, kwargs)
            sig = _signature(tree, leaves)
            values = None if sig is None else [host_value(v) for v in leaves if is_concrete_array(v)]
        else:
            sig, values = found
        if sig is not None:
            if self._epoch != lazy_cut.epoch():         # clear_caches: every executable is forgotten
                with self._lock:
                    self._programs.clear()
                    self._epoch = lazy_cut.epoch()
            program = self._programs.get(sig)
            if program is not None and program[1] >= GIVE_UP_AFTER:
                program[1] = GIVE_UP_AFTER - 1 if program[1] >= GIVE_UP_AFTER + RETRY_AFTER else program[1] + 1
            elif program is not None:
                try:
                    out, cuts = lazy_tape.replay(program[0], values)
                except Exception:       # noqa: BLE001 -- a miss; an error is raised again by the recording
                    program[1] += 1
                    self.stats["misses"] += 1
                else:
                    program[1] = 0
                    with self._lock:
                        self.calls += 1
                        self.stats["replayed"] += 1
                        for step in cuts:
                            if step.cluster is not None:
                                step.cluster.runs += 1
                    return out
        if leaves is None:
            leaves, tree = _flatten(args, kwargs)
        return self._record(g, leaves, tree, sig)

    def _record(self, g, leaves: list, tree, sig: tuple | None):
        """Run f's Python with lazy recording; with a signature, its tape joins the replay tree."""
        call = _Call(self)
        g.sinks.append(call)
        tape = None
        if sig is not None:
            tape = g.tape = lazy_tape.Tape()
            leaves = [tape.argument(v) if is_concrete_array(v) else v for v in leaves]
        args, kwargs = tree_unflatten(tree, leaves)
        try:
            with lazy_state.lazy(True):
                out = self.fun(*args, **kwargs)
                lazy_cut.sync(f"the return of {self.name}")
            if tape is not None:
                out_leaves, out_tree = tree_flatten(out)
                tape.finish(out_tree, out_leaves)
        except Exception as e:
            last = f"after cluster {call.position} ({call.last})" if call.position else "in its first cluster"
            e.add_note(f"(raised in autojit({self.name}) {last})")
            raise
        finally:
            g.sinks.remove(call)
            if tape is not None:
                g.tape = None
                tape.release()
        with self._lock:
            self.calls += 1
            if tape is not None:
                self.stats["recorded"] += 1
                if tape.valid:
                    self._keep(sig, tape)
        return out

    def _keep(self, sig: tuple, tape: lazy_tape.Tape) -> None:
        """The recorded call's events join its signature's tree (under the lock)."""
        program = self._programs.pop(sig, None) or [{}, 0]
        self._programs[sig] = program
        if len(self._programs) > MAX_SIGNATURES:
            self._programs.pop(next(iter(self._programs)))
        for step in lazy_tape.insert(program[0], tape.events):
            if step.kind == lazy_tape.CUT and step.cluster is None:
                step.cluster = self._clusters.get(step.what)

    def _note(self, position: int, record: lazy_cut.Cut) -> None:
        with self._lock:
            cluster = self._clusters.get(record.key)
            if cluster is None:
                cluster = self._clusters[record.key] = Cluster(
                    len(self._clusters) + 1, position, record.ops, record.leaves, record.outputs, record.reason,
                    module_name=record.module_name)
            cluster.runs += 1
            cluster.compiles += int(record.compiled)
            cluster.op_by_op += int(record.op_by_op)

    # -- the report ---------------------------------------------------------------------------------------
    def clusters(self) -> list[Cluster]:
        """The clusters seen so far, in the order first seen."""
        with self._lock:
            return sorted(self._clusters.values(), key=lambda c: c.number)

    def report(self) -> str:
        """The clusters of this function: what ended each (the breaking op and the user's line), its size, how
        often it was compiled and run. A cluster compiled more than once was dropped from the cache between."""
        clusters = self.clusters()
        lines = [f"autojit({self.name}): {self.calls} call(s), {len(clusters)} cluster(s), "
                 f"{sum(c.compiles for c in clusters)} compile(s)"]
        for c in clusters:
            lines.append(f"  cluster {c.number} (#{c.position} in a call, {c.module_name}): {c.ops} ops, "
                         f"{c.inputs} inputs, {c.outputs} outputs; compiled {c.compiles}x, run {c.runs}x "
                         f"({c.op_by_op} of them op by op, before it was compiled)")
            lines.append(f"    ended by {c.ended_by}")
        return "\n".join(lines)


def _as_array(leaf: Any) -> Any:
    """numpy arguments become xlapy Arrays, as jit traces them: ops on them are recorded, not run by numpy."""
    if isinstance(leaf, (np.ndarray, np.generic)) and leaf.dtype.kind in "biufc":
        return Array(leaf)
    return leaf


def _flatten(args: tuple, kwargs: dict) -> tuple[list, Any]:
    """(leaves, treedef) of (args, kwargs), numpy leaves made Arrays."""
    leaves, tree = tree_flatten((args, kwargs))
    return [_as_array(v) for v in leaves], tree


class _Slow(Exception):
    """A leaf or node _fast_signature does not know: the pytree path decides."""


_SCALARS = (bool, int, float, complex, str)


def _fast_signature(args: tuple, kwargs: dict) -> tuple | None:
    """(signature, array values in leaf order) of a call whose pytree holds only tuples, lists, dicts, None,
    arrays and Python scalars, without building a PyTreeDef (a warm call's dispatch); None otherwise. An array
    leaf's part is (shape, dtype, weak type), a scalar's (type, value)."""
    parts: list = []
    values: list = []
    narrowed = dtypes._NARROW

    def walk(x: Any) -> Any:
        t = type(x)
        if t is Array:
            a = x.aval
            parts.append((a.shape, a.dtype, a.weak_type))
            values.append(x._value)
            return 0
        if t is np.ndarray or isinstance(x, np.generic):
            v = x if t is np.ndarray else np.asarray(x)
            dt = v.dtype
            if dt.kind not in "biufc" or (dt.itemsize == 8 and dt in narrowed and not dtypes.config.enable_x64):
                raise _Slow         # Array() would convert it: the pytree path does
            parts.append((v.shape, dt, False))
            values.append(v)
            return 0
        if t is tuple or t is list:
            return (t, tuple([walk(c) for c in x]))
        if t is dict:
            try:
                keys = tuple(sorted(x))
            except TypeError:
                raise _Slow from None
            return (keys, tuple([walk(x[k]) for k in keys]))
        if x is None:
            return None
        if t in _SCALARS:
            parts.append((t, x))
            return 1
        raise _Slow
    try:
        return ("fast", walk(args), walk(kwargs) if kwargs else None, tuple(parts)), values
    except _Slow:
        return None


def _signature(tree, leaves: list) -> tuple | None:
    """What a recorded call is keyed by: the pytree structure, each Array's (shape, dtype, weak type), each other
    leaf's type and value; None when a leaf has no hashable value (such a call is always recorded)."""
    parts = []
    for v in leaves:
        if is_concrete_array(v):
            parts.append(v.aval)
        else:
            try:
                hash(v)
            except TypeError:
                return None
            parts.append((type(v), v))
    return ("tree", tree, tuple(parts))


def autojit(fun: Callable | None = None) -> Any:
    """Auto-clustering (see the module docstring): usable as `autojit(f)` or `@autojit`."""
    if fun is None:
        return autojit
    if not callable(fun):
        from ..errors import XlapyError
        raise XlapyError(f"autojit expects a function, got {type(fun).__name__}")
    return AutoJitted(fun)


__all__ = ["autojit", "AutoJitted", "Cluster"]
