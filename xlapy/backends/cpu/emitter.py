"""The IR emitter: HLO computations -> LLVM code over buffers, one instruction at a time.

Elemental instructions become a loop nest over their output (elemental.py + loops.py). The rest have a rule
in HANDLERS here: fusion (compose the fused computation's generators; a fusion rooted at reduce runs the
reduction loop with the producers inlined), tuple / get-tuple-element (compile-time value trees), while /
conditional / call (LLVM control flow over buffers, called computations emitted inline), copy, bitcast.
Anything else raises UnimplementedError naming the opcode and instruction; nothing falls back silently.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import ELIDED, Computation, Instruction, elided_constant_error
from ...hlo.shape import Shape
from . import buffer_assignment, folding_builder, ir_release, kernels
from .kernel_replay import KernelReplay
from .aliasing import fused_in_place_operand
from .buffer_assignment import BufferAssignment
from .buffers import BufferRef, ScratchAllocator, ValueTree, byte_size, leaves
from .elemental import TABLE, ElementalEmitter, Generator, _start_indices, common_factors, unsupported
from .elemental_rng import rng_bit_generator
from . import dot_emitter
from .conv_emitter import convolution
from .sort_emitter import sort, topk
from .row_emitter import row_fusion
from .column_reduce import column_reduction, is_column_reduction
from .fused_cse import representatives
from .elemental_reduce import sibling_sums
from . import concurrent_loops, fft_emitter, loop_state, scan_emitter
from . import custom_call_emitter, linalg_emitter
from . import scatter_emitter
from . import collectives_emitter
from . import tiled_transpose
from .indexing import is_row_major, linear_index, major_to_minor, placed
from .irhelpers import I8, I8P, i64, loop_nest, memcpy
from .loops import emit_loop, split_reduction
from .parallel import task_count
from .profile_ir import KernelTimer, is_timed
from .types import load_element, storage_type, store_element


def _physical_bytes(inst: Instruction) -> bytes:
    lit = inst.literal
    if lit is ELIDED or lit is None:
        raise elided_constant_error(inst)
    arr = np.asarray(lit, dtype=inst.shape.dtype).reshape(inst.shape.dims)
    if inst.shape.rank:
        arr = arr.transpose(major_to_minor(inst.shape))
    if arr.dtype == np.bool_:
        arr = arr.astype(np.uint8)
    return np.ascontiguousarray(arr).tobytes()


class IrEmitter:
    """Emits computations into `builder`'s function; temporaries live at offsets of the `scratch` argument."""

    def __init__(self, builder: ir.IRBuilder, scratch: ir.Value):
        self.b = builder = folding_builder.adopt(builder)     # integer constants folded in Python
        self.scratch_arg = scratch
        self.scratch = ScratchAllocator(reuse=buffer_assignment.REUSE_TEMPORARIES)
        self.assignment = BufferAssignment(self.scratch)     # liveness-based reuse of scratch slices
        self.elemental = ElementalEmitter(builder, self.constant_pointer)
        self.targets: dict[tuple[int, int], BufferRef] = {}    # (id(inst), leaf) -> preassigned result buffer
        self._constants: dict[int, ir.GlobalVariable] = {}
        self.num_threads = 1      # large loops are split over this many threads (parallel.py)
        self.kernel_cache = kernels.KernelCache(builder.module)     # one function per distinct kernel
        self.replay = KernelReplay(self)          # kernels of a structure seen before are called, not emitted
        self.timer: KernelTimer | None = None     # set when the module is compiled for the profiler (profile_ir.py)
        self._timed_depth = 0
        self.partner_position: dict[int, int] = {}    # id(while) -> its concurrent partner's position (concurrent_loops)

    def release(self) -> None:
        """Once the module is emitted: free the kernels KernelCache dropped and empty the emitter's own state
        (the builder's folding tables, the generators' caches, the recipes), whose cycles through the module's
        values would leave them all to the cyclic collector (ir_release.py). The emitter is unusable after."""
        ir_release.release_functions(self.kernel_cache.dropped)
        for part in (self.b, self.elemental, self.replay, self.assignment, self.kernel_cache, self.scratch):
            part.__dict__.clear()
        self.__dict__.clear()

    # -- buffers ---------------------------------------------------------------------------------------
    def constant_pointer(self, inst: Instruction) -> ir.Value:
        g = self._constants.get(id(inst))
        if g is None:
            data = _physical_bytes(inst)
            ty = ir.ArrayType(I8, len(data))
            g = ir.GlobalVariable(self.b.module, ty, name=f"const.{len(self._constants)}.{inst.name}")
            g.global_constant = True
            g.linkage = "private"
            g.align = 64
            g.initializer = ir.Constant(ty, bytearray(data))
            self._constants[id(inst)] = g
            self.assignment.record("constant", len(data), f"{inst.name} {inst.shape} (global {g.name})")
        # a constant expression, not an instruction: a kernel (kernels.py) or pool worker (parallel.py) that
        # reads the constant names the global itself instead of taking its address as an argument, so LLVM
        # sees the values whatever the kernel's linkage (an external kernel, as llvm_parallel.py makes them,
        # read a 256 KB table of zeros through a pointer and lost its vectorization: 15x slower)
        return g.bitcast(I8P)

    def new_buffer(self, shape: Shape, inst: Instruction | None = None, leaf: int = 0) -> BufferRef:
        target = self.targets.get((id(inst), leaf)) if inst is not None else None
        if target is not None and target.shape.dims == shape.dims:
            return BufferRef(target.pointer, shape)
        offset = self.scratch.allocate(byte_size(shape))
        pointer = self.b.gep(self.scratch_arg, [i64(offset)], inbounds=True)
        what = "(internal)" if inst is None else f"{inst.name}" + (f"{{{leaf}}}" if inst.shape.is_tuple else "")
        self.assignment.name_pointer(pointer, offset, f"{what} {shape}")
        return BufferRef(pointer, shape)

    def new_tree(self, shape: Shape, inst: Instruction | None = None) -> ValueTree:
        return self._new_tree(shape, inst, iter(range(1 << 30)))

    def _new_tree(self, s: Shape, inst: Instruction | None, counter) -> ValueTree:
        if s.is_tuple:
            return tuple(self._new_tree(t, inst, counter) for t in s.tuple_shapes)
        if s.is_token:
            return None
        return self.new_buffer(s, inst, next(counter))

    def copy_leaf(self, src: BufferRef, dst: BufferRef) -> None:
        if src.pointer is dst.pointer:
            return
        if major_to_minor(src.shape) == major_to_minor(dst.shape) or src.shape.rank <= 1:
            memcpy(self.b, dst.pointer, src.pointer, byte_size(dst.shape))
        elif not tiled_transpose.tiled_copy(self, src, dst):
            emit_loop(self.b, dst.shape, self.generator_of(src), [dst])

    def copy_tree(self, src: ValueTree, dst: ValueTree) -> None:
        """Copy every leaf of src into dst; a leaf whose source is another leaf of dst goes through a temporary
        first, so permuting updates (a while body swapping two elements) do not clobber each other."""
        pairs = list(zip(leaves(src), leaves(dst)))
        dst_ptrs = {id(d.pointer) for _, d in pairs}
        staged = []
        for s, d in pairs:
            if s.pointer is not d.pointer and id(s.pointer) in dst_ptrs:
                tmp = self.new_buffer(s.shape)
                self.copy_leaf(s, tmp)
                s = tmp
            staged.append((s, d))
        for s, d in staged:
            self.copy_leaf(s, d)

    def generator_of(self, value: ValueTree) -> Generator:
        if isinstance(value, tuple):
            gens = [self.generator_of(v) for v in value]
            return lambda index: tuple(g(index) for g in gens)
        if value is None:
            raise UnimplementedError("cpu backend: token values cannot be read as arrays")
        return self.elemental.buffer_generator(value.pointer, value.shape)

    # -- computations ----------------------------------------------------------------------------------
    def emit_computation(self, comp: Computation, args: Sequence[ValueTree],
                         writable_params: bool = False, timed: bool = False) -> ValueTree:
        """Emit comp's instructions in post order over `args`. writable_params: the caller owns the argument
        buffers and lets the computation update them in place (a while body's loop state). timed: under the
        profiler, each instruction is a kernel whose run time the code logs (the entry computation and the
        computations control flow runs; not a row fusion's inner computation)."""
        values: dict[int, ValueTree] = {}
        assignment = self.assignment
        timer = self.timer if timed else None
        outline = timed and kernels.OUTLINE
        # the entry's independent while loops run two at a time (concurrent_loops.py)
        pairs: dict = {}

        def reorder(order):
            order, found = concurrent_loops.schedule(order, self.num_threads)
            pairs.update(found)
            return order
        aliasing = assignment.enter(comp, writable_params, reorder if not assignment.frames and outline else None)
        seconds = {id(second) for second in pairs.values()}
        self._timed_depth += timer is not None
        for k, inst in enumerate(aliasing.order):
            if inst.opcode == "parameter":
                values[id(inst)] = args[inst.parameter_number]
                continue
            assignment.begin(k)
            if id(inst) in seconds:             # the second loop of a pair, emitted with the first
                assignment.end_group([])
                continue
            if id(inst) in pairs:
                second = pairs[id(inst)]
                values[id(inst)], values[id(second)] = concurrent_loops.emit_pair(self, inst, second, values, k)
                assignment.end_group([(x, [leaf.pointer for leaf in leaves(values[id(x)])]) for x in (inst, second)])
                continue
            operands = [values[id(o)] for o in inst.operands]
            if timer is not None and is_timed(inst):
                value = self._emit_timed(timer, inst, operands, outline)
            else:
                value = self._emit_kernel(inst, operands, outline)
            values[id(inst)] = value
            assignment.end(inst, [leaf.pointer for leaf in leaves(value)])
        self._timed_depth -= timer is not None
        assignment.leave()
        return values[id(comp.root)]

    def _emit_timed(self, timer: KernelTimer, inst: Instruction, operands: list[ValueTree],
                    outline: bool) -> ValueTree:
        kernel = timer.kernel_id(inst, top=self._timed_depth == 1)
        outer, timer.current = timer.current, inst
        t0 = timer.start(self.b)
        value = self._emit_kernel(inst, operands, outline)
        timer.stop(self.b, kernel, t0)
        timer.current = outer
        return value

    def _emit_kernel(self, inst: Instruction, operands: list[ValueTree], outline: bool) -> ValueTree:
        """inst emitted in place, or (outline) as a kernel function of its own that the code calls (kernels.py)."""
        if outline and inst.opcode not in kernels.INLINE:
            return kernels.outlined(self, inst, operands, lambda: self.emit_instruction(inst, operands))
        return self.emit_instruction(inst, operands)

    # -- in-place dynamic-update-slice ---------------------------------------------------------------------
    def may_update_in_place(self, inst: Instruction, operand_number: int, target: ValueTree,
                            record: bool = True) -> bool:
        """May inst (a DUS, or a fusion rooted at one) write into the buffer of operand `operand_number`? The
        answer depends on where inst sits: a kernel recipe (kernel_replay.py) keeps it as a guard."""
        aliasing = self.assignment.current
        answer = (buffer_assignment.IN_PLACE_UPDATES and aliasing is not None and isinstance(target, BufferRef)
                  and id(inst) in aliasing.position and (id(inst), 0) not in self.targets
                  and target.shape.dims == inst.shape.dims
                  and major_to_minor(target.shape) == major_to_minor(inst.shape)
                  and aliasing.can_overwrite(inst, operand_number))
        recording = self.replay.recording
        if record and recording is not None:
            recording.guards.append((operand_number, answer))
        return answer

    def write_window(self, dus: Instruction, target: BufferRef, gens: list) -> None:
        """Store only the update window of `dus` into target (gens: generators of dus's operands; the first is
        not read): a loop over the update's shape at the clamped start indices."""
        b = self.b
        update = dus.operands[1].shape
        starts = _start_indices(self.elemental, dus, gens, 2, update.dims, dus.operands[0].shape.dims)
        order = major_to_minor(update)
        with loop_nest(b, [update.dims[d] for d in order], name="dus") as ivs:
            local = placed(order, ivs, update.rank)
            value = gens[1](local)
            full = [b.add(s, i, flags=["nsw", "nuw"]) for s, i in zip(starts, local)]
            store_element(b, target.pointer, target.shape.ptype, linear_index(b, full, target.shape), value)

    def emit_instruction(self, inst: Instruction, operands: list[ValueTree]) -> ValueTree:
        handler = HANDLERS.get(inst.opcode)
        if handler is not None:
            return handler(self, inst, operands)
        if inst.opcode in TABLE:
            gens = [self.generator_of(v) for v in operands]
            special = reduction_loop(self, inst, inst, gens) if inst.opcode == "reduce" else None
            return special if special is not None else self.materialize(inst, self.elemental.generator(inst, gens))
        raise unsupported(inst)

    def materialize(self, inst: Instruction, gen: Generator, order: list[int] | None = None,
                    gens: dict[int, Generator] | None = None) -> ValueTree:
        """Run `gen` over inst's shape into new buffers (one per leaf of a tuple-shaped inst), iterating in the
        buffers' layout order or in `order` (dims, major to minor); tile by tile when inst reads an array
        transposed (tiled_transpose.py; `gens`: a fusion's generators, fused_generators)."""
        tree = self.new_tree(inst.shape, inst)
        bufs = leaves(tree)
        if bufs and not tiled_transpose.tiled(self, inst, gen, bufs, gens):
            emit_loop(self.b, bufs[0].shape, gen, bufs, task_count(inst, self.num_threads), order)
        return tree

    # -- fusion ----------------------------------------------------------------------------------------
    def fused_generators(self, comp: Computation, operands: list[ValueTree] | None,
                         param_gens: list[Generator] | None = None) -> dict[int, Generator]:
        """Generators of every instruction of a fused computation whose parameter i is operands[i]; or, given
        param_gens, is read through param_gens[i] (a row fusion's members read each other's row buffers)."""
        gens: dict[int, Generator] = {}
        rep = representatives(comp)
        el = self.elemental
        saved = el.sum_groups, el.sum_summers
        el.sum_groups, el.sum_summers = (sibling_sums(comp) if param_gens is None else {}), {}
        try:
            self._fused_generators(comp, operands, param_gens, gens, rep)
        finally:
            el.sum_groups, el.sum_summers = saved
        return gens

    def _fused_generators(self, comp, operands, param_gens, gens, rep) -> None:
        for inst in comp.post_order():
            if rep[id(inst)] is not inst:                 # equal to an earlier instruction: its generator
                gens[id(inst)] = gens[id(rep[id(inst)])]
            elif inst.opcode == "parameter":
                gens[id(inst)] = param_gens[inst.parameter_number] if param_gens is not None \
                    else self.generator_of(operands[inst.parameter_number])
            elif inst.opcode == "reduce" and inst is not comp.root and is_column_reduction(inst):
                # computed once up front by the vectorized column loop, then read by its users
                buf = column_reduction(self, inst, inst, [gens[id(o)] for o in inst.operands])
                gens[id(inst)] = self.generator_of(buf)
            elif inst.opcode in TABLE:
                gens[id(inst)] = self.elemental.generator(inst, [gens[id(o)] for o in inst.operands])
            else:   # a non-elemental op inside a fusion: materialize its operands and itself
                ops = [operands[o.parameter_number] if o.opcode == "parameter" and operands is not None
                       else self.materialize(o, gens[id(o)]) for o in inst.operands]
                gens[id(inst)] = self.generator_of(self.emit_instruction(inst, ops))


