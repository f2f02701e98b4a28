"""An f32 GEMM out[M, N] = lhs[M, K] . W as an emitted kernel over W in column panels (dot_plan's "panels" plan):
W stored [N, K] (read transposed: dense layers' and 1x1 convolutions' input gradients), or [K, N] when it is one
panel already (N <= 64: a 3x3 64->64 convolution's kernel).

OpenBLAS's sgemm packs a W stored [N, K] with a transposing copy that costs about as much as 15% of the products
(128 x 256 x 512, one thread: 270 us with W as [N, K], 232 us with W as [K, N]). Here:

  pack    W into panels of PANEL_VECTORS vectors of columns, each panel [K][its columns] contiguous (the last one
          narrower when N is not a multiple), by LANES x LANES blocks transposed in registers (shuffles): ~20 us
          for that W, where an element-wise copy takes 40-50. A [K, N] W is read in place where it is aligned to a
          cache line, else copied (unaligned vector loads split lines: ~25% slower).
  kernel  per block of ROWS rows x one panel: ROWS x PANEL_VECTORS vector accumulators, each k adding a broadcast
          lhs element times the panel's row k (outer products: no lane sums). K runs in blocks of K_BLOCK (a panel's
          block, K_BLOCK x 64 floats, stays in L1 across the row blocks) with each block's sum added to the result;
          rows in blocks of M_BLOCK (lhs's block stays in L2 across the panels).

Each result element is a chain of fused multiply-adds per K block, the blocks' sums added in order.
With threads, the panels are shared out over the pool, each thread packing the ones it runs (splits_columns; else
the rows, bounds multiples of ROWS, after one pack); with one M block on one thread each panel's K block is packed
just before its row blocks instead, into the start of the scratch (packs_inline). Measurements and the rule that picks it: dot_plan.panels.
"""
from __future__ import annotations

from contextlib import nullcontext

from llvmlite import ir

from .dot_plan import DotShape, Operand
from .irhelpers import F32, I32, I64, alloca_once, for_range, i64, if_then
from .parallel import chunk_bounds, parallel_for
from .types import call_math

LANES = 16                  # f32 lanes of the AVX-512 vectors the plan requires
ROWS = 4                    # register block: ROWS x PANEL_VECTORS accumulators (16 of the 32 vector registers)
PANEL_VECTORS = 4
PANEL = LANES * PANEL_VECTORS
K_BLOCK = 256               # 128 x 256 x 512: 0.80-0.85x the time of K in one run, 128 and 64 slower
M_BLOCK = 256               # 4096 x 256 x 256: 0.95x OpenBLAS's time, 1.13x without row blocks
MIN_MNK_PER_TASK = 1 << 18  # as dot_blas's: 5-10 us of one core's products per pool task


