"""A convolution with fewer output features than a vector has lanes, vectorized over its sums instead.

conv_vector puts the output features in the lanes: with 3 of them (ResNet-50's stem input gradient: its four
phases are 16 -> 3 convolutions, conv_base_dilation.py) a tile is a 2-lane vector and a scalar, and the kernel
ran at 10% of the machine's peak (2.5 ms against oneDNN's 1.8 ms). Here the lanes run along each output's sum:
for the outer kernel dims' taps, the last kernel dim's taps and the input features are one contiguous run of the
input (K_last x C elements, NHWC with no dilation of the last dim), and the kernel is repacked once per call to
the same order, one run per output feature (zero-padded to whole vectors):

    out[n, o, f] = sum over outer taps k of  sum over r < K_last*C of  lhs[n, p(o, k) + r] * packed[f, k, r]

Per block of P consecutive outputs of the last dim (P x F accumulators, at most MAX_ACCUMULATORS):

    acc[j][f] = 0;  for each outer tap k and vector v of the run:  w[f] = packed[f, k, v]   (F loads)
                                                                    x = lhs[n, p(o_j, k) + v]  (P loads)
                                                                    acc[j][f] += x * w[f]       (P x F FMAs)

then each accumulator's lanes are added by halves (lane i + lane i + lanes/2, ...), the same tree as
dot_loops._partial_sums' last step; the tree runs over pairs of accumulators at once (shuffles that take half
of each, so 16 sums cost 15 vector adds and 30 shuffles, not 16 x 4 adds of narrowing vectors) and leaves the
block's P x F sums in output order, stored as whole vectors when the output is dense (features unit-stride, the
last dim directly outside them). The run's last vector is a masked load when the run is not whole vectors (its
padded kernel lanes are zero, its masked input lanes read as zero: no 0 x inf). Each lane sums K_outer x
run/lanes products in one chain, the lanes then in a tree: shorter chains than conv_vector's blocks, in a
different order (same or smaller error against exact arithmetic, tests/backends/cpu/test_conv_sum_vector.py).

Blocks some of whose taps read the last dim's padding (edge blocks, at the ends of a row) are emitted at their
known positions: their loads' lanes in the padding are masked off by constant masks (a vector wholly in the
padding is skipped: its products would be zeros), so the input is read in place; a padded copy
(conv_simd.padded_input) was 30-40% of the kernel's time (unet's 32 -> 3 3x3: 67 -> 49 us). More than
MAX_EDGE_BLOCKS edge blocks, or an input whose last dim is not directly outside its features: the input is copied
padded first. The outer dims' taps loop over those that read inside (conv_simd.outer_positions). Rows (batch and
the outer output dims) are split over threads.
"""
from __future__ import annotations

import math

from llvmlite import ir

from .buffers import BufferRef
from .conv_simd import FLOAT_TYPES, Vectors, block_size, interior_blocks, outer_positions, padded_input, plus, \
    scaled, unflatten
from .conv_vector import edge_blocks
from .conv_taps import ConvGeometry, scratch
from .irhelpers import I1, alloca_once, for_range, i64, intrinsic, loop_nest
from .parallel import chunk_bounds, parallel_for, task_count
from .vector_width import loop_vector_bytes

MAX_TAPS = 64            # as conv_vector: larger windows are filter gradients (conv_filter_gradient, GEMM)
MAX_ACCUMULATORS = 16    # P x F vector accumulators per block with AVX-512's 32 registers (24 measured no faster,
                         # F = 6 15% slower); half as many with 16 registers (AVX2: not measured)
MAX_EDGE_BLOCKS = 4      # blocks some of whose taps read the padding, with masked loads; more: the input padded
MAX_BLOCK = 16           # outputs per block
UNROLLED_VECTORS = 8     # a run of at most this many vectors is unrolled; longer ones loop


def few_features(g: ConvGeometry, lanes: int) -> bool:
    """Whether the output features are few enough that lanes along the sums beat lanes along the features."""
    return g.out_features * 4 <= lanes