def reduction_loop(em: IrEmitter, inst: Instruction, reduce: Instruction, gens) -> ValueTree | None:
    """A reduce (or a fusion rooted at one) with a loop of its own: split over threads along the reduced
    dimensions when its output is tiny, or a column reduction; None: the element-at-a-time loop."""
    split = split_reduction(em, inst, reduce, gens)
    return split if split is not None else column_reduction(em, inst, reduce, gens)


# -- handlers ---------------------------------------------------------------------------------------
def _fusion(em: IrEmitter, inst: Instruction, operands: list[ValueTree]) -> ValueTree:
    if inst.attrs.get("kind") == "kCustom":       # a row fusion (or any fusion run as its computation)
        return row_fusion(em, inst, operands)
    comp = inst.attrs["calls"]
    root = comp.root
    if root.opcode == "dynamic-update-slice":      # in-place DUS fusion: write only the update window
        n = fused_in_place_operand(inst)
        if n is not None and em.may_update_in_place(inst, n, operands[n]):
            gens = em.fused_generators(comp, operands)
            em.write_window(root, operands[n], [None] + [gens[id(o)] for o in root.operands[1:]])
            return BufferRef(operands[n].pointer, inst.shape)
    if root.opcode == "scatter":                   # XLA's wrapped_scatter_computation: in place where it may be
        value = scatter_emitter.scatter_fusion(em, inst, operands)
        if value is not None:
            return value
    gens = em.fused_generators(comp, operands)
    if root.opcode != "tuple":
        split = reduction_loop(em, inst, root, [gens[id(o)] for o in root.operands]) \
            if root.opcode == "reduce" else None
        return split if split is not None else em.materialize(inst, gens[id(root)], transposed_read_order(comp), gens)
    # multi-output fusion: one loop per group of array outputs with equal dimensions
    out = em.new_tree(inst.shape, inst)
    parts = list(out) if isinstance(out, tuple) else [out]
    groups: dict[tuple, list[int]] = {}
    tasks = task_count(inst, em.num_threads)
    for k, op in enumerate(root.operands):
        if op.shape.is_tuple:
            emit_loop(em.b, leaves(parts[k])[0].shape, gens[id(op)], leaves(parts[k]), tasks)
        else:
            groups.setdefault(op.shape.dims, []).append(k)
    for dims, ks in groups.items():
        gs = [gens[id(root.operands[k])] for k in ks]
        gen, bufs = (lambda index, gs=gs: tuple(g(index) for g in gs)), [parts[k] for k in ks]
        if not tiled_transpose.tiled(em, inst, gen, bufs, gens, [root.operands[k] for k in ks]):
            emit_loop(em.b, parts[ks[0]].shape, gen, bufs, tasks)
    return out


