"""Parallel task assignment (XLA:CPU's ParallelTaskAssignment): a large loop is split into contiguous chunks
over threads, in pure LLVM IR (no C compiler, no runtime library beyond libc's pthreads).

`parallel_for` emits a chunk's code into an outlined worker function `i8* task(i8* arg)`: the caller's body
callback runs with the shared IRBuilder positioned in the worker, so the loop emitter's generators emit
there unchanged. Afterwards every value of the caller the worker uses (buffer pointers loaded from `params`,
scratch offsets, partial-result slots) is captured: the caller stores it into a struct, the worker loads it
at its entry. The caller hands the tasks to the persistent thread pool (threadpool.py: workers created once,
woken per loop), works on them itself and returns when all are done. Chunk bounds are compile-time constants,
so the results for a given thread count are deterministic, whichever thread runs which chunk. Only the JIT
emits parallel loops: AOT objects (aot.py) are compiled with num_threads=1 and stay self-contained. Workers
install the same MXCSR flush-to-zero / denormals-are-zero state as the entry function (compiler.py).

The knob: the compile option `num_threads`, else the XLAPY_NUM_THREADS environment variable, else
os.cpu_count(); 1 emits no threading at all. `task_count` is XLA's cost rule: one task per
MIN_BYTES_PER_TASK of memory traffic, at most num_threads, so small kernels stay single-threaded.

How many chunks a loop runs as depends on whether its body names its task (the `task` argument):

| body | chunks | why |
|---|---|---|
| uses `task`: a split reduction | the caller's bounds, one per task | task t owns partial t; they combine in order |
| does not: elementwise, rows, GEMM parts | CHUNKS_PER_TASK per thread (a GEMM's: 2, dot_blas.py) | an element does not depend on the cut |

More chunks than threads is what keeps a loop fast when other processes share the cores (issue 11): the pool
hands chunks out one at a time from an atomic counter, so a thread that is descheduled holds up at most the
one chunk it is running while the others take the rest, instead of half the loop.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

import numpy as np
from llvmlite import ir

from ...errors import XlapyError
from ...hlo import ELIDED, Computation, Instruction
from ...hlo.shape import Shape
from . import profile_ir, scalar_ops, threadpool
from .buffers import byte_size
from .irhelpers import I8P, I32, I64, VOID, alloca_once, fast_names, for_range, i64, intrinsic, is_x86, mark_ftz

# XLA's min_cost_per_thread for its persistent thread pool is 256 KiB (an L2 cache's worth of traffic); waking
# a spinning worker of ours costs well under a microsecond, a sleeping one a few (threadpool.py).
MIN_BYTES_PER_TASK = 1 << 18
CHUNK_QUANTUM = 16                 # chunk bounds are multiples of this many elements (whole cache lines)
CHUNKS_PER_TASK = 4                # chunks per thread a task-independent loop is cut into
_TASK = ir.LiteralStructType([I64, I64, I64, I8P])     # (start, end, task index, captured values)
_TASK_BYTES = 32                                       # its size on 64-bit targets (the only ones the JIT runs on)
STRAIGHT_RECORDS = 16             # at most this many task records are stored straight-line, more by a loop
_WORKER = "_xlapy_worker"                     # marks outlined functions: threads are not nested


# -- the knob and the cost rule ----------------------------------------------------------------------
def resolve_num_threads(option: int | None = None) -> int:
    """The compile option if given, else XLAPY_NUM_THREADS, else os.cpu_count()."""
    value, source = option, "num_threads"
    if value is None:
        value, source = os.environ.get("XLAPY_NUM_THREADS"), "XLAPY_NUM_THREADS"
        if value is None or value.strip() == "":
            return os.cpu_count() or 1
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise XlapyError(f"{source} must be a positive integer, got {value!r}") from None
    if n < 1:
        raise XlapyError(f"{source} must be a positive integer, got {n}")
    return n


def _bytes(shape: Shape) -> int:
    try:
        return sum(byte_size(s) for s in shape.leaves() if not s.is_token)
    except Exception:       # an element type without a storage size: its op is rejected elsewhere
        return 0


def task_count(inst: Instruction, num_threads: int) -> int:
    """How many threads inst's loop gets: its memory traffic (operands + result, or the largest value inside a
    fusion; a value only sliced counts its windows' bytes) over MIN_BYTES_PER_TASK, at least 1 and at most
    num_threads; 1 inside on_calling_thread."""
    if num_threads <= 1 or in_caller_region():
        return 1
    comp = inst.attrs.get("calls") if inst.opcode == "fusion" else None
    if isinstance(comp, Computation):
        reads = [_read_bytes(p, p.users) for p in comp.parameters]
        cost = max([_bytes(inst.shape) + sum(reads)] + reads
                   + [_bytes(i.shape) for i in comp.instructions if i.opcode != "parameter"])
    else:
        cost = _bytes(inst.shape) + sum(_read_bytes(o, [inst]) for o in inst.operands)
    return max(1, min(num_threads, cost // MIN_BYTES_PER_TASK))


_WINDOWS = frozenset({"slice", "dynamic-slice", "gather"})     # read only the part of operand 0 they return


def _read_bytes(value: Instruction, readers: Sequence[Instruction]) -> int:
    """The bytes of `value` that `readers` touch: a value only sliced (a loop body's dynamic-slice of a time
    step, an embedding's gather) costs what its windows return, not its whole size."""
    if readers and all(r.opcode in _WINDOWS and r.operands[0] is value and value not in r.operands[1:]
                       for r in readers):
        return min(_bytes(value.shape), sum(_bytes(r.shape) for r in readers))
    return _bytes(value.shape)


def chunk_bounds(total: int, tasks: int, quantum: int = CHUNK_QUANTUM) -> list[int]:
    """tasks+1 nondecreasing bounds splitting range(total) into near-equal contiguous chunks whose inner bounds
    are multiples of `quantum`."""
    inner = [t * total // tasks // quantum * quantum for t in range(1, tasks)]
    return [0] + inner + [total]


def finer_bounds(bounds: Sequence[int], parts: int = CHUNKS_PER_TASK, quantum: int = CHUNK_QUANTUM) -> list[int]:
    """Each chunk [bounds[t], bounds[t+1]) cut into up to `parts` near-equal chunks whose inner bounds are
    multiples of `quantum` past the chunk's start; strictly increasing (empty chunks dropped)."""
    out = [bounds[0]]
    for lo, hi in zip(bounds, bounds[1:]):
        for j in range(1, parts + 1):
            cut = hi if j == parts else lo + j * (hi - lo) // parts // quantum * quantum
            if cut > out[-1]:
                out.append(cut)
    return out


# -- which reductions may be split over their reduced dimensions ------------------------------------
_IDEMPOTENT = ("maximum", "minimum", "and", "or")           # applying the init value again changes nothing
_IDENTITY = {"add": 0, "xor": 0, "or": 0, "multiply": 1}


def _constant_value(value: Instruction, inst: Instruction):
    """The scalar value of `value` (a reduce's init, inside fusion `inst` or an operand of reduce `inst`) when it
    is a constant, possibly passed into the fusion as a parameter; else None."""
    if value.opcode == "parameter" and inst.opcode == "fusion":
        value = inst.operands[value.parameter_number]
    if value.opcode != "constant" or value.literal is None or value.literal is ELIDED:
        return None
    arr = np.asarray(value.literal)
    return arr.reshape(-1)[0] if arr.size == 1 else None


def splittable_reduction(inst: Instruction, reduce: Instruction, reducer_op: str | None) -> bool:
    """Each task starts its partial from the init value, so the init is applied once per task: allowed when
    that changes nothing (an idempotent reducer, or an init that is the reducer's identity)."""
    if reducer_op is None or reduce.shape.is_tuple or len(reduce.operands) != 2:
        return False
    if reducer_op in _IDEMPOTENT:
        return True
    init = _constant_value(reduce.operands[1], inst)
    return init is not None and reducer_op in _IDENTITY and init == _IDENTITY[reducer_op]


# -- regions that run on the calling thread ----------------------------------------------------------
_region = threading.local()       # emission runs on one Python thread per compile; compiles may run side by side


@contextmanager
def on_calling_thread(active: bool = True) -> Iterator[None]:
    """While emitting inside (when active), parallel_for declines: every loop, GEMM and batch of products is
    emitted to run on the calling thread (a small while body, loop_state.runs_on_caller). A BLAS call stays
    single-threaded (dot_blas.py brackets it): the pool, not the BLAS, owns the threads."""
    depth = getattr(_region, "depth", 0)
    _region.depth = depth + active
    try:
        yield
    finally:
        _region.depth = depth


def in_caller_region() -> bool:
    """Is emission inside on_calling_thread (kernel_replay.py keys kernels by it)?"""
    return getattr(_region, "depth", 0) > 0


# -- outlining and threads --------------------------------------------------------------------------
def _map_values(value, fn):
    if isinstance(value, (ir.Instruction, ir.Argument)):
        return fn(value)
    if isinstance(value, (list, tuple)):
        mapped = [_map_values(v, fn) for v in value]
        if all(m is v for m, v in zip(mapped, value)):
            return value
        return type(value)(mapped)
    return value


_CACHED_TEXT = "_StrCaching__cached_str"      # llvmlite's per-instruction text cache (ir/_utils.py _StrCaching)


def _foreign_uses(worker: ir.Function, fn, insts=None) -> None:
    """Call fn on every instruction operand of worker (any attribute holding values: operands, call args, gep
    indices, phi incomings) and store back what it returns. `insts`: only these instructions of worker."""
    if insts is None:
        insts = [inst for block in worker.blocks for inst in block.instructions]
    for inst in insts:
        for key, value in list(vars(inst).items()):
            if key == "parent":
                continue
            mapped = _map_values(value, fn)
            if mapped is not value:
                setattr(inst, key, mapped)
                inst.__dict__.pop(_CACHED_TEXT, None)    # llvmlite's _clear_string_cache, without its exception


# llvmlite instruction classes whose every value operand is in `operands` (GEP's pointer and indices, extract- and
# insertvalue's aggregate and element are the same objects); phis keep theirs in `incomings`. Any other class
# (a subclass, a landingpad, ...) is searched attribute by attribute.
_OPERANDS_ONLY = frozenset(c for c in vars(ir.instructions).values()
                           if isinstance(c, type) and issubclass(c, ir.Instruction)
                           and c not in (ir.PhiInstr, ir.LandingPadInstr, ir.IndirectBranch))


def _foreign_values(worker: ir.Function, also: dict[int, ir.Value] | None = None) -> tuple[dict[int, ir.Value], list]:
    """The values of other functions that worker's instructions use (by id, in order of first use), and the
    instructions that use them. One pass over the operands, linear in the worker's size. `also`: values of the
    worker itself to report as if they were foreign (by id)."""
    foreign, users, _ = _scan(worker, also)
    return foreign, users


def _scan(worker: ir.Function, also: dict[int, ir.Value] | None = None, watch: Sequence[ir.Value] = ()):
    """_foreign_values, and for each value of `watch` (the worker's own) the instructions that use it: (foreign,
    users, {id(watched value): [its users]}), in one pass over the worker."""
    foreign: dict[int, ir.Value] = {}
    users: list = []
    watched: dict[int, list] = {id(w): [] for w in watch}
    Inst, Arg, Phi = ir.Instruction, ir.Argument, ir.PhiInstr
    also = also or {}
    for block in worker.blocks:
        for inst in block.instructions:
            cls = type(inst)
            if cls in _OPERANDS_ONLY:
                values = inst.operands
            elif cls is Phi:
                values = [v for v, _ in inst.incomings]
            else:
                values = []
                _foreign_uses(worker, lambda v: (values.append(v), v)[1], [inst])
            hit = False
            for v in values:
                if isinstance(v, Inst):
                    own = v.parent.parent is worker and id(v) not in also
                elif isinstance(v, Arg):
                    own = v.parent is worker
                else:
                    continue
                if not own:
                    foreign.setdefault(id(v), v)
                    hit = True
                elif watched:
                    seen = watched.get(id(v))
                    if seen is not None and (not seen or seen[-1] is not inst):
                        seen.append(inst)
            if hit:
                users.append(inst)
    return foreign, users, watched


ENCLOSING = "_xlapy_enclosing"      # a kernel being emitted (kernels.py) names the function it will be called from


def enclosing_functions(fn: ir.Function) -> set[int]:
    """fn and the functions whose values fn may use: a kernel still being emitted reads its caller's values,
    which become its arguments once it is finished (kernels.py)."""
    out = set()
    while fn is not None:
        out.add(id(fn))
        fn = getattr(fn, ENCLOSING, None)
    return out


def _owner(value) -> ir.Function | None:
    return value.parent if isinstance(value, ir.Argument) else value.function


def _declare(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, fnty, name)


def parallel_for(b: ir.IRBuilder, bounds: Sequence[int],
                 body: Callable[[ir.IRBuilder, ir.Value, ir.Value, ir.Value], None],
                 shared: Sequence[ir.Value] = (), threads: int | None = None,
                 quantum: int = CHUNK_QUANTUM, chunks_per_thread: int = CHUNKS_PER_TASK,
                 name: str = "xlapy_task") -> bool:
    """Run body(b, start, end, task) over the chunks [bounds[t], bounds[t+1]) on up to `threads` threads (by
    default len(bounds)-1, one per chunk).

    A body that uses `task` runs once per chunk t of `bounds`, with task = t: a split reduction that wants more
    chunks than threads passes more bounds (one partial per chunk, combined in chunk order) and `threads`. A body
    that does not is run over finer chunks (finer_bounds; `task` is then a chunk number). Either way the pool's
    threads take the chunks one at a time.

    `quantum`: finer chunks keep their bounds multiples of it past the chunk's start (whole rows, say).
    `chunks_per_thread`: how finely; fewer where each chunk repeats work (a GEMM part packs the shared operand).

    `name`: the worker's symbol (llvm_parallel moves `xlapy_task*` workers, with what they call, to its parts;
    the entry's concurrent loops call kernels and stay in the entry's part: concurrent_loops.py).

    `shared`: allocas of the caller the body may use (each task must write its own part). Returns False, having
    emitted nothing into the caller, when threads cannot be used here: inside a worker already, inside
    on_calling_thread, or the body used a caller value that is not safe to share (another alloca: per-call
    scratch state); the caller then emits its loop sequentially."""
    caller = b.function
    module = b.module
    threads = min(threads or len(bounds) - 1, len(bounds) - 1)
    if threads < 2 or getattr(caller, _WORKER, False) or in_caller_region():
        return False
    old_block = b.block
    worker = fast_names(ir.Function(module, ir.FunctionType(I8P, [I8P]), module.get_unique_name(name)))
    setattr(worker, _WORKER, True)
    worker.linkage = "internal"
    worker.attributes.add("nounwind")
    worker.attributes.add("noinline")
    mark_ftz(worker)

    entry = worker.append_basic_block("entry")
    b.position_at_end(entry)
    task = b.bitcast(worker.args[0], _TASK.as_pointer())

    def field(k: int, name: str) -> ir.Value:
        return b.load(b.gep(task, [ir.Constant(I32, 0), ir.Constant(I32, k)]), name=name)
    start, end, index, captures = field(0, "start"), field(1, "end"), field(2, "task"), field(3, "captures")
    saved = scalar_ops.enter_ftz(b) if is_x86(module) else None
    timer = profile_ir.active()          # under the profiler, each task logs its run time on its thread
    timed = timer is not None and timer.current is not None
    t0 = timer.start(b) if timed else None
    first = worker.append_basic_block("body")
    b.branch(first)
    b.position_at_end(first)
    try:
        body(b, start, end, index)
        if timed:
            timer.stop(b, timer.kernel_id(timer.current, "task"), t0)
        if saved is not None:
            intrinsic(b, "llvm.x86.sse.ldmxcsr", VOID, [b.bitcast(saved, I8P)])
        b.ret(ir.Constant(I8P, None))
    finally:
        scalar_ops.MXCSR_SLOTS.pop(id(worker), None)
        b.position_at_end(old_block)

    foreign, users, watched = _scan(worker, watch=(worker.args[0], index))
    allowed = {id(v) for v in shared}
    owners = enclosing_functions(caller)
    if any(id(_owner(v)) not in owners or (isinstance(v, ir.AllocaInstr) and id(v) not in allowed)
           for v in foreign.values()):
        del module.globals[worker.name]
        return False
    given = len(bounds) - 1
    parts = -(-threads * chunks_per_thread // given)        # about chunks_per_thread chunks per thread
    chunks = list(bounds) if watched[id(index)] else finer_bounds(bounds, parts, quantum)

    values = list(foreign.values())
    struct = ir.LiteralStructType([v.type for v in values])
    _outline_body(b, worker, caller, values, users + watched[id(worker.args[0])])
    b.position_at_end(old_block)
    _emit_launch(b, worker, chunks, threads, struct, values)
    return True


def _outline_body(b: ir.IRBuilder, worker: ir.Function, caller: ir.Function, values: list, users: list) -> None:
    """Move the worker's code into `<worker>.body(task, captures...)`, which takes the captured values as
    arguments, and make the worker load its captures and call it (`users`: the worker's instructions that use
    `values` or the worker's argument, the task record). A captured pointer to a buffer the caller holds
    `noalias` (a kernel's arguments, kernels.py), and that no other capture points into, is a `noalias` argument
    again: loaded from memory LLVM could not tell the buffers apart, and a loop reading several arrays through
    affine-less indices (a transposed or broadcast operand) stayed scalar ("cannot identify array bounds")."""
    module = worker.module
    body = ir.Function(module, ir.FunctionType(I8P, [I8P] + [v.type for v in values]),
                       module.get_unique_name(worker.name + ".body"))
    body.linkage = "internal"
    body.attributes.add("nounwind")
    body.scope = worker.scope               # the moved code's names live there; the arguments join them
    body.args[0].name = "body.task"
    for k, arg in enumerate(body.args[1:]):
        arg.name = f"body.cap{k}"
    mark_ftz(body)
    setattr(body, _WORKER, True)
    roots = [_noalias_root(v, caller) for v in values]
    for k, root in enumerate(roots):
        if root is not None and sum(r is root for r in roots) == 1:
            body.args[k + 1].add_attribute("noalias")
    for block in worker.blocks:
        block.parent = body
    body.blocks, worker.blocks = worker.blocks, []
    args = {id(v): body.args[k + 1] for k, v in enumerate(values)}
    args[id(worker.args[0])] = body.args[0]
    _foreign_uses(body, lambda v: args.get(id(v), v), users)
    entry = worker.append_basic_block("entry")
    b.position_at_end(entry)
    task = b.bitcast(worker.args[0], _TASK.as_pointer())
    caps = b.load(b.gep(task, [ir.Constant(I32, 0), ir.Constant(I32, 3)]), name="captures")
    typed = b.bitcast(caps, ir.LiteralStructType([v.type for v in values]).as_pointer())
    every = b.load(typed, name="caps")      # one load and a field read per capture: half the lines of field loads
    loaded = [b.extract_value(every, k, name=f"cap{k}") for k in range(len(values))]
    b.ret(b.call(body, [worker.args[0]] + loaded))
    worker.attributes.add("optnone")        # runs once per task: LLVM optimizes the body alone (kernels._launch_only)


def _noalias_root(value: ir.Value, caller: ir.Function) -> ir.Value | None:
    """The buffer a captured pointer is computed from (through the caller's casts and GEPs) when the caller holds
    it `noalias`: an argument so marked, or, in a kernel still being emitted (kernels.py), a value of the function
    it will be called from, which becomes a `noalias` argument of the kernel. None otherwise."""
    if not isinstance(value.type, ir.PointerType):
        return None
    while isinstance(value, (ir.CastInstr, ir.GEPInstr)) and value.function is caller:
        value = value.operands[0]
    if isinstance(value, ir.Argument) and value.parent is caller:
        return value if "noalias" in value.attributes else None
    if getattr(caller, ENCLOSING, None) is not None and _owner(value) is not caller:
        return value
    return None


def _emit_launch(b: ir.IRBuilder, worker: ir.Function, chunks: list[int], threads: int, struct: ir.Type,
                 values: list) -> None:
    """In the caller: fill the captures and one task record (start, end, index, captures) per chunk (stored one
    by one, or by a loop over a constant table of the chunk bounds when there are many), then hand the tasks to the thread pool (threadpool.py), which runs them
    on this thread and up to threads-1 workers and returns when all are done."""
    threadpool.ensure_workers(threads - 1)
    module = b.module
    count = len(chunks) - 1
    zero = ir.Constant(I32, 0)
    caps = alloca_once(b, struct, "par.captures")
    every = ir.Constant(struct, ir.Undefined)       # built in registers and stored once (LLVM splits the store)
    for k, v in enumerate(values):
        every = b.insert_value(every, v, k)
    b.store(every, caps)
    records = alloca_once(b, ir.ArrayType(_TASK, count), "par.tasks")
    caps_i8 = b.bitcast(caps, I8P)
    if count <= STRAIGHT_RECORDS:
        # each record one store of a constant-filled struct: a loop over a bounds table is what LLVM's loop
        # vectorizer turned into ~30 permutes and blends in every pool kernel, for nothing
        for t in range(count):
            record = ir.Constant(_TASK, [i64(chunks[t]), i64(chunks[t + 1]), i64(t), ir.Constant(I8P, None)])
            b.store(b.insert_value(record, caps_i8, 3), b.gep(records, [i64(0), i64(t)]))
    else:
        table_ty = ir.ArrayType(I64, count + 1)
        table = ir.GlobalVariable(module, table_ty, module.get_unique_name("xlapy_task.bounds"))
        table.global_constant = True
        table.linkage = "private"
        table.initializer = ir.Constant(table_ty, chunks)
        with for_range(b, count, "par.task") as t:
            record = b.gep(records, [i64(0), t])
            start = b.load(b.gep(table, [i64(0), t]))
            end = b.load(b.gep(table, [i64(0), b.add(t, i64(1))]))
            for k, value in enumerate((start, end, t, caps_i8)):
                b.store(value, b.gep(record, [zero, ir.Constant(I32, k)]))
    run = _declare(module, threadpool.RUN_SYMBOL, ir.FunctionType(VOID, [worker.type, I8P, I64, I64, I64]))
    b.call(run, [worker, b.bitcast(records, I8P), i64(_TASK_BYTES), i64(count), i64(threads)])
