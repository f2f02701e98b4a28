"""Interpreter rules for gather and scatter, vectorized with numpy advanced indexing.

Both ops pair a batch of index vectors (start_indices / scatter_indices, the index vector along
index_vector_dim, or an implicit trailing 1 when index_vector_dim == rank) with a window of the operand.
For every operand dimension d the window start is
  - the index vector's component k            when d == start_index_map[k] (scatter_dims_to_operand_dims[k])
  - the position along the batch dimension     when d is the i-th operand/input batching dim (its partner
                                                 is the i-th start_indices/scatter_indices batching dim)
  - 0                                          otherwise.
Gather clamps each start so the slice stays inside the operand; scatter skips an update window that
does not fit entirely (XLA's evaluator and CPU backend both do).
"""
from __future__ import annotations

import numpy as np

from .reducers import index_array, scatter_into


def _index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """Indices as (batch dims..., K) int64, K the index vector length."""
    idx = index_array(indices)
    if index_vector_dim >= idx.ndim:
        return idx[..., None]
    return np.moveaxis(idx, index_vector_dim, -1)


def _starts(vectors: np.ndarray, rank: int, index_map, operand_batching, indices_batching,
            index_vector_dim: int) -> list[np.ndarray]:
    """The window start of each operand dimension, each broadcastable to the batch shape."""
    batch_shape = vectors.shape[:-1]
    starts: list[np.ndarray] = [np.zeros((1,) * len(batch_shape), dtype=np.int64) for _ in range(rank)]
    for k, d in enumerate(index_map):
        starts[d] = vectors[..., k]
    for d, b in zip(operand_batching, indices_batching):
        axis = b if b < index_vector_dim else b - 1
        shape = [1] * len(batch_shape)
        shape[axis] = batch_shape[axis]
        starts[d] = np.arange(batch_shape[axis], dtype=np.int64).reshape(shape)
    return starts


def _gather(inst, args, ev):
    operand, indices = args
    a = inst.attrs
    offset_dims = tuple(a.get("offset_dims", ()))
    collapsed = set(a.get("collapsed_slice_dims", ()))
    batching = tuple(a.get("operand_batching_dims", ()))
    slice_sizes = tuple(a["slice_sizes"])
    ivd = a["index_vector_dim"]
    vectors = _index_vectors(indices, ivd)
    batch_shape = vectors.shape[:-1]
    nb, rank = len(batch_shape), operand.ndim
    starts = _starts(vectors, rank, tuple(a.get("start_index_map", ())), batching,
                     tuple(a.get("start_indices_batching_dims", ())), ivd)

    # Index operand with arrays shaped (batch..., slice dims...): start + offset within the slice.
    index = []
    for d in range(rank):
        start = np.clip(starts[d], 0, max(operand.shape[d] - slice_sizes[d], 0))
        start = np.broadcast_to(start, batch_shape).reshape(batch_shape + (1,) * rank)
        offset_shape = [1] * (nb + rank)
        offset_shape[nb + d] = slice_sizes[d]
        index.append(start + np.arange(slice_sizes[d], dtype=np.int64).reshape(offset_shape))
    window = operand[tuple(index)] if rank else np.broadcast_to(operand, batch_shape)

    kept = tuple(slice_sizes[d] for d in range(rank) if d not in collapsed and d not in batching)
    window = window.reshape(batch_shape + kept)
    batch_axes = iter(range(nb))
    axes = [nb + offset_dims.index(i) if i in offset_dims else next(batch_axes) for i in range(nb + len(kept))]
    # np.array, not np.ascontiguousarray: the latter turns a rank-0 result into rank 1
    return np.array(np.transpose(window, axes), dtype=inst.shape.dtype, order="C")


def _scatter(inst, args, ev):
    n = (len(args) - 1) // 2
    operands, indices, updates = args[:n], args[n], args[n + 1:]
    a = inst.attrs
    window_dims = tuple(a.get("update_window_dims", ()))
    inserted = set(a.get("inserted_window_dims", ()))
    batching = tuple(a.get("input_batching_dims", ()))
    ivd = a["index_vector_dim"]
    rank = operands[0].ndim
    vectors = _index_vectors(indices, ivd)
    starts = _starts(vectors, rank, tuple(a.get("scatter_dims_to_operand_dims", ())), batching,
                     tuple(a.get("scatter_indices_batching_dims", ())), ivd)

    # Updates reordered as (scatter dims..., window dims...): XLA applies them in this order.
    upd_rank = updates[0].ndim
    scatter_dims = [d for d in range(upd_rank) if d not in window_dims]
    perm = scatter_dims + list(window_dims)
    values = [np.transpose(u, perm) for u in updates]
    scatter_shape = tuple(updates[0].shape[d] for d in scatter_dims)
    window_shape = tuple(updates[0].shape[d] for d in window_dims)
    nw = len(window_shape)

    window_operand_dims = [d for d in range(rank) if d not in inserted and d not in batching]
    # Flat operand position = (window start, one per scatter index) + (offset within the window).
    fits = np.ones(scatter_shape, dtype=bool)
    start_flat = np.zeros(scatter_shape, dtype=np.int64)
    offset_flat = np.zeros(window_shape, dtype=np.int64)
    stride = 1
    for d in reversed(range(rank)):
        start = np.broadcast_to(starts[d], scatter_shape)
        size = window_shape[window_operand_dims.index(d)] if d in window_operand_dims else 1
        fits &= (start >= 0) & (start <= operands[0].shape[d] - size)
        start_flat += start * stride
        if d in window_operand_dims:
            axis_shape = [1] * nw
            axis_shape[window_operand_dims.index(d)] = size
            offset_flat += (np.arange(size, dtype=np.int64) * stride).reshape(axis_shape)
        stride *= operands[0].shape[d]

    # Keep the windows that fit, as rows of window elements; row-major order is XLA's update order.
    rows, cols = int(np.prod(scatter_shape, dtype=np.int64)), int(np.prod(window_shape, dtype=np.int64))
    keep = fits.reshape(rows)
    start_flat, picked = start_flat.reshape(rows), [v.reshape(rows, cols) for v in values]
    if not keep.all():
        start_flat, picked = start_flat[keep], [p[keep] for p in picked]
    targets = (start_flat[:, None] + offset_flat.reshape(1, cols)).reshape(-1)
    picked = [p.reshape(-1) for p in picked]
    outs = [np.array(o, dtype=dt, copy=True).reshape(-1) for o, dt in zip(operands, _out_dtypes(inst))]
    scatter_into(outs, targets, picked, a["to_apply"], ev)
    results = [o.reshape(operands[0].shape) for o in outs]
    return tuple(results) if n > 1 else results[0]


def _out_dtypes(inst) -> list[np.dtype]:
    shape = inst.shape
    return [s.dtype for s in (shape.tuple_shapes if shape.is_tuple else (shape,))]


HANDLERS = {
    "gather": _gather,
    "scatter": _scatter,
}
