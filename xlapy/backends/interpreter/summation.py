"""The reference order of a float add-reduction: reduce with an add reducer, and reduce-window's windows.

Adding n f32 values one at a time loses accuracy like n (a sum of 50,000 values near 1 is off by ~30 units in
the last place); XLA's vectorized reductions keep several partial sums and are off by about one. The
interpreter defines the order below. The CPU backend's column reduction (backends/cpu/column_reduce.py) runs
exactly this order, so the two agree bit for bit; its other reduction loops add within a leaf in a vectorized
order of their own (backends/cpu/blocked_sum.py) and agree to rounding.

| reduced elements per output | order                                                                          |
|-----------------------------|--------------------------------------------------------------------------------|
| n <= LEAF                   | init, then x[0], x[1], ..., x[n-1], one add at a time                          |
| n >  LEAF                   | leaves of LEAF consecutive elements, each added one at a time starting at -0;  |
|                             | the leaf sums combined in f64 (`_wide_total`); that total rounded once to the  |
|                             | compute type; then init + total                                                |

| compute type               | leaf sums combined in f64                                                        |
|----------------------------|----------------------------------------------------------------------------------|
| f32 (also for bf16/f16/f8) | one at a time from -0: f64 holds sums of f32 values almost exactly               |
| f64                        | pairwise, no wider type being at hand: groups of 2^j leaves for the set bits of  |
|                            | the leaf count, largest first, each a perfect tree of neighbours (left + right), |
|                            | the groups added from the last one back (the CPU's cascade.py builds this tree)  |

"Consecutive" is row-major order over the reduced dimensions (layout order on the CPU backend). Leaves are
added in the compute type: the element type, f32 for bf16/f16/f8 (reducers.compute_dtype). An f32 sum ends
within about half a unit in the last place of the exact sum whatever n is (a pairwise tree in f32 gets about
one); where the values cancel, short leaves keep the partial sums small: the error of 65,536 mixed-sign terms
spanning six decades is then 0.9 times XLA:CPU's (RMS over 40 samples; leaves of 64 gave 2.3 times).

Every add reads denormal operands as zero and flushes a denormal result to zero, as XLA:CPU does under its
DAZ/FTZ state (element_types.FLUSH_DENORMALS). -0 is the identity that starts each leaf: x + -0 is x for every
x, so padding a short leaf with -0 changes nothing. NaN and infinities propagate as in any order.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...hlo.shape import primitive_type
from .element_types import flush_denormals

LEAF = 16                   # elements per leaf; column_reduce.py runs the same order
WIDE = np.dtype(np.float64)


def flushed(x: np.ndarray) -> np.ndarray:
    """x (an f32 or f64 array) with denormals read as zeros of the same sign."""
    x = np.asarray(x)
    return flush_denormals(primitive_type("f64" if x.dtype == np.float64 else "f32"), x).astype(x.dtype, copy=False)


def add_reduce(x: np.ndarray, axes: Sequence[int], init, cdt: np.dtype) -> np.ndarray:
    """The sum over `axes` of x (any view), plus init, in the reference order; an array of the kept dims in
    compute dtype cdt (float32 or float64)."""
    cdt = np.dtype(cdt)
    axes = tuple(sorted(int(a) for a in axes))
    kept = [d for d in range(x.ndim) if d not in axes]
    out_shape = tuple(x.shape[d] for d in kept)
    n = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    # reduced elements first, in row-major order: columns[k] is element k of every output
    columns = np.moveaxis(np.asarray(x), axes, range(len(axes))).reshape((n,) + out_shape)
    columns = flushed(np.ascontiguousarray(columns, dtype=cdt))
    start = flushed(np.broadcast_to(np.asarray(init, dtype=cdt), out_shape))
    if n <= LEAF:
        return _one_at_a_time(start, columns)
    leaves = -(-n // LEAF)
    padded = np.full((leaves * LEAF,) + out_shape, -0.0, dtype=cdt)
    padded[:n] = columns
    # padded[k * leaves + q] would interleave leaves: element j of leaf q is padded[q * LEAF + j]
    by_position = np.ascontiguousarray(np.moveaxis(padded.reshape((leaves, LEAF) + out_shape), 1, 0))
    leaf_sums = _one_at_a_time(np.full((leaves,) + out_shape, -0.0, dtype=cdt), by_position)
    total = flushed(_wide_total(leaf_sums).astype(cdt))
    return flushed(start + total)


def _one_at_a_time(acc: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """acc + terms[0] + terms[1] + ..., left to right, each add flushed."""
    for term in terms:
        acc = flushed(acc + term)
    return acc


def _wide_total(leaf_sums: np.ndarray) -> np.ndarray:
    """The leaf sums (leaves first) combined in f64 as the table above says."""
    wide = leaf_sums.astype(WIDE)
    if leaf_sums.dtype == WIDE:
        return _pairwise(wide)
    # Sums of f32 values are multiples of 2^-149, never f64 denormals: cumsum needs no flushing
    return np.cumsum(wide, axis=0)[-1]


def _pairwise(values: np.ndarray) -> np.ndarray:
    """values[0] + values[1] + ... in the binary-counter tree, each add flushed."""
    groups, start = [], 0
    for j in reversed(range(len(values).bit_length())):
        if len(values) >> j & 1:
            group = values[start:start + (1 << j)]
            start += 1 << j
            while len(group) > 1:
                group = flushed(group[0::2] + group[1::2])
            groups.append(group[0])
    total = np.full(values.shape[1:], -0.0, dtype=values.dtype)
    for group in reversed(groups):
        total = flushed(group + total)
    return total
