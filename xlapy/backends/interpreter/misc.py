"""Interpreter rules for sort, topk and the random-number ops.

sort: stable (every XLA sort may be stable), any number of operands permuted together along
`dimensions={d}` by the comparator `to_apply` (see sorting.py for how that is made fast).
topk: the k largest (or smallest with largest=false) along the last dimension, ties by lower index.
rng-bit-generator: bit-exact ThreeFry/Philox (prng.py). rng: nondeterministic in XLA; numpy draws here.
"""
from __future__ import annotations

import functools

import numpy as np

from ...errors import ExecutionError, UnimplementedError
from ...hlo import Instruction
from .prng import rng_bit_generator
from .sorting import ascending_key, descending, sort_permutation


def _sort(inst: Instruction, args: list, ev):
    dims = inst.attrs.get("dimensions", (0,))
    dim = int(dims[0]) if dims else 0
    comp = inst.attrs["to_apply"]
    moved = [np.moveaxis(np.asarray(a), dim, -1) for a in args]
    n = moved[0].shape[-1] if moved[0].ndim else 1
    if any(m.shape != moved[0].shape for m in moved):
        raise ExecutionError(f"sort {inst.name}: operands differ in shape: {[a.shape for a in args]}")
    flat = [m.reshape(int(np.prod(m.shape[:-1], dtype=np.int64)), n) for m in moved]     # (rows, n), n may be 0
    perm = sort_permutation(ev, comp, flat)
    outs = [np.moveaxis(np.take_along_axis(f, perm, axis=1).reshape(m.shape), -1, dim)
            for f, m in zip(flat, moved)]
    outs = [np.array(o, order="C") for o in outs]   # keeps rank 0 (ascontiguousarray would not)
    return tuple(outs) if inst.shape.is_tuple else outs[0]


def _topk(inst: Instruction, args: list, ev):
    largest = str(inst.attrs.get("largest", True)).lower() not in ("false", "0")
    return top_k(inst, args[0], int(inst.attrs["k"]), largest)


def topk_custom_call(inst: Instruction, args: list, ev):
    """`custom-call(x), custom_call_target="TopK"` (what XLA:CPU leaves of topk): the largest k, k from the shape."""
    return top_k(inst, args[0], inst.shape.tuple_shapes[0].dims[-1], True)


def top_k(inst: Instruction, x: np.ndarray, k: int, largest: bool):
    key = ascending_key(x, "TOTALORDER")
    if key is None:
        raise UnimplementedError(f"topk {inst.name}: element type {x.dtype} is not supported")
    if largest:
        key = descending(key)
    idx = np.argsort(key, axis=-1, kind="stable")[..., :k]
    values = np.take_along_axis(x, idx, axis=-1)
    return values, idx.astype(inst.shape.tuple_shapes[1].dtype)


def _rng_bit_generator(inst: Instruction, args: list, ev):
    (state,) = args
    algorithm = str(inst.attrs.get("algorithm", "rng_default"))
    out_shape = inst.shape.tuple_shapes[1]
    new_state, bits = rng_bit_generator(algorithm, state, out_shape.dims, out_shape.dtype)
    return new_state.astype(inst.shape.tuple_shapes[0].dtype), bits


@functools.cache
def _generator():
    """numpy's Generator for `rng`, made on first use: importing numpy.random costs ~30-60 ms, which the first
    constant folding of every compile in a process paid (it imports this module)."""
    return np.random.default_rng()


def _rng(inst: Instruction, args: list, ev):
    a, b = (np.asarray(v) for v in args)
    dims, dt = inst.shape.dims, inst.shape.dtype
    rng = _generator()
    distribution = str(inst.attrs.get("distribution", "rng_uniform"))
    if distribution == "rng_uniform":
        if dt.kind in "iu":
            lo, hi = int(a), int(b)
            return rng.integers(lo, max(hi, lo + 1), size=dims).astype(dt)
        if dt == np.bool_:
            return rng.integers(0, 2, size=dims).astype(dt)
        out = rng.uniform(float(a), float(b), size=dims).astype(dt)
        return np.where(out >= np.asarray(b, dt), np.asarray(a, dt), out)   # rounding must not reach b
    if distribution == "rng_normal":
        return rng.normal(float(a), float(b), size=dims).astype(dt)
    raise UnimplementedError(f"rng {inst.name}: unknown distribution {distribution!r}")


HANDLERS = {
    "sort": _sort,
    "topk": _topk,
    "rng-bit-generator": _rng_bit_generator,
    "rng": _rng,
}

# custom-call targets this file can run, for control.py's custom-call table to pick up.
CUSTOM_CALL_TARGETS = {"TopK": topk_custom_call}
