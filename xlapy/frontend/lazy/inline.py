"""A jitted call on pending values in lazy mode: its traced computation joins the pending graph as one `call`
node (the jitted function is still traced and compiled once per signature; only its execution waits for the
cut, fused with what surrounds it). jit.py hands over when an argument leaf is pending, the function has no
donated arguments (their buffers would be read later) and no explicit backend (the cut runs on the default)."""
from __future__ import annotations

from typing import Any, Sequence

from ..array import with_weak_type
from ..pytree import tree_unflatten
from ..tracer import bind
from .graph import is_pending, is_watched


def wants_inline(leaves: Sequence[Any]) -> bool:
    """A pending argument, or a value of a call autojit records (its read would be a guard: it joins instead)."""
    return any(is_pending(leaf) or is_watched(leaf) for leaf in leaves)


def call_lowered(lowered: Any, leaves: Sequence[Any]) -> Any:
    """The output pytree of `lowered` (a jit Lowered) on `leaves`, recorded as one call node."""
    module = lowered.module
    outs = bind("call", list(leaves), {"to_apply": module.entry}, name=module.name)
    outs = outs if isinstance(outs, list) else [outs]
    outs = [with_weak_type(o, True) if w else o for o, w in zip(outs, lowered.out_weak)]
    return tree_unflatten(lowered.out_tree, outs)
