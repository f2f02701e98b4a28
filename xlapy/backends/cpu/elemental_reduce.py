"""Reductions whose element loop is not the plain one (`special_reduce`, which elemental._reduce asks first):

| reduce                                      | loop                                                      |
|---------------------------------------------|-----------------------------------------------------------|
| float max/min, minor-most reduced dim long  | `interleaved_reduce`: explicit vector code (below)        |
| float add over more than blocked_sum.LEAF   | `leaf_sum_reduce`: leaves summed in f64 (blocked_sum.py)  |
| float add, few long sums (MIN_SUM, MAX_SUMS)| `interleaved_reduce` with fadd: LANES x chains partial    |
|                                             | sums whatever LLVM does with the loop (-0.0 identity)     |
| anything else                               | None: the plain loop, which LLVM vectorizes if it can     |

Float max/min reductions as explicit vector code: LANES elements of the minor-most reduced dimension at a time
in <LANES x float> accumulators, then the lanes combined, then the init value:

    acc[c] = splat(identity)                            # -inf for max, +inf for min; c < chains_for(n)
    for j in range(0, n - n % block, block):            # block = LANES * chains
        for l in range(block):  buf[l] = x[j + l]       # a loop: LLVM vectorizes it (one copy of x's code)
        for c in range(chains):
            acc[c] = llvm.maximum(acc[c], <buf[c * LANES], ..., buf[c * LANES + LANES - 1]>)
    (the whole vectors of the rest the same way, into acc[0], acc[1], ...)
    for the last n % LANES elements:  tail = llvm.maximum(tail, <x, x>)      # a two-lane accumulator
    folded = max over the lanes of max(acc[0], ...), halves at a time, with tail at two lanes
    result = reducer(init, folded)                      # the reducer's scalar code flushes folded

The elements pass through the small buffer `buf` so that the element's code (a fused producer's) is emitted
once per chunk loop, not once per lane: 32 copies of a softmax's scaled input made its max kernel ~1000 lines
and the largest LLVM cost of vit and gpt2's training steps.

LLVM's loop vectorizer recognises plain fadd/fmul/integer reductions (the ordinary loop in elemental.py is
left to it) but not a NaN-propagating max written as compares and selects, whose chain then runs one element
at a time, ~10 cycles deep. llvm.maximum/minimum is IEEE 754-2019's operation, which XLA:CPU emits too: a NaN
on either side propagates and -0 < +0; x86 has no instruction for it, and its code is two blends by the sign,
max, and a NaN blend (5 instructions; the compare/select form was 14, and LLVM spent 2.5x the time on the
kernel). The result differs from the sequential fold only in the order elements are combined, which XLA leaves
to the implementation (which NaN's payload comes out). Denormals are not flushed as they are read but once,
on the result, by the reducer's scalar code (elemental.FLUSH_EXPLICITLY): flushing (a denormal to the zero of
its sign) is monotone in that order, so flush(max(x...)) == max(flush(x)...), bit for bit, NaN aside. Rows of
65 (a ViT's softmax) keep two accumulators, four from 128 elements: each chain is emitted and compiled, and a
short row has few steps to overlap.
"""
from __future__ import annotations


from llvmlite import ir

from .blocked_sum import LeafSummer, is_blocked_sum, reducer_steps
from .irhelpers import alloca_once, for_range, i64, intrinsic, loop_nest
from .math_approx_core import Emit, format_of
from .scalar_ops import ieee_max_min
from .types import value_type

LANES = 8
CHAINS = 4               # independent vector accumulators at most: llvm.maximum is ~5 cycles deep on x86
MIN_LENGTH = 2 * LANES
# Float sums as vector chains: those of at least MIN_SUM elements each, at most MAX_SUMS of them (a loss, a
# per-batch statistic: few long sums, in a light kernel whose plain loop LLVM leaves sequential, 1.5x XLA's
# error on gpt2/train's loss). Many sums (LayerNorm rows) run in hot kernels that LLVM vectorizes itself, with as
# many partial sums, and their code would cost compile time (vit/fwd: +7% IR).
MIN_SUM = 128
MAX_SUMS = 64
IDENTITY = {"maximum": float("-inf"), "minimum": float("inf"), "add": -0.0}


def special_reduce(em, inst, gens, op: str | None, wide_rule):
    """A generator for reduce `inst` (`op`: its reducer's one opcode, `wide_rule`: the f32 rule a narrow float
    accumulates with) with a loop of its own, or None for the plain loop."""
    lanes = interleaved_reduce(em, inst, gens, op, wide_rule)
    return lanes if lanes is not None else leaf_sum_reduce(em, inst, gens, op, wide_rule)


