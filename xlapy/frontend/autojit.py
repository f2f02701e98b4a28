"""autojit: auto-clustering (TensorFlow's `tf_xla_auto_jit`) next to jit's must-compile (`jit_compile=True`).

`xlapy.autojit(f)(*args)` runs f with lazy recording (lazy/): its ops collect into a pending graph instead of
running, and where jit would raise ConcretizationError (unique, nonzero without size=, a boolean mask, an `if`
on a value, int()/float()/item(), a host callback that needs numpy values) the read of a value cuts the graph.
The ops before the cut are one cluster, compiled and run; the breaking op then runs on the host with concrete
values, as in eager mode; the ops after it record into the next cluster, cut at the next read or at f's
return. Each cluster is cached by its structure (ops, shapes, dtypes, wiring: lazy/cut.py), so a warm call
compiles nothing and builds no HLO: it re-runs f's Python, which only records (a dictionary look-up per op),
and replays the cached executables. A branch on a value is its own guard: the branch taken decides which ops
are recorded next, hence which cached continuation runs.

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

from .array import Array
from .lazy import cut as lazy_cut
from .lazy import state as lazy_state
from .lazy.reasons import CutReason
from .pytree import tree_map
from .tracer import current_trace


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
        self._clusters: dict[tuple, Cluster] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, fun, updated=())

    def __call__(self, *args, **kwargs):
        if current_trace() is not None:         # under jit / grad / vmap: traced like any function
            return self.fun(*args, **kwargs)
        lazy_cut.sync("values pending before an autojit call")
        g = lazy_state.graph()
        call = _Call(self)
        g.sinks.append(call)
        args, kwargs = tree_map(_as_array, (args, kwargs))
        try:
            with lazy_state.lazy(True):
                out = self.fun(*args, **kwargs)
                lazy_cut.sync(f"the return of {self.name}")
        except Exception as e:
            last = f"after cluster {call.position} ({call.last})" if call.position else "in its first cluster"
            e.add_note(f"(raised in autojit({self.name}) {last})")
            raise
        finally:
            g.sinks.remove(call)
        with self._lock:
            self.calls += 1
        return out

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


def autojit(fun: Callable | None = None) -> Any:
    """Auto-clustering (see the module docstring): usable as `autojit(f)` or `@autojit`."""
    if fun is None:
        return autojit
    if not callable(fun):
        from ..errors import XlapyError
        raise XlapyError(f"autojit expects a function, got {type(fun).__name__}")
    return AutoJitted(fun)


__all__ = ["autojit", "AutoJitted", "Cluster"]
