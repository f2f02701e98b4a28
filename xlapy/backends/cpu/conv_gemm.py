"""A convolution as one GEMM over a patch matrix ("im2col"), arranged so that the copy reads the input's minor
dim in unit-stride runs and the kernel and result are read in place:

| arrangement     | input's minor dim (canonical form)   | patches (M, K)        | kernel (K, N) | result (M, N) |
|-----------------|--------------------------------------|-----------------------|---------------|---------------|
| forward         | feature c (b01f_01io->b01f)          | [n, o..., k..., c]    | [k..., c, f]  | [n, o..., f]  |
| filter gradient | batch n (f01b_i01o->01bf)            | [c, k..., o..., n]    | [c, k..., f]  | [o..., n, f]  |

n: input batch, c: input features, o: output positions, k: kernel taps, f: output features. Patch element
(n, o, k, c) is the input element tap k of output position o reads (zero in padding and dilation holes), so
both compute out[n, o, f] = sum over k, c of lhs[n, p(o, k), c] * rhs[k, c, f]. The filter-gradient patches
are the forward convolution's im2col matrix (the filter gradient's c, k, o, n are the forward's batch, output
positions, kernel taps and channels), which the GEMM reads transposed (BLAS's flag), as oneDNN and Caffe compute
weight gradients; the forward arrangement would first transpose the input and the output gradient.

When the patch matrix is the input itself, nothing is copied: a 1x1 kernel with unit stride and no padding
(forward: the k dims drop), or a 1x1 output of a window covering the input (a 1x1 convolution's filter
gradient: the o dims drop).
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ...hlo import Instruction
from ...hlo.shape import Layout, Shape
from . import dot_emitter
from .buffers import BufferRef, element_size
from .conv_simd import copy_bytes, scaled, unflatten, valid_range_at, zero_bytes
from .conv_taps import ConvGeometry, offset, scratch, tap, taps
from .elemental import immediate
from .indexing import major_to_minor
from .irhelpers import I1, for_range, i64, loop_nest
from .types import load_element, store_element

IM2COL_MAX_BYTES = 1 << 30       # larger window matrices take the direct path


@dataclass(frozen=True)
class Arrangement:
    """The order of each GEMM operand's dims, by role (module docstring)."""
    patches: tuple[str, ...]
    kernel: tuple[str, ...]
    result: tuple[str, ...]


FORWARD = Arrangement(("n", "o", "k", "c"), ("k", "c", "f"), ("n", "o", "f"))
FILTER_GRADIENT = Arrangement(("c", "k", "o", "n"), ("c", "k", "f"), ("o", "n", "f"))


def arrangement(g: ConvGeometry) -> Arrangement:
    """The filter-gradient arrangement when the input batch is its minor dim of the two, else the forward one."""
    return FILTER_GRADIENT if g.lhs_strides[0] < g.lhs_strides[1] else FORWARD


def _view(shape: Shape, dims: list[int]) -> Shape:
    """`shape` seen with its dims reordered as `dims` (every dim left out has size 1): same memory."""
    rank = major_to_minor(shape)
    dropped = [d for d in range(shape.rank) if d not in dims]
    assert all(shape.dims[d] == 1 for d in dropped), (shape, dims)
    minor_to_major = sorted(range(len(dims)), key=lambda p: -rank.index(dims[p]))
    return Shape.array(shape.element_type, [shape.dims[d] for d in dims], Layout(tuple(minor_to_major)))


def _plain(w) -> bool:
    return w.padding_low == 0 and w.padding_high == 0 and w.base_dilation == 1


def _dropped_role(g: ConvGeometry) -> str | None:
    """The role whose dims are all 1 when the patch matrix is the input itself: k (a 1x1 kernel, unit stride),
    o (a 1x1 output of a window as large as the input), or None (the patches must be copied)."""
    if all(k == 1 and w.stride == 1 and _plain(w) for k, w in zip(g.kernel_sizes, g.window)):
        return "k"
    if all(o == 1 and k == i and w.window_dilation == 1 and not w.window_reversal and _plain(w)
           for o, k, i, w in zip(g.out_sizes, g.kernel_sizes, g.in_sizes, g.window)):
        return "o"
    return None


def _role_dims(dn, side: str) -> dict[str, list[int]]:
    """Each role's dims in the instruction's operand `side` (lhs, rhs or out)."""
    if side == "lhs":
        return {"n": [dn.input_batch], "c": [dn.input_feature], "o": list(dn.input_spatial),
                "k": list(dn.input_spatial)}
    if side == "rhs":
        return {"k": list(dn.kernel_spatial), "c": [dn.kernel_input_feature], "f": [dn.kernel_output_feature]}
    return {"n": [dn.output_batch], "o": list(dn.output_spatial), "f": [dn.output_feature]}


def _dims(roles, of: dict[str, list[int]]) -> list[int]:
    return [d for r in roles for d in of[r]]