def transposed_read_order(comp: Computation) -> list[int] | None:
    """For a loop fusion computing transpose(e), or a reshape of one, from two or more arrays about its size: iterate
    in e's layout order (given as output dims, major to minor), so that the reads (many, contiguous, vectorized)
    run along rows and only the one write per element is strided; in the output's order every read would be
    strided. None otherwise."""
    root = comp.root
    full = [p for p in comp.parameters if 2 * p.shape.numel >= root.shape.numel > 1]     # a pad or slice between
    if len(full) < 2:
        return None
    order = _read_order(root)
    return None if order is None or order == major_to_minor(root.shape) else order


def _read_order(inst: Instruction) -> list[int] | None:
    if inst.opcode == "transpose":
        output_dim = {int(p): i for i, p in enumerate(inst.attrs["dimensions"])}
        return [output_dim[d] for d in major_to_minor(inst.operands[0].shape)]
    if inst.opcode != "reshape" or not is_row_major(inst.shape) or not is_row_major(inst.operands[0].shape):
        return None
    inner = _read_order(inst.operands[0])
    if inner is None:
        return None
    # each group of dims the reshape merges or splits (common_factors) must be read in a row, in its own order
    # (unit dims, read once, may be anywhere)
    dims = inst.operands[0].shape.dims
    groups = [([d for d in range(a0, a1) if dims[d] != 1], range(b0, b1))
              for (a0, a1), (b0, b1) in common_factors(dims, inst.shape.dims)]
    order = [d for a, b in groups if not a for d in b]
    inner = [d for d in inner if dims[d] != 1]
    k = 0
    while k < len(inner):
        a, b = next(g for g in groups if inner[k] in g[0])
        if inner[k:k + len(a)] != a:
            return None
        order += b
        k += len(a)
    return order


