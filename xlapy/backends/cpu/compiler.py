"""The CPU compiler: optimize the HLO (cpu_pipeline), emit one LLVM module with one native entry function
for the whole HLO module, optimize it with LLVM's O3 pipeline for the host CPU, and JIT it with MCJIT. Small
modules (an eager op) skip LLVM's optimizer and share one O0 engine (compile_plan.py, llvm_jit.py).

    void entry(i8** params, i8** results, i8* scratch)

params[i] is the i-th array leaf of the entry parameters (read in place), results[j] the j-th leaf of the
result (allocated by the caller), scratch holds every temporary (buffers.py). The function runs with the
x86 MXCSR flush-to-zero / denormals-are-zero bits set, as XLA:CPU does, and restores them on return.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import llvmlite.binding as llvm
from llvmlite import ir

from ... import debug, trace_events
from ...errors import XlapyError
from ...hlo import Instruction, Module, gc_pause
from .buffers import BufferRef, ValueTree, leaves
from . import scalar_ops
from . import buffer_assignment, cache_entry, compile_plan, ir_release, llvm_jit, llvm_parallel, opt_levels, profile_ir
from . import kernel_generic
from .. import compilation_cache
from .abi import ENTRY_NAME, ENTRY_TYPE
from .emitter import IrEmitter
from .executable import Executable
from .collectives_emitter import SYMBOL as COLLECTIVE_SYMBOL
from .collectives_emitter import attach as attach_collectives
from .host_callback_emitter import SYMBOL as HOST_CALLBACK_SYMBOL
from .indexing import major_to_minor
from .irhelpers import I8P, VOID, fast_names, i64, intrinsic, is_x86, mark_ftz
from .parallel import resolve_num_threads
from .profile_ir import KernelTimer


def target_machine():
    """A fresh O3 target machine for this host (an MCJIT engine takes ownership of the one it is given)."""
    return llvm_jit.new_target_machine(3)


def _is_optimized(module: Module) -> bool:
    """Modules XLA or our pipeline already optimized: scheduled, or holding fusions."""
    if module.attrs.get("is_scheduled") in (True, "true"):
        return True
    return any(inst.opcode == "fusion" for inst in module.instructions())


# -- emission --------------------------------------------------------------------------------------
def _array_leaves(shape) -> list:
    return [s for s in shape.leaves() if not s.is_token]


def _leaf_sources(inst: Instruction) -> list[tuple[Instruction, int]]:
    """For each array leaf of inst's value: the instruction that defines it and its leaf number there."""
    if inst.opcode == "tuple":
        return [src for op in inst.operands for src in _leaf_sources(op)]
    if inst.opcode == "get-tuple-element":
        inner = _leaf_sources(inst.operands[0])
        k = int(inst.attrs["index"])
        shapes = inst.operands[0].shape.tuple_shapes
        start = sum(len([x for x in s.leaves() if not x.is_token]) for s in shapes[:k])
        return inner[start:start + len([x for x in shapes[k].leaves() if not x.is_token])]
    return [(inst, k) for k in range(len([x for x in inst.shape.leaves() if not x.is_token]))]


