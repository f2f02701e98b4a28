"""Dots as BLAS calls (gemm/gemv through runtime.py's provider), one call per batch element.

With num_threads > 1 the JIT owns the threading: every BLAS call runs with the BLAS single-threaded
(threadpool.xlapy_blas_serial around the dot), so the BLAS's own spinning threads never compete with the
pool's, and a GEMM of at least MIN_MNK_PER_TASK multiply-adds per task is split over the thread pool
(parallel.py): C's columns (or rows, when M > N: the split side's operand is the smaller one to pack twice)
into contiguous chunks of SPLIT_QUANTUM-multiples, one BLAS call per chunk. GEMMs of BLAS_OWN_THREADS_MNK
multiply-adds or more, and every call with num_threads == 1 (and in AOT objects), are plain calls, the BLAS
choosing its own thread count. A batched dot whose GEMMs are too small to split (attention's per-head
products) shares out its batch elements instead (`batch_tasks`; dot_emitter.py runs them as pool tasks, with
the emitted loops too).

Every element of C is summed over the whole K by one call; the chunk bounds are compile-time constants, so
results are fixed for a given thread count. (They may differ in the last bits between thread counts: a BLAS
may pick another kernel, or block differently, for another shape or its own thread count.)
"""
from __future__ import annotations

from llvmlite import ir

from . import runtime, threadpool
from .dot_plan import DotPlan, DotShape, Matrix, Operand, batch_loop, group, offset_of, transposed
from .irhelpers import I8, I8P, I32, VOID, alloca_once, i64
from .parallel import parallel_for
from .types import storage_type

MIN_MNK_PER_TASK = 1 << 18     # ~0.5 MFLOP: 5-10 us of one core's GEMM, well above the pool's wake-up cost
# A GEMM this big (~20 ms of one core) runs as one call with the BLAS's own threads: its packing and
# partitioning across cores beats per-chunk calls, and their start-up cost no longer matters.
BLAS_OWN_THREADS_MNK = 1 << 28
SPLIT_QUANTUM = 16             # chunk bounds are multiples of this many rows/columns
# Chunks per thread of a split GEMM (other loops take parallel.CHUNKS_PER_TASK = 4): each chunk's BLAS call packs
# the whole shared operand again, and with 4 per thread the transformer steps' GEMMs (256 x 192 x 192 ...
# 2048 x 256 x 192) took 5-15% more CPU than with 2; 2 still let the pool's threads balance a descheduled one.
GEMM_CHUNKS_PER_THREAD = 2


