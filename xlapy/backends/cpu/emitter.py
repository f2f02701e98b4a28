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

from ...errors import ExecutionError, UnimplementedError
from ...hlo import ELIDED, Computation, Instruction
from ...hlo.shape import Shape
from .buffers import BufferRef, ScratchAllocator, ValueTree, byte_size, leaves
from .elemental import TABLE, ElementalEmitter, Generator, unsupported
from .elemental_rng import rng_bit_generator
from .conv_emitter import convolution
from .sort_emitter import sort, topk
from .indexing import is_row_major, major_to_minor
from .irhelpers import I8, I8P, i64, memcpy
from .loops import emit_loop
from .types import load_element, storage_type


def _physical_bytes(inst: Instruction) -> bytes:
    lit = inst.literal
    if lit is ELIDED or lit is None:
        raise ExecutionError(f"constant {inst.name} has elided values ({{...}}); cannot execute")
    arr = np.asarray(lit, dtype=inst.shape.dtype).reshape(inst.shape.dims)
    if inst.shape.rank:
        arr = arr.transpose(major_to_minor(inst.shape))
    if arr.dtype == np.bool_:
        arr = arr.astype(np.uint8)
    return np.ascontiguousarray(arr).tobytes()


class Emitter:
    """Emits computations into `builder`'s function; temporaries live at offsets of the `scratch` argument."""

    def __init__(self, builder: ir.IRBuilder, scratch: ir.Value):
        self.b = builder
        self.scratch_arg = scratch
        self.scratch = ScratchAllocator()
        self.elemental = ElementalEmitter(builder, self.constant_pointer)
        self.targets: dict[tuple[int, int], BufferRef] = {}    # (id(inst), leaf) -> preassigned result buffer
        self._constants: dict[int, ir.GlobalVariable] = {}

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
        return self.b.bitcast(g, I8P)

    def new_buffer(self, shape: Shape, inst: Instruction | None = None, leaf: int = 0) -> BufferRef:
        target = self.targets.get((id(inst), leaf)) if inst is not None else None
        if target is not None and target.shape.dims == shape.dims:
            return BufferRef(target.pointer, shape)
        offset = self.scratch.allocate(byte_size(shape))
        return BufferRef(self.b.gep(self.scratch_arg, [i64(offset)], inbounds=True), shape)

    def new_tree(self, shape: Shape, inst: Instruction | None = None) -> ValueTree:
        counter = iter(range(1 << 30))

        def build(s: Shape) -> ValueTree:
            if s.is_tuple:
                return tuple(build(t) for t in s.tuple_shapes)
            if s.is_token:
                return None
            return self.new_buffer(s, inst, next(counter))
        return build(shape)

    def copy_leaf(self, src: BufferRef, dst: BufferRef) -> None:
        if src.pointer is dst.pointer:
            return
        if major_to_minor(src.shape) == major_to_minor(dst.shape) or src.shape.rank <= 1:
            memcpy(self.b, dst.pointer, src.pointer, byte_size(dst.shape))
        else:
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
    def emit_computation(self, comp: Computation, args: Sequence[ValueTree]) -> ValueTree:
        values: dict[int, ValueTree] = {}
        for inst in comp.post_order():
            if inst.opcode == "parameter":
                values[id(inst)] = args[inst.parameter_number]
                continue
            values[id(inst)] = self.emit_instruction(inst, [values[id(o)] for o in inst.operands])
        return values[id(comp.root)]

    def emit_instruction(self, inst: Instruction, operands: list[ValueTree]) -> ValueTree:
        handler = HANDLERS.get(inst.opcode)
        if handler is not None:
            return handler(self, inst, operands)
        if inst.opcode in TABLE:
            gen = self.elemental.generator(inst, [self.generator_of(v) for v in operands])
            return self.materialize(inst, gen)
        raise unsupported(inst)

    def materialize(self, inst: Instruction, gen: Generator) -> ValueTree:
        """Run `gen` over inst's shape into new buffers (one per leaf of a tuple-shaped inst)."""
        tree = self.new_tree(inst.shape, inst)
        bufs = leaves(tree)
        if bufs:
            emit_loop(self.b, bufs[0].shape, gen, bufs)
        return tree

    # -- fusion ----------------------------------------------------------------------------------------
    def fused_generators(self, comp: Computation, operands: list[ValueTree]) -> dict[int, Generator]:
        gens: dict[int, Generator] = {}
        for inst in comp.post_order():
            if inst.opcode == "parameter":
                value = operands[inst.parameter_number]
                gens[id(inst)] = self.generator_of(value)
            elif inst.opcode in TABLE:
                gens[id(inst)] = self.elemental.generator(inst, [gens[id(o)] for o in inst.operands])
            else:   # a non-elemental op inside a fusion: materialize its operands and itself
                ops = [self.materialize(o, gens[id(o)]) if o.opcode != "parameter"
                       else operands[o.parameter_number] for o in inst.operands]
                gens[id(inst)] = self.generator_of(self.emit_instruction(inst, ops))
        return gens


