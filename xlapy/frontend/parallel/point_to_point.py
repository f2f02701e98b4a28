"""jax.lax's point-to-point and ragged collectives: psend, precv and ragged_all_to_all (layer: frontend ops; they
compose lax ops and the collectives of collectives.py).

psend / precv. JAX lowers them to HLO send / recv, on GPUs only (on its CPU they raise NotImplementedError). In
xlapy a psend and the precv that takes its token (or, given `lax.create_token()`, the oldest unreceived psend
of this trace over the same axes and perm with out_shape's type) are one exchange: precv returns the psend's x
moved by `ppermute(x, axis_name, perm)`, which is what the matched NCCL send / recv pair computes (members that
no pair sends to receive zeros), and what JAX's vmap rule for both is. A psend that no precv receives sends
nothing; a precv with no matching psend is an error.

ragged_all_to_all. Over device axes (pmap / shard_map at the top level) it is the HLO ragged-all-to-all op,
with its replica groups (the backends implement it: interpreter/collectives.py). Over an emulated axis (vmap,
shard_map inside jit) it is composed from all_gather and all_to_all: every member's operand, input offsets and
send sizes gathered, and this member's received slices scattered into `output` at
`all_to_all(output_offsets, tiled=True)`. The checks are JAX's abstract evaluation's (integer 1-D offsets and
sizes of one length, a multiple of the axis size), plus operand and output agreeing in dtype and trailing dims.
"""
from __future__ import annotations

import weakref
from typing import Any, Sequence

import numpy as np

from ...errors import XlapyError
from ...hlo import Shape, type_name_of_dtype
from ..lax_more import Token
from ..lax_operands import convert_element_type
from ..lax_elementwise import select
from ..lax_shapes import broadcast_in_dim, broadcasted_iota, dynamic_slice, reshape
from ..pytree import tree_flatten, tree_unflatten
from ..tracer import aval, bind, current_trace
from .collectives import _frames, _no_groups, _size, all_gather, all_to_all, axis_index, collective_attrs, ppermute

__all__ = ["psend", "precv", "ragged_all_to_all", "SendToken"]


# -- psend / precv ----------------------------------------------------------------------------------
class SendToken(Token):
    """psend's token: the value sent, over which axes and by which perm, until a precv receives it."""

    def __init__(self, value: Any, axes: tuple, perm: tuple):
        self.value, self.axes, self.perm = value, axes, perm
        self.received = False

    def __repr__(self) -> str:
        return "Token"


_PENDING: "weakref.WeakKeyDictionary[Any, list[SendToken]]" = weakref.WeakKeyDictionary()
_PENDING_UNTRACED: list[SendToken] = []


def _pending() -> list[SendToken]:
    trace = current_trace()
    return _PENDING_UNTRACED if trace is None else _PENDING.setdefault(trace, [])


def _axes(axis_name: Any) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (list, tuple)) else (axis_name,)


def _perm(perm: Sequence, what: str) -> tuple:
    try:
        pairs = tuple((int(s), int(d)) for s, d in perm)
    except (TypeError, ValueError):
        raise XlapyError(f"{what}: perm must be a list of (source_index, destination_index) pairs, got "
                         f"{perm!r}") from None
    return pairs


def psend(x: Any, axis_name: Any, perm: Sequence) -> Any:
    """Send x (a pytree: one token per leaf) along the named axes by `perm` (jax.lax.psend); the token goes to
    the precv that receives it."""
    axes, pairs = _axes(axis_name), _perm(perm, "psend")
    _frames(axes, "psend")
    leaves, tree = tree_flatten(x)
    tokens = []
    for leaf in leaves:
        ppermute_checked = ppermute(leaf, axes, pairs)      # checks perm against the axis now, as JAX does
        token = SendToken(ppermute_checked, axes, pairs)
        _pending().append(token)
        tokens.append(token)
    return tree_unflatten(tree, tokens)


def _matches(token: SendToken, axes: tuple, pairs: tuple, shape: tuple, dtype) -> bool:
    a = aval(token.value)
    return token.axes == axes and token.perm == pairs and tuple(a.shape) == shape and np.dtype(a.dtype) == dtype


def precv(token: Any, out_shape: Any, axis_name: Any, perm: Sequence) -> Any:
    """Receive, by `perm` along the named axes, the value a matching psend sent (jax.lax.precv); out_shape (a
    ShapeDtypeStruct) is its type."""
    axes, pairs = _axes(axis_name), _perm(perm, "precv")
    _frames(axes, "precv")
    try:
        shape, dtype = tuple(out_shape.shape), np.dtype(out_shape.dtype)
    except (AttributeError, TypeError):
        raise XlapyError(f"precv: out_shape must be a ShapeDtypeStruct, got {type(out_shape).__name__}") from None
    pending = _pending()
    if isinstance(token, SendToken):
        if not _matches(token, axes, pairs, shape, dtype):
            a = aval(token.value)
            raise XlapyError(f"precv: the token's psend sent {a.dtype}{list(a.shape)} over {token.axes} with perm "
                             f"{list(token.perm)}; this precv expects {dtype}{list(shape)} over {axes} with perm "
                             f"{list(pairs)}")
        send = token
    elif isinstance(token, Token):
        send = next((t for t in pending if not t.received and _matches(t, axes, pairs, shape, dtype)), None)
        if send is None:
            raise XlapyError(f"precv: no psend of {dtype}{list(shape)} over {axes} with perm {list(pairs)} in "
                             f"this trace to receive (xlapy runs a psend and its precv as one exchange)")
    else:
        raise XlapyError(f"precv: token must come from psend or lax.create_token(), got {type(token).__name__}")
    if send.received:
        raise XlapyError("precv: this psend's value was received already")
    send.received = True
    if send in pending:
        pending.remove(send)
    return send.value