def _constant(em: IrEmitter, inst: Instruction, operands) -> ValueTree:
    if inst.shape.is_tuple:
        raise unsupported(inst)
    storage_type(inst.shape.ptype)
    return BufferRef(em.constant_pointer(inst), inst.shape)


def _bitcast(em: IrEmitter, inst: Instruction, operands) -> ValueTree:
    src = operands[0]
    if src.shape.ptype.name == inst.shape.ptype.name:
        return BufferRef(src.pointer, inst.shape)
    raise unsupported(inst)


def _reshape(em: IrEmitter, inst: Instruction, operands) -> ValueTree:
    src = operands[0]
    if is_row_major(src.shape) and is_row_major(inst.shape):
        return BufferRef(src.pointer, inst.shape)
    return em.materialize(inst, em.elemental.generator(inst, [em.generator_of(src)]))


def _copy(em: IrEmitter, inst: Instruction, operands) -> ValueTree:
    out = em.new_tree(inst.shape, inst)
    em.copy_tree(operands[0], out)
    return out


def _while(em: IrEmitter, inst: Instruction, operands) -> ValueTree:
    state, copies = loop_state.initial_state(em, inst, operands[0])
    return run_while(em, inst, state, copies)


def run_while(em: IrEmitter, inst: Instruction, state: ValueTree, copies: list) -> ValueTree:
    """The loop of while `inst` over its state tree, after the initial state's copies."""
    em.copy_tree(tuple(s for s, _ in copies), tuple(d for _, d in copies))
    with loop_state.iterations(em, inst):         # a small body: on this thread, no pool jobs
        return _while_loop(em, inst, state)