def emit_module(module: Module, llvm_module: ir.Module, num_threads: int = 1,
                timer: KernelTimer | None = None, on_kernel=None) -> tuple[ir.Function, int]:
    """Emit the entry function into llvm_module; returns it and the scratch size in bytes. Large loops are
    split over num_threads threads (parallel.py). With a timer, every kernel logs its run time (profile_ir.py).
    `on_kernel(llvm_module, function, printed)` hears of each kernel once it is final (kept by the KernelCache): what
    llvm_parallel.Session compiles while the rest is emitted."""
    fn = fast_names(ir.Function(llvm_module, ENTRY_TYPE, ENTRY_NAME))
    fn.attributes.add("nounwind")
    mark_ftz(fn)
    params_arg, results_arg, scratch_arg = fn.args
    params_arg.name, results_arg.name, scratch_arg.name = "params", "results", "scratch"
    for a in (params_arg, results_arg, scratch_arg):
        a.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    saved = scalar_ops.enter_ftz(b) if is_x86(llvm_module) else None

    entry = module.entry
    em = IrEmitter(b, scratch_arg)
    em.num_threads = num_threads
    sharing = kernel_generic.Sharing(module, em.kernel_cache, opt_levels.Tiers(module).of) \
        if kernel_generic.ENABLED and timer is None else None
    if on_kernel is not None or sharing is not None:
        _report_kernels(em.kernel_cache, on_kernel, sharing)
    if timer is not None:
        em.timer = timer
        timer.log_offset = em.scratch.allocate(profile_ir.LOG_BYTES)    # never released: lives for the call
        timer.set_log(b, scratch_arg)
    counter = iter(range(1 << 30))

    def param_tree(shape):
        if shape.is_tuple:
            return tuple(param_tree(s) for s in shape.tuple_shapes)
        if shape.is_token:
            return None
        k = next(counter)
        return BufferRef(b.load(b.gep(params_arg, [i64(k)]), name=f"param{k}"), shape)
    args = [param_tree(p.shape) for p in entry.parameters]

    result_shapes = [s for s in entry.root.shape.leaves() if not s.is_token]
    results = [BufferRef(b.load(b.gep(results_arg, [i64(j)]), name=f"result{j}"), s)
               for j, s in enumerate(result_shapes)]
    seen = set()
    for (inst, leaf), res in zip(_leaf_sources(entry.root), results):
        # a value is written straight into its result buffer only in the layout the caller reads; in another
        # (a tuple may declare layouts its operands do not have) the copy after the computation converts it
        if (id(inst), leaf) not in seen and inst.opcode not in ("parameter", "constant") \
                and major_to_minor(_array_leaves(inst.shape)[leaf]) == major_to_minor(res.shape):
            em.targets[(id(inst), leaf)] = res
        seen.add((id(inst), leaf))

    token = profile_ir.activate(timer)
    try:
        value: ValueTree = em.emit_computation(entry, args, timed=True)
        if sharing is not None:
            sharing.finish()            # held kernels made generic (kernel_generic.py); llvm_parallel's end ships them
    finally:
        profile_ir.deactivate(token)
    for src, dst in zip(leaves(value), results):
        em.copy_leaf(src, dst)
    if saved is not None:
        intrinsic(b, "llvm.x86.sse.ldmxcsr", VOID, [b.bitcast(saved, I8P)])
    b.ret_void()
    scalar_ops.MXCSR_SLOTS.pop(id(fn), None)
    buffer_assignment.dump(module, em.assignment)
    size = em.scratch.size
    em.release()
    return fn, size


def _report_kernels(cache, on_kernel, sharing=None) -> None:
    share = cache.share

    def reporting(kernel, new_symbols):
        kept = share(kernel, new_symbols)
        if kept is kernel and not (sharing is not None and sharing.hold(kernel)) and on_kernel is not None:
            on_kernel(cache.module, kernel, cache.printed)
        return kept
    cache.share = reporting


# -- LLVM ------------------------------------------------------------------------------------------
def optimize_llvm(mod, tm) -> None:
    """LLVM's O3 pipeline with the loop and SLP vectorizers (vectorized loops are interleaved) but without the
    loop unroller: full unrolling turned short reduction loops into straight-line blocks of thousands of
    instructions (gathered into vectors), which made the MLP step's optimization and code generation 3-5x slower
    for no measured speed (benchmarks B1-B5 unchanged)."""
    pb = llvm.create_pass_builder(tm, pipeline_tuning())
    pb.getModulePassManager().run(mod, pb)


def pipeline_tuning():
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_interleaving = True
    pto.loop_unrolling = False
    return pto


def _dump(module: Module, suffix: str, text: str, options: debug.DebugOptions) -> None:
    if not options.dumps_module(module.name):
        return
    from ...passes.dump import file_prefix
    out = Path(options.dump_to)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{file_prefix(module)}.{suffix}").write_text(text)