# -- ragged_all_to_all ------------------------------------------------------------------------------
_NAMES = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")


def _check_ragged(operand, output, index_args) -> tuple[int, np.dtype]:
    a, o = aval(operand), aval(output)
    for name, v in zip(_NAMES, index_args):
        av = aval(v)
        if not np.issubdtype(av.dtype, np.integer):
            raise ValueError(f"ragged_all_to_all {name} must be integer type.")
        if len(av.shape) != 1 or av.shape[0] < 1:
            raise ValueError(f"ragged_all_to_all {name} must be rank 1 with positive dimension size, but got "
                             f"shape {tuple(av.shape)}")
    lengths = {aval(v).shape[0] for v in index_args}
    if len(lengths) != 1:
        raise ValueError(f"ragged_all_to_all: {', '.join(_NAMES)} must have one length, got "
                         f"{[aval(v).shape[0] for v in index_args]}")
    if a.ndim < 1 or a.ndim != o.ndim or tuple(a.shape[1:]) != tuple(o.shape[1:]) or a.dtype != o.dtype:
        raise XlapyError(f"ragged_all_to_all: operand {a.dtype}{list(a.shape)} and output {o.dtype}{list(o.shape)} "
                         f"must have one dtype and differ only in their leading dimension")
    wide = any(np.dtype(aval(v).dtype).itemsize == 8 for v in index_args)
    return lengths.pop(), np.dtype(np.int64 if wide else np.int32)


def ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes, *, axis_name,
                      axis_index_groups=None):
    """jax.lax.ragged_all_to_all: send operand[input_offsets[i]:][:send_sizes[i]] to member i // (K / n), which
    writes it into its `output` at this member's output_offsets[i]; returns the updated output."""
    _no_groups(axis_index_groups, "ragged_all_to_all")
    names, frames = _frames(axis_name, "ragged_all_to_all")
    n = _size(frames)
    index_args = (input_offsets, send_sizes, output_offsets, recv_sizes)
    length, itype = _check_ragged(operand, output, index_args)
    if length % n:
        raise XlapyError(f"ragged_all_to_all: the offsets and sizes have length {length}, which must be a multiple "
                         f"of the size {n} of the axis {names}")
    index_args = tuple(convert_element_type(v, itype) for v in index_args)
    if all(f.kind == "device" for f in frames):
        o = aval(output)
        attrs = collective_attrs(names, frames, global_ids=False)
        return bind("ragged-all-to-all", [operand, output, *index_args], attrs,
                    shape=Shape.array(type_name_of_dtype(o.dtype), tuple(o.shape)), name="ragged-all-to-all")
    return _ragged_composed(operand, output, *index_args, axis_name=names, n=n, length=length, itype=itype)


def _ragged_composed(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes, *, axis_name,
                     n: int, length: int, itype):
    """ragged_all_to_all from all_gather / all_to_all (any axis kind): scatter each sender's slices for me."""
    del recv_sizes                       # the senders' send_sizes say the same (JAX's precondition)
    k = length // n
    a = aval(operand)
    rows, out_rows = a.shape[0], aval(output).shape[0]
    me = convert_element_type(axis_index(axis_name), itype)
    at = reshape(all_to_all(output_offsets, axis_name, 0, 0, tiled=True), (n, k))       # where each slice lands
    starts = dynamic_slice(all_gather(input_offsets, axis_name), (0, me * k), (n, k))   # (n, k): senders' starts
    sizes = dynamic_slice(all_gather(send_sizes, axis_name), (0, me * k), (n, k))
    data = all_gather(operand, axis_name)                                                 # (n, rows, ...)
    t = broadcasted_iota(itype, (n, k, rows), 2)
    src = starts[:, :, None] + t
    dst = at[:, :, None] + t
    valid = (t < sizes[:, :, None]) & (src < rows) & (dst < out_rows) & (dst >= 0) & (src >= 0)
    sender = broadcasted_iota(itype, (n, k, rows), 0)
    values = data[sender, src * valid]                                                    # (n, k, rows, ...)
    # rows that are not sent are zero (and so is their derivative: the scatter below drops them)
    shape = tuple(aval(values).shape)
    values = select(broadcast_in_dim(valid, shape, (0, 1, 2)), values, broadcast_in_dim(
        np.zeros((), a.dtype), shape, ()))
    dst = dst * valid + (1 - valid.astype(itype)) * out_rows                             # invalid rows: dropped
    flat = values.reshape((n * k * rows,) + tuple(a.shape[1:]))
    return output.at[dst.reshape(-1)].set(flat, mode="drop")
