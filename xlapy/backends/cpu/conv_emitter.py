"""Emitting an HLO convolution: the strategy by a table, the direct loop nest for everything else.

The semantics and the geometry (sizes and element strides, so any dim_labels and layout work) are conv_taps.py's.

| strategy         | when                                                                  | module            |
|------------------|-----------------------------------------------------------------------|-------------------|
| depthwise filter gradient | batch_group_count = the input batch = the output features, f32/f64, channels unit-stride (conv_canonicalization's filter-gradient form) | conv_depthwise.py |
| depthwise        | feature_group_count = the input features = the output features, f32/f64, channels unit-stride, no base dilation or window reversal | conv_depthwise_forward.py |
| vectorized over sums | no groups, f32/f64, output features at most a quarter of a vector's lanes, a last kernel dim's taps x input features of at least a vector, windows of at most 64 taps | conv_sum_vector.py |
| vectorized over features | no groups, f32/f64, at most 32 output features (64 when each sums at most 32 products), windows of at most 64 taps | conv_vector.py |
| filter gradient, few features | no groups, f32/f64, at most 32 output features (unit-stride), windows of more than 64 taps | conv_filter_gradient.py |
| im2col + GEMM    | no groups, f32/f64, big enough for BLAS (dot_emitter's plan)          | conv_gemm.py      |
| direct           | everything else                                                       | here              |

direct: per output pixel, an accumulator row over the output features; for each valid tap and input feature,
acc[f] += x * w[f] over the features of its group. The inner loop runs over output features (unit stride in HWIO
and NHWC), so LLVM vectorizes it without reassociating any sum. Depthwise (one input feature per group) flattens
groups into that inner loop: acc[f] += x[f // multiplier] * w[f]. Output pixels are split over threads. Narrow
floats accumulate in f32 and round once; integers wrap in the result type.
"""
from __future__ import annotations

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import Instruction
from ...hlo.shape import Shape
from . import (conv_depthwise, conv_depthwise_forward, conv_filter_gradient, conv_gemm, conv_sum_vector, conv_vector,
               scalar_ops)
from .buffers import BufferRef, element_size
from .conv_simd import unflatten
from .conv_taps import ConvGeometry, geometry, offset, scratch, taps, when
from .elemental import compute_type, immediate
from .irhelpers import alloca_once, for_range, i64, loop_nest
from .parallel import chunk_bounds, parallel_for, task_count
from .types import load_element, store_element, value_type

ACC_STACK_MAX = 4096      # output features whose accumulator row lives on the stack (one per thread)


# -- handler ---------------------------------------------------------------------------------------------
def convolution(em, inst: Instruction, operands) -> BufferRef:
    lhs, rhs = operands
    rt = inst.shape.ptype
    for pt in (lhs.shape.ptype, rhs.shape.ptype, rt):
        if pt.kind not in ("float", "int", "uint"):
            raise UnimplementedError(f"cpu backend: convolution on {pt.name} not supported yet (instruction "
                                     f"{inst.name})")
        value_type(pt)
    g = geometry(inst)
    out = em.new_buffer(inst.shape, inst)
    if inst.shape.numel == 0:
        return out
    if conv_depthwise.applies(g, lhs, rhs, out):
        conv_depthwise.emit(em, inst, g, lhs, rhs, out)
    elif conv_depthwise_forward.applies(g, lhs, rhs, out):
        conv_depthwise_forward.emit(em, inst, g, lhs, rhs, out)
    elif conv_sum_vector.applies(g, lhs, rhs, out):
        conv_sum_vector.emit(em, inst, g, lhs, rhs, out)
    elif conv_vector.applies(g, lhs, rhs, out):
        conv_vector.emit(em, inst, g, lhs, rhs, out)
    elif conv_filter_gradient.applies(g, lhs, rhs, out):
        conv_filter_gradient.emit(em, inst, g, lhs, rhs, out)
    elif not conv_gemm.emit_gemm(em, inst, g, lhs, rhs, out):
        emit_direct(em, g, lhs, rhs, out, task_count(inst, em.num_threads))
    return out


