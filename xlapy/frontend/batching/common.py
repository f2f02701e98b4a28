"""What every batching rule uses: the error types, the Batcher (a Builder that knows the batch size), batch-dim
helpers, and the per-example loop that rules fall back to where no vectorized form exists.

A batched value is an HLO value plus its batch dimension `dim`: an int (where the batch axis is), None (the
value is the same for every example: "not batched"), or for a tuple-shaped value a tuple of such dims, one per
element. A rule is `rule(b, inst, operands, dims) -> (value, dim)`: `inst` is the instruction of the computation
being batched, `operands` the batched values of its operands (in `b`'s computation), `dims` their batch dims
(at least one is batched; the driver copies an instruction whose operands are all unbatched unchanged).
"""
from __future__ import annotations

from typing import Any, Sequence

from ...errors import XlapyError
from ...hlo import Computation, Instruction, Shape
from ...passes.build import new_computation
from ...passes.builder import Builder

Dim = Any       # int | None | tuple of Dim


class BatchingError(XlapyError):
    """A program vmap cannot batch (a missing rule, a collective over the vmap axis, bad in_axes/out_axes)."""


class BatchingValueError(BatchingError, ValueError):
    """The errors JAX raises as ValueError: inconsistent sizes, axes out of range, out_axes=None for a batched
    output, an in_axes/out_axes that is not a tree prefix."""


class BatchingTypeError(BatchingError, TypeError):
    """The errors JAX raises as TypeError: in_axes/out_axes leaves that are not ints or None."""


def is_unbatched(d: Dim) -> bool:
    """True when no leaf of `d` is batched."""
    if isinstance(d, tuple):
        return all(is_unbatched(x) for x in d)
    return d is None


def batched_dims(dims: Sequence[int], d: int | None, size: int) -> tuple[int, ...]:
    """`dims` with a batch axis of `size` inserted at d (unchanged for None)."""
    dims = tuple(dims)
    return dims if d is None else dims[:d] + (size,) + dims[d:]


def batched_shape(shape: Shape, d: Dim, size: int) -> Shape:
    if shape.is_tuple:
        ds = d if isinstance(d, tuple) else (d,) * len(shape.tuple_shapes)
        return Shape.tuple_of([batched_shape(s, x, size) for s, x in zip(shape.tuple_shapes, ds)])
    return Shape.array(shape.element_type, batched_dims(shape.dims, d, size))


def shift(dims: Sequence[int], at: int = 0, by: int = 1) -> tuple[int, ...]:
    """Dimension numbers renumbered after inserting `by` dimensions at `at`."""
    return tuple(x + by if x >= at else x for x in dims)


class Batcher(Builder):
    """The Builder of a batched computation; `size` is the batch size, `axis_name` vmap's (for error messages)."""

    def __init__(self, comp: Computation, size: int, axis_name: Any = None):
        super().__init__(comp)
        self.size = size
        self.axis_name = axis_name

    def sub(self, comp: Computation) -> "Batcher":
        return Batcher(comp, self.size, self.axis_name)

    # -- moving batch axes ------------------------------------------------------------------------------
    def moveaxis(self, x: Instruction, src: int, dst: int) -> Instruction:
        if src == dst:
            return x
        perm = [k for k in range(x.shape.rank) if k != src]
        perm.insert(dst, src)
        return self.transpose(x, perm)

    def bcast_batch(self, x: Instruction, dst: int) -> Instruction:
        """An unbatched `x` repeated along a new batch axis at dst."""
        dims = [k if k < dst else k + 1 for k in range(x.shape.rank)]
        return self.broadcast(x, dims, Shape.array(x.shape.element_type, batched_dims(x.shape.dims, dst, self.size)))

    def at(self, x: Instruction, d: Dim, dst: int = 0) -> Instruction:
        """`x` batched with its batch axis at dst (broadcast if unbatched); a tuple: every element at dst."""
        if x.shape.is_tuple:
            ds = d if isinstance(d, tuple) else (d,) * len(x.shape.tuple_shapes)
            return self.tuple([self.at(self.gte(x, i), di, dst) for i, di in enumerate(ds)])
        if d is None:
            return self.bcast_batch(x, dst)
        return self.moveaxis(x, d, dst)

    def front(self, x: Instruction, d: Dim) -> Instruction:
        return self.at(x, d, 0)

    def canonical(self, x: Instruction, d: Dim) -> tuple[Instruction, Dim]:
        """`x` with every batched leaf's axis at 0 (unbatched leaves stay unbatched)."""
        if x.shape.is_tuple:
            ds = d if isinstance(d, tuple) else (d,) * len(x.shape.tuple_shapes)
            parts = [self.canonical(self.gte(x, i), di) for i, di in enumerate(ds)]
            if all(p[0] is self.gte(x, i) for i, p in enumerate(parts)) and x.opcode != "tuple":
                return x, tuple(p[1] for p in parts)
            return self.tuple([p[0] for p in parts]), tuple(p[1] for p in parts)
        return (x, None) if d is None else (self.moveaxis(x, d, 0), 0)

    def forced(self, x: Instruction, d: Dim, want: Dim) -> Instruction:
        """`x` with the dims `want` (a structure of 0 / None); unbatched leaves are broadcast where want is 0."""
        if x.shape.is_tuple:
            ds = d if isinstance(d, tuple) else (d,) * len(x.shape.tuple_shapes)
            return self.tuple([self.forced(self.gte(x, i), di, wi) for i, (di, wi) in enumerate(zip(ds, want))])
        if want is None:
            if d is not None:
                raise BatchingError(f"internal: value {x.name} is batched where an unbatched one is needed")
            return x
        return self.at(x, d, want)

    def index(self, value: int, like: Instruction) -> Instruction:
        return self.scalar(value, like.shape.element_type)