def emit_panels(b: ir.IRBuilder, d: DotShape, ops: dict[str, Operand], ptrs: dict[str, ir.Value], scratch: ir.Value,
                num_threads: int) -> None:
    """out = lhs . W through `scratch` (N x K floats, 64-byte aligned: the panels, the last one as narrow as its
    columns): the pack, then the row blocks, shared out over the pool when num_threads > 1 and the products are
    big enough."""
    a, w, c = d.lhs_matrix(ops["lhs"]), d.rhs_matrix(ops["rhs"]), d.out_matrix(ops["out"])
    fp = F32.as_pointer()
    lhs, rhs, out, panels = (b.bitcast(p, fp) for p in (ptrs["lhs"], ptrs["rhs"], ptrs["out"], scratch))
    m, n, k = d.m, d.n, d.k
    tasks = min(num_threads, max(1, m * n * k // MIN_MNK_PER_TASK), max(1, m // (4 * ROWS)))
    count = -(-n // PANEL)

    def columns(b, start, end, task=None):      # panels [start, end): packed by the thread that runs them
        _emit_pack(b, rhs, w.ld, panels, n, k, start, end)
        _emit_rows(b, lhs, a.ld, panels, out, c.ld, i64(0), i64(m), m, n, k, p0=start, p1=end)
    if w.trans == "T" and tasks > 1 and splits_columns(count, tasks) and parallel_for(
            b, chunk_bounds(count, tasks, 1), columns, quantum=1, chunks_per_thread=1):
        return
    inline = (rhs, w.ld) if w.trans == "T" and packs_inline(m, tasks) else None
    if w.trans == "T" and not inline:
        _emit_pack(b, rhs, w.ld, panels, n, k)
    elif w.trans != "T":
        panels = _aligned_panel(b, rhs, panels, n, k)

    def rows(b, start, end, task=None):
        _emit_rows(b, lhs, a.ld, panels, out, c.ld, start, end, m, n, k, inline)
    if tasks > 1 and parallel_for(b, chunk_bounds(m, tasks, ROWS), rows, quantum=ROWS):
        return
    rows(b, i64(0), i64(m))


def packs_inline(m: int, tasks: int) -> bool:
    """Whether a W stored [N, K] is packed a panel's K block at a time into the start of scratch, just before the
    row blocks that read it (one M block, one thread), instead of whole before the row blocks: the packed block is
    in L1/L2 when read and the working set is W, lhs and the result (not 2 x W). 128 x 256 x 512 (ResNet-50's 1x1
    256->512 input gradient), one thread, thread time, in-process A/B (min of 100-120 rounds, 5 runs): 187-241 us
    against 194-305 us whole first (PyTorch 194-260 us); the kernel without any pack ran 183 us. A panel's block
    packed in place into the whole buffer instead (no smaller working set) measured even with packing first."""
    return tasks == 1 and m <= M_BLOCK


def splits_columns(panels: int, tasks: int) -> bool:
    """Whether threads share out a W stored [N, K] by panels, each packing the panels it runs over every row, rather
    than by rows after one thread packed all of W (which the others then read from that core's cache). 128 x 256 x
    512 (ResNet-50's 1x1 256->512 input gradient), two threads, wall, in-process A/B, min of 100 rounds, three
    runs: 108-123 us against 186-191 us by rows (PyTorch 186-198 us)."""
    return panels >= tasks


def _emit_pack(b: ir.IRBuilder, rhs: ir.Value, ld: int, panels: ir.Value, n: int, k: int, p0=None, p1=None) -> None:
    """panels[p * K * PANEL + kk * width + j] = W[p * PANEL + j, kk], width = the panel's columns; the panels
    [p0, p1) when given (values), else all."""
    full = n // PANEL
    first, stop = i64(0), i64(n // LANES)
    if p0 is not None:
        first = b.mul(p0, i64(PANEL_VECTORS))
        stop = _min(b, b.mul(p1, i64(PANEL_VECTORS)), stop)
    with for_range(b, stop, "pk.col", start=first) as jv:   # LANES columns of the result = LANES rows of W
        p, v = b.udiv(jv, i64(PANEL_VECTORS)), b.urem(jv, i64(PANEL_VECTORS))
        width = b.select(b.icmp_unsigned("<", p, i64(full)), i64(PANEL), i64(n % PANEL or PANEL))
        _pack_columns(b, rhs, ld, panels, jv, b.add(b.mul(p, i64(k * PANEL)), b.mul(v, i64(LANES))), width,
                      i64(0), i64(k // LANES))


def _pack_columns(b: ir.IRBuilder, rhs, ld: int, panels, jv, base, width, kb0, kb1) -> None:
    """Result columns jv * LANES... (LANES rows of W) into panels[base + kk * width + j] for kk in
    [kb0 * LANES, kb1 * LANES): LANES x LANES blocks transposed in registers."""
    vty = ir.VectorType(F32, LANES)
    src = b.mul(b.mul(jv, i64(LANES)), i64(ld))
    with for_range(b, kb1, "pk.k", start=kb0) as kb:
        k0 = b.mul(kb, i64(LANES))
        rows = [b.load(b.bitcast(b.gep(rhs, [b.add(b.add(src, i64(r * ld)), k0)], inbounds=True),
                                 vty.as_pointer()), align=4) for r in range(LANES)]
        for kk, col in enumerate(_transpose(b, rows)):
            at = b.add(base, b.mul(b.add(k0, i64(kk)), width))
            b.store(col, b.bitcast(b.gep(panels, [at], inbounds=True), vty.as_pointer()), align=64)


def _aligned_panel(b: ir.IRBuilder, rhs: ir.Value, scratch: ir.Value, n: int, k: int) -> ir.Value:
    """A W stored [K, N] as one dense panel: itself where it is aligned to a cache line, else its copy in scratch."""
    vp = ir.VectorType(F32, LANES).as_pointer()
    aligned = b.icmp_unsigned("==", b.and_(b.ptrtoint(rhs, I64), i64(63)), i64(0))
    with if_then(b, b.not_(aligned), "pc.copy"):
        with for_range(b, k * n // LANES, "pc.v") as v:
            at = b.mul(v, i64(LANES))
            x = b.load(b.bitcast(b.gep(rhs, [at], inbounds=True), vp), align=4)
            b.store(x, b.bitcast(b.gep(scratch, [at], inbounds=True), vp), align=64)
    return b.select(aligned, rhs, scratch)


def _transpose(b: ir.IRBuilder, rows: list[ir.Value]) -> list[ir.Value]:
    """The LANES x LANES transpose of `rows`: for each bit s of the index, the pairs of rows (i, i + s) swap
    their lanes' bit s with the rows' (log2(LANES) rounds of LANES two-source shuffles)."""
    mask = lambda lanes: ir.Constant(ir.VectorType(I32, LANES), [ir.Constant(I32, x) for x in lanes])
    s = LANES // 2
    while s:
        lo = mask([l if not l & s else LANES + l - s for l in range(LANES)])
        hi = mask([l + s if not l & s else LANES + l for l in range(LANES)])
        out = list(rows)
        for i in range(LANES):
            if not i & s:
                out[i], out[i + s] = (b.shuffle_vector(rows[i], rows[i + s], half) for half in (lo, hi))
        rows, s = out, s // 2
    return rows


def _emit_rows(b: ir.IRBuilder, lhs, lda: int, panels, out, ldc: int, start: ir.Value, end: ir.Value,
               m: int, n: int, k: int, inline=None, p0=None, p1=None) -> None:
    """Result rows [start, end) (start a multiple of ROWS; end one too, or M): K blocks, row blocks, panels, register
    blocks. The rows past the last whole block of ROWS (M % ROWS of them) are the chunk's that ends at M.
    `inline` (W and its leading dim; one M block, one thread): each panel's K block is packed into the start of
    `panels` just before its row blocks read it, instead of all of W before. p0, p1 (values): only the panels
    [p0, p1), else all."""
    full_panels, tail_vectors = n // PANEL, n % PANEL // LANES
    left = m % ROWS
    with for_range(b, -(-k // K_BLOCK), "pn.kb") as kb:
        k0 = b.mul(kb, i64(K_BLOCK))
        count = b.select(b.icmp_unsigned("<", b.sub(i64(k), k0), i64(K_BLOCK)), b.sub(i64(k), k0), i64(K_BLOCK))
        first = b.icmp_unsigned("==", kb, i64(0))
        span = b.sub(end, start)
        with for_range(b, b.udiv(b.add(span, i64(M_BLOCK - 1)), i64(M_BLOCK)), "pn.mb") as mb:
            m0 = b.add(start, b.mul(mb, i64(M_BLOCK)))
            m1 = b.add(m0, i64(M_BLOCK))
            m1 = b.select(b.icmp_unsigned("<", m1, end), m1, end)
            blocks = b.udiv(b.sub(m1, m0), i64(ROWS))

            def panel(p: ir.Value, width: int) -> None:
                col = b.mul(p, i64(PANEL))
                base = b.add(b.mul(p, i64(k * PANEL)), b.mul(k0, i64(width)))
                if inline:
                    base, kb0 = i64(0), b.udiv(k0, i64(LANES))
                    for v in range(width // LANES):
                        _pack_columns(b, inline[0], inline[1], panels, b.add(b.mul(p, i64(PANEL_VECTORS)), i64(v)),
                                      b.sub(i64(v * LANES), b.mul(k0, i64(width))), i64(width), kb0,
                                      b.add(kb0, b.udiv(count, i64(LANES))))
                with for_range(b, blocks, "pn.rb") as rb:
                    _emit_block(b, lhs, lda, panels, out, ldc, b.add(m0, b.mul(rb, i64(ROWS))), ROWS, col, base,
                                width, k0, count, first)
                if left:
                    with if_then(b, b.icmp_unsigned("==", m1, i64(m)), "pn.left"):
                        _emit_block(b, lhs, lda, panels, out, ldc, i64(m - left), left, col, base, width, k0, count,
                                    first)
            if full_panels:
                lo, hi = (i64(0), i64(full_panels)) if p0 is None else \
                    (_min(b, p0, i64(full_panels)), _min(b, p1, i64(full_panels)))
                with for_range(b, hi, "pn.p", start=lo) as p:
                    panel(p, PANEL)
            if tail_vectors:
                with (if_then(b, b.icmp_unsigned(">", p1, i64(full_panels)), "pn.tail") if p0 is not None
                      else nullcontext()):
                    panel(i64(full_panels), tail_vectors * LANES)


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_unsigned("<", x, y), x, y)


def _emit_block(b: ir.IRBuilder, lhs, lda: int, panels, out, ldc: int, m0: ir.Value, rows: int, col: ir.Value,
                base: ir.Value, width: int, k0: ir.Value, count: ir.Value, first: ir.Value) -> None:
    """rows x width/LANES accumulators over k in [k0, k0 + count), from zero: stored to the result in the first K
    block, added to it in the others (each block's sum its own chain: rounding errors grow with K_BLOCK, not K)."""
    vty = ir.VectorType(F32, LANES)
    vecs = width // LANES
    outs = [[b.bitcast(b.gep(out, [b.add(b.add(b.mul(b.add(m0, i64(r)), i64(ldc)), col), i64(v * LANES))],
                             inbounds=True), vty.as_pointer()) for v in range(vecs)] for r in range(rows)]
    accs = [[alloca_once(b, vty) for _ in range(vecs)] for _ in range(rows)]
    zero = ir.Constant(vty, None)
    for r in range(rows):
        for v in range(vecs):
            b.store(zero, accs[r][v])
    arow = [b.add(b.mul(b.add(m0, i64(r)), i64(lda)), k0) for r in range(rows)]
    with for_range(b, count, "pn.k") as kk:
        at = b.add(base, b.mul(kk, i64(width)))
        ws = [b.load(b.bitcast(b.gep(panels, [b.add(at, i64(v * LANES))], inbounds=True), vty.as_pointer()), align=64)
              for v in range(vecs)]
        for r in range(rows):
            x = b.load(b.gep(lhs, [b.add(arow[r], kk)], inbounds=True))
            xs = b.shuffle_vector(b.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(I32, 0)),
                                  ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(I32, LANES), None))
            for v in range(vecs):
                b.store(call_math(b, "fmuladd", xs, ws[v], b.load(accs[r][v])), accs[r][v])
    for r in range(rows):
        for v in range(vecs):
            total = b.load(accs[r][v])
            b.store(b.select(first, total, b.fadd(total, b.load(outs[r][v], align=4))), outs[r][v], align=4)
