"""fft (FFT, IFFT, RFFT, IRFFT over the 1-3 trailing dimensions) on the CPU backend, emitted as LLVM IR.

The operand is copied into a row-major complex work buffer in the element precision (float for c64/f32, double
for c128/f64); each transformed axis is then run line by line through a 1-D kernel (a line that is not
contiguous is gathered into a line buffer and scattered back). The kernels are internal LLVM functions,
one per (algorithm, length, precision, direction), shared by every line and axis that needs them:

  radix-2      n a power of two: bit-reversal permutation (llvm.bitreverse), then log2(n) butterfly stages
               (iterative Cooley-Tukey); the n/2 twiddles exp(-+2 pi i k/n) are a constant table.
  direct       other n <= DIRECT_MAX: the O(n^2) DFT against a table of the n roots of unity.
  Bluestein    other n: the DFT as a circular convolution with the chirp w_k = exp(-+pi i k^2/n), of length
               m = the power of two >= 2n-1, computed by two radix-2 kernels of length m; the chirp and the
               transformed, 1/m-scaled convolution kernel are constant tables.

Every table is computed by numpy in float64 (k^2 reduced mod 2n before the chirp's angle is formed) and rounded
once to the element precision. Semantics (XLA's, numpy.fft's): IFFT is scaled by 1/N (N the product of
fft_length); RFFT is the complex FFT of the real operand cropped to fft_length[-1]//2+1 along the last axis;
IRFFT first inverts the other axes on the half spectrum, then extends each last-axis line Hermitian-wise to
fft_length[-1] (x[L-k] = conj(x[k])), inverts it and keeps the real part (so the imaginary parts of the DC and,
for an even length, the Nyquist term are ignored, as numpy does).
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from ...errors import UnimplementedError
from .buffers import BufferRef
from .indexing import linear_index
from .irhelpers import (F32, F64, I8, I64, VOID, alloca_once, for_range, i64, if_then, intrinsic, loop_nest,
                        mark_ftz)
from .types import load_element, store_element

DIRECT_MAX = 32          # non-power-of-two lengths up to this run the direct DFT, longer ones Bluestein

_PRECISION = {"c64": F32, "c128": F64, "f32": F32, "f64": F64}


def fft(em, inst, operands) -> BufferRef:
    """HANDLERS entry for fft."""
    kind = str(inst.attrs.get("fft_type", "FFT"))
    lengths = [int(n) for n in inst.attrs.get("fft_length", ())]
    (x,) = operands
    src = x.shape
    if not _well_formed(kind, lengths, src, inst.shape):
        raise UnimplementedError(f"cpu backend: fft {inst.name}: fft_type={kind} fft_length={lengths} on "
                                 f"{src} -> {inst.shape} not supported")
    ty = _PRECISION[src.ptype.name]
    out = em.new_buffer(inst.shape, inst)
    if src.numel == 0 or inst.shape.numel == 0:
        return out
    b = em.b
    ctype = ir.LiteralStructType([ty, ty])
    rank, k = src.rank, len(lengths)
    axes = list(range(rank - k, rank))
    work_dims = list(src.dims)                       # RFFT: the real operand, transformed as complex in full
    work = _scratch(em, ctype, math.prod(work_dims))
    longest = max([lengths[-1]] + work_dims[rank - k:])
    line = _scratch(em, ctype, longest)
    kernel_scratch = _scratch(em, ctype, max(_kernel_scratch(n) for n in set(lengths) | set(work_dims[rank - k:])))

    _load(b, x, work, work_dims, ctype)
    inverse = kind in ("IFFT", "IRFFT")
    transformed = axes[:-1] if kind == "IRFFT" else axes
    for d in transformed:
        kernel = _kernel(b.module, ty, work_dims[d], inverse)
        _transform_axis(b, kernel, work, work_dims, d, line, kernel_scratch)
    scale = 1.0 / math.prod(lengths) if inverse else None
    if kind == "IRFFT":
        kernel = _kernel(b.module, ty, lengths[-1], True)
        _irfft_last_axis(b, kernel, work, work_dims, lengths[-1], line, kernel_scratch, out, scale)
    else:
        _store(b, work, work_dims, out, scale)
    return out


def _well_formed(kind: str, lengths: list[int], src, dst) -> bool:
    """XLA's shape rule for fft, with the element types this emitter handles (c64/f32, c128/f64)."""
    k = len(lengths)
    if not 1 <= k <= 3 or src.rank < k or src.rank != dst.rank or src.dims[:-k] != dst.dims[:-k]:
        return False
    half = lengths[:-1] + [lengths[-1] // 2 + 1]
    s, d = src.ptype.name, dst.ptype.name
    if kind in ("FFT", "IFFT"):
        return s in ("c64", "c128") and d == s and list(src.dims[-k:]) == lengths == list(dst.dims[-k:])
    if kind == "RFFT":
        return (s, d) in (("f32", "c64"), ("f64", "c128")) and list(src.dims[-k:]) == lengths \
            and list(dst.dims[-k:]) == half
    if kind == "IRFFT":
        return (s, d) in (("c64", "f32"), ("c128", "f64")) and list(src.dims[-k:]) == half \
            and list(dst.dims[-k:]) == lengths
    return False


# -- buffers ---------------------------------------------------------------------------------------------
def _scratch(em, ctype: ir.Type, count: int) -> ir.Value:
    size = 2 * (4 if ctype.elements[0] == F32 else 8) * max(count, 1)
    pointer = em.b.gep(em.scratch_arg, [i64(em.scratch.allocate(size))], inbounds=True)
    return em.b.bitcast(pointer, ctype.as_pointer())


def _kernel_scratch(n: int) -> int:
    """Complex elements of scratch the kernel of length n needs."""
    if n <= 2 or n & (n - 1) == 0:
        return 1
    return n if n <= DIRECT_MAX else _bluestein_length(n)


def _row_major(b: ir.IRBuilder, index, dims) -> ir.Value:
    linear = i64(0)
    for i, n in zip(index, dims):
        linear = b.add(b.mul(linear, i64(n)), i)
    return linear


def _load(b, x: BufferRef, work, work_dims, ctype) -> None:
    with loop_nest(b, work_dims, name="fft.load") as index:
        value = load_element(b, x.pointer, x.shape.ptype, linear_index(b, index, x.shape))
        if not x.shape.ptype.is_complex:
            value = b.insert_value(b.insert_value(ir.Constant(ctype, ir.Undefined), value, 0),
                                   ir.Constant(ctype.elements[0], 0.0), 1)
        b.store(value, b.gep(work, [_row_major(b, index, work_dims)], inbounds=True))


def _store(b, work, work_dims, out: BufferRef, scale) -> None:
    """out[index] = work[index] (times scale); RFFT's output is a crop of the work buffer's last axis."""
    with loop_nest(b, out.shape.dims, name="fft.store") as index:
        re, im = _cload(b, work, _row_major(b, index, work_dims))
        if scale is not None:
            s = ir.Constant(re.type, scale)
            re, im = b.fmul(re, s), b.fmul(im, s)
        store_element(b, out.pointer, out.shape.ptype, linear_index(b, index, out.shape), _pack(b, re, im))


def _transform_axis(b, kernel, work, work_dims, d, line, kernel_scratch) -> None:
    """Run kernel over every line of the row-major work buffer along axis d."""
    n = work_dims[d]
    if n == 1:
        return
    outer, inner = math.prod(work_dims[:d]), math.prod(work_dims[d + 1:])
    if inner == 1:              # contiguous lines: transform them in place
        with for_range(b, outer, name="fft.lines") as o:
            b.call(kernel, [b.gep(work, [b.mul(o, i64(n))], inbounds=True), kernel_scratch])
        return
    with for_range(b, outer, name="fft.outer") as o:
        base = b.mul(o, i64(n * inner))
        with for_range(b, inner, name="fft.inner") as j:
            start = b.add(base, j)
            with for_range(b, n, name="fft.gather") as i:
                at = b.add(start, b.mul(i, i64(inner)))
                b.store(b.load(b.gep(work, [at], inbounds=True)), b.gep(line, [i], inbounds=True))
            b.call(kernel, [line, kernel_scratch])
            with for_range(b, n, name="fft.scatter") as i:
                at = b.add(start, b.mul(i, i64(inner)))
                b.store(b.load(b.gep(line, [i], inbounds=True)), b.gep(work, [at], inbounds=True))


def _irfft_last_axis(b, kernel, work, work_dims, length, line, kernel_scratch, out: BufferRef, scale) -> None:
    half = work_dims[-1]
    with loop_nest(b, work_dims[:-1], name="fft.rows") as rows:
        base = b.mul(_row_major(b, rows, work_dims[:-1]), i64(half))
        with for_range(b, min(half, length), name="fft.half") as i:
            b.store(b.load(b.gep(work, [b.add(base, i)], inbounds=True)), b.gep(line, [i], inbounds=True))
        with for_range(b, length - min(half, length), name="fft.mirror") as i:
            k = b.add(i, i64(min(half, length)))
            re, im = _cload(b, work, b.add(base, b.sub(i64(length), k)))
            _cstore(b, line, k, re, b.fneg(im))
        b.call(kernel, [line, kernel_scratch])
        with for_range(b, length, name="fft.real") as i:
            re, _ = _cload(b, line, i)
            re = b.fmul(re, ir.Constant(re.type, scale))
            store_element(b, out.pointer, out.shape.ptype, linear_index(b, rows + [i], out.shape), re)


# -- complex values as (re, im) pairs --------------------------------------------------------------------
def _cload(b, base, i):
    p = b.gep(base, [i], inbounds=True)
    return (b.load(b.gep(p, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 0)], inbounds=True)),
            b.load(b.gep(p, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 1)], inbounds=True)))