def emit_llvm(module: Module, tm, triple: str, run_pipeline: bool | None = None, verify: bool = True,
              fast_math: bool = False, options: debug.DebugOptions | None = None,
              num_threads: int = 1, profile: bool = False,
              session_for=None, entry_layouts: str = "declared") -> tuple[Module, ir.Module, int, KernelTimer | None]:
    """The front half of compilation, shared by the JIT and AOT (aot.py): optimize the HLO (cpu_pipeline
    unless the module is already optimized; the caller's module is never modified), verify it, and emit the
    entry function into a new LLVM module for `triple` and target machine `tm` (large loops split over
    num_threads threads; AOT code stays single-threaded). Returns the optimized HLO
    module, the LLVM IR module, the scratch size in bytes and, when `profile`, the kernel timer whose table
    names what the instrumented code logs. `session_for(optimized HLO module)` may return an
    llvm_parallel.Session that hears of each kernel as it is finished. Python's garbage collector is paused
    meanwhile (hlo/gc_pause.py). entry_layouts: "row-major" lets the pipeline choose row-major entry layouts
    (the JIT, whose executable transposes arrays of another layout itself), "declared" keeps the module's (AOT)."""
    with gc_pause.paused():
        return _emit_llvm(module, tm, triple, run_pipeline, verify, fast_math, options, num_threads, profile,
                          session_for, entry_layouts)


def _emit_llvm(module: Module, tm, triple: str, run_pipeline, verify, fast_math, options, num_threads, profile,
               session_for, entry_layouts="declared"):
    if module.entry is None:
        raise XlapyError(f"module {module.name} has no entry computation")
    options = options or debug.options()
    if run_pipeline is None:
        run_pipeline = not _is_optimized(module)
    if run_pipeline:
        from ...passes.optimize import optimize
        from ...passes.pipelines import cpu_pipeline
        module = optimize(module.clone(), cpu_pipeline(fast_math=fast_math, entry_layouts=entry_layouts),
                          options=options)
    if verify:
        from ...hlo import verify as verify_module
        verify_module(module)
    llvm_module = ir.Module(name=re.sub(r"[^A-Za-z0-9_.]", "_", module.name))
    llvm_module.triple = triple
    llvm_module.data_layout = str(tm.target_data)
    timer = KernelTimer(llvm_module) if profile else None
    session = session_for(module) if session_for is not None else None
    with trace_events.span(f"emit {module.name}", "llvm"):
        _, scratch_size = emit_module(module, llvm_module, num_threads, timer,
                                      session.add_kernel if session is not None else None)
    return module, llvm_module, scratch_size, timer


def parse_llvm(module: Module, text: str, context: llvm_jit.Context | None = None):
    """LLVM IR text -> a verified llvmlite ModuleRef (in `context`, else LLVM's global one); invalid IR is an
    XlapyError naming the HLO module."""
    try:
        parsed = context.parse(text) if context is not None else llvm.parse_assembly(text)
        parsed.verify()
    except RuntimeError as e:
        raise XlapyError(f"cpu backend produced invalid LLVM IR for module {module.name}: {e}") from e
    return parsed


# LLVM on two threads, overlapped with emission (llvm_parallel.py), once one optimized compile has run serially in
# this process (LLVM's lazily initialized global state is then set up: a tiny module does it first);
# XLAPY_PARALLEL_LLVM=0 turns it off.
_WARM = False
PART_SEPARATOR = "\n; ---- the next part (llvm_parallel.py) ----\n"
_WARM_UP_IR = "define i32 @xlapy_warm_up(i32 %x) {\n  %y = mul i32 %x, 3\n  ret i32 %y\n}\n"


def _session(module: Module, level: str, profile: bool):
    """An llvm_parallel.Session for compiling `module` (optimized HLO) at `level`, or None (serial LLVM)."""
    global _WARM
    if level != compile_plan.OPTIMIZED or (os.cpu_count() or 1) < 2 \
            or os.environ.get("XLAPY_PARALLEL_LLVM", "1") == "0":
        return None
    if not _WARM:
        mod = llvm.parse_assembly(_WARM_UP_IR)
        tm = llvm_jit.new_target_machine(3)
        optimize_llvm(mod, tm)
        tm.emit_object(mod)
        _WARM = True
    # under the profiler every kernel calls the shared log function: nothing moves early
    return llvm_parallel.Session(opt_levels.Tiers(module).of, stream=not profile)