def _while_loop(em: IrEmitter, inst: Instruction, state: ValueTree) -> ValueTree:
    b = em.b
    cond_bb = b.append_basic_block(f"{inst.name}.cond")
    body_bb = b.append_basic_block(f"{inst.name}.body")
    done_bb = b.append_basic_block(f"{inst.name}.done")
    b.branch(cond_bb)
    b.position_at_end(cond_bb)
    timer = em.timer if em._timed_depth else None
    t0 = timer.start(b) if timer is not None else None         # one profiler event per iteration
    pred = em.emit_computation(inst.attrs["condition"], [state])
    b.cbranch(load_element(b, pred.pointer, pred.shape.ptype, i64(0)), body_bb, done_bb)
    b.position_at_end(body_bb)
    # The body may update the state in place: an element it passes through costs nothing, a DUS of an element
    # whose old value is dead afterwards writes only its window, an element computed element for element from
    # its old value is written into its state leaf (loop_state.py), and copy_tree skips leaves already in place.
    body = inst.attrs["body"]
    in_place = loop_state.write_in_place(em, body, state)
    try:
        result = em.emit_computation(body, [state], writable_params=True, timed=True)
    finally:
        for key in in_place:
            del em.targets[key]
    em.copy_tree(result, state)
    if timer is not None:
        timer.stop(b, timer.kernel_id(inst, "iteration"), t0)
    b.branch(cond_bb)
    b.position_at_end(done_bb)
    return state


