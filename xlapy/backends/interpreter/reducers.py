"""Running the computations that reduce, reduce-window, scatter and select-and-scatter call.

Three speeds, fastest first, each falling back to the next:
  1. recognised: the computation is `root = OP(p0, p1)` for a row of COMBINERS (or "assign", root = p1);
     the caller uses the numpy ufunc directly (ufunc.reduce, ufunc.at) on operands read through
     `denormals_flushed`, as the elementwise op would read them (XLA:CPU's DAZ); a float add-reduction runs in
     summation.py's order instead.
  2. lifted: the computation is built only from elementwise ops, so running it once on whole arrays
     (instead of 0-d scalars) computes it for every element at once; `call_lifted`.
  3. scalar: one `ev.call` per element, on 0-d arrays; `call_scalar`.
"""
from __future__ import annotations

from typing import Any, Sequence

import ml_dtypes
import numpy as np

from ...errors import XlapyError
from ...hlo import Computation, opinfo
from .summation import flushed

# root opcode -> (ufunc for numbers, ufunc for pred)
COMBINERS: dict[str, tuple[np.ufunc, np.ufunc]] = {
    "add": (np.add, np.logical_or),
    "multiply": (np.multiply, np.logical_and),
    "maximum": (np.maximum, np.logical_or),
    "minimum": (np.minimum, np.logical_and),
    "and": (np.bitwise_and, np.logical_and),
    "or": (np.bitwise_or, np.logical_or),
    "xor": (np.bitwise_xor, np.logical_xor),
}

# Opcodes that act elementwise on arrays of any shape, so a scalar computation of them can be lifted.
_NOT_LIFTABLE = frozenset({"map", "rng", "stochastic-convert"})
_LIFTABLE_STRUCTURAL = frozenset({"parameter", "constant", "tuple", "get-tuple-element"})


def recognise(comp: Computation) -> str | None:
    """'add'/'maximum'/... when comp is `OP(p0, p1)` (either order), 'assign' when its root is p1, else None."""
    root = comp.root
    params = comp.parameters
    if len(params) != 2 or root is None:
        return None
    if root is params[1]:
        return "assign"
    if root.opcode in COMBINERS and len(root.operands) == 2 and set(map(id, root.operands)) == {id(p) for p in params}:
        return root.opcode
    return None


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype numpy computes a recognised combiner in: float32 for the narrow floats, else dtype."""
    dtype = np.dtype(dtype)
    if dtype.kind == "V" or (dtype.kind == "f" and dtype.itemsize < 4) or dtype.type.__module__.startswith("ml_dtypes"):
        if _is_float(dtype):
            return np.dtype(np.float32)
        return np.dtype(np.int32) if _is_signed_int(dtype) else np.dtype(np.uint32)
    return dtype


def denormals_flushed(x: np.ndarray) -> np.ndarray:
    """x (in a compute dtype) as XLA:CPU's arithmetic reads it: f32/f64 denormals as zeros of their sign (the
    elementwise rules do the same through element_types.compute_form); other dtypes unchanged."""
    x = np.asarray(x)
    return flushed(x) if x.dtype in (np.float32, np.float64) else x


def _is_float(dtype: np.dtype) -> bool:
    if dtype.kind == "f":
        return True
    try:
        ml_dtypes.finfo(dtype)
        return True
    except Exception:
        return False


def _is_signed_int(dtype: np.dtype) -> bool:
    try:
        return ml_dtypes.iinfo(dtype).min < 0
    except Exception:
        return dtype.kind == "i"


def ufunc_for(kind: str, dtype: np.dtype) -> np.ufunc:
    numeric, logical = COMBINERS[kind]
    if np.dtype(dtype) == np.bool_:
        return logical
    if kind in ("maximum", "minimum") and np.dtype(dtype).kind == "f":
        return ZeroOrdered(numeric, kind)
    return numeric


class ZeroOrdered:
    """np.maximum / np.minimum on floats with -0 < +0, as XLA:CPU's max and min (IEEE 754-2019, llvm.maximum):
    the ufunc's result, except that a zero result is the winning zero (+0 for max, -0 for min) wherever one took
    part. Offers the ufunc methods the reducers call (call, reduce, accumulate, at)."""

    def __init__(self, ufunc: np.ufunc, kind: str):
        self.ufunc, self.negative_wins = ufunc, kind == "minimum"

    def _wins(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        return (x == 0) & (np.signbit(x) == self.negative_wins)

    def _fix(self, result: np.ndarray, won: np.ndarray) -> np.ndarray:
        result = np.asarray(result)
        winner = np.copysign(np.zeros((), result.dtype), -1.0 if self.negative_wins else 1.0)
        return np.where(result == 0, np.where(won, winner, -winner), result).astype(result.dtype)

    def __call__(self, a, b):
        return self._fix(self.ufunc(a, b), self._wins(a) | self._wins(b))

    def reduce(self, x, axis=0, dtype=None):
        return self._fix(self.ufunc.reduce(x, axis=axis, dtype=dtype), np.logical_or.reduce(self._wins(x), axis=axis))

    def accumulate(self, x, axis=0, dtype=None):
        return self._fix(self.ufunc.accumulate(x, axis=axis, dtype=dtype),
                         np.logical_or.accumulate(self._wins(x), axis=axis))

    def at(self, a: np.ndarray, indices, b) -> None:
        won = self._wins(a)
        np.logical_or.at(won, indices, self._wins(b))
        self.ufunc.at(a, indices, b)
        a[...] = self._fix(a, won)


def identity_of(kind: str, dtype: np.dtype) -> Any:
    """The value x with OP(x, y) == y for every y of `dtype` (dtype is a compute dtype)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return kind in ("multiply", "minimum", "and")
    if kind == "add" and dtype.kind == "f":
        return dtype.type(-0.0)         # x + -0 is x for every x; x + +0 turns -0 into +0
    if kind in ("add", "or", "xor"):
        return dtype.type(0)
    if kind == "multiply":
        return dtype.type(1)
    if kind == "and":
        return np.array(-1).astype(dtype)[()] if dtype.kind == "i" else np.iinfo(dtype).max
    if dtype.kind in "fc":
        return dtype.type(-np.inf if kind == "maximum" else np.inf)
    info = np.iinfo(dtype)
    return info.min if kind == "maximum" else info.max


