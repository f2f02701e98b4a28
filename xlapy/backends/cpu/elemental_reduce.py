"""Reductions whose element loop is not the plain one (`special_reduce`, which elemental._reduce asks first):

| reduce                                      | loop                                                      |
|---------------------------------------------|-----------------------------------------------------------|
| float max/min, minor-most reduced dim long  | `interleaved_reduce`: explicit vector code (below)        |
| float add over more than blocked_sum.LEAF   | `leaf_sum_reduce`: leaves summed in f64 (blocked_sum.py)  |
| anything else                               | None: the plain loop, which LLVM vectorizes if it can     |

Float max/min reductions as explicit vector code: LANES elements of the minor-most reduced dimension at a time
in one <LANES x float> accumulator, then the lanes combined, then the init value:

    acc[c] = splat(identity)                            # -inf for max, +inf for min; c < CHAINS
    for j in range(0, n, LANES * CHAINS):               # the tail is padded with the identity
        for l in range(LANES * CHAINS):  buf[l] = x[j + l]      # a loop: LLVM vectorizes it (one copy of x's code)
        for c in range(CHAINS):
            v = flush_denormals(<buf[c * LANES], ..., buf[c * LANES + LANES - 1]>)
            acc[c] = nan_propagating_max(acc[c], v)     # compare + selects on whole vectors
    result = reducer(init, reducer(...(lane 0, lane 1), ...))   # over the lanes of max(acc[0], ... acc[3])

The elements pass through the small buffer `buf` so that the element's code (a fused producer's) is emitted
once per chunk loop, not once per lane: 32 copies of a softmax's scaled input made its max kernel ~1000 lines
and the largest LLVM cost of vit and gpt2's training steps.

LLVM's loop vectorizer recognises plain fadd/fmul/integer reductions (the ordinary loop in elemental.py is
left to it) but not a NaN-propagating max, whose compare/select chain then runs one element at a time, ~10
cycles deep. The result differs from the sequential fold only in the order elements are combined, which XLA
leaves to the implementation (which NaN's payload comes out; zeros are ordered, -0 < +0, as in XLA:CPU). Denormal elements are
flushed once as they are read, as the interpreter does; the accumulator only ever holds flushed values. The
lanes and init are combined by the reducer's own scalar code.
"""
from __future__ import annotations


from llvmlite import ir

from .blocked_sum import LeafSummer, is_blocked_sum, reducer_steps
from .irhelpers import alloca_once, for_range, i64, loop_nest
from .math_approx_core import Emit, format_of
from .scalar_ops import ieee_max_min
from .types import value_type

LANES = 8
CHAINS = 4               # independent vector accumulators: the compare/select chain is ~7 cycles deep
MIN_LENGTH = 2 * LANES
IDENTITY = {"maximum": float("-inf"), "minimum": float("inf")}


def _flush(e: Emit, v):
    """Denormals to zeros of the same sign, on the bits: a magnitude below the smallest normal's bits is a zero or
    a denormal (NaN and infinity bits are above it), and the sign bit alone is the zero of its sign."""
    b, bits, top = e.b, e.bits(v), 1 << (e.fmt.bits - 1)
    small = b.icmp_unsigned("<", b.and_(bits, e.i(top - 1)), e.i(1 << e.fmt.mant))
    return e.sel(small, e.from_bits(b.and_(bits, e.i(top))), v)


def _nan_max(e: Emit, op: str, acc, v):
    """scalar_ops' float max/min (NaN from either side propagates, -0 < +0) on vectors."""
    return ieee_max_min(e.b, op, acc, v)


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


def interleaved_reduce(em, inst, gens, op: str | None, wide_rule):
    """A generator for reduce `inst` as vector code, or None when it does not apply: not a single f32/f64
    max/min, or a short minor-most reduced dimension."""
    from .indexing import major_to_minor
    if op not in IDENTITY or wide_rule is not None or inst.shape.is_tuple or len(inst.operands) != 2:
        return None
    pt = inst.shape.ptype
    if pt.name not in ("f32", "f64"):
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
    reducer = inst.attrs["to_apply"]

    def gen(index):
        accs = [alloca_once(b, e.fty, name=f"acc.chain{c}") for c in range(CHAINS)]
        buf = alloca_once(b, ir.ArrayType(scalar, LANES * CHAINS), name="acc.block")
        for acc in accs:
            b.store(e.f(IDENTITY[op]), acc)
        with loop_nest(b, [in_shape.dims[d] for d in order[:-1]], name="r") as ivs:
            full: list = [None] * in_shape.rank
            for d, i in zip(kept, index):
                full[d] = i
            for d, i in zip(order, ivs):
                full[d] = i

            block = LANES * CHAINS

            def chunk(base, count: int):
                """elements [base, base + count) into buf (one copy of the source's code, in a loop), then
                folded into the accumulators LANES at a time; lanes past count hold the identity"""
                with for_range(b, count, "lane") as j:
                    full[inner] = b.add(base, j, flags=["nsw", "nuw"])
                    b.store(source(list(full)), b.gep(buf, [i64(0), j], inbounds=True))
                for lane in range(count, -(-count // LANES) * LANES):
                    b.store(ir.Constant(scalar, IDENTITY[op]), b.gep(buf, [i64(0), i64(lane)], inbounds=True))
                for c in range(-(-count // LANES)):
                    lanes = b.gep(buf, [i64(0), i64(c * LANES)], inbounds=True)
                    v = b.load(b.bitcast(lanes, e.fty.as_pointer()), align=scalar_bytes)
                    b.store(_nan_max(e, op, b.load(accs[c]), _flush(e, v)), accs[c])
            with for_range(b, n // block, "lanes") as k:
                chunk(b.mul(k, i64(block), flags=["nsw", "nuw"]), block)
            if n % block:
                chunk(i64(n - n % block), n % block)
        vec = b.load(accs[0])
        for acc in accs[1:]:
            vec = _nan_max(e, op, vec, b.load(acc))
        return em.emit_scalar(reducer, [init([]), _fold_lanes(b, op, vec)])
    return gen


def _fold_lanes(b, op: str, vec):
    """The lanes of `vec` combined by halves (lanes i and i + n/2, then again): log2(LANES) vector ops instead
    of LANES - 1 scalar reducer calls. The accumulators hold flushed values only, so nothing is flushed here."""
    n = vec.type.count
    while n > 1:
        half = n // 2
        mask = ir.VectorType(ir.IntType(32), half)
        lo, hi = (b.shuffle_vector(vec, vec, ir.Constant(mask, list(range(first, first + half))))
                  for first in (0, half))
        if half == 1:
            lo, hi = b.extract_element(lo, i64(0)), b.extract_element(hi, i64(0))
        vec, n = ieee_max_min(b, op, lo, hi), half
    return vec