def _finish_parallel(session, module: Module, text: str):
    """The session's parts and the rest of `text` compiled and linked: (code, entry address, optimized parts,
    objects); when a function moved early turns out to be called from elsewhere, the whole text again."""
    try:
        try:
            return session.finish(text, ENTRY_NAME)
        except llvm_parallel.Restart:
            return llvm_parallel.Session(session.tier_of, stream=False).finish(text, ENTRY_NAME)
    except llvm_parallel.InvalidIR as e:
        raise XlapyError(f"cpu backend produced invalid LLVM IR for module {module.name}: {e}") from e


def compile_module(module: Module, run_pipeline: bool | str | None = None, verify: bool = True,
                   fast_math: bool = False, num_threads: int | None = None, llvm_level: str | None = None,
                   profile: bool | None = None, cache: bool = True) -> Executable:
    """Compile `module` for this CPU. run_pipeline: None runs cpu_pipeline() unless the module is already
    optimized (scheduled or fused); "quick" runs cpu_quick_pipeline() (eager ops); the caller's module is never
    modified. num_threads: large loops are split over this many threads (None: $XLAPY_NUM_THREADS, else
    os.cpu_count(); 1: no threads). llvm_level: "optimized" (LLVM O3) or "quick" (no LLVM optimization, for small
    modules); None chooses by the module's size (compile_plan.py). profile: instrument every kernel for the
    profiler (profile_ir.py); None does so while a profiler trace runs or XLA_FLAGS has --xla_hlo_profile.
    cache: look the compile up in the persistent compilation cache, and store it there (cache_entry.py)."""
    if llvm_level is not None and llvm_level not in compile_plan.LEVELS:
        raise XlapyError(f"llvm_level must be one of {', '.join(compile_plan.LEVELS)}, got {llvm_level!r}")
    options = debug.options()
    if profile is None:
        profile = trace_events.session() is not None or options.hlo_profile
    threads = resolve_num_threads(num_threads)
    store = compilation_cache.store() if cache and not profile and not options.dumps_module(module.name) else None
    key = None
    if store is not None:
        with trace_events.span("compilation cache lookup", "compile"):
            if run_pipeline is None:
                run_pipeline = not _is_optimized(module)
            key = cache_entry.compile_key(module.to_text(), {
                "pipeline": run_pipeline, "verify": verify, "fast_math": fast_math, "threads": threads,
                "llvm_level": llvm_level, "disabled_passes": sorted(options.disable_hlo_passes)})
            exe = _load(store, key, module, threads,
                        lambda: compile_module(module, run_pipeline, verify, fast_math, threads, llvm_level,
                                               False, cache=False))
        if exe is not None:
            return exe
    if run_pipeline == "quick":
        from ...passes.optimize import optimize
        from ...passes.pipelines import cpu_quick_pipeline
        module, run_pipeline = optimize(module.clone(), cpu_quick_pipeline(), options=options), False
    tm = llvm_jit.shared_target_machine()
    chosen: list = []

    def session_for(optimized: Module):
        chosen.append(llvm_level or compile_plan.choose_level(optimized))
        chosen.append(_session(optimized, chosen[0], profile))
        return chosen[1]
    with gc_pause.paused():          # until the LLVM module is printed and released (ir_release.py)
        try:
            module, llvm_module, scratch_size, timer = emit_llvm(
                module, tm, llvm.get_process_triple(), run_pipeline, verify, fast_math, options, threads, profile,
                session_for, entry_layouts="row-major")
        except BaseException as e:
            if chosen and chosen[1] is not None:
                chosen[1].close(abandon=e)
            raise
        level, session = chosen
        try:
            text = session.module_text(llvm_module) if session is not None else str(llvm_module)
            _dump(module, "ir-no-opt.ll", text, options)
        except BaseException as e:
            if session is not None:
                session.close(abandon=e)
            raise
        ir_release.release(llvm_module)
    objects: list[bytes] | None = [] if key is not None else None
    entry_symbol = ENTRY_NAME
    LLVM_COMPILES[level] += 1
    if session is not None:
        with trace_events.span(f"LLVM {level}, two threads", "llvm"):
            engine, address, opt_parts, objs = _finish_parallel(session, module, text)
        if objects is not None:
            objects.extend(objs)
    else:
        parsed = parse_llvm(module, text, llvm_jit.context_for(level))
        if level == compile_plan.OPTIMIZED:
            with trace_events.span("LLVM optimize", "llvm"):
                optimize_llvm(parsed, tm)
        opt_parts = [str(parsed) if level == compile_plan.OPTIMIZED else text]   # before the engine owns it
        with trace_events.span(f"LLVM code generation ({level})", "llvm"):
            if level == compile_plan.QUICK:
                engine, address, entry_symbol = llvm_jit.jit_quick(parsed, ENTRY_NAME, objects)
            else:
                engine, address = llvm_jit.jit_optimized(parsed, ENTRY_NAME, objects)
        global _WARM
        _WARM = _WARM or level == compile_plan.OPTIMIZED

    def texts() -> list[str]:     # the optimized IR, printed on first use: nobody reads it on the hot path
        return [p if isinstance(p, str) else str(llvm.parse_bitcode(p) if isinstance(p, bytes) else p)
                for p in opt_parts]

    def opt_text() -> str:
        return PART_SEPARATOR.join(texts())

    def assembly() -> str:
        return "\n".join(target_machine().emit_assembly(llvm.parse_assembly(part)) for part in texts())
    if options.dumps_module(module.name):
        _dump(module, "ir-with-opt.ll", opt_text(), options)
        _dump(module, "s", assembly(), options)
    exe = Executable(module, engine, address, scratch_size, text, opt_text, assembly,
                     kernels=timer.kernels if timer is not None else None,
                     log_offset=timer.log_offset if timer is not None else None)
    exe.llvm_level = level
    if HOST_CALLBACK_SYMBOL in text:
        exe.use_host_callbacks()
    if COLLECTIVE_SYMBOL in text:
        attach_collectives(exe)
    if key is not None and objects and all(objects):
        with trace_events.span("compilation cache write", "compile"):
            entry = cache_entry.Entry(module.name, [str(p.shape) for p in module.entry.parameters],
                                      str(module.entry.root.shape), entry_symbol, scratch_size, level, threads,
                                      cache_entry.external_symbols(text), objects, module.to_text())
            store.put(key, entry.encode())
    return exe