def _contracting(roles) -> tuple[int, ...]:
    """Positions of the k and c dims in an operand whose roles (expanded: k and o per spatial dim) are `roles`."""
    return tuple(i for i, r in enumerate(roles) if r in ("k", "c"))


def emit_gemm(em, inst: Instruction, g: ConvGeometry, lhs: BufferRef, rhs: BufferRef, out: BufferRef) -> bool:
    """The im2col + GEMM strategy; False (nothing emitted) when it does not apply."""
    rt = out.shape.ptype
    if g.groups != 1 or rt.name not in ("f32", "f64") or {lhs.shape.ptype.name, rhs.shape.ptype.name} != {rt.name}:
        return False
    dn = inst.attrs["dim_labels"]
    nsp = len(g.out_sizes)
    arr = arrangement(g)
    dropped = _dropped_role(g)
    keep = lambda roles: [r for r in roles if r != dropped]
    expand = lambda roles: [r for r in roles for _ in range(nsp if r in ("o", "k") else 1)]
    patch_roles, kernel_roles, result_roles = (expand(keep(x)) for x in (arr.patches, arr.kernel, arr.result))
    rhs_view = _view(rhs.shape, _dims(keep(arr.kernel), _role_dims(dn, "rhs")))
    out_view = _view(out.shape, _dims(keep(arr.result), _role_dims(dn, "out")))
    if dropped is not None:
        lhs_view = _view(lhs.shape, _dims(keep(arr.patches), _role_dims(dn, "lhs")))
    else:
        sizes = {"n": [g.batch], "c": [g.in_features], "o": list(g.out_sizes), "k": list(g.kernel_sizes)}
        lhs_view = Shape.array(rt.name, _dims(arr.patches, sizes))
    dims = dot_emitter.DotDims(lhs_contracting=_contracting(patch_roles), rhs_contracting=_contracting(kernel_roles))
    assert len(result_roles) == out_view.rank
    plan = dot_emitter.plan_dot(lhs_view, rhs_view, out_view, dims, rt)
    patch_bytes = 0 if dropped is not None else lhs_view.numel * element_size(lhs_view)
    small = plan.m * plan.n * plan.k < dot_emitter.GEMM_MIN_FLOPS
    if plan.strategy == "loops" and small or patch_bytes > IM2COL_MAX_BYTES:
        return False        # small: the direct loops; a bigger dot's emitted loops are dot_plan's choice (narrow)
    b = em.b
    a_ptr = lhs.pointer
    if dropped is None:
        a_ptr = scratch(em, patch_bytes)
        _emit_patches(b, g, arr, lhs, a_ptr, rt)
    tmp = scratch(em, plan.scratch_bytes) if plan.scratch_bytes else None
    dot_emitter.emit_dot(b, b.module, a_ptr, rhs.pointer, out.pointer, lhs_view, rhs_view, out_view, dims, rt,
                         scratch=tmp, num_threads=em.num_threads)
    return True


def _emit_patches(b: ir.IRBuilder, g: ConvGeometry, arr: Arrangement, lhs: BufferRef, patches: ir.Value,
                  pt) -> None:
    """patches[arr.patches order] = the input element tap k of output position o reads (zero outside)."""
    if g.out_sizes and all(w.base_dilation == 1 and not w.window_reversal for w in g.window) \
            and g.lhs_strides[0 if arr.patches[-1] == "n" else 1] == 1:
        _emit_patch_rows(b, g, arr, lhs, patches, pt)
    else:
        _emit_patch_runs(b, g, arr, lhs, patches, pt)


