"""Interpreter rules for reduce, reduce-window and select-and-scatter.

Each op runs its called computation the fastest way reducers.py allows: a recognised combiner becomes a
numpy ufunc, an elementwise computation runs once per step on whole arrays ("lifted"), anything else
runs once per element. A float add-reduction (reduce, and reduce-window's windows) adds in summation.py's
order, accurate and shared with the CPU backend. Window positions that fall in padding or between
base-dilated elements are skipped, as XLA's evaluator skips them (they never reach the computation).
Recognised combiners read denormal operands as zero and flush denormal results, as the elementwise ops do.
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ...errors import ExecutionError
from ...hlo.attrs import Window, window_of
from .reducers import (call_lifted, call_scalar, compute_dtype, denormals_flushed, element, identity_of,
                       recognise, scatter_into, ufunc_for)
from .summation import LEAF, add_reduce


def _out_dtypes(inst) -> list[np.dtype]:
    shape = inst.shape
    return [s.dtype for s in (shape.tuple_shapes if shape.is_tuple else (shape,))]


def _pack(values: list[np.ndarray]) -> Any:
    return tuple(values) if len(values) > 1 else values[0]


# ---------------------------------------------------------------------------------------------------------
# reduce
# ---------------------------------------------------------------------------------------------------------
def _reduce(inst, args, ev):
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    dims = tuple(sorted(inst.attrs.get("dimensions", ())))
    comp = inst.attrs["to_apply"]
    dtypes = _out_dtypes(inst)
    kept = [d for d in range(inputs[0].ndim) if d not in dims]
    out_shape = tuple(inputs[0].shape[d] for d in kept)
    count = int(np.prod([inputs[0].shape[d] for d in dims], dtype=np.int64))
    if count == 0:
        return _pack([np.full(out_shape, init, dtype=dt) for init, dt in zip(inits, dtypes)])

    kind = recognise(comp) if n == 1 else None
    if kind is not None and kind != "assign":
        cdt = compute_dtype(inputs[0].dtype)
        if kind == "add" and cdt.kind == "f":
            return add_reduce(inputs[0], dims, inits[0], cdt).astype(dtypes[0])
        uf = ufunc_for(kind, cdt)
        # max/min pick an operand, so flushing what they read is exact; a product's intermediate results are
        # not flushed one by one (only the final one)
        partial = uf.reduce(denormals_flushed(inputs[0].astype(cdt, copy=False)), axis=dims, dtype=cdt)
        return denormals_flushed(uf(denormals_flushed(inits[0].astype(cdt)), partial)).astype(dtypes[0])

    # Generic reducer: bring the reduced dims last, then combine neighbours pairwise (a tree, which keeps
    # left-to-right order, so any associative reducer gives XLA's result).
    columns = [np.moveaxis(x, dims, range(len(kept), x.ndim)).reshape(out_shape + (count,)) for x in inputs]
    reduced = _tree_reduce(ev, comp, columns, out_shape)
    if reduced is not None:
        final = call_lifted(ev, comp, [np.broadcast_to(i, out_shape) for i in inits] + reduced, out_shape)
        if final is not None:
            return _pack([f.astype(dt) for f, dt in zip(final, dtypes)])
    return _pack(_reduce_scalar(ev, comp, columns, inits, out_shape, dtypes))


def _tree_reduce(ev, comp, columns: list[np.ndarray], out_shape) -> list[np.ndarray] | None:
    while columns[0].shape[-1] > 1:
        length = columns[0].shape[-1]
        half = length // 2
        left = [c[..., 0:2 * half:2] for c in columns]
        right = [c[..., 1:2 * half:2] for c in columns]
        combined = call_lifted(ev, comp, left + right, out_shape + (half,))
        if combined is None:
            return None
        if length % 2:
            combined = [np.concatenate([c, col[..., -1:].astype(c.dtype)], axis=-1)
                        for c, col in zip(combined, columns)]
        columns = combined
    return [c[..., 0] for c in columns]


def _reduce_scalar(ev, comp, columns, inits, out_shape, dtypes) -> list[np.ndarray]:
    outs = [np.empty(out_shape, dtype=dt) for dt in dtypes]
    for idx in np.ndindex(*out_shape):
        acc = [np.asarray(i) for i in inits]
        for k in range(columns[0].shape[-1]):
            acc = call_scalar(ev, comp, acc + [element(c, idx + (k,)) for c in columns])
        for o, a in zip(outs, acc):
            o[idx] = a
    return outs


# ---------------------------------------------------------------------------------------------------------
# windows: padded/dilated base, the slice of it each window offset reads
# ---------------------------------------------------------------------------------------------------------
class _WindowedBase:
    """The operand as the window sees it: base-dilated and padded (negative padding crops)."""

    def __init__(self, shape: tuple[int, ...], window: Window, out_shape: tuple[int, ...] | None = None):
        if len(window.dims) != len(shape):
            raise ExecutionError(f"window of rank {len(window.dims)} on an operand of rank {len(shape)}")
        self.window = window
        self.in_shape = shape
        self.spans, self.placement, self.crop = [], [], []
        for d, w in zip(shape, window.dims):
            dilated = (d - 1) * w.base_dilation + 1 if d > 0 else 0
            lo, hi = max(w.padding_low, 0), max(w.padding_high, 0)
            self.spans.append(dilated + lo + hi)
            self.placement.append(slice(lo, lo + dilated, w.base_dilation))
            self.crop.append(slice(max(-w.padding_low, 0), dilated + lo + hi - max(-w.padding_high, 0)))
        padded = [c.stop - c.start for c in self.crop]
        if out_shape is None:
            spans = [(w.size - 1) * w.window_dilation + 1 for w in window.dims]
            out_shape = tuple((p - s) // w.stride + 1 if p >= s else 0 for p, s, w in zip(padded, spans, window.dims))
        self.out_shape = tuple(out_shape)

    def embed(self, x: np.ndarray, fill: Any, dtype) -> np.ndarray:
        base = np.full(self.spans, fill, dtype=dtype)
        base[tuple(self.placement)] = x
        return base[tuple(self.crop)]

    def valid(self) -> np.ndarray | None:
        """Mask of real (not padding, not dilation-hole) positions; None when every position is real."""
        if all(w.base_dilation == 1 and w.padding_low <= 0 and w.padding_high <= 0 for w in self.window.dims):
            return None
        return self.embed(np.ones(self.in_shape, dtype=bool), False, bool)

    @property
    def offset_count(self) -> int:
        return int(np.prod([w.size for w in self.window.dims], dtype=np.int64))

    @property
    def window_axes(self) -> tuple[int, ...]:
        rank = len(self.in_shape)
        return tuple(range(rank, 2 * rank))

    def strided_view(self, base: np.ndarray) -> np.ndarray:
        """A read-only (outputs..., window...) view of the embedded base."""
        dims = self.window.dims
        strides = (tuple(s * w.stride for s, w in zip(base.strides, dims))
                   + tuple(s * w.window_dilation for s, w in zip(base.strides, dims)))
        return np.lib.stride_tricks.as_strided(base, self.out_shape + tuple(w.size for w in dims), strides,
                                               writeable=False)

    def offsets(self):
        """Each window offset in row-major order, with the slice of the base it reads for every output."""
        for k in itertools.product(*(range(w.size) for w in self.window.dims)):
            yield k, tuple(slice(kd * w.window_dilation, kd * w.window_dilation + (o - 1) * w.stride + 1, w.stride)
                           for kd, w, o in zip(k, self.window.dims, self.out_shape))


# ---------------------------------------------------------------------------------------------------------
# reduce-window
# ---------------------------------------------------------------------------------------------------------
_MAX_OFFSET_LOOP = 64   # windows with more positions than this reduce a strided view in one call


def _prefix_scan_axis(shape, window: Window) -> tuple[int, bool] | None:
    """(axis, reverse) when the window is a prefix (or suffix) scan along one axis and trivial elsewhere."""
    scan = None
    for axis, (n, w) in enumerate(zip(shape, window.dims)):
        if w.stride != 1 or w.base_dilation != 1 or w.window_dilation != 1:
            return None
        if w.size == 1 and w.padding_low == 0 and w.padding_high == 0:
            continue
        if scan is not None or w.size != n or n < 2:
            return None
        if (w.padding_low, w.padding_high) == (n - 1, 0):
            scan = (axis, False)
        elif (w.padding_low, w.padding_high) == (0, n - 1):
            scan = (axis, True)
        else:
            return None
    return scan


def _reduce_window(inst, args, ev):
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    comp = inst.attrs["to_apply"]
    dtypes = _out_dtypes(inst)
    geo = _WindowedBase(inputs[0].shape, window_of(inst))
    out_shape = geo.out_shape
    if 0 in out_shape:
        return _pack([np.empty(out_shape, dtype=dt) for dt in dtypes])

    kind = recognise(comp) if n == 1 else None
    if kind is not None and kind != "assign":
        cdt = compute_dtype(inputs[0].dtype)
        uf = ufunc_for(kind, cdt)
        x = denormals_flushed(inputs[0].astype(cdt, copy=False))
        init = denormals_flushed(inits[0].astype(cdt))
        scan = _prefix_scan_axis(x.shape, geo.window)
        if scan is not None:     # cumsum and friends: O(n), not O(n^2); only the outputs are flushed
            axis, reverse = scan
            if not reverse:      # init first, then x[0], x[1], ...: the window loop's order, bit for bit
                head = np.broadcast_to(init, x.shape[:axis] + (1,) + x.shape[axis + 1:])
                partial = uf.accumulate(np.concatenate([head, x], axis=axis), axis=axis, dtype=cdt)
                return denormals_flushed(np.delete(partial, 0, axis=axis)).astype(dtypes[0])
            # a suffix window: numpy's flip(cumsum(flip(x))) order, then init (XLA leaves the order open)
            flip = (slice(None),) * axis + (slice(None, None, -1),)
            partial = uf.accumulate(x[flip], axis=axis, dtype=cdt)[flip]
            return denormals_flushed(uf(init, partial)).astype(dtypes[0])
        base = geo.embed(x, identity_of(kind, cdt), cdt)
        if kind == "add" and cdt.kind == "f" and geo.offset_count > LEAF:    # summation.py's leaves
            return add_reduce(geo.strided_view(base), geo.window_axes, init, cdt).astype(dtypes[0])
        if geo.offset_count > _MAX_OFFSET_LOOP:   # big windows (global pooling): one reduce over a strided view
            partial = uf.reduce(geo.strided_view(base), axis=geo.window_axes, dtype=cdt)
            return denormals_flushed(uf(init, partial)).astype(dtypes[0])
        acc = np.full(out_shape, init, dtype=cdt)
        for _, window_slice in geo.offsets():      # for a sum, summation.py's order: init, then each offset
            acc = denormals_flushed(uf(acc, base[window_slice]))
        return acc.astype(dtypes[0])

    scan = _prefix_scan_axis(inputs[0].shape, geo.window)
    if scan is not None and not scan[1]:
        done = _lifted_prefix_scan(ev, comp, inputs, inits, dtypes, scan[0])
        if done is not None:
            return _pack(done)
    bases = [geo.embed(x, np.zeros((), x.dtype), x.dtype) for x in inputs]
    valid = geo.valid()
    acc = [np.full(out_shape, i, dtype=dt) for i, dt in zip(inits, dtypes)]
    for _, window_slice in geo.offsets():
        new = call_lifted(ev, comp, acc + [b[window_slice] for b in bases], out_shape)
        if new is None:
            return _pack(_reduce_window_scalar(ev, comp, geo, bases, valid, inits, dtypes))
        if valid is not None:
            mask = valid[window_slice]
            new = [np.where(mask, nv, a) for nv, a in zip(new, acc)]
        acc = [nv.astype(dt) for nv, dt in zip(new, dtypes)]
    return _pack(acc)


def _lifted_prefix_scan(ev, comp, inputs, inits, dtypes, axis) -> list[np.ndarray] | None:
    """A forward scan with any elementwise reducer: acc = f(acc, x[..., k, ...]) for k = 0, 1, ... (n lifted
    calls on slices, the window loop's order); None when the reducer cannot be lifted."""
    row = inputs[0].shape[:axis] + inputs[0].shape[axis + 1:]
    acc = [np.broadcast_to(np.asarray(i, dtype=dt), row) for i, dt in zip(inits, dtypes)]
    outs = [np.empty(inputs[0].shape, dtype=dt) for dt in dtypes]
    for k in range(inputs[0].shape[axis]):
        at = (slice(None),) * axis + (k,)
        new = call_lifted(ev, comp, acc + [x[at] for x in inputs], row)
        if new is None:
            return None
        acc = [np.asarray(v).astype(dt) for v, dt in zip(new, dtypes)]
        for o, a in zip(outs, acc):
            o[at] = a
    return outs


def _reduce_window_scalar(ev, comp, geo, bases, valid, inits, dtypes) -> list[np.ndarray]:
    outs = [np.empty(geo.out_shape, dtype=dt) for dt in dtypes]
    for out_idx in np.ndindex(*geo.out_shape):
        acc = [np.asarray(i) for i in inits]
        for _, window_slice in geo.offsets():
            pos = tuple(s.start + o * s.step for s, o in zip(window_slice, out_idx))
            if valid is None or valid[pos]:
                acc = call_scalar(ev, comp, acc + [element(b, pos) for b in bases])
        for o, a in zip(outs, acc):
            o[out_idx] = a
    return outs


# ---------------------------------------------------------------------------------------------------------
# select-and-scatter
# ---------------------------------------------------------------------------------------------------------
def _select_and_scatter(inst, args, ev):
    operand, source, init = args
    select, scatter = inst.attrs["select"], inst.attrs["scatter"]
    geo = _WindowedBase(operand.shape, window_of(inst), source.shape)
    base = geo.embed(operand, np.zeros((), operand.dtype), operand.dtype)
    flat_index = geo.embed(np.arange(operand.size, dtype=np.int64).reshape(operand.shape), -1, np.int64)
    valid = flat_index >= 0

    # For every window (one per source element) find the selected position: walk the window in order and
    # let a new element replace the selected one whenever select(selected, new) is false.
    shape = source.shape
    chosen = np.full(shape, -1, dtype=np.int64)
    chosen_value = np.zeros(shape, dtype=operand.dtype)
    for _, window_slice in geo.offsets():
        cand, cand_index, cand_valid = base[window_slice], flat_index[window_slice], valid[window_slice]
        have = chosen >= 0
        keep = _select(ev, select, chosen_value, cand, shape)
        take = cand_valid & (~have | ~keep)
        chosen = np.where(take, cand_index, chosen)
        chosen_value = np.where(take, cand, chosen_value)

    out = np.full(operand.shape, init, dtype=inst.shape.dtype).reshape(-1)
    hit = chosen >= 0
    targets, values = chosen[hit], source[hit]      # row-major over source: XLA's order
    scatter_into([out], targets, [values], scatter, ev)
    return out.reshape(operand.shape)


def _select(ev, select, current: np.ndarray, candidate: np.ndarray, shape) -> np.ndarray:
    lifted = call_lifted(ev, select, [current, candidate], shape)
    if lifted is not None:
        return lifted[0].astype(bool)
    keep = np.empty(shape, dtype=bool)
    for idx in np.ndindex(*shape):
        keep[idx] = bool(call_scalar(ev, select, [element(current, idx), element(candidate, idx)])[0])
    return keep


HANDLERS = {
    "reduce": _reduce,
    "reduce-window": _reduce_window,
    "select-and-scatter": _select_and_scatter,
}
