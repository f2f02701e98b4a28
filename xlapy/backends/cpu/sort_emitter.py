"""Emitting sort and topk: a stable merge sort of index permutations, one row at a time.

XLA's sort orders every row along `dimensions={d}` of all operands together, by a comparator computation
`(lhs_0, rhs_0, lhs_1, rhs_1, ...) -> pred` that says "lhs sorts before rhs". The comparator is emitted once
as an internal LLVM function over register-typed scalars (LLVM inlines it where it pays); JAX's float
comparators (NaN canonicalization, total order) are just HLO, so nothing here knows about floats.

Per row, the sort permutes an array of i32 positions, never the data:
  1. insertion sort of runs of RUN positions (stable: an element moves left only past strictly greater ones);
  2. bottom-up merges of runs of width RUN, 2*RUN, ... between two index buffers (stable: the right run's
     head is taken only when it is strictly less than the left run's head), branch-free in the inner loop;
  3. a gather of every operand through the final permutation into the outputs.
O(n log n) comparisons, two scratch index buffers of n entries reused by every row.

topk (the k largest along the last dimension, ties to the lower index; or the k smallest) is the same sort
with a built-in total-order comparator, keeping the first k positions and their indices.
"""
from __future__ import annotations

import itertools
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import Instruction
from ...hlo.shape import PrimitiveType, Shape, primitive_type
from . import scalar_ops
from .buffers import BufferRef, ValueTree, leaves
from .indexing import major_to_minor, placed, strides
from .irhelpers import I1, I32, I64, alloca_once, for_range, i64, if_else_value, loop_nest, mark_ftz
from .types import load_element, store_element, value_type

RUN = 16                      # insertion-sorted run length before merging
_S64 = primitive_type("s64")
_names = itertools.count()

Less = Callable[[list, list], ir.Value]     # (values at a, values at b) -> i1 "a sorts before b"


# -- comparator functions --------------------------------------------------------------------------------
def _new_function(em, ptypes: Sequence[PrimitiveType], name: str) -> tuple[ir.Function, ir.IRBuilder]:
    module = em.b.module
    arg_types = [value_type(pt) for pt in ptypes for _ in (0, 1)]
    fn = ir.Function(module, ir.FunctionType(I1, arg_types), f"{name}.{next(_names)}")
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    mark_ftz(fn)
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def comparator_function(em, inst: Instruction, ptypes: Sequence[PrimitiveType]) -> ir.Function:
    """The sort's `to_apply` computation as `i1 f(lhs_0, rhs_0, lhs_1, rhs_1, ...)`."""
    fn, fb = _new_function(em, ptypes, f"cmp.{inst.name}")
    saved = em.b, em.elemental.b
    em.b = em.elemental.b = fb          # constants and scalar ops emit into the comparator's body
    try:
        result = em.elemental.emit_scalar(inst.attrs["to_apply"], list(fn.args))
    finally:
        em.b, em.elemental.b = saved
    if isinstance(result, tuple) or result.type != I1:
        raise UnimplementedError(f"cpu backend: sort {inst.name}: comparator does not return pred[]")
    fb.ret(result)
    return fn


def total_order_function(em, name: str, pt: PrimitiveType, largest: bool) -> ir.Function:
    """`a > b` (largest) or `a < b` in the total order of pt (floats: -NaN < -Inf < ... < -0 < +0 < ... < NaN)."""
    fn, fb = _new_function(em, [pt], name)
    kind = "TOTALORDER" if pt.kind == "float" else None
    fb.ret(scalar_ops.compare(fb, pt, "GT" if largest else "LT", kind, fn.args[0], fn.args[1]))
    return fn


def _less(b: ir.IRBuilder, fn: ir.Function) -> Less:
    return lambda xs, ys: b.call(fn, [v for pair in zip(xs, ys) for v in pair])


# -- control flow ----------------------------------------------------------------------------------------
@contextmanager
def _while(b: ir.IRBuilder, cond: Callable[[], ir.Value], name: str) -> Iterator[None]:
    """`while cond(): body`; loop state lives in entry-block allocas (mem2reg turns them into phis)."""
    header = b.append_basic_block(f"{name}.cond")
    body = b.append_basic_block(f"{name}.body")
    done = b.append_basic_block(f"{name}.done")
    b.branch(header)
    b.position_at_end(header)
    b.cbranch(cond(), body, done)
    b.position_at_end(body)
    yield
    b.branch(header)
    b.position_at_end(done)


def _var(b: ir.IRBuilder, ty: ir.Type, init: ir.Value, name: str) -> ir.AllocaInstr:
    slot = alloca_once(b, ty, name)
    b.store(init, slot)
    return slot


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