def any_batched(dims: Sequence[Dim]) -> bool:
    return not all(is_unbatched(d) for d in dims)


def join(a: Dim, b: Dim) -> Dim:
    """The batched-ness of two structures: 0 where either is batched, None where neither is."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        n = len(a) if isinstance(a, tuple) else len(b)
        a = a if isinstance(a, tuple) else (a,) * n
        b = b if isinstance(b, tuple) else (b,) * n
        return tuple(join(x, y) for x, y in zip(a, b))
    return None if a is None and b is None else 0


def zero_dims(d: Dim) -> Dim:
    """0 for every batched leaf of d."""
    if isinstance(d, tuple):
        return tuple(zero_dims(x) for x in d)
    return None if d is None else 0


# -- the per-example loop ------------------------------------------------------------------------------------
def per_example(b: Batcher, inst: Instruction, operands: Sequence[Instruction], dims: Sequence[Dim]) -> tuple:
    """`inst` run once per example in an HLO while loop over the batch: each batched operand is sliced at i
    (dynamic-slice), the unbatched ones are passed whole, and each result is written into row i of its buffer
    (dynamic-update-slice). Results are batched at 0. The fallback for ops with no vectorized batching rule."""
    for o in operands:
        if o.shape.is_tuple:
            raise BatchingError(f"no batching rule for {inst.opcode} with tuple-shaped operands")
    ops = [o if d is None else b.front(o, d) for o, d in zip(operands, dims)]
    results = inst.shape.tuple_shapes if inst.shape.is_tuple else (inst.shape,)
    if any(r.is_tuple for r in results):
        raise BatchingError(f"no batching rule for {inst.opcode} with a nested tuple result")
    buffers = [b.zeros(batched_shape(r, 0, b.size)) for r in results]
    if b.size == 0:                     # an empty batch: no example to run
        return (b.tuple(buffers), tuple(0 for _ in buffers)) if inst.shape.is_tuple else (buffers[0], 0)
    counter = b.scalar(0, "s32")
    state = [counter] + ops + buffers
    state_shape = Shape.tuple_of([s.shape.without_layout() for s in state])
    module = b.module

    cond = new_computation(module, f"{inst.opcode}.batch_cond")
    cb = b.sub(cond)
    p = cb.parameter(0, state_shape, "state")
    cond.root = cb.compare(cb.gte(p, 0), cb.scalar(b.size, "s32"), "LT")

    body = new_computation(module, f"{inst.opcode}.batch_body")
    bb = b.sub(body)
    p = bb.parameter(0, state_shape, "state")
    i = bb.gte(p, 0)
    zero = bb.scalar(0, "s32")
    args = []
    for k, (o, d) in enumerate(zip(ops, dims)):
        v = bb.gte(p, 1 + k)
        if d is not None:
            row = bb.emit("dynamic-slice", [v, i] + [zero] * (v.shape.rank - 1),
                          {"dynamic_slice_sizes": (1,) + tuple(v.shape.dims[1:])})
            v = bb.reshape(row, v.shape.dims[1:])
        args.append(v)
    one = bb.add_instruction(inst.clone_with(args, shape=inst.shape.without_layout()))
    outs = [bb.gte(one, k) for k in range(len(results))] if inst.shape.is_tuple else [one]
    new_bufs = []
    for k, out in enumerate(outs):
        buf = bb.gte(p, 1 + len(ops) + k)
        row = bb.reshape(out, (1,) + tuple(out.shape.dims))
        new_bufs.append(bb.emit("dynamic-update-slice", [buf, row, i] + [zero] * out.shape.rank))
    passed = [bb.gte(p, 1 + k) for k in range(len(ops))]
    body.root = bb.tuple([bb.add(i, bb.scalar(1, "s32"))] + passed + new_bufs)

    loop = b.emit("while", [b.tuple(state)], {"condition": cond, "body": body})
    finals = [b.gte(loop, 1 + len(ops) + k) for k in range(len(results))]
    if inst.shape.is_tuple:
        return b.tuple(finals), tuple(0 for _ in finals)
    return finals[0], 0


def per_example_rule(doc: str):
    """A rule that runs the op once per example (see per_example); `doc` says why, for the rule's docstring."""
    def rule(b, inst, operands, dims):
        return per_example(b, inst, operands, dims)
    rule.__doc__ = f"Per-example loop (an HLO while over the batch): {doc}"
    return rule