def leaf_sum_reduce(em, inst, gens, op: str | None, wide_rule):
    """A float sum over more than blocked_sum.LEAF elements, in leaves; None when it is not one."""
    if not is_blocked_sum(inst, op):
        return None
    source, init = gens
    add, finish = reducer_steps(em, inst, init, wide_rule)
    group = em.sum_groups.get(id(inst))
    joint = em.sum_summers.get(("leaf", group)) if group is not None else None
    if joint is not None:                       # a sibling's loops sum this one too (sibling_sums)
        summer, part = joint, joint.join(source, add)
        return lambda index: finish(summer.narrow(summer.sums(index)[part]))
    summer = LeafSummer(em.b, inst, source, add)
    if group is None:
        return lambda index: finish(summer.narrow(summer.wide_sum(index, 0, summer.leaves)))
    from .elemental import _memoized            # (elemental imports this module)
    em.sum_summers[("leaf", group)] = summer
    summer.sums = _memoized(em.b, lambda index: summer.wide_sums(index, 0, summer.leaves))
    return lambda index: finish(summer.narrow(summer.sums(index)[0]))


def sibling_sums(comp) -> dict[int, int]:
    """id(reduce) -> its group, for the reduces of a fused computation that can share one loop: single-operand
    reductions of equal operand shapes, dimensions and result types (the blocked sums among them share
    leaf_sum_reduce's leaves, the plain loops elemental._ReduceLoop; max/min vector loops stay apart), none reading
    another (a variance's sum of squares over a mean reduced in the same fusion must
    wait for it). Groups of one are left out; so is a fusion rooted at its reduce (loops.split_reduction sums
    that one with loops of its own)."""
    if comp.root.opcode != "tuple":
        return {}
    groups: dict[tuple, list[list]] = {}
    above: dict[int, frozenset] = {}            # id(inst) -> ids of the reduces it reads, directly or not
    member: dict[int, int] = {}
    for inst in comp.post_order():
        reads = frozenset().union(*(above[id(o)] | ({id(o)} if o.opcode == "reduce" else set())
                                    for o in inst.operands)) if inst.operands else frozenset()
        above[id(inst)] = reads
        if inst.opcode != "reduce" or len(inst.operands) != 2 or inst.shape.is_tuple:
            continue
        key = (inst.operands[0].shape, frozenset(int(d) for d in inst.attrs["dimensions"]), inst.shape)
        for group in groups.setdefault(key, []):
            if not any(id(m) in reads for m in group):
                group.append(inst)
                break
        else:
            groups[key].append([inst])
    number = 0
    for lists in groups.values():
        for group in lists:
            if len(group) > 1:
                for m in group:
                    member[id(m)] = number
                number += 1
    return member