def _dynamic_update_slice(em: IrEmitter, inst: Instruction, operands) -> ValueTree:
    gens = [em.generator_of(v) for v in operands]
    if em.may_update_in_place(inst, 0, operands[0]):
        em.write_window(inst, operands[0], gens)
        return BufferRef(operands[0].pointer, inst.shape)
    return em.materialize(inst, em.elemental.generator(inst, gens))


def _conditional(em: IrEmitter, inst: Instruction, operands) -> ValueTree:
    b = em.b
    selector = operands[0]
    sel = load_element(b, selector.pointer, selector.shape.ptype, i64(0))
    if "branch_computations" in inst.attrs:
        branches = list(inst.attrs["branch_computations"])
        index = sel
    else:
        branches = [inst.attrs["true_computation"], inst.attrs["false_computation"]]
        index = b.select(sel, ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 1))
    out = em.new_tree(inst.shape, inst)
    done = b.append_basic_block(f"{inst.name}.done")
    blocks = [b.append_basic_block(f"{inst.name}.branch{k}") for k in range(len(branches))]
    switch = b.switch(index, blocks[-1])      # out-of-range selectors run the last branch
    for k, block in enumerate(blocks[:-1]):
        switch.add_case(ir.Constant(index.type, k), block)
    for k, (comp, block) in enumerate(zip(branches, blocks)):
        b.position_at_end(block)
        em.copy_tree(em.emit_computation(comp, [operands[1 + k]], timed=True), out)
        b.branch(done)
    b.position_at_end(done)
    return out


