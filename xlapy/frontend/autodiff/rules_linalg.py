"""Derivative rules of dot and convolution (JAX's transpose rules, translated to HLO attributes).

Both are bilinear, so the JVP is `op(t_lhs, rhs) + op(lhs, t_rhs)`. The VJPs:
  dot          ct contracted with the other operand over the kept dimensions, then transposed into the
               operand's dimension order (_dot_general_transpose_lhs/rhs)
  convolution  lhs: a convolution of ct with the spatially reversed kernel (lhs_dilate = stride);
               rhs: a convolution of lhs with ct, batch and feature roles swapped (rhs_dilate = stride);
               feature_group_count > 1 becomes batch_group_count in the kernel gradient, as in JAX.

The fft is linear, so its JVP is the same fft of the tangent. The VJPs (JAX's fft transpose rules):
  FFT, IFFT    the same transform of ct (the DFT matrix is symmetric; no conjugation, JAX's convention)
  RFFT         N * IRFFT(conj(ct) / w), w = 1 for DC and Nyquist, 2 elsewhere on the last axis
  IRFFT        conj(RFFT(ct) * w / N), the same weights
"""
from __future__ import annotations

import numpy as np

from ...hlo import Instruction
from ...hlo.attrs import ConvDimensionNumbers, Window, WindowDim
from .rules_common import AutodiffError, Emitter
from .rules_decompositions import JVP as DECOMPOSITION_JVP, VJP as DECOMPOSITION_VJP


def _bilinear_jvp(b: Emitter, inst: Instruction, ts):
    lhs, rhs = inst.operands
    terms = []
    if ts[0] is not None:
        terms.append(b.add_instruction(inst.clone_with([ts[0], rhs], name=f"{inst.opcode}.jvp")))
    if ts[1] is not None:
        terms.append(b.add_instruction(inst.clone_with([lhs, ts[1]], name=f"{inst.opcode}.jvp")))
    return terms[0] if len(terms) == 1 else b.add(*terms)


# -- dot ------------------------------------------------------------------------------------------------------
def _remaining(n: int, *removed) -> list[int]:
    gone = {d for r in removed for d in r}
    return [i for i in range(n) if i not in gone]


def _dot_transpose_lhs(b: Emitter, g: Instruction, x: Instruction, y: Instruction, x_contract, y_contract,
                       x_batch, y_batch, swap_ans: bool) -> Instruction:
    x_kept = _remaining(x.shape.rank, x_contract, x_batch)
    y_kept = _remaining(y.shape.rank, y_contract, y_batch)
    nb = len(x_batch)
    ans_batch = list(range(nb))
    if swap_ans:
        ans_y = list(range(nb, nb + len(y_kept)))
    else:
        ans_y = list(range(nb + len(x_kept), nb + len(x_kept) + len(y_kept)))
    g = b.convert(g, y.shape.element_type)
    attrs = {"lhs_batch_dims": tuple(ans_batch), "lhs_contracting_dims": tuple(ans_y),
             "rhs_batch_dims": tuple(y_batch), "rhs_contracting_dims": tuple(y_kept)}
    prod = b.emit("dot", [g, y], {k: v for k, v in attrs.items() if v}, element_type=x.shape.element_type)
    x_contract_sorted_by_y = list(np.take(list(x_contract), np.argsort(list(y_contract)))) if x_contract else []
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)
    return b.transpose(prod, [int(a) for a in out_axes])


def _dot_vjp(b, inst, ct):
    x, y = inst.operands
    a = inst.attrs
    xc, yc = a.get("lhs_contracting_dims", ()), a.get("rhs_contracting_dims", ())
    xb, yb = a.get("lhs_batch_dims", ()), a.get("rhs_batch_dims", ())
    return [_dot_transpose_lhs(b, ct, x, y, xc, yc, xb, yb, swap_ans=False),
            _dot_transpose_lhs(b, ct, y, x, yc, xc, yb, xb, swap_ans=True)]


# -- convolution -----------------------------------------------------------------------------------------------
def _specs(dn: ConvDimensionNumbers):
    """JAX's (lhs_spec, rhs_spec, out_spec): (batch, feature, spatial...), (out, in, spatial...), ..."""
    return ((dn.input_batch, dn.input_feature, *dn.input_spatial),
            (dn.kernel_output_feature, dn.kernel_input_feature, *dn.kernel_spatial),
            (dn.output_batch, dn.output_feature, *dn.output_spatial))