def chains_for(n: int) -> int:
    """Vector accumulators for a row of n: as many as keep each one four vectors of the row (at least one,
    at most CHAINS); a softmax row of 65 needs two, not four (each chain is emitted and compiled)."""
    return max(1, min(CHAINS, n // (4 * LANES)))


def interleaved_reduce(em, inst, gens, op: str | None, wide_rule):
    """A generator for reduce `inst` as vector code, or None when it does not apply: not a single f32/f64
    max/min/add, or a short minor-most reduced dimension; for add, a blocked sum (leaf_sum_reduce) or one that
    shares its loop with siblings (sibling_sums)."""
    from .indexing import major_to_minor
    if op not in IDENTITY or wide_rule is not None or inst.shape.is_tuple or len(inst.operands) != 2:
        return None
    pt = inst.shape.ptype
    if pt.name not in ("f32", "f64"):
        return None
    if op == "add" and (is_blocked_sum(inst, op) or id(inst) in em.sum_groups or inst.shape.numel > MAX_SUMS
                        or inst.operands[0].shape.numel < MIN_SUM * inst.shape.numel):
        return None
    in_shape = inst.operands[0].shape
    reduced = set(int(d) for d in inst.attrs["dimensions"])
    order = [d for d in major_to_minor(in_shape) if d in reduced]
    if not order or in_shape.dims[order[-1]] < MIN_LENGTH:
        return None
    kept = [d for d in range(in_shape.rank) if d not in reduced]
    inner, n = order[-1], in_shape.dims[order[-1]]
    source, init = gens
    b = em.b
    scalar = value_type(pt)
    scalar_bytes = 8 if pt.name == "f64" else 4
    e = Emit(b, format_of(scalar), LANES)
    suffix = "f64" if pt.name == "f64" else "f32"
    chains = chains_for(n)
    pair = ir.VectorType(scalar, 2)
    block = LANES * chains
    reducer = inst.attrs["to_apply"]

    def gen(index):
        accs = [alloca_once(b, e.fty, name=f"acc.chain{c}") for c in range(chains)]
        buf = alloca_once(b, ir.ArrayType(scalar, block), name="acc.block")
        rest = alloca_once(b, pair, name="acc.tail")
        for acc in accs:
            b.store(e.f(IDENTITY[op]), acc)
        b.store(ir.Constant(pair, [IDENTITY[op]] * 2), rest)
        with loop_nest(b, [in_shape.dims[d] for d in order[:-1]], name="r") as ivs:
            full: list = [None] * in_shape.rank
            for d, i in zip(kept, index):
                full[d] = i
            for d, i in zip(order, ivs):
                full[d] = i

            def chunk(base, count: int):
                """elements [base, base + count) (count a multiple of LANES) into buf (one copy of the source's
                code, in a loop), then folded into the accumulators LANES at a time"""
                with for_range(b, count, "lane") as j:
                    full[inner] = b.add(base, j, flags=["nsw", "nuw"])
                    b.store(source(list(full)), b.gep(buf, [i64(0), j], inbounds=True))
                for c in range(count // LANES):
                    lanes = b.gep(buf, [i64(0), i64(c * LANES)], inbounds=True)
                    v = b.load(b.bitcast(lanes, e.fty.as_pointer()), align=scalar_bytes)
                    b.store(_combine(b, op, b.load(accs[c]), v), accs[c])
            with for_range(b, n // block, "lanes") as k:
                chunk(b.mul(k, i64(block), flags=["nsw", "nuw"]), block)
            vectors = n % block - n % LANES
            if vectors:
                chunk(i64(n - n % block), vectors)
            if n % LANES:                       # the last elements one at a time, each splat over two lanes
                with for_range(b, n % LANES, "tail") as j:
                    full[inner] = b.add(i64(n - n % LANES), j, flags=["nsw", "nuw"])
                    b.store(_combine(b, op, b.load(rest), _tail_pair(b, op, pair, source(list(full)))), rest)
        vec = b.load(accs[0])
        for acc in accs[1:]:
            vec = _combine(b, op, vec, b.load(acc))
        return em.emit_scalar(reducer, [init([]), _fold_lanes(b, op, vec, b.load(rest) if n % LANES else None)])
    return gen


def _tail_pair(b, op: str, pair: ir.VectorType, x):
    """A tail element as a two-lane vector: splat for max/min (x twice is x), in lane 0 beside -0.0 for a sum."""
    if op == "add":
        return b.insert_element(ir.Constant(pair, [IDENTITY[op]] * 2), x, i64(0))
    x = b.insert_element(ir.Constant(pair, ir.Undefined), x, i64(0))
    return b.shuffle_vector(x, x, ir.Constant(ir.VectorType(ir.IntType(32), 2), [0, 0]))


def _combine(b, op: str, x, y):
    """The reducer's operation on vectors: plain fadd for a sum (no reassoc: the order is this code's), IEEE
    754-2019 maximum/minimum for max/min."""
    return b.fadd(x, y) if op == "add" else _ieee(b, op, x, y)


def _ieee(b, op: str, x, y):
    """IEEE 754-2019 maximum/minimum of vectors x and y: llvm.maximum and llvm.minimum, as XLA:CPU emits them
    (on x86: two blends by sign, max/min, a NaN blend; the scalar forms branch on the sign instead)."""
    t = x.type
    name = f"llvm.{op}.v{t.count}{'f64' if isinstance(t.element, ir.DoubleType) else 'f32'}"
    return intrinsic(b, name, t, [x, y])


def _fold_lanes(b, op: str, vec, pair):
    """The lanes of `vec` combined by halves down to two (lanes i and i + n/2, then again), then with `pair`
    (the tail's two-lane accumulator, or None), then lane 0 with lane 1: added, or for max/min by compares and
    selects (LLVM would scalarize a last llvm.maximum, and x86 code branches on the sign for a scalar one)."""
    n = vec.type.count
    mask = lambda lanes: ir.Constant(ir.VectorType(ir.IntType(32), len(lanes)), lanes)
    while n > 2:
        half = n // 2
        lo, hi = (b.shuffle_vector(vec, vec, mask(list(range(first, first + half)))) for first in (0, half))
        vec, n = _combine(b, op, lo, hi), half
    if pair is not None:
        vec = _combine(b, op, vec, pair)
    lo, hi = b.extract_element(vec, i64(0)), b.extract_element(vec, i64(1))
    return b.fadd(lo, hi) if op == "add" else ieee_max_min(b, op, lo, hi)
