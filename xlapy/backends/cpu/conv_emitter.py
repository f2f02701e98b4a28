"""Emitting an HLO convolution: im2col + GEMM for the big float ones, a direct loop nest for everything else.

Semantics (the interpreter's, XLA's): output[b, o..., f] = sum over kernel taps k... and input features of
lhs[b', i..., c] * rhs[k..., c', f], where the tap reads input position p = o*stride + k'*rhs_dilate - pad_low
of the base-dilated input (k' = K-1-k under window reversal); p must land on an original element
(p % lhs_dilate == 0, 0 <= p / lhs_dilate < size), else the tap reads zero. feature_group_count G splits the
input features into G groups of kernel_input_features, output feature f using group f // (F/G);
batch_group_count B does the same with the input batch (b' = g*(N/B) + b). Narrow floats accumulate in f32
and round once; integers wrap in the result type.

Every operand is read through its layout strides, so any dim_labels and layout work. Two strategies:

  gemm     feature_group_count = batch_group_count = 1, f32/f64, big enough for BLAS (dot_emitter's plan):
           the input windows are copied into a [N, out spatial..., kernel spatial..., C] scratch matrix
           ("im2col", zeros where a tap falls in padding or dilation holes) and one dot with the kernel
           viewed as [kernel spatial..., I, O] computes the output. A 1x1 kernel with unit stride and no
           padding or dilation skips the copy: the input already is the matrix.
  direct   per output pixel, an accumulator row over the output features; for each valid tap and input
           feature, acc[f] += x * w[f] over the features of its group. The inner loop runs over output
           features (unit stride in HWIO and NHWC), so LLVM vectorizes it without reassociating any sum.
           Depthwise (one input feature per group) flattens groups into that inner loop:
           acc[f] += x[f // multiplier] * w[f].
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import Instruction
from ...hlo.shape import Layout, Shape
from . import dot_emitter, scalar_ops
from .buffers import BufferRef, element_size
from .elemental import compute_type, immediate
from .indexing import major_to_minor, strides
from .irhelpers import I1, i64, loop_nest
from .types import load_element, store_element, value_type

IM2COL_MAX_BYTES = 1 << 30       # larger window matrices take the direct path


@dataclass(frozen=True)
class ConvGeometry:
    """A convolution's sizes and strides, independent of dim_labels (lists are per spatial dim)."""
    batch: int               # output batch
    groups: int              # feature or batch groups (1 when neither)
    by_batch: bool           # groups split the input batch (batch_group_count) rather than features
    in_features: int         # input features C
    kernel_in: int           # kernel input features (C / feature_group_count)
    out_features: int        # F
    in_sizes: tuple[int, ...]
    kernel_sizes: tuple[int, ...]
    out_sizes: tuple[int, ...]
    window: tuple            # WindowDim per spatial dim
    lhs_strides: tuple       # (batch, feature, spatial...) element strides
    rhs_strides: tuple       # (in feature, out feature, spatial...)
    out_strides: tuple       # (batch, feature, spatial...)

    @property
    def per_group(self) -> int:
        return self.out_features // self.groups

    @property
    def depthwise(self) -> bool:
        return not self.by_batch and self.groups > 1 and self.kernel_in == 1