# -- one row -----------------------------------------------------------------------------------------------
class _Row:
    """The operands of one row: element `pos` of operand k is at base_k + pos * step_k."""

    def __init__(self, b: ir.IRBuilder, bufs: Sequence[BufferRef], bases: Sequence[ir.Value], steps: Sequence[int]):
        self.b, self.bufs, self.bases, self.steps = b, bufs, bases, steps

    def offset(self, k: int, pos: ir.Value) -> ir.Value:
        step = self.steps[k]
        return self.b.add(self.bases[k], pos if step == 1 else self.b.mul(pos, i64(step)))

    def values(self, pos: ir.Value) -> list:
        return [load_element(self.b, buf.pointer, buf.shape.ptype, self.offset(k, pos))
                for k, buf in enumerate(self.bufs)]


def _emit_permutation(b: ir.IRBuilder, row: _Row, less: Less, n: int, a: ir.Value, c: ir.Value) -> ir.Value:
    """Sort positions 0..n-1 of `row` stably by `less` using index buffers a, c (i32*); returns the one
    holding the result."""
    # The row length as a value LLVM cannot see through: with a known trip count it fully unrolls the run and
    # merge loops (nested loops with the comparator inlined), which makes code 25x larger and slow to compile.
    count = b.asm(ir.FunctionType(I64, [I64]), "", "=r,0", [i64(n)], side_effect=False, name="row.n")
    at = lambda buf, i: b.gep(buf, [i], inbounds=True)
    get = lambda buf, i: b.zext(b.load(at(buf, i)), I64)
    put = lambda buf, i, v: b.store(b.trunc(v, I32), at(buf, i))
    with loop_nest(b, [n], name="perm") as (i,):
        put(a, i, i)
    # 1. insertion sort of each run
    runs = b.udiv(b.add(count, i64(RUN - 1)), i64(RUN))
    with loop_nest(b, [runs], name="run") as (r,):
        lo = b.mul(r, i64(RUN))
        hi = _min(b, b.add(lo, i64(RUN)), count)
        # a loop with a run-time bound: LLVM must not unroll RUN copies of the nested shifting loop
        with for_range(b, hi, "ins", start=b.add(lo, i64(1))) as i:
            x = get(a, i)
            vx = row.values(x)
            j = _var(b, I64, i, "ins.j")

            def keep_moving():
                jj = b.load(j)
                return if_else_value(b, b.icmp_signed(">", jj, lo),
                                     lambda: less(vx, row.values(get(a, b.sub(jj, i64(1))))),
                                     lambda: ir.Constant(I1, 0), name="ins.more")
            with _while(b, keep_moving, "ins.shift"):
                jj = b.load(j)
                prev = b.sub(jj, i64(1))
                put(a, jj, get(a, prev))
                b.store(prev, j)
            put(a, b.load(j), x)
    if n <= RUN:
        return a
    # 2. merge passes: width RUN, 2*RUN, ... until one run covers the row
    width = _var(b, I64, i64(RUN), "merge.width")
    src = _var(b, a.type, a, "merge.src")
    dst = _var(b, a.type, c, "merge.dst")
    with _while(b, lambda: b.icmp_signed("<", b.load(width), count), "merge.pass"):
        w = b.load(width)
        s, d = b.load(src), b.load(dst)
        pairs = b.udiv(b.add(b.sub(count, i64(1)), b.shl(w, i64(1))), b.shl(w, i64(1)))
        with loop_nest(b, [pairs], name="merge.pair") as (p,):
            lo = b.mul(p, b.shl(w, i64(1)))
            mid = _min(b, b.add(lo, w), count)
            hi = _min(b, b.add(mid, w), count)
            _emit_merge(b, row, less, s, d, lo, mid, hi, get, put)
        b.store(d, src)
        b.store(s, dst)
        b.store(b.shl(w, i64(1)), width)
    return b.load(src)


def _emit_merge(b, row: _Row, less: Less, s, d, lo, mid, hi, get, put) -> None:
    i = _var(b, I64, lo, "mg.i")
    j = _var(b, I64, mid, "mg.j")
    k = _var(b, I64, lo, "mg.k")

    def both_left():
        return b.and_(b.icmp_signed("<", b.load(i), mid), b.icmp_signed("<", b.load(j), hi))
    with _while(b, both_left, "mg"):
        ii, jj, kk = b.load(i), b.load(j), b.load(k)
        xi, xj = get(s, ii), get(s, jj)
        right = less(row.values(xj), row.values(xi))       # strictly less: ties keep the left (stable)
        put(d, kk, b.select(right, xj, xi))
        b.store(b.add(ii, b.zext(b.not_(right), I64)), i)
        b.store(b.add(jj, b.zext(right, I64)), j)
        b.store(b.add(kk, i64(1)), k)
    for start, end in ((i, mid), (j, hi)):        # the rest of whichever run is left
        with for_range(b, end, "mg.tail", start=b.load(start)) as t:
            kk = b.load(k)
            put(d, kk, get(s, t))
            b.store(b.add(kk, i64(1)), k)