# How many modules LLVM compiled in this process, by level: a hit in the persistent cache compiles none.
LLVM_COMPILES = {level: 0 for level in compile_plan.LEVELS}


def _load(store, key: str, module: Module, threads: int, recompile) -> Executable | None:
    """The executable stored under key, or None (a miss, or an entry this process cannot use)."""
    payload = store.get(key)
    if payload is None:
        return None
    try:
        entry = cache_entry.Entry.decode(payload)
    except ValueError:
        store.remove(key)
        return None
    if entry.name != module.name or not cache_entry.make_resolvable(entry):
        return None
    code, address = llvm_jit.load_objects(entry.objects, entry.entry, llvm.get_process_triple(),
                                          str(llvm_jit.shared_target_machine().target_data))
    if not address:
        store.remove(key)
        return None
    from ...hlo import parse
    recompiled: list[Executable] = []

    def again() -> Executable:          # the texts of a cached executable come from compiling it once more
        if not recompiled:
            recompiled.append(recompile())
        return recompiled[0]
    exe = Executable(lambda: parse(entry.hlo), code, address, entry.scratch, lambda: again().llvm_ir,
                     lambda: again().llvm_ir_optimized, lambda: again().assembly,
                     signature=(entry.name, [_shape(s) for s in entry.params], _shape(entry.result)))
    exe.llvm_level = entry.level
    exe.from_cache = True
    if HOST_CALLBACK_SYMBOL in entry.symbols:
        exe.use_host_callbacks()
    if COLLECTIVE_SYMBOL in entry.symbols:
        attach_collectives(exe)
    return exe


def _shape(text: str):
    from ...hlo.lexer import Cursor
    from ...hlo.parser_shapes import parse_shape
    return parse_shape(Cursor(text))