def _cstore(b, base, i, re, im) -> None:
    p = b.gep(base, [i], inbounds=True)
    b.store(re, b.gep(p, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 0)], inbounds=True))
    b.store(im, b.gep(p, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 1)], inbounds=True))


def _pack(b, re, im):
    ctype = ir.LiteralStructType([re.type, re.type])
    return b.insert_value(b.insert_value(ir.Constant(ctype, ir.Undefined), re, 0), im, 1)


def _cmul(b, x, y):
    (a, c), (d, e) = x, y
    return b.fsub(b.fmul(a, d), b.fmul(c, e)), b.fadd(b.fmul(a, e), b.fmul(c, d))


# -- kernels: void kernel({T, T}* data, {T, T}* scratch), data transformed in place ------------------------------
def _kernel(module: ir.Module, ty: ir.Type, n: int, inverse: bool) -> ir.Function:
    algo = "radix2" if n & (n - 1) == 0 else "direct" if n <= DIRECT_MAX else "bluestein"
    name = f"xlapy.fft.{algo}.{n}.{'f32' if ty == F32 else 'f64'}.{'inv' if inverse else 'fwd'}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    cptr = ir.LiteralStructType([ty, ty]).as_pointer()
    fn = ir.Function(module, ir.FunctionType(VOID, [cptr, cptr]), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    for a in fn.args:
        a.add_attribute("noalias")
    mark_ftz(fn)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    data, scratch = fn.args
    if n > 1:
        {"radix2": _emit_radix2, "direct": _emit_direct, "bluestein": _emit_bluestein}[algo](
            b, ty, n, inverse, data, scratch)
    b.ret_void()
    return fn


def _table(module: ir.Module, ty: ir.Type, name: str, values: np.ndarray) -> ir.Value:
    """A constant global holding complex `values` as interleaved (re, im) pairs of ty; returns a {T,T}*."""
    g = module.globals.get(name)
    if g is None:
        dtype = np.float32 if ty == F32 else np.float64
        data = np.stack([values.real, values.imag], axis=-1).astype(dtype).tobytes()
        arr = ir.ArrayType(I8, len(data))
        g = ir.GlobalVariable(module, arr, name=name)
        g.global_constant = True
        g.linkage = "private"
        g.align = 64
        g.initializer = ir.Constant(arr, bytearray(data))
    return g.bitcast(ir.LiteralStructType([ty, ty]).as_pointer())


def _roots(n: int, inverse: bool, count: int) -> np.ndarray:
    """exp(-+2 pi i k / n) for k < count, in float64."""
    k = np.arange(count, dtype=np.float64)
    return np.exp((1j if inverse else -1j) * 2 * np.pi * k / n)


def _emit_radix2(b, ty, n, inverse, data, scratch) -> None:
    bits = n.bit_length() - 1
    twiddles = _table(b.module, ty, f"xlapy.fft.twiddle.{n}.{ty}.{int(inverse)}", _roots(n, inverse, n // 2))
    with for_range(b, n, name="rev") as i:
        r = b.lshr(intrinsic(b, "llvm.bitreverse.i64", I64, [i]), i64(64 - bits))
        with if_then(b, b.icmp_unsigned("<", i, r), name="swap"):
            p, q = b.gep(data, [i], inbounds=True), b.gep(data, [r], inbounds=True)
            vp, vq = b.load(p), b.load(q)
            b.store(vq, p)
            b.store(vp, q)
    with for_range(b, bits, name="stage") as s:
        half = b.shl(i64(1), s)
        blocks = b.lshr(i64(n // 2), s)              # also the twiddle stride of this stage
        with for_range(b, blocks, name="block") as blk:
            base = b.mul(blk, b.shl(half, i64(1)))
            with for_range(b, half, name="bfly") as j:
                w = _cload(b, twiddles, b.mul(j, blocks))
                top = b.add(base, j)
                bottom = b.add(top, half)
                t = _cmul(b, w, _cload(b, data, bottom))
                u = _cload(b, data, top)
                _cstore(b, data, bottom, b.fsub(u[0], t[0]), b.fsub(u[1], t[1]))
                _cstore(b, data, top, b.fadd(u[0], t[0]), b.fadd(u[1], t[1]))


def _emit_direct(b, ty, n, inverse, data, scratch) -> None:
    roots = _table(b.module, ty, f"xlapy.fft.roots.{n}.{ty}.{int(inverse)}", _roots(n, inverse, n))
    acc_re, acc_im = alloca_once(b, ty, "dft.re"), alloca_once(b, ty, "dft.im")
    zero = ir.Constant(ty, 0.0)
    with for_range(b, n, name="k") as k:
        b.store(zero, acc_re)
        b.store(zero, acc_im)
        with for_range(b, n, name="j") as j:
            t = _cmul(b, _cload(b, roots, b.urem(b.mul(j, k), i64(n))), _cload(b, data, j))
            b.store(b.fadd(b.load(acc_re), t[0]), acc_re)
            b.store(b.fadd(b.load(acc_im), t[1]), acc_im)
        _cstore(b, scratch, k, b.load(acc_re), b.load(acc_im))
    with for_range(b, n, name="copy") as i:
        b.store(b.load(b.gep(scratch, [i], inbounds=True)), b.gep(data, [i], inbounds=True))


def _bluestein_length(n: int) -> int:
    return 1 << (2 * n - 2).bit_length()


def _emit_bluestein(b, ty, n, inverse, data, scratch) -> None:
    m = _bluestein_length(n)
    k = np.arange(n, dtype=np.int64)
    chirp = np.exp((1j if inverse else -1j) * np.pi * ((k * k) % (2 * n)).astype(np.float64) / n)
    conv = np.zeros(m, dtype=np.complex128)
    conv[:n] = np.conj(chirp)
    conv[m - n + 1:] = np.conj(chirp[1:])[::-1]
    conv = np.fft.fft(conv) / m
    module = b.module
    chirp_g = _table(module, ty, f"xlapy.fft.chirp.{n}.{ty}.{int(inverse)}", chirp)
    conv_g = _table(module, ty, f"xlapy.fft.conv.{n}.{ty}.{int(inverse)}", conv)
    forward, backward = _kernel(module, ty, m, False), _kernel(module, ty, m, True)
    with for_range(b, n, name="chirp.in") as i:
        re, im = _cmul(b, _cload(b, data, i), _cload(b, chirp_g, i))
        _cstore(b, scratch, i, re, im)
    zero = ir.Constant(ty, 0.0)
    with for_range(b, m - n, name="pad") as i:
        _cstore(b, scratch, b.add(i, i64(n)), zero, zero)
    b.call(forward, [scratch, data])            # radix-2 kernels need no scratch
    with for_range(b, m, name="conv") as i:
        re, im = _cmul(b, _cload(b, scratch, i), _cload(b, conv_g, i))
        _cstore(b, scratch, i, re, im)
    b.call(backward, [scratch, data])
    with for_range(b, n, name="chirp.out") as i:
        re, im = _cmul(b, _cload(b, scratch, i), _cload(b, chirp_g, i))
        _cstore(b, data, i, re, im)


__all__ = ["fft", "DIRECT_MAX"]