# -- direct loop nest --------------------------------------------------------------------------------------
def emit_direct(em, g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef, tasks: int = 1) -> None:
    """Output pixels (batch and spatial positions, flattened) split into `tasks` chunks over the thread pool."""
    b = em.b
    rt = out.shape.ptype
    ct = compute_type(rt)
    kind = ct.kind
    add, mul = scalar_ops.BINARY["add"][kind], scalar_ops.BINARY["multiply"][kind]
    cty = value_type(ct)
    sb, sf, *ssp = g.lhs_strides
    ri, ro, *rsp = g.rhs_strides
    ob, of, *osp = g.out_strides
    lpt, rpt = lhs.shape.ptype, rhs.shape.ptype
    pixel_dims = [g.batch, *g.out_sizes]
    pixels = 1
    for n in pixel_dims:
        pixels *= n
    on_stack = g.out_features <= ACC_STACK_MAX
    shared_acc = None if on_stack else b.bitcast(
        scratch(em, g.out_features * max(1, element_size(Shape.array(ct.name, ())))), cty.as_pointer())

    def lhs_at(offset_):
        return scalar_ops.convert(b, lpt, ct, load_element(b, lhs.pointer, lpt, offset_), flush=False)

    def rhs_at(offset_):
        return scalar_ops.convert(b, rpt, ct, load_element(b, rhs.pointer, rpt, offset_), flush=False)

    def pixel(acc, flat):
        n, *opos = unflatten(b, flat, pixel_dims)

        def accumulate(f, x, w):
            slot = b.gep(acc, [f], inbounds=True)
            b.store(add(b, ct, b.load(slot), mul(b, ct, x, w)), slot)

        with loop_nest(b, [g.out_features], name="cz") as (f,):
            b.store(immediate(ct, 0), b.gep(acc, [f], inbounds=True))
        group_count = 1 if g.depthwise else g.groups
        with loop_nest(b, [group_count], name="cg") as (grp,):
            lb = b.add(b.mul(grp, i64(g.batch)), n) if g.by_batch else n
            with loop_nest(b, list(g.kernel_sizes), name="ck") as kpos:
                ipos, valid = taps(b, g, opos, kpos)
                with when(b, valid):
                    lbase = offset(b, [(lb, sb)] + list(zip(ipos, ssp)))
                    rbase = offset(b, list(zip(kpos, rsp)))
                    if g.depthwise:     # acc[f] += x[f // multiplier] * w[f]
                        mult = g.per_group
                        with loop_nest(b, [g.out_features], name="cf") as (f,):
                            c = f if mult == 1 else b.udiv(f, i64(mult))
                            x = lhs_at(b.add(lbase, offset(b, [(c, sf)])))
                            accumulate(f, x, rhs_at(b.add(rbase, offset(b, [(f, ro)]))))
                    else:
                        with loop_nest(b, [g.kernel_in], name="ci") as (ci,):
                            c = ci if g.by_batch or g.groups == 1 else b.add(b.mul(grp, i64(g.kernel_in)), ci)
                            x = lhs_at(b.add(lbase, offset(b, [(c, sf)])))
                            wbase = b.add(rbase, offset(b, [(ci, ri)]))
                            first = b.mul(grp, i64(g.per_group))
                            with loop_nest(b, [g.per_group], name="cf") as (j,):
                                f = b.add(first, j)
                                accumulate(f, x, rhs_at(b.add(wbase, offset(b, [(f, ro)]))))
        obase = offset(b, [(n, ob)] + list(zip(opos, osp)))
        with loop_nest(b, [g.out_features], name="co") as (f,):
            v = b.load(b.gep(acc, [f], inbounds=True))
            store_element(b, out.pointer, rt, b.add(obase, offset(b, [(f, of)])),
                          scalar_ops.convert(b, ct, rt, v, flush=False))

    def chunk(b_, start, end, task=None):
        acc = alloca_once(b, ir.ArrayType(cty, g.out_features), "conv.acc") if on_stack else shared_acc
        acc = b.bitcast(acc, cty.as_pointer())
        with for_range(b, end, "cv", start=start) as flat:
            pixel(acc, flat)

    tasks = min(tasks, pixels) if on_stack else 1
    if not (tasks > 1 and parallel_for(b, chunk_bounds(pixels, tasks, 1), chunk, quantum=1)):
        chunk(b, i64(0), i64(pixels))