def _emit_patch_rows(b: ir.IRBuilder, g: ConvGeometry, arr: Arrangement, lhs: BufferRef, patches: ir.Value,
                     pt) -> None:
    """The patches a row at a time: a row is the last spatial dim's taps (forward) or outputs (filter gradient)
    times the innermost role's run (c or n, unit stride). Its positions inside the input are one range [lo, hi)
    computed at run time (conv_simd.valid_range_at), so a row is a memset, one copy (one memcpy when the range
    is contiguous in the input, else one per position) and a memset; a row some other dim puts in the padding is
    one memset. Four loops and three calls for a 2-D convolution where the element loops were five loops deep
    with two inner loops per tap (LLVM's time on unet/fwd's im2col kernels: ~25 ms each)."""
    sb, sf, *ssp = g.lhs_strides
    nsp = len(g.out_sizes)
    last = nsp - 1
    sizes = {"n": [g.batch], "c": [g.in_features], "o": list(g.out_sizes), "k": list(g.kernel_sizes)}
    run_role = arr.patches[-1]
    other = "c" if run_role == "n" else "n"
    run = sizes[run_role][0]
    row_role = "k" if run_role == "c" else "o"           # the role of the row's positions (last spatial dim)
    fixed_role = "o" if row_role == "k" else "k"
    outer = arr.patches[:-1]
    counts, names = [], []
    for r in outer:
        dims = range(nsp) if r in ("o", "k") else [0]
        for d in dims:
            if r == row_role and d == last:
                continue
            counts.append(sizes[r][d])
            names.append((r, d))
    positions = sizes[row_role][last]
    w = g.window[last]
    step = w.window_dilation if row_role == "k" else w.stride           # p's step from one row position to the next
    fixed_scale = w.stride if row_role == "k" else w.window_dilation
    contiguous = step * ssp[last] == run
    esize = element_size(Shape.array(pt.name, ()))
    i8p = ir.IntType(8).as_pointer()
    dst_base = b.bitcast(patches, i8p)
    src_base = b.bitcast(lhs.pointer, i8p)
    row_bytes = positions * run * esize
    rows = 1
    for n in counts:
        rows *= n
    with for_range(b, rows, "imr") as row:      # the row dim is the last of the outer dims in both arrangements
        at = dict(zip(names, unflatten(b, row, counts)))
        dst = b.gep(dst_base, [b.mul(row, i64(row_bytes))])
        src = scaled(b, at[(other, 0)], sb if other == "n" else sf)
        valid = None
        for d in range(last):
            p, ok = tap(b, at[("o", d)], at[("k", d)], g.in_sizes[d], g.kernel_sizes[d], g.out_sizes[d], g.window[d])
            src = b.add(src, scaled(b, p, ssp[d]))
            if ok is not None:
                valid = ok if valid is None else b.and_(valid, ok)
        first = b.sub(b.mul(at[(fixed_role, last)], i64(fixed_scale)), i64(w.padding_low))
        lo, hi = valid_range_at(b, first, step, g.in_sizes[last], positions)
        lo = b.select(b.icmp_signed("<", lo, i64(positions)), lo, i64(positions))
        hi = b.select(b.icmp_signed("<", hi, lo), lo, hi)
        if valid is not None:                    # a row in another dim's padding reads nothing
            hi = b.select(valid, hi, i64(0))
            lo = b.select(valid, lo, i64(0))
        run_bytes = i64(run * esize)
        zero_bytes(b, dst, b.mul(lo, run_bytes))
        p0 = b.add(first, b.mul(lo, i64(step)))
        src0 = b.add(src, b.mul(p0, i64(ssp[last])))
        if contiguous:
            copy_bytes(b, b.gep(dst, [b.mul(lo, run_bytes)]),
                    b.gep(src_base, [b.mul(src0, i64(esize))]), b.mul(b.sub(hi, lo), run_bytes))
        else:
            with for_range(b, hi, "imp", start=lo) as t:
                at_src = b.add(src, b.mul(b.add(first, b.mul(t, i64(step))), i64(ssp[last])))
                copy_bytes(b, b.gep(dst, [b.mul(t, run_bytes)]),
                        b.gep(src_base, [b.mul(at_src, i64(esize))]), run_bytes)
        zero_bytes(b, b.gep(dst, [b.mul(hi, run_bytes)]),
                b.mul(b.sub(i64(positions), hi), run_bytes))


def _emit_patch_runs(b: ir.IRBuilder, g: ConvGeometry, arr: Arrangement, lhs: BufferRef, patches: ir.Value,
                     pt) -> None:
    """The general case (base dilation, window reversal, a run that is not unit-stride): element loops, the
    innermost role (c or n) copied as one run of that input dim."""
    sb, sf, *ssp = g.lhs_strides
    nsp = len(g.out_sizes)
    sizes = {"n": [g.batch], "c": [g.in_features], "o": list(g.out_sizes), "k": list(g.kernel_sizes)}
    stride = {"n": sb, "c": sf}
    outer, role = arr.patches[:-1], arr.patches[-1]
    other = "c" if role == "n" else "n"
    run = sizes[role][0]
    counts = [s for r in outer for s in sizes[r]]
    with loop_nest(b, counts, name="im") as ivs:
        by_role, at = {}, 0
        for r in outer:
            width = nsp if r in ("o", "k") else 1
            by_role[r], at = ivs[at:at + width], at + width
        row = i64(0)
        for iv, size in zip(ivs, counts):
            row = b.add(b.mul(row, i64(size)), iv)
        dst = b.mul(row, i64(run))
        ipos, valid = taps(b, g, by_role["o"], by_role["k"])
        with b.if_else(valid if valid is not None else ir.Constant(I1, 1)) as (inside, outside):
            with inside:
                src = offset(b, [(by_role[other][0], stride[other])] + list(zip(ipos, ssp)))
                with loop_nest(b, [run], name="imc") as (j,):
                    v = load_element(b, lhs.pointer, pt, b.add(src, offset(b, [(j, stride[role])])))
                    store_element(b, patches, pt, b.add(dst, j), v)
            with outside:
                with loop_nest(b, [run], name="imz") as (j,):
                    store_element(b, patches, pt, b.add(dst, j), immediate(pt, 0))
