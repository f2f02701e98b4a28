"""Long float add-reductions in leaves: as accurate as XLA's, at the same speed.

Adding n f32 values one at a time loses accuracy like n: a sum of 65,536 values near 1 is off by tens of units
in the last place, where XLA's vectorized reductions are off by about one. Here the reduced elements (in layout
order) are cut into leaves, each leaf is summed by the loop LLVM already vectorizes, and the leaf sums are
added in f64:

    total = -0.0                                  # f64, the wide type
    for q in leaves (a task's range of them when split over threads, loops.split_reduction):
        leaf = -0.0                               # the accumulation type: the element type, f32 for narrow floats
        for x in the elements of leaf q:          # `reassoc` adds, so the loop vectorizer keeps VF x interleave
            leaf = leaf + x                       # partial sums (XLA's vector accumulators)
        total = total + fpext(leaf)               # in order, never reassociated
    result = init + fptrunc(total)

An f64 sum has no wider type: its leaf sums are added pairwise instead, in the fixed tree of cascade.py.

Each leaf is off by a fraction of a unit of its own magnitude, and those errors average out in the f64 total,
so an f32 sum ends within about half a unit in the last place of the exact one whatever n is. A leaf costs its
loop's horizontal reduction and one wide add, so leaves are as long as accuracy allows:

| innermost reduced loop                         | leaf size      | why                                          |
|------------------------------------------------|----------------|----------------------------------------------|
| unit stride, more than LEAF iterations         | long_leaf():   | vectorized, 64 partial sums (zmm vectors) 32 |
|                                                | 2048 elements  | deep; a leaf costs about 2% of a sum whose   |
|                                                | with 512-bit   | data sit in L1/L2 (1024: 4-7%, 4096: none);  |
|                                                | vectors (LLVM's| narrower vectors keep fewer partial sums, so |
|                                                | choice), else  | their leaves are shorter (32 per chain)      |
|                                                | 512            |                                              |
| shorter, or strided (a column walked in place) | LEAF 1024      | vectorizes narrowly or not at all: its       |
|                                                | elements       | chains are long, a leaf costs little beside  |

A reduction no longer than its leaf size keeps the plain loop (softmax and layernorm rows up to 2048 long).
Where the values cancel (mixed signs, a small sum of large terms) the error comes from inside the leaves, where
partial sums are largest: the RMS error of such sums (65,536 terms spanning six decades, 40 samples) is 1.4
times XLA:CPU's (which sums through YNNPACK, in shorter chains; leaves of 1024 give 1.3 times, of 4096 1.7);
before, one at a time, it was 7 times on rows and 38 times on columns.

A leaf is a block of iterations of one reduced dimension (`split`) times all the reduced dimensions more minor
than it, so its loops are those of the element loop and need no division per element:

| reduced counts (layout order) | contiguous | split | block | leaves                            |
|-------------------------------|------------|-------|-------|-----------------------------------|
| [65536]                       | yes        | 0     | 2048  | 32 of 2048                        |
| [3, 5000]                     | yes        | 1     | 2048  | 3 x 3 (2048, 2048 and 904 each)   |
| [256, 256]                    | yes        | 0     | 4     | 64 of 4 x 256                     |
| [64, 28, 28]                  | no         | 0     | 1     | 64 of 28 x 28                     |

Zero, NaN and infinity behave as in any order of the same adds: leaves start at -0 (x + -0 is x); a NaN or an
infinity of either sign carries through fpext, the f64 adds and fptrunc; a total beyond f32's range rounds to
an infinity. The interpreter's reference order (interpreter/summation.py) is the same scheme with leaves of 16
added one at a time, so the two agree to rounding; the column reduction (column_reduce.py) matches it exactly.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Sequence

from llvmlite import ir

from ...hlo import Instruction
from ...hlo.shape import primitive_type
from .cascade import WIDE, Cascade
from .indexing import delinearize, major_to_minor
from .irhelpers import alloca_once, for_range, i64, loop_nest
from .types import is_narrow_float, round_value, value_type
from .vector_width import loop_vector_bytes

LEAF = 1024                      # elements per leaf
# A minor-most reduced run shorter than SHORT_RUN (a GroupNorm's 4 channels of a group, between the kept groups
# and the rows) does not vectorize: its leaf is one chain, rounded once per element, so it is short. unet/fwd's
# first GroupNorm sum, [4,32,32,8,4] over {1,2,4}: rms error 4.4x XLA's with leaves of 1024, ~1x with 64.
SHORT_RUN = 8
SHORT_RUN_LEAF = 64
LONG_LEAF = 2048                 # elements per leaf of a long unit-stride run, with 512-bit vectors


@functools.cache
def long_leaf() -> int:
    """The leaf of a long unit-stride run on this host. LLVM keeps 64 partial sums with 512-bit vectors (LONG_LEAF,
    32 elements per partial sum) and fewer with narrower ones, where a 2048-element leaf's chains are longer and
    cancelling sums lose accuracy. Measured with 256-bit vectors (test_reduction_accuracy's mixed-sign rows, RMS
    in units of 2^-24 ||x||, XLA 1.52): leaves of 2048 give 2.86, 1024 give 2.23, 512 give 1.91, so a quarter of
    LONG_LEAF. The vectors are those LLVM's loop vectorizer uses (vector_width.py): on Intel's AVX-512 cores with
    LLVM's own tuning (256-bit vectors) leaves of 2048 gave 2.86, as on AVX2."""
    return LONG_LEAF if loop_vector_bytes() == 64 else LONG_LEAF // 4