def geometry(inst: Instruction) -> ConvGeometry:
    lhs, rhs = inst.operands[0].shape, inst.operands[1].shape
    out = inst.shape
    dn = inst.attrs["dim_labels"]
    if not dn.known:
        raise UnimplementedError(f"cpu backend: convolution {inst.name} with dim_labels {dn.text} is not executable")
    window = inst.attrs.get("window")
    wdims = tuple(window.dims) if window is not None else ()
    fgc = int(inst.attrs.get("feature_group_count", 1))
    bgc = int(inst.attrs.get("batch_group_count", 1))
    if fgc > 1 and bgc > 1:
        raise UnimplementedError(f"cpu backend: convolution {inst.name} with both feature_group_count and "
                                 f"batch_group_count > 1")
    ls, rs, os_ = strides(lhs), strides(rhs), strides(out)
    return ConvGeometry(
        batch=out.dims[dn.output_batch], groups=max(fgc, bgc), by_batch=bgc > 1,
        in_features=lhs.dims[dn.input_feature], kernel_in=rhs.dims[dn.kernel_input_feature],
        out_features=out.dims[dn.output_feature],
        in_sizes=tuple(lhs.dims[d] for d in dn.input_spatial),
        kernel_sizes=tuple(rhs.dims[d] for d in dn.kernel_spatial),
        out_sizes=tuple(out.dims[d] for d in dn.output_spatial), window=wdims,
        lhs_strides=(ls[dn.input_batch], ls[dn.input_feature], *(ls[d] for d in dn.input_spatial)),
        rhs_strides=(rs[dn.kernel_input_feature], rs[dn.kernel_output_feature], *(rs[d] for d in dn.kernel_spatial)),
        out_strides=(os_[dn.output_batch], os_[dn.output_feature], *(os_[d] for d in dn.output_spatial)))


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
    if not _emit_gemm(em, inst, g, lhs, rhs, out):
        emit_direct(em, g, lhs, rhs, out)
    return out


# -- taps ------------------------------------------------------------------------------------------------
def _tap(b: ir.IRBuilder, o: ir.Value, k: ir.Value, size: int, ksize: int, osize: int, w) -> tuple:
    """(input index, valid or None when always valid) of output position o, kernel tap k, one spatial dim."""
    k_eff = b.sub(i64(ksize - 1), k) if w.window_reversal else k
    p = b.add(b.mul(o, i64(w.stride)), b.mul(k_eff, i64(w.window_dilation)))
    if w.padding_low:
        p = b.sub(p, i64(w.padding_low))
    dilated = (size - 1) * w.base_dilation + 1 if size else 0
    lowest = -w.padding_low
    highest = (osize - 1) * w.stride + (ksize - 1) * w.window_dilation - w.padding_low
    valid = None

    def both(c):
        return c if valid is None else b.and_(valid, c)
    if lowest < 0:
        valid = both(b.icmp_signed(">=", p, i64(0)))
    if highest >= dilated:
        valid = both(b.icmp_signed("<", p, i64(dilated)))
    if w.base_dilation > 1:
        valid = both(b.icmp_unsigned("==", b.urem(p, i64(w.base_dilation)), i64(0)))
        p = b.udiv(p, i64(w.base_dilation))
    return p, valid


def _taps(b, g: ConvGeometry, opos, kpos):
    """Input spatial indices for output position `opos` and taps `kpos`, and their joint validity (or None)."""
    index, valid = [], None
    for d, (o, k) in enumerate(zip(opos, kpos)):
        p, v = _tap(b, o, k, g.in_sizes[d], g.kernel_sizes[d], g.out_sizes[d], g.window[d])
        index.append(p)
        if v is not None:
            valid = v if valid is None else b.and_(valid, v)
    return index, valid


def _offset(b, terms) -> ir.Value:
    """sum(value * stride) over (value, stride) terms, as an i64 element offset."""
    total = None
    for value, stride in terms:
        if stride == 0:
            continue
        term = value if stride == 1 else b.mul(value, i64(stride))
        total = term if total is None else b.add(total, term)
    return total if total is not None else i64(0)


def _when(b: ir.IRBuilder, valid):
    """`with b.if_then(valid)` or nothing when the condition is statically true."""
    if valid is None:
        return nullcontext()
    return b.if_then(valid)


