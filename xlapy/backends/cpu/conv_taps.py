"""What every convolution strategy shares: the geometry (sizes and element strides, whatever the dim_labels and
layouts) and the taps (which input element an output position and kernel tap read, and when that is padding
or a dilation hole).

Semantics (the interpreter's, XLA's): output[b, o..., f] = sum over kernel taps k... and input features of
lhs[b', i..., c] * rhs[k..., c', f], where the tap reads input position p = o*stride + k'*rhs_dilate - pad_low
of the base-dilated input (k' = K-1-k under window reversal); p must land on an original element
(p % lhs_dilate == 0, 0 <= p / lhs_dilate < size), else the tap reads zero. feature_group_count G splits the
input features into G groups of kernel_input_features, output feature f using group f // (F/G);
batch_group_count B does the same with the input batch (b' = g*(N/B) + b).
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo import Instruction
from .indexing import strides
from .irhelpers import i64


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


# -- taps ------------------------------------------------------------------------------------------------
def tap(b: ir.IRBuilder, o: ir.Value, k: ir.Value, size: int, ksize: int, osize: int, w) -> tuple:
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


def taps(b, g: ConvGeometry, opos, kpos):
    """Input spatial indices for output position `opos` and taps `kpos`, and their joint validity (or None)."""
    index, valid = [], None
    for d, (o, k) in enumerate(zip(opos, kpos)):
        p, v = tap(b, o, k, g.in_sizes[d], g.kernel_sizes[d], g.out_sizes[d], g.window[d])
        index.append(p)
        if v is not None:
            valid = v if valid is None else b.and_(valid, v)
    return index, valid


def offset(b, terms) -> ir.Value:
    """sum(value * stride) over (value, stride) terms, as an i64 element offset."""
    total = None
    for value, stride in terms:
        if stride == 0:
            continue
        term = value if stride == 1 else b.mul(value, i64(stride))
        total = term if total is None else b.add(total, term)
    return total if total is not None else i64(0)


def when(b: ir.IRBuilder, valid):
    """`with b.if_then(valid)` or nothing when the condition is statically true."""
    if valid is None:
        return nullcontext()
    return b.if_then(valid)


def scratch(em, nbytes: int) -> ir.Value:
    offset = em.scratch.allocate(nbytes)
    return em.b.gep(em.scratch_arg, [i64(offset)], inbounds=True)