def _emit_row_sorts(em, inputs: Sequence[BufferRef], dim: int, less_fn: ir.Function,
                    consume: Callable[[list, ir.Value], None]) -> None:
    """For every row of `inputs` along `dim`: sort its positions; consume(other-dim index, i32* permutation)."""
    b = em.b
    shape = inputs[0].shape
    n = shape.dims[dim]
    if n >= 1 << 31:
        raise UnimplementedError(f"cpu backend: sort of rows longer than 2**31 ({n})")
    others = [e for e in major_to_minor(shape) if e != dim]
    index_shape = Shape.array("s32", [max(n, 1)])
    a = b.bitcast(em.new_buffer(index_shape).pointer, I32.as_pointer())
    c = b.bitcast(em.new_buffer(index_shape).pointer, I32.as_pointer())
    less = _less(b, less_fn)
    with loop_nest(b, [shape.dims[e] for e in others], name="row") as ivs:
        index = placed(others, ivs, shape.rank)
        row = _row(b, inputs, index, dim)
        perm = _emit_permutation(b, row, less, n, a, c)
        consume(index, perm)


def _row(b, bufs: Sequence[BufferRef], index: list, dim: int) -> _Row:
    bases, steps = [], []
    for buf in bufs:
        st = strides(buf.shape)
        base = None
        for e, iv in enumerate(index):
            if e == dim or st[e] == 0:
                continue
            term = iv if st[e] == 1 else b.mul(iv, i64(st[e]))
            base = term if base is None else b.add(base, term)
        bases.append(base if base is not None else i64(0))
        steps.append(st[dim])
    return _Row(b, bufs, bases, steps)


# -- handlers --------------------------------------------------------------------------------------------
def sort(em, inst: Instruction, operands: list[ValueTree]) -> ValueTree:
    inputs = [leaf for op in operands for leaf in leaves(op)]
    shape = inputs[0].shape
    if shape.rank == 0:
        out = em.new_tree(inst.shape, inst)
        em.copy_tree(tuple(inputs) if inst.shape.is_tuple else inputs[0], out)
        return out
    dims = inst.attrs.get("dimensions", (0,))
    dim = int(dims[0]) if dims else 0
    less_fn = comparator_function(em, inst, [x.shape.ptype for x in inputs])
    out = em.new_tree(inst.shape, inst)
    outs = leaves(out)
    if shape.numel == 0:
        return out
    b = em.b
    n = shape.dims[dim]

    def gather(index, perm):
        src = _row(b, inputs, index, dim)
        dst = _row(b, outs, index, dim)
        with loop_nest(b, [n], name="gather") as (i,):
            p = b.zext(b.load(b.gep(perm, [i], inbounds=True)), I64)
            for k, (x, y) in enumerate(zip(inputs, outs)):
                v = load_element(b, x.pointer, x.shape.ptype, src.offset(k, p))
                store_element(b, y.pointer, y.shape.ptype, dst.offset(k, i), v)
    _emit_row_sorts(em, inputs, dim, less_fn, gather)
    return out


def topk(em, inst: Instruction, operands: list[ValueTree]) -> ValueTree:
    x = operands[0]
    k = int(inst.attrs["k"])
    largest = str(inst.attrs.get("largest", True)).lower() not in ("false", "0")
    pt = x.shape.ptype
    if pt.kind not in ("float", "int", "uint", "pred"):
        raise UnimplementedError(f"cpu backend: topk on {pt.name} not supported yet (instruction {inst.name})")
    less_fn = total_order_function(em, f"topk.{inst.name}", pt, largest)
    out = em.new_tree(inst.shape, inst)
    values, indices = leaves(out)
    dim = x.shape.rank - 1
    if x.shape.numel == 0 or k == 0:
        return out
    b = em.b
    ipt = indices.shape.ptype

    def take(index, perm):
        src = _row(b, [x], index, dim)
        dst = _row(b, [values, indices], index, dim)
        with loop_nest(b, [k], name="topk") as (i,):
            p = b.zext(b.load(b.gep(perm, [i], inbounds=True)), I64)
            store_element(b, values.pointer, pt, dst.offset(0, i), load_element(b, x.pointer, pt, src.offset(0, p)))
            store_element(b, indices.pointer, ipt, dst.offset(1, i), scalar_ops.convert(
                b, _S64, ipt, p, flush=False))
    _emit_row_sorts(em, [x], dim, less_fn, take)
    return out