def gemm_tasks(m: int, n: int, k: int, num_threads: int) -> int:
    """How many pool tasks an m x n x k GEMM is split into (1: one BLAS call)."""
    if num_threads <= 1:
        return 1
    return max(1, min(num_threads, m * n * k // MIN_MNK_PER_TASK, max(m, n) // SPLIT_QUANTUM))


def batch_tasks(d: DotShape, plan: DotPlan, num_threads: int) -> int:
    """How many pool tasks a batched dot's batch elements are shared out to (1: none, the batch is looped on
    one thread). Each task gets at least MIN_MNK_PER_TASK multiply-adds. A GEMM big enough to be split itself
    is, unless the batch has two elements per thread to share out; BLAS calls need the serial BLAS."""
    if num_threads <= 1 or d.batch < 2:
        return 1
    mnk = d.m * d.n * d.k
    if plan.strategy != "loops":
        if not serial_blas_wanted(d, plan, num_threads):
            return 1
        if plan.strategy == "gemm" and d.batch < 2 * num_threads and gemm_tasks(d.m, d.n, d.k, num_threads) > 1:
            return 1
    return max(1, min(num_threads, d.batch, d.batch * mnk // MIN_MNK_PER_TASK))


def serial_blas_wanted(d: DotShape, plan: DotPlan, num_threads: int) -> bool:
    """Whether this dot's BLAS calls run with the BLAS single-threaded (the pool owns the threads)."""
    return num_threads > 1 and threadpool.serial_blas_available() and \
        not (plan.strategy == "gemm" and d.m * d.n * d.k >= BLAS_OWN_THREADS_MNK)


def set_serial_blas(b: ir.IRBuilder, on: bool) -> None:
    b.call(_declare(b, threadpool.SERIAL_BLAS_SYMBOL, [I32]), [ir.Constant(I32, int(on))])


def emit_blas(b: ir.IRBuilder, d: DotShape, plan: DotPlan, ops: dict[str, Operand], ptrs: dict[str, ir.Value],
              num_threads: int = 1, span: tuple[ir.Value, ir.Value] | None = None):
    """The BLAS calls of the whole dot, or with `span` (start, end) those of its flat batch elements in
    [start, end): a pool task's share (the caller made the BLAS serial around the tasks; no GEMM is split
    again)."""
    if span is not None:
        _emit_calls(b, d, plan, ops, ptrs, 1, span)
        return
    serial = serial_blas_wanted(d, plan, num_threads)
    if serial:
        set_serial_blas(b, True)
    _emit_calls(b, d, plan, ops, ptrs, num_threads if serial else 1, None)
    if serial:
        set_serial_blas(b, False)


def _emit_calls(b: ir.IRBuilder, d: DotShape, plan: DotPlan, ops: dict[str, Operand], ptrs: dict[str, ir.Value],
                split_threads: int, span) -> None:
    """One call per batch element (of `span`); a GEMM is split over the pool when split_threads > 1."""
    fn = runtime.blas_function(plan.strategy, d.out.ptype.name)
    elem = storage_type(d.out.ptype)
    dd = d.dd
    with batch_loop(b, d, span) as bivs:
        base = {}
        for which, dims in (("lhs", dd.lhs_batch), ("rhs", dd.rhs_batch), ("out", d.ob)):
            idx = [None] * len(ops[which].dims)
            for x, iv in zip(dims, bivs):
                idx[x] = iv
            typed = b.bitcast(ptrs[which], elem.as_pointer())
            base[which] = b.gep(typed, [offset_of(b, idx, ops[which].strides)], inbounds=True)
        a = d.lhs_matrix(ops["lhs"])
        bm = d.rhs_matrix(ops["rhs"])
        c = d.out_matrix(ops["out"])
        if plan.strategy == "gemm":
            if not (split_threads > 1 and _split_gemm(b, fn, elem, a, base["lhs"], bm, base["rhs"], c,
                                                      base["out"], split_threads)):
                _call_gemm(b, fn, elem, a, base["lhs"], bm, base["rhs"], c, base["out"])
        elif d.n == 1:     # out[M] = A[M,K] . x[K]
            x_inc = group(ops["rhs"], dd.rhs_contracting)[1]
            y_inc = group(ops["out"], d.om)[1]
            _call_gemv(b, fn, elem, a, base["lhs"], x_inc, base["rhs"], y_inc, base["out"])
        else:              # out[N] = B[K,N]^T . x[K]
            x_inc = group(ops["lhs"], dd.lhs_contracting)[1]
            y_inc = group(ops["out"], d.on)[1]
            _call_gemv(b, fn, elem, transposed(bm), base["rhs"], x_inc, base["lhs"], y_inc, base["out"])


def _declare(b: ir.IRBuilder, name: str, args: list[ir.Type]) -> ir.Function:
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(VOID, args), name)
        fn.attributes.add("nounwind")
    return fn


def _split_gemm(b, fn: runtime.BlasFunction, elem, a: Matrix, pa, bm: Matrix, pb, c: Matrix, pc,
                num_threads: int) -> bool:
    """C = op(A) op(B) as pool tasks over chunks of C's columns (or rows); False, having emitted nothing that
    computes, when the GEMM stays one call."""
    m, n, k = c.rows, c.cols, a.cols
    tasks = gemm_tasks(m, n, k, num_threads)
    if tasks < 2:
        return False
    by_cols = m <= n
    size = n if by_cols else m
    bounds = [0] + [t * size // tasks // SPLIT_QUANTUM * SPLIT_QUANTUM for t in range(1, tasks)] + [size]

    def at(ptr, start, step):
        return b.gep(ptr, [b.mul(start, i64(step))], inbounds=True)

    def body(b, start, end, task):      # b: the shared builder, now in the worker
        count = b.sub(end, start)
        if by_cols:      # columns [start, end) of op(B) and C
            _call_gemm(b, fn, elem, a, pa, bm, at(pb, start, 1 if bm.trans == "N" else bm.ld), c,
                       at(pc, start, 1 if c.trans == "N" else c.ld), cols=count)
        else:            # rows [start, end) of op(A) and C
            _call_gemm(b, fn, elem, a, at(pa, start, a.ld if a.trans == "N" else 1), bm, pb, c,
                       at(pc, start, c.ld if c.trans == "N" else 1), rows=count)

    return parallel_for(b, bounds, body, chunks_per_thread=GEMM_CHUNKS_PER_THREAD)


def _call_gemm(b, fn: runtime.BlasFunction, elem, a: Matrix, pa, bm: Matrix, pb, c: Matrix, pc,
               rows: ir.Value | None = None, cols: ir.Value | None = None) -> None:
    """C = op(A) op(B) with C row-major ('N'). A column-major C is computed as C^T = B^T A^T. rows / cols: i64
    values overriding C's row / column count (a chunk of a split GEMM)."""
    if c.trans == "T":
        a, bm, pa, pb, c = transposed(bm), transposed(a), pb, pa, transposed(c)
        rows, cols = cols, rows
    it = ir.IntType(fn.int_bits)

    def size(value: ir.Value | None, static: int) -> ir.Value:
        if value is None:
            return ir.Constant(it, static)
        return value if it.width == 64 else b.trunc(value, it)
    m, n, k = size(rows, c.rows), size(cols, c.cols), ir.Constant(it, a.cols)
    one, zero = ir.Constant(elem, 1.0), ir.Constant(elem, 0.0)
    ep = elem.as_pointer()
    if fn.abi == "cblas":
        callee = _declare(b, fn.name, [I32, I32, I32, it, it, it, elem, ep, it, ep, it, elem, ep, it])
        flag = lambda t: ir.Constant(I32, runtime.CBLAS_NO_TRANS if t == "N" else runtime.CBLAS_TRANS)
        ic = lambda v: ir.Constant(it, v)
        b.call(callee, [ir.Constant(I32, runtime.CBLAS_ROW_MAJOR), flag(a.trans), flag(bm.trans), m, n,
                        k, one, pa, ic(a.ld), pb, ic(bm.ld), zero, pc, ic(c.ld)])
        return
    # Fortran, column-major: the row-major C^T = B^T A^T, i.e. the same flags with the operands swapped
    ip = I32.as_pointer()
    callee = _declare(b, fn.name, [I8P, I8P, ip, ip, ip, ep, ep, ip, ep, ip, ep, ep, ip])
    args = [_ref(b, I8, ord(bm.trans)), _ref(b, I8, ord(a.trans)), _ref(b, I32, n), _ref(b, I32, m),
            _ref(b, I32, k), _ref(b, elem, 1.0), pb, _ref(b, I32, bm.ld), pa, _ref(b, I32, a.ld),
            _ref(b, elem, 0.0), pc, _ref(b, I32, c.ld)]
    b.call(callee, args)


def _call_gemv(b, fn: runtime.BlasFunction, elem, a: Matrix, pa, x_inc: int, px, y_inc: int, py) -> None:
    """y = op(A) x for the M x K view A."""
    rows, cols = (a.rows, a.cols) if a.trans == "N" else (a.cols, a.rows)      # the stored row-major matrix
    ep = elem.as_pointer()
    if fn.abi == "cblas":
        it = ir.IntType(fn.int_bits)
        callee = _declare(b, fn.name, [I32, I32, it, it, elem, ep, it, ep, it, elem, ep, it])
        ic = lambda v: ir.Constant(it, v)
        trans = runtime.CBLAS_NO_TRANS if a.trans == "N" else runtime.CBLAS_TRANS
        b.call(callee, [ir.Constant(I32, runtime.CBLAS_ROW_MAJOR), ir.Constant(I32, trans), ic(rows), ic(cols),
                        ir.Constant(elem, 1.0), pa, ic(a.ld), px, ic(x_inc), ir.Constant(elem, 0.0), py, ic(y_inc)])
        return
    # Fortran: the stored row-major rows x cols matrix is a column-major cols x rows one, transpose flipped
    ip = I32.as_pointer()
    callee = _declare(b, fn.name, [I8P, ip, ip, ep, ep, ip, ep, ip, ep, ep, ip])
    flag = "T" if a.trans == "N" else "N"
    b.call(callee, [_ref(b, I8, ord(flag)), _ref(b, I32, cols), _ref(b, I32, rows), _ref(b, elem, 1.0), pa,
                    _ref(b, I32, a.ld), px, _ref(b, I32, x_inc), _ref(b, elem, 0.0), py, _ref(b, I32, y_inc)])


def _ref(b: ir.IRBuilder, ty: ir.Type, value) -> ir.Value:
    """A pointer to a fresh entry-block slot holding `value`, a Python number or an IR value of type ty
    (Fortran passes everything by reference)."""
    slot = alloca_once(b, ty)
    b.store(value if isinstance(value, ir.Value) else ir.Constant(ty, value), slot)
    return slot
