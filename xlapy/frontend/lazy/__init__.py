"""Lazy eager mode: ops outside jit record into a pending graph, cut and compiled when a value is needed.

  state.py    the switch (XLAPY_LAZY=1, set_lazy, `with lazy():`) and each thread's pending graph
  graph.py    recording: Node, LazyArray (an Array whose value is owed by a node), the per-key shape cache
  reasons.py  why a graph was cut: the read, the xlapy function that made it, the user's line
  cut.py      the cut: live values -> one module keyed by structure, compiled once, replayed from the cache
  grad.py     value_and_grad outside jit: the function recorded, its derivative derived once per structure
  inline.py   a jitted call on pending values: one `call` node of its traced computation

eager.py's `run_eagerly` hands every op to `record` while `enabled()`; reading a LazyArray's value (np.asarray,
print, item, bool, float, ...) cuts. `sync()` cuts explicitly.
"""
from .cut import Cut, clear_lazy_cache, lazy_stats, materialize, sync
from .graph import LazyArray, is_pending, op_key, record
from .reasons import CutReason
from .state import MAX_NODES, enabled, lazy, set_lazy

__all__ = ["Cut", "CutReason", "LazyArray", "MAX_NODES", "clear_lazy_cache", "enabled", "is_pending",
           "lazy", "lazy_stats", "materialize", "op_key", "record", "set_lazy", "sync"]