def _dn(lhs_spec, rhs_spec, out_spec) -> ConvDimensionNumbers:
    return ConvDimensionNumbers.from_dims(lhs_spec[0], lhs_spec[1], tuple(lhs_spec[2:]), rhs_spec[1], rhs_spec[0],
                                          tuple(rhs_spec[2:]), out_spec[0], out_spec[1], tuple(out_spec[2:]))


def _swap(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _dilate(n: int, d: int) -> int:
    return 0 if n == 0 else 1 + d * (n - 1)


def _reshape_axis_out_of(b: Emitter, src: int, size1: int, x: Instruction) -> Instruction:
    dims = list(x.shape.dims)
    dims[src:src + 1] = [size1, dims[src] // size1]
    return b.reshape(x, dims)


def _reshape_axis_into(b: Emitter, src: int, dst: int, x: Instruction) -> Instruction:
    perm = [i for i in range(x.shape.rank) if i != src]
    perm.insert(dst, src)
    new_dims = [n for i, n in enumerate(x.shape.dims) if i != src]
    new_dims[dst] *= x.shape.dims[src]
    return b.reshape(b.transpose(x, perm), new_dims)


def _conv(b: Emitter, lhs, rhs, dn, strides, padding, lhs_dil, rhs_dil, fgc, bgc, et) -> Instruction:
    sizes = [rhs.shape.dims[d] for d in dn.kernel_spatial]
    window = Window(tuple(WindowDim(s, st, lo, hi, rd, ld)
                          for s, st, (lo, hi), ld, rd in zip(sizes, strides, padding, lhs_dil, rhs_dil)))
    attrs = {"window": window, "dim_labels": dn}
    if fgc != 1:
        attrs["feature_group_count"] = fgc
    if bgc != 1:
        attrs["batch_group_count"] = bgc
    return b.emit("convolution", [lhs, rhs], attrs, element_type=et)


def _conv_params(inst: Instruction):
    dn: ConvDimensionNumbers = inst.attrs["dim_labels"]
    n = len(dn.input_spatial)
    rhs = inst.operands[1]
    win = inst.attrs.get("window") or Window(tuple(WindowDim(rhs.shape.dims[d]) for d in dn.kernel_spatial))
    if any(w.window_reversal for w in win.dims):
        raise AutodiffError(f"differentiation of convolution with window reversal ({inst.name}) is not supported")
    return (dn, [w.stride for w in win.dims], [(w.padding_low, w.padding_high) for w in win.dims],
            [w.base_dilation for w in win.dims], [w.window_dilation for w in win.dims],
            inst.attrs.get("feature_group_count", 1), inst.attrs.get("batch_group_count", 1), n)


def _conv_vjp_lhs(b, inst, g):
    lhs, rhs = inst.operands
    dn, strides, padding, lhs_dil, rhs_dil, fgc, bgc, n = _conv_params(inst)
    lhs_spec, rhs_spec, out_spec = _specs(dn)
    if fgc > 1:
        rhs = _reshape_axis_out_of(b, rhs_spec[0], fgc, rhs)
        rhs = _reshape_axis_into(b, rhs_spec[0], rhs_spec[1], rhs)
    elif bgc > 1:
        rhs = _reshape_axis_out_of(b, rhs_spec[0], bgc, rhs)
        rhs = _reshape_axis_into(b, rhs_spec[0], rhs_spec[1], rhs)
        fgc = bgc
    trans = _dn(out_spec, _swap(rhs_spec), lhs_spec)
    pads = []
    for k in range(n):
        lhs_d = _dilate(lhs.shape.dims[lhs_spec[2 + k]], lhs_dil[k])
        rhs_d = _dilate(rhs.shape.dims[rhs_spec[2 + k]], rhs_dil[k])
        out_d = _dilate(g.shape.dims[out_spec[2 + k]], strides[k])
        before = rhs_d - padding[k][0] - 1
        pads.append((before, lhs_d + rhs_d - 1 - out_d - before))
    rev = b.emit("reverse", [rhs], {"dimensions": tuple(rhs_spec[2:])})
    out = _conv(b, g, rev, trans, lhs_dil, pads, strides, rhs_dil, fgc, 1, lhs.shape.element_type)
    if bgc > 1:
        out = _reshape_axis_out_of(b, lhs_spec[1], bgc, out)
        out = _reshape_axis_into(b, lhs_spec[1], lhs_spec[0], out)
    return out


def _conv_vjp_rhs(b, inst, g):
    lhs, rhs = inst.operands
    dn, strides, padding, lhs_dil, rhs_dil, fgc, bgc, n = _conv_params(inst)
    lhs_spec, rhs_spec, out_spec = _specs(dn)
    if bgc > 1:
        fgc, bgc = bgc, 1
    elif fgc > 1:
        fgc, bgc = 1, fgc
    trans = _dn(_swap(lhs_spec), _swap(out_spec), _swap(rhs_spec))
    pads = []
    for k in range(n):
        lhs_d = _dilate(lhs.shape.dims[lhs_spec[2 + k]], lhs_dil[k])
        rhs_d = _dilate(rhs.shape.dims[rhs_spec[2 + k]], rhs_dil[k])
        out_d = _dilate(g.shape.dims[out_spec[2 + k]], strides[k])
        lo = padding[k][0]
        pads.append((lo, (out_d - lhs_d) + (rhs_d - lo - 1)))
    return _conv(b, lhs, g, trans, rhs_dil, pads, lhs_dil, strides, fgc, bgc, rhs.shape.element_type)


def _conv_vjp(b, inst, ct):
    return [_conv_vjp_lhs(b, inst, ct), _conv_vjp_rhs(b, inst, ct)]


# -- fft ------------------------------------------------------------------------------------------------------
def _fft(b: Emitter, x: Instruction, kind: str, lengths) -> Instruction:
    return b.emit("fft", [x], {"fft_type": kind, "fft_length": tuple(lengths)}, name=f"fft.{kind.lower()}")


def _last_axis(b: Emitter, values: np.ndarray, like: Instruction) -> Instruction:
    """The vector `values` (like's element type) broadcast along like's last dimension."""
    c = b.constant(values, like.shape.element_type)
    return b.broadcast(c, [like.shape.rank - 1], like.shape)


def _half_spectrum_weights(lengths) -> np.ndarray:
    """How often each entry of an RFFT's last axis stands in the full spectrum: 1 for DC (and Nyquist, for an
    even length), 2 for the others (their Hermitian mirror images are left out)."""
    n = lengths[-1]
    w = np.full(n // 2 + 1, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return w


def _conj(b: Emitter, x: Instruction) -> Instruction:
    return b.emit("complex", [b.emit("real", [x]), b.neg(b.emit("imag", [x]))])


def _fft_jvp(b, inst, ts):
    # linear: the same transform of the tangent
    return b.add_instruction(inst.clone_with([ts[0]], name="fft.jvp"))


def _fft_vjp(b, inst, ct):
    kind, lengths = str(inst.attrs["fft_type"]), [int(n) for n in inst.attrs["fft_length"]]
    if kind in ("FFT", "IFFT"):
        # the DFT matrix is symmetric, so FFT transposes to FFT and IFFT to IFFT
        return [_fft(b, ct, kind, lengths)]
    total = float(np.prod(lengths))
    weights = _half_spectrum_weights(lengths)
    if kind == "RFFT":
        # RFFT = FFT of the real operand, kept to the half spectrum; its transpose Re(sum_k ct_k w^jk) over the
        # kept k is N * IRFFT(conj(ct) / weights) (IRFFT mirrors each kept k back to the full spectrum)
        return [_fft(b, b.mul(_conj(b, ct), _last_axis(b, total / weights, ct)), "IRFFT", lengths)]
    # IRFFT: the transpose is RFFT(ct) / N, doubled where the half spectrum stands for two entries, and
    # conjugated (JAX's convention for the complex cotangent of a complex-to-real map)
    spectrum = _fft(b, ct, "RFFT", lengths)
    return [_conj(b, b.mul(spectrum, _last_axis(b, weights / total, spectrum)))]


# cholesky, triangular-solve and the LAPACK custom-calls (by target): rules_decompositions.py
VJP = {"dot": _dot_vjp, "convolution": _conv_vjp, "fft": _fft_vjp, **DECOMPOSITION_VJP}
JVP = {"dot": _bilinear_jvp, "convolution": _bilinear_jvp, "fft": _fft_jvp, **DECOMPOSITION_JVP}