_SUMMED = ("f32", "f64")         # and the narrow floats, which accumulate in f32


@dataclass(frozen=True)
class LeafPlan:
    """How the reduced iteration space (counts, layout order) is cut into leaves: `block` iterations of
    counts[split] times every count after it."""
    counts: tuple[int, ...]
    split: int
    block: int

    @property
    def blocks(self) -> int:
        """leaves per iteration of the dims before `split`"""
        return -(-self.counts[self.split] // self.block)

    @property
    def leaves(self) -> int:
        return math.prod(self.counts[:self.split]) * self.blocks


def leaf_plan(counts: Sequence[int], contiguous: bool) -> LeafPlan | None:
    """The leaves of a reduction over `counts` (`contiguous`: its minor-most reduced dim is the operand's
    minor-most one); None when it fits in one leaf (the plain loop)."""
    size = long_leaf() if contiguous and counts[-1] > LEAF else SHORT_RUN_LEAF if counts[-1] < SHORT_RUN else LEAF
    if math.prod(counts) <= size:
        return None
    split, inner = len(counts) - 1, 1
    while inner * counts[split] <= size:       # stops at a dim: the whole space is more than size
        inner *= counts[split]
        split -= 1
    return LeafPlan(tuple(counts), split, size // inner)


def is_blocked_sum(reduce: Instruction, op: str | None) -> bool:
    """A single float add-reduction (`op`: the reducer's one opcode) longer than one leaf."""
    if op != "add" or reduce.shape.is_tuple or len(reduce.operands) != 2:
        return False
    pt = reduce.shape.ptype
    if pt.name not in _SUMMED and not is_narrow_float(pt):
        return False
    return reduce_leaf_plan(reduce) is not None


def reduce_leaf_plan(reduce: Instruction) -> LeafPlan | None:
    in_shape = reduce.operands[0].shape
    order = reduced_order(reduce)
    if not order:
        return None
    return leaf_plan([in_shape.dims[d] for d in order], order[-1] == major_to_minor(in_shape)[-1])


def reduced_order(reduce: Instruction) -> list[int]:
    """The reduced dimensions of the operand, major to minor."""
    reduced = {int(d) for d in reduce.attrs["dimensions"]}
    return [d for d in major_to_minor(reduce.operands[0].shape) if d in reduced]


def reducer_steps(elemental, reduce: Instruction, init: Callable, wide_rule=None) -> tuple[Callable, Callable]:
    """(add, finish) for `reduce`'s leaves, emitted by `elemental` (an ElementalEmitter): add(acc, x) is the
    reducer's add, marked reassociable (it runs inside a leaf); finish(total) applies the reducer to the init
    value (`init`: its generator) and a leaf-typed total. A narrow float adds in f32 with `wide_rule` and is
    rounded once at the end, as the plain loop does."""
    b = elemental.b
    if wide_rule is not None:
        f32 = primitive_type("f32")
        return (lambda acc, x: wide_rule(b, f32, acc, x),
                lambda total: round_value(b, reduce.shape.ptype, wide_rule(b, f32, init([]), total)))
    reducer = reduce.attrs["to_apply"]
    return (lambda acc, x: elemental.emit_scalar(reducer, [acc, x], reassoc=True),
            lambda total: elemental.emit_scalar(reducer, [init([]), total]))


class LeafSummer:
    """Emits the leaves of one add-reduction. `source(full_index)` reads an element of the reduced operand;
    `add(acc, x)` is the reducer's add in the accumulation type (reassociable: it runs inside a leaf). The
    caller rounds the wide total (`narrow`) and adds the init value with the reducer.

    Sibling sums (`join`: more add-reductions of the same operand shape, dimensions and accumulation type, as a
    multi-output fusion's mean and variance) are summed in the same loops, each in its own accumulators over the
    same leaves (LLVM may interleave a leaf's partial sums differently with two in the loop): `wide_sums` gives
    one total per part."""

    def __init__(self, b: ir.IRBuilder, reduce: Instruction, source: Callable, add: Callable):
        self.b = b
        self.parts = [(source, add)]
        self.acc_type = value_type(reduce.shape.ptype)      # f32 for the narrow floats
        self.order = reduced_order(reduce)
        self.plan = reduce_leaf_plan(reduce)
        in_shape = reduce.operands[0].shape
        self.rank = in_shape.rank
        self.kept = [d for d in range(in_shape.rank) if d not in set(self.order)]

    @property
    def leaves(self) -> int:
        return self.plan.leaves

    def join(self, source: Callable, add: Callable) -> int:
        """Sum another operand in the same loops; returns its part number."""
        self.parts.append((source, add))
        return len(self.parts) - 1

    def wide_sum(self, index: Sequence[ir.Value], first: ir.Value | int, end: ir.Value | int) -> ir.Value:
        return self.wide_sums(index, first, end)[0]

    def wide_sums(self, index: Sequence[ir.Value], first: ir.Value | int, end: ir.Value | int) -> list[ir.Value]:
        """The f64 sums of leaves [first, end) for the output element at `index`, one per part: one at a time
        from -0.0 for f32 and narrower leaves, pairwise (cascade.py) for f64 ones."""
        b = self.b
        first, end = (i64(v) if isinstance(v, int) else v for v in (first, end))
        if isinstance(self.acc_type, ir.DoubleType):
            trees = [Cascade(b) for _ in self.parts]
            with for_range(b, end, "leaf", start=first) as q:
                for tree, leaf in zip(trees, self.leaves_at(index, q)):
                    tree.push(b.sub(q, first), leaf)
            return [tree.total(b.sub(end, first)) for tree in trees]
        totals = [alloca_once(b, WIDE, "sum.total") for _ in self.parts]
        for total in totals:
            b.store(ir.Constant(WIDE, -0.0), total)
        with for_range(b, end, "leaf", start=first) as q:
            for total, leaf in zip(totals, self.leaves_at(index, q)):
                b.store(b.fadd(b.load(total), b.fpext(leaf, WIDE)), total)
        return [b.load(total) for total in totals]

    def narrow(self, total: ir.Value) -> ir.Value:
        """The wide total in the accumulation type (under FTZ a denormal result is flushed, as a sum's is)."""
        return total if isinstance(self.acc_type, ir.DoubleType) else self.b.fptrunc(total, self.acc_type)

    def leaf(self, index: Sequence[ir.Value], q: ir.Value) -> ir.Value:
        return self.leaves_at(index, q)[0]

    def leaves_at(self, index: Sequence[ir.Value], q: ir.Value) -> list[ir.Value]:
        """The sums of leaf q's elements from -0.0 in the accumulation type, one per part."""
        b, plan = self.b, self.plan
        accs = [alloca_once(b, self.acc_type, "sum.leaf") for _ in self.parts]
        for acc in accs:
            b.store(ir.Constant(self.acc_type, -0.0), acc)
        if plan.split == 0:
            outer, block_no = [], q
        else:
            outer_no = b.udiv(q, i64(plan.blocks))
            block_no = b.urem(q, i64(plan.blocks))
            outer = delinearize(b, outer_no, list(plan.counts[:plan.split]), list(range(plan.split)))
        count = plan.counts[plan.split]
        lo = b.mul(block_no, i64(plan.block), flags=["nsw", "nuw"])
        hi = b.add(lo, i64(plan.block), flags=["nsw", "nuw"])
        if count % plan.block:
            hi = b.select(b.icmp_signed("<", hi, i64(count)), hi, i64(count))
        with for_range(b, hi, "leaf.i", start=lo) as i:
            with loop_nest(b, list(plan.counts[plan.split + 1:]), name="leaf.j") as inner:
                full: list = [None] * self.rank
                for d, v in zip(self.kept, index):
                    full[d] = v
                for d, v in zip(self.order, outer + [i] + inner):
                    full[d] = v
                for acc, (source, add) in zip(accs, self.parts):
                    b.store(add(b.load(acc), source(full)), acc)
        return [b.load(acc) for acc in accs]