def applies(g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> bool:
    types = {lhs.shape.ptype.name, rhs.shape.ptype.name, out.shape.ptype.name}
    if not (len(types) == 1 and types <= set(FLOAT_TYPES)):
        return False
    lanes = max(1, loop_vector_bytes() // (4 if out.shape.ptype.name == "f32" else 8))
    return (g.groups == 1 and g.lhs_strides[1] == 1 and len(g.out_sizes) >= 1 and few_features(g, lanes)
            and g.kernel_sizes[-1] * g.in_features >= lanes and math.prod(g.kernel_sizes) <= MAX_TAPS
            and g.window[-1].window_dilation == 1
            and all(w.base_dilation == 1 and not w.window_reversal for w in g.window))


def _packed_kernel(em, g: ConvGeometry, v: Vectors, rhs: ir.Value, run: int, padded_run: int) -> ir.Value:
    """The kernel as [output feature, outer taps, padded_run]: each tap row's K_last x C products in the input's
    order, zeros after them (a typed pointer into scratch)."""
    b = em.b
    outer = math.prod(g.kernel_sizes[:-1])
    packed = v.typed(scratch(em, g.out_features * outer * padded_run * v.elem_bytes))
    if padded_run > run:
        v.zero_fill(packed, g.out_features * outer * padded_run)
    ri, ro, *rsp = g.rhs_strides
    src = v.typed(rhs)
    with loop_nest(b, [g.out_features, *g.kernel_sizes, g.in_features], name="csp") as (f, *ks, c):
        at = b.add(b.mul(f, i64(ro)), b.mul(c, i64(ri)))
        for k, s in zip(ks, rsp):
            at = b.add(at, scaled(b, k, s))
        row = i64(0)
        for k, size in zip(ks[:-1], g.kernel_sizes[:-1]):
            row = b.add(b.mul(row, i64(size)), k)
        dst = b.add(b.mul(b.add(b.mul(f, i64(outer)), row), i64(padded_run)),
                    b.add(b.mul(ks[-1], i64(g.in_features)), c))
        b.store(b.load(b.gep(src, [at], inbounds=True)), b.gep(packed, [dst], inbounds=True))
    return packed


def lane_sums(b: ir.IRBuilder, accs: list[ir.Value], lanes: int) -> list[ir.Value]:
    """Each accumulator's lanes added by halves (lane i + lane i + half, then the same on the halves), two
    accumulators at a time: returns vectors holding the sums in the accumulators' order."""
    items = [(a, lanes) for a in accs]            # (vector, lanes per sum)
    group = lanes
    while group > 1:
        half, out, i = group // 2, [], 0
        while i < len(items):
            a, width = items[i][0], items[i][0].type.count
            pair = i + 1 < len(items) and items[i + 1][0].type.count == width
            other = items[i + 1][0] if pair else ir.Constant(a.type, ir.Undefined)
            sources = [0, width] if pair else [0]
            lo = [base + s * group + t for base in sources for s in range(width // group) for t in range(half)]
            hi = [x + half for x in lo]
            mask = [ir.Constant(ir.VectorType(ir.IntType(32), len(lo)), [ir.Constant(ir.IntType(32), x) for x in m])
                    for m in (lo, hi)]
            shuffled = [b.shuffle_vector(a, other, m) if len(lo) > 1 else b.extract_element(a, m.constant[0])
                        for m in mask]
            out.append((b.fadd(shuffled[0], shuffled[1]), half))
            i += 2 if pair else 1
        items, group = out, half
    return [x for x, _ in items]


def _row_ends(edges: list[tuple[int, int]], outs: int):
    """The edge blocks as (head, tail): a run of blocks from output 0 and a run to the row's end (the interior
    between them), or None when they are not."""
    head = [e for e in edges if e[0] < outs // 2]
    tail = edges[len(head):]

    def contiguous(blocks, start: int) -> bool:
        for o0, count in blocks:
            if o0 != start:
                return False
            start = o0 + count
        return True
    ok = contiguous(head, 0) and contiguous(tail, tail[0][0] if tail else outs) \
        and (not tail or tail[-1][0] + tail[-1][1] == outs)
    return (head, tail) if ok else None


def emit(em, inst, g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> None:
    b = em.b
    v = Vectors(b, out.shape.ptype)
    lanes, last = v.lanes, len(g.out_sizes) - 1
    features = g.out_features
    accumulators = MAX_ACCUMULATORS if loop_vector_bytes() >= 64 else MAX_ACCUMULATORS // 2
    block = block_size(g.out_sizes[last], min(MAX_BLOCK, max(1, accumulators // features)))
    edges = edge_blocks(g, block)
    source = lhs.pointer
    ends = _row_ends(edges, g.out_sizes[last])
    if len(edges) > MAX_EDGE_BLOCKS or ends is None or g.lhs_strides[2 + last] != g.in_features:
        source, g = padded_input(em, g, source, v.elem_bytes)     # every block's taps read inside the copy
        edges, ends = [], ([], [])
    run = g.kernel_sizes[-1] * g.in_features
    full, tail = divmod(run, lanes)
    padded_run = (full + (1 if tail else 0)) * lanes
    outer_taps = math.prod(g.kernel_sizes[:-1])
    packed = _packed_kernel(em, g, v, rhs.pointer, run, padded_run)
    lp, op = v.typed(source), v.typed(out.pointer)
    sb, _, *ssp = g.lhs_strides
    ob, of, *osp = g.out_strides
    wl = g.window[last]
    x_step = wl.stride * ssp[last]
    row_elements = g.in_sizes[last] * g.in_features
    k_strides = [w.window_dilation * s for w, s in zip(g.window, ssp)]
    w_strides, at = [], padded_run                 # the packed kernel's element stride per outer tap dim
    for k in reversed(g.kernel_sizes[:-1]):
        w_strides.insert(0, at)
        at *= k
    dense = of == 1 and osp[last] == features
    row_sizes = [g.batch, *g.out_sizes[:-1]]
    vty = v.ty(lanes)

    def lanes_read(o0: int | None, j: int, i: int) -> list[bool]:
        """Which lanes of the run's vector i output o0 + j reads: inside the run, and (for a block at a known
        position, an edge block) inside the input's row."""
        first = None if o0 is None else ((o0 + j) * wl.stride - wl.padding_low) * g.in_features + i * lanes
        return [i * lanes + t < run and (first is None or 0 <= first + t < row_elements) for t in range(lanes)]

    def masked_load(pointer, at_, mask: list[bool]) -> ir.Value:
        """The lanes of `mask` from pointer + at_, zeros elsewhere (never read: they may lie outside the input)."""
        p = b.bitcast(b.gep(pointer, [at_]), vty.as_pointer())
        name = f"llvm.masked.load.v{lanes}{'f32' if v.elem_bytes == 4 else 'f64'}.p0"
        bits = ir.Constant(ir.VectorType(I1, lanes), [ir.Constant(I1, int(m)) for m in mask])
        return intrinsic(b, name, vty, [p, ir.Constant(ir.IntType(32), v.elem_bytes), bits, v.zero(lanes)])

    def row_base(n, o_outer) -> ir.Value:
        at_ = b.mul(n, i64(sb))
        for d, o in enumerate(o_outer):
            at_ = b.add(at_, scaled(b, plus(b, scaled(b, o, g.window[d].stride), -g.window[d].padding_low), ssp[d]))
        return at_

    def pixels(n, o_outer, o0, count: int) -> None:
        """The sums of `count` consecutive outputs of the last dim from o0, every feature."""
        known = getattr(o0, "constant", None) if edges else None       # an edge block: its lanes masked
        slots = [[alloca_once(b, vty, "csv.acc") for _ in range(features)] for _ in range(count)]
        for row in slots:
            for slot in row:
                b.store(v.zero(lanes), slot)
        base = b.add(row_base(n, o_outer), scaled(b, plus(b, scaled(b, o0, wl.stride), -wl.padding_low), ssp[last]))
        with outer_positions(b, g, o_outer, "csk") as ks:
            xo, wo = base, i64(0)
            for k, step, ws in zip(ks, k_strides, w_strides):
                xo, wo = b.add(xo, scaled(b, k, step)), b.add(wo, scaled(b, k, ws))

            def vector(i, at_) -> None:
                """The products of the run's vector i (static, or None in a loop) at element offset at_."""
                ws = [v.load(packed, b.add(wo, plus(b, at_, f * outer_taps * padded_run)), lanes)
                      for f in range(features)]
                for j, row in enumerate(slots):
                    mask = [True] * lanes if i is None else lanes_read(known, j, i)
                    if not any(mask):
                        continue                                    # every lane in the padding: no products
                    x_at = b.add(xo, plus(b, at_, j * x_step))
                    x = v.load(lp, x_at, lanes) if all(mask) else masked_load(lp, x_at, mask)
                    for slot, wf in zip(row, ws):
                        b.store(v.mul_add(b.load(slot), x, wf), slot)

            if full <= UNROLLED_VECTORS or known is not None:
                for i in range(full):
                    vector(i, i64(i * lanes))
            else:
                with for_range(b, full, "csv") as i:
                    vector(None, b.mul(i, i64(lanes)))
            if tail:
                vector(full, i64(full * lanes))
        sums = lane_sums(b, [b.load(slot) for row in slots for slot in row], lanes)
        obase = b.add(b.mul(n, i64(ob)), b.mul(o0, i64(osp[last])))
        for o, s in zip(o_outer, osp):
            obase = b.add(obase, b.mul(o, i64(s)))
        if dense:
            at_ = 0
            for s in sums:
                width = s.type.count if isinstance(s.type, ir.VectorType) else 1
                v.store(op, plus(b, obase, at_), s, width)
                at_ += width
            return
        flat = []
        for s in sums:
            flat += [b.extract_element(s, i64(i)) for i in range(s.type.count)] \
                if isinstance(s.type, ir.VectorType) else [s]
        for j in range(count):
            for f in range(features):
                v.store(op, plus(b, obase, j * osp[last] + f * of), flat[j * features + f], 1)

    first_blocks, last_blocks = ends
    lo = first_blocks[-1][0] + first_blocks[-1][1] if first_blocks else 0
    hi = last_blocks[0][0] if last_blocks else g.out_sizes[last]

    def rows(b_, start, end, task=None) -> None:
        with for_range(b, end, "csr", start=start) as r:
            n, *o_outer = unflatten(b, r, row_sizes)
            for o0, count in first_blocks:
                pixels(n, o_outer, i64(o0), count)
            if hi > lo:
                for o0, count in interior_blocks(b, lo, hi, block, "csb"):
                    pixels(n, o_outer, o0, count)
            for o0, count in last_blocks:
                pixels(n, o_outer, i64(o0), count)

    total = math.prod(row_sizes)
    tasks = min(task_count(inst, em.num_threads), total)
    if not (tasks > 1 and parallel_for(b, chunk_bounds(total, tasks, 1), rows, quantum=1)):
        rows(b, i64(0), i64(total))