# -- direct loop nest --------------------------------------------------------------------------------------
def emit_direct(em, g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> None:
    b = em.b
    rt = out.shape.ptype
    ct = compute_type(rt)
    kind = ct.kind
    add, mul = scalar_ops.BINARY["add"][kind], scalar_ops.BINARY["multiply"][kind]
    cty = value_type(ct)
    acc_bytes = g.out_features * max(1, element_size(Shape.array(ct.name, ())))
    acc = b.bitcast(_scratch(em, acc_bytes), cty.as_pointer())
    sb, sf, *ssp = g.lhs_strides
    ri, ro, *rsp = g.rhs_strides
    ob, of, *osp = g.out_strides
    lpt, rpt = lhs.shape.ptype, rhs.shape.ptype

    def lhs_at(offset):
        return scalar_ops.convert(b, lpt, ct, load_element(b, lhs.pointer, lpt, offset), flush=False)

    def rhs_at(offset):
        return scalar_ops.convert(b, rpt, ct, load_element(b, rhs.pointer, rpt, offset), flush=False)

    def accumulate(f, x, w):
        slot = b.gep(acc, [f], inbounds=True)
        b.store(add(b, ct, b.load(slot), mul(b, ct, x, w)), slot)

    with loop_nest(b, [g.batch, *g.out_sizes], name="cv") as ivs:
        n, opos = ivs[0], ivs[1:]
        with loop_nest(b, [g.out_features], name="cz") as (f,):
            b.store(immediate(ct, 0), b.gep(acc, [f], inbounds=True))
        group_count = 1 if g.depthwise else g.groups
        with loop_nest(b, [group_count], name="cg") as (grp,):
            lb = b.add(b.mul(grp, i64(g.batch)), n) if g.by_batch else n
            with loop_nest(b, list(g.kernel_sizes), name="ck") as kpos:
                ipos, valid = _taps(b, g, opos, kpos)
                with _when(b, valid):
                    lbase = _offset(b, [(lb, sb)] + list(zip(ipos, ssp)))
                    rbase = _offset(b, list(zip(kpos, rsp)))
                    if g.depthwise:     # acc[f] += x[f // multiplier] * w[f]
                        mult = g.per_group
                        with loop_nest(b, [g.out_features], name="cf") as (f,):
                            c = f if mult == 1 else b.udiv(f, i64(mult))
                            x = lhs_at(b.add(lbase, _offset(b, [(c, sf)])))
                            accumulate(f, x, rhs_at(b.add(rbase, _offset(b, [(f, ro)]))))
                    else:
                        with loop_nest(b, [g.kernel_in], name="ci") as (ci,):
                            c = ci if g.by_batch or g.groups == 1 else b.add(b.mul(grp, i64(g.kernel_in)), ci)
                            x = lhs_at(b.add(lbase, _offset(b, [(c, sf)])))
                            wbase = b.add(rbase, _offset(b, [(ci, ri)]))
                            first = b.mul(grp, i64(g.per_group))
                            with loop_nest(b, [g.per_group], name="cf") as (j,):
                                f = b.add(first, j)
                                accumulate(f, x, rhs_at(b.add(wbase, _offset(b, [(f, ro)]))))
        obase = _offset(b, [(n, ob)] + list(zip(opos, osp)))
        with loop_nest(b, [g.out_features], name="co") as (f,):
            v = b.load(b.gep(acc, [f], inbounds=True))
            store_element(b, out.pointer, rt, b.add(obase, _offset(b, [(f, of)])),
                          scalar_ops.convert(b, ct, rt, v, flush=False))


def _scratch(em, nbytes: int) -> ir.Value:
    offset = em.scratch.allocate(nbytes)
    return em.b.gep(em.scratch_arg, [i64(offset)], inbounds=True)


# -- im2col + GEMM ----------------------------------------------------------------------------------------
def _view(shape: Shape, dims: list[int]) -> Shape:
    """`shape` seen with its dims reordered as `dims` (every dim left out has size 1): same memory."""
    rank = major_to_minor(shape)
    dropped = [d for d in range(shape.rank) if d not in dims]
    assert all(shape.dims[d] == 1 for d in dropped), (shape, dims)
    minor_to_major = sorted(range(len(dims)), key=lambda p: -rank.index(dims[p]))
    return Shape.array(shape.element_type, [shape.dims[d] for d in dims], Layout(tuple(minor_to_major)))


def _is_pointwise(g: ConvGeometry) -> bool:
    return all(k == 1 for k in g.kernel_sizes) and all(
        w.stride == 1 and w.padding_low == 0 and w.padding_high == 0 and w.base_dilation == 1 for w in g.window)


def _emit_gemm(em, inst: Instruction, g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> bool:
    """The im2col + GEMM strategy; False (nothing emitted) when it does not apply."""
    rt = out.shape.ptype
    if g.groups != 1 or rt.name not in ("f32", "f64") or {lhs.shape.ptype.name, rhs.shape.ptype.name} != {rt.name}:
        return False
    dn = inst.attrs["dim_labels"]
    nsp = len(g.out_sizes)
    rhs_view = _view(rhs.shape, [*dn.kernel_spatial, dn.kernel_input_feature, dn.kernel_output_feature])
    out_view = _view(out.shape, [dn.output_batch, *dn.output_spatial, dn.output_feature])
    pointwise = _is_pointwise(g)
    if pointwise:
        lhs_view = _view(lhs.shape, [dn.input_batch, *dn.input_spatial, dn.input_feature])
        rhs_view = _view(rhs.shape, [dn.kernel_input_feature, dn.kernel_output_feature])
        dims = dot_emitter.DotDims(lhs_contracting=(nsp + 1,), rhs_contracting=(0,))
    else:
        lhs_view = Shape.array(rt.name, [g.batch, *g.out_sizes, *g.kernel_sizes, g.in_features])
        dims = dot_emitter.DotDims(lhs_contracting=tuple(range(nsp + 1, 2 * nsp + 2)),
                                   rhs_contracting=tuple(range(nsp + 1)))
    plan = dot_emitter.plan_dot(lhs_view, rhs_view, out_view, dims, rt)
    patch_bytes = 0 if pointwise else lhs_view.numel * element_size(lhs_view)
    if plan.strategy == "loops" or patch_bytes > IM2COL_MAX_BYTES:
        return False
    b = em.b
    a_ptr = lhs.pointer
    if not pointwise:
        a_ptr = _scratch(em, patch_bytes)
        _emit_im2col(b, g, lhs, a_ptr, rt)
    tmp = _scratch(em, plan.scratch_bytes) if plan.scratch_bytes else None
    dot_emitter.emit_dot(b, b.module, a_ptr, rhs.pointer, out.pointer, lhs_view, rhs_view, out_view, dims, rt,
                         scratch=tmp, num_threads=em.num_threads)
    return True


def _emit_im2col(b: ir.IRBuilder, g: ConvGeometry, lhs: BufferRef, patches: ir.Value, pt) -> None:
    """patches[n, o..., k..., c] = the input element tap k of output position o reads (zero outside)."""
    sb, sf, *ssp = g.lhs_strides
    c_count = g.in_features
    zero = immediate(pt, 0)
    with loop_nest(b, [g.batch, *g.out_sizes, *g.kernel_sizes], name="im") as ivs:
        nsp = len(g.out_sizes)
        n, opos, kpos = ivs[0], ivs[1:1 + nsp], ivs[1 + nsp:]
        # row of the patch matrix: (n, o..., k...) row-major
        row = i64(0)
        for iv, size in zip(ivs, [g.batch, *g.out_sizes, *g.kernel_sizes]):
            row = b.add(b.mul(row, i64(size)), iv)
        dst = b.mul(row, i64(c_count))
        ipos, valid = _taps(b, g, opos, kpos)
        if valid is None:
            valid = ir.Constant(I1, 1)
        with b.if_else(valid) as (inside, outside):
            with inside:
                src = _offset(b, [(n, sb)] + list(zip(ipos, ssp)))
                with loop_nest(b, [c_count], name="imc") as (c,):
                    v = load_element(b, lhs.pointer, pt, b.add(src, _offset(b, [(c, sf)])))
                    store_element(b, patches, pt, b.add(dst, c), v)
            with outside:
                with loop_nest(b, [c_count], name="imz") as (c,):
                    store_element(b, patches, pt, b.add(dst, c), zero)