def _call(em: IrEmitter, inst: Instruction, operands) -> ValueTree:
    return em.emit_computation(inst.attrs["to_apply"], operands, timed=True)


def _dot(em: IrEmitter, inst: Instruction, operands) -> BufferRef:
    """A top-level dot: dot_emitter chooses GEMM/GEMV through the BLAS runtime for large f32/f64 shapes and
    register-blocked loops otherwise. Complex dots keep the element generator."""
    lhs, rhs = operands
    rt = inst.shape.ptype
    if "complex" in (lhs.shape.ptype.kind, rhs.shape.ptype.kind, rt.kind):
        return em.materialize(inst, em.elemental.generator(inst, [em.generator_of(v) for v in operands]))
    out = em.new_buffer(inst.shape, inst)
    if inst.shape.numel == 0:
        return out
    plan = dot_emitter.plan_dot(lhs.shape, rhs.shape, out.shape, inst, rt)
    tmp = em.b.gep(em.scratch_arg, [i64(em.scratch.allocate(plan.scratch_bytes))], inbounds=True) \
        if plan.scratch_bytes else None
    dot_emitter.emit_dot(em.b, em.b.module, lhs.pointer, rhs.pointer, out.pointer, lhs.shape, rhs.shape, out.shape,
                         inst, rt, scratch=tmp, num_threads=em.num_threads)
    return out


HANDLERS: dict[str, Callable[[IrEmitter, Instruction, list], ValueTree]] = {
    "fusion": _fusion,
    "constant": _constant,
    "tuple": lambda em, inst, ops: tuple(ops),
    "get-tuple-element": lambda em, inst, ops: ops[0][int(inst.attrs["index"])],
    "bitcast": _bitcast,
    "reshape": _reshape,
    "copy": _copy,
    "while": _while,
    "dynamic-update-slice": _dynamic_update_slice,
    "conditional": _conditional,
    "call": _call,
    "opt-barrier": lambda em, inst, ops: ops[0],
    "add-dependency": lambda em, inst, ops: ops[0],
    "after-all": lambda em, inst, ops: None,
    "rng-bit-generator": rng_bit_generator,
    "convolution": convolution,
    "dot": _dot,
    "sort": sort,
    "topk": topk,
    "reduce-window": scan_emitter.reduce_window,
    "fft": fft_emitter.fft,
    "cholesky": linalg_emitter.cholesky,
    "triangular-solve": linalg_emitter.triangular_solve,
    "custom-call": custom_call_emitter.custom_call,
    "scatter": scatter_emitter.scatter,
    **collectives_emitter.HANDLERS,
}