# -- handlers ---------------------------------------------------------------------------------------
def _fusion(em: Emitter, inst: Instruction, operands: list[ValueTree]) -> ValueTree:
    comp = inst.attrs["calls"]
    gens = em.fused_generators(comp, operands)
    root = comp.root
    if root.opcode != "tuple":
        return em.materialize(inst, gens[id(root)])
    # multi-output fusion: one loop per group of array outputs with equal dimensions
    out = em.new_tree(inst.shape, inst)
    parts = list(out) if isinstance(out, tuple) else [out]
    groups: dict[tuple, list[int]] = {}
    for k, op in enumerate(root.operands):
        if op.shape.is_tuple:
            emit_loop(em.b, leaves(parts[k])[0].shape, gens[id(op)], leaves(parts[k]))
        else:
            groups.setdefault(op.shape.dims, []).append(k)
    for dims, ks in groups.items():
        gs = [gens[id(root.operands[k])] for k in ks]
        emit_loop(em.b, parts[ks[0]].shape, lambda index, gs=gs: tuple(g(index) for g in gs),
                  [parts[k] for k in ks])
    return out


def _constant(em: Emitter, inst: Instruction, operands) -> ValueTree:
    if inst.shape.is_tuple:
        raise unsupported(inst)
    storage_type(inst.shape.ptype)
    return BufferRef(em.constant_pointer(inst), inst.shape)


def _bitcast(em: Emitter, inst: Instruction, operands) -> ValueTree:
    src = operands[0]
    if src.shape.ptype.name == inst.shape.ptype.name:
        return BufferRef(src.pointer, inst.shape)
    raise unsupported(inst)


def _reshape(em: Emitter, inst: Instruction, operands) -> ValueTree:
    src = operands[0]
    if is_row_major(src.shape) and is_row_major(inst.shape):
        return BufferRef(src.pointer, inst.shape)
    return em.materialize(inst, em.elemental.generator(inst, [em.generator_of(src)]))


def _copy(em: Emitter, inst: Instruction, operands) -> ValueTree:
    out = em.new_tree(inst.shape, inst)
    em.copy_tree(operands[0], out)
    return out


def _while(em: Emitter, inst: Instruction, operands) -> ValueTree:
    b = em.b
    state = em.new_tree(inst.shape, inst)
    em.copy_tree(operands[0], state)
    cond_bb = b.append_basic_block(f"{inst.name}.cond")
    body_bb = b.append_basic_block(f"{inst.name}.body")
    done_bb = b.append_basic_block(f"{inst.name}.done")
    b.branch(cond_bb)
    b.position_at_end(cond_bb)
    pred = em.emit_computation(inst.attrs["condition"], [state])
    b.cbranch(load_element(b, pred.pointer, pred.shape.ptype, i64(0)), body_bb, done_bb)
    b.position_at_end(body_bb)
    result = em.emit_computation(inst.attrs["body"], [state])
    em.copy_tree(result, state)
    b.branch(cond_bb)
    b.position_at_end(done_bb)
    return state


def _conditional(em: Emitter, inst: Instruction, operands) -> ValueTree:
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
        em.copy_tree(em.emit_computation(comp, [operands[1 + k]]), out)
        b.branch(done)
    b.position_at_end(done)
    return out


def _call(em: Emitter, inst: Instruction, operands) -> ValueTree:
    return em.emit_computation(inst.attrs["to_apply"], operands)


HANDLERS: dict[str, Callable[[Emitter, Instruction, list], ValueTree]] = {
    "fusion": _fusion,
    "constant": _constant,
    "tuple": lambda em, inst, ops: tuple(ops),
    "get-tuple-element": lambda em, inst, ops: ops[0][int(inst.attrs["index"])],
    "bitcast": _bitcast,
    "reshape": _reshape,
    "copy": _copy,
    "while": _while,
    "conditional": _conditional,
    "call": _call,
    "opt-barrier": lambda em, inst, ops: ops[0],
    "add-dependency": lambda em, inst, ops: ops[0],
    "after-all": lambda em, inst, ops: None,
    "rng-bit-generator": rng_bit_generator,
    "convolution": convolution,
    "sort": sort,
    "topk": topk,
}