def is_liftable(comp: Computation) -> bool:
    """True when every instruction is elementwise (or a parameter/scalar constant/tuple plumbing)."""
    for inst in comp.instructions:
        op = inst.opcode
        if op in _LIFTABLE_STRUCTURAL:
            if op == "constant" and not (inst.shape.is_array and inst.shape.rank == 0):
                return False
            continue
        if op in _NOT_LIFTABLE or not opinfo(op).is_elementwise:
            return False
    return all(p.shape.is_array and p.shape.rank == 0 for p in comp.parameters)


def _result_dtypes(comp: Computation) -> list[np.dtype]:
    shape = comp.root.shape
    return [s.dtype for s in (shape.tuple_shapes if shape.is_tuple else (shape,))]


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, tuple) else [value]


def call_lifted(ev, comp: Computation, args: Sequence[np.ndarray], shape: tuple[int, ...]) -> list[np.ndarray] | None:
    """Run scalar computation `comp` elementwise over arrays of `shape`; None when it cannot be lifted."""
    if not is_liftable(comp):
        return None
    try:
        results = _as_list(ev.call(comp, list(args), lifted=True))
    except XlapyError:       # some handler wants true scalars: the caller runs element by element
        return None
    dtypes = _result_dtypes(comp)
    out = []
    for r, dt in zip(results, dtypes):
        r = np.asarray(r)
        if r.shape != shape:
            try:
                r = np.broadcast_to(r, shape)
            except ValueError:
                return None
        out.append(np.asarray(r, dtype=dt))
    return out


def call_scalar(ev, comp: Computation, args: Sequence[Any]) -> list[np.ndarray]:
    """Run `comp` once on 0-d values; returns its results as a list of 0-d arrays."""
    return [np.asarray(r) for r in _as_list(ev.call(comp, [np.asarray(a) for a in args]))]


def element(array: np.ndarray, index) -> np.ndarray:
    """array[index] as a 0-d array of the array's dtype (what a scalar computation expects)."""
    return np.asarray(array[index], dtype=array.dtype)


def index_array(indices: np.ndarray) -> np.ndarray:
    """Any integer index array as int64, unsigned values past int64's range saturated (they are out of bounds)."""
    indices = np.asarray(indices)
    if indices.dtype.kind == "u" and indices.dtype.itemsize >= 8:
        indices = np.minimum(indices, np.uint64(np.iinfo(np.int64).max))
    return indices.astype(np.int64)


def scatter_into(outs: list[np.ndarray], targets: np.ndarray, values: list[np.ndarray], comp, ev) -> None:
    """outs[t] = comp(outs[t], value) for each (t, value) in order; outs are flat (1-d) arrays, updated in place."""
    if targets.size == 0:
        return
    kind = recognise(comp) if len(outs) == 1 else None
    if kind == "assign":
        last = targets.size - 1 - np.unique(targets[::-1], return_index=True)[1]
        outs[0][targets[last]] = values[0][last]
        return
    if kind is not None:
        # The combiner reads its operands with denormals as zero and its results are flushed (targets only:
        # elements no update touches keep their bits); an intermediate result of repeated updates to one
        # target that falls in the denormal range is not flushed on its own.
        cdt = compute_dtype(outs[0].dtype)
        uf = ufunc_for(kind, cdt)
        wide = outs[0].astype(cdt)
        wide[targets] = denormals_flushed(wide[targets])
        uf.at(wide, targets, denormals_flushed(values[0].astype(cdt)))
        wide[targets] = denormals_flushed(wide[targets])
        outs[0][...] = wide.astype(outs[0].dtype, copy=False)
        return
    # Generic combiner: round r applies every target's r-th update; within a round targets are distinct,
    # so one lifted call per round keeps each target's updates in order.
    order = np.argsort(targets, kind="stable")
    ranked = targets[order]
    starts = np.r_[True, ranked[1:] != ranked[:-1]]
    first = np.maximum.accumulate(np.where(starts, np.arange(ranked.size), 0))
    rank = np.empty_like(targets)
    rank[order] = np.arange(ranked.size) - first
    for r in range(int(rank.max()) + 1):
        sel = rank == r
        t = targets[sel]
        new = call_lifted(ev, comp, [o[t] for o in outs] + [v[sel] for v in values], t.shape)
        if new is None:
            break
        for o, nv in zip(outs, new):
            o[t] = nv
    else:
        return
    for j in np.nonzero(rank >= r)[0]:      # not liftable: the rest one element at a time, in order
        t = targets[j]
        new = call_scalar(ev, comp, [element(o, t) for o in outs] + [element(v, j) for v in values])
        for o, nv in zip(outs, new):
            o[t] = nv
