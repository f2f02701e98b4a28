"""lax's contractions: dot_general (and dot) and conv_general_dilated (and conv_transpose).

Both take their operand dimensions by number (dimension_numbers), share the Precision attribute, and require
their operands to share a dtype (weak Python scalars adapt); preferred_element_type sets the result's dtype.
padtype_to_pads turns 'SAME'/'VALID' into explicit padding, as JAX computes it (reduce_window uses it too).
"""
from __future__ import annotations

import builtins
from typing import Sequence

from ..hlo.attrs import ConvDimensionNumbers, Window, WindowDim
from . import dtypes
from .lax_operands import coerce_same_dtype, hlo_shape, lax_error
from .lax_shapes import rev, transpose
from .tracer import aval, bind


class Precision:
    DEFAULT = "default"
    HIGH = "high"
    HIGHEST = "highest"


def precision_attr(precision) -> dict:
    """The operand_precision attribute of `precision` (None, a Precision or a pair); empty for the default."""
    if precision is None:
        return {}
    pair = precision if isinstance(precision, (tuple, list)) else (precision, precision)
    words = tuple(str(getattr(p, "name", p)).lower() for p in pair)
    if words == ("default", "default"):
        return {}
    return {"operand_precision": words}


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)); the result is
    batch dims, then lhs free dims, then rhs free dims."""
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = (tuple(int(d) for d in v) for v in (lc, rc, lb, rb))
    (lhs, rhs), _ = coerce_same_dtype("dot_general", [lhs, rhs])
    la, ra = aval(lhs), aval(rhs)
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise lax_error("dot_general", f"dimension_numbers {dimension_numbers} pair unequal numbers of dimensions")
    for l, r, what in [(lc, rc, "contracting"), (lb, rb, "batch")]:
        for i, j in zip(l, r):
            if not (0 <= i < la.ndim and 0 <= j < ra.ndim) or la.shape[i] != ra.shape[j]:
                raise lax_error("dot_general", f"{what} dimensions {l} of {la} and {r} of {ra} do not match")
    free_l = [d for d in range(la.ndim) if d not in lc and d not in lb]
    free_r = [d for d in range(ra.ndim) if d not in rc and d not in rb]
    dims = [la.shape[d] for d in lb] + [la.shape[d] for d in free_l] + [ra.shape[d] for d in free_r]
    out_dtype = dtypes.canonicalize(preferred_element_type) if preferred_element_type is not None else la.dtype
    attrs = {}
    if lb:
        attrs["lhs_batch_dims"] = lb
    attrs["lhs_contracting_dims"] = lc
    if rb:
        attrs["rhs_batch_dims"] = rb
    attrs["rhs_contracting_dims"] = rc
    attrs.update(precision_attr(precision))
    return bind("dot", [lhs, rhs], attrs, shape=hlo_shape(out_dtype, dims), name="dot_general")


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix products: contracts the last dim of lhs with the first (rank 1) or second-to-last of rhs."""
    la, ra = aval(lhs), aval(rhs)
    if la.ndim not in (1, 2) or ra.ndim not in (1, 2):
        raise lax_error("dot", f"expects rank-1 or rank-2 operands, got {la} and {ra}")
    return dot_general(lhs, rhs, (((la.ndim - 1,), (0,)), ((), ())), precision, preferred_element_type)

def _conv_specs(dimension_numbers, ndim: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(lhs, rhs, out) specs as (batch/out-feature, feature/in-feature, spatial...) dimension indices."""
    if dimension_numbers is None:
        default = tuple(range(ndim))
        return default, default, default
    lhs, rhs, out = dimension_numbers
    if isinstance(lhs, str):
        if not len(lhs) == len(rhs) == len(out) == ndim:
            raise lax_error("conv_general_dilated", f"dimension_numbers {dimension_numbers} do not have rank {ndim}")
        spatial_rhs = [c for c in rhs if c not in "OI"]

        def spec(s: str, first: str, second: str) -> tuple[int, ...]:
            spatial = sorted((c for c in s if c not in (first, second)), key=lambda c: spatial_rhs.index(c))
            return (s.index(first), s.index(second)) + tuple(s.index(c) for c in spatial)
        return spec(lhs, "N", "C"), spec(rhs, "O", "I"), spec(out, "N", "C")
    return tuple(lhs), tuple(rhs), tuple(out)


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int], window_strides: Sequence[int],
                    padding: str) -> list[tuple[int, int]]:
    """'SAME' / 'SAME_LOWER' / 'VALID' -> (low, high) per spatial dimension, as JAX computes them."""
    p = padding.upper()
    if p == "VALID":
        return [(0, 0)] * len(in_shape)
    if p not in ("SAME", "SAME_LOWER"):
        raise lax_error("padding", f"unknown padding {padding!r}; use 'SAME', 'SAME_LOWER', 'VALID' or pairs")
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        out = -(-n // s)
        total = builtins.max(0, (out - 1) * s + w - n)
        lo = total // 2 if p == "SAME" else -(-total // 2)
        pads.append((lo, total - lo))
    return pads


def conv_general_dilated(lhs, rhs, window_strides: Sequence[int], padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count: int = 1, batch_group_count: int = 1,
                         precision=None, preferred_element_type=None):
    (lhs, rhs), _ = coerce_same_dtype("conv_general_dilated", [lhs, rhs])
    la, ra = aval(lhs), aval(rhs)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise lax_error("conv_general_dilated", f"lhs {la} and rhs {ra} must have equal rank >= 2")
    ls, rs, os_ = _conv_specs(dimension_numbers, la.ndim)
    nsp = la.ndim - 2
    strides = tuple(window_strides) or (1,) * nsp
    lhs_dil = tuple(lhs_dilation) if lhs_dilation else (1,) * nsp
    rhs_dil = tuple(rhs_dilation) if rhs_dilation else (1,) * nsp
    window = [ra.shape[d] for d in rs[2:]]
    if isinstance(padding, str):
        in_sp = [(la.shape[d] - 1) * lhs_dil[i] + 1 if la.shape[d] else 0 for i, d in enumerate(ls[2:])]
        win_sp = [(w - 1) * rhs_dil[i] + 1 for i, w in enumerate(window)]
        pads = padtype_to_pads(in_sp, win_sp, strides, padding)
    else:
        pads = [tuple(p) for p in padding]
    dnums = ConvDimensionNumbers.from_dims(ls[0], ls[1], ls[2:], rs[1], rs[0], rs[2:], os_[0], os_[1], os_[2:])
    win = Window(tuple(WindowDim(window[i], int(strides[i]), int(pads[i][0]), int(pads[i][1]), int(rhs_dil[i]),
                                 int(lhs_dil[i])) for i in range(nsp)))
    attrs = {"window": win, "dim_labels": dnums}
    if feature_group_count != 1:
        attrs["feature_group_count"] = int(feature_group_count)
    if batch_group_count != 1:
        attrs["batch_group_count"] = int(batch_group_count)
    attrs.update(precision_attr(precision))
    dims = [0] * la.ndim
    dims[os_[0]] = la.shape[ls[0]] // int(batch_group_count)
    dims[os_[1]] = ra.shape[rs[0]]
    for i, d in enumerate(os_[2:]):
        w = win.dims[i]
        size = (la.shape[ls[2 + i]] - 1) * w.base_dilation + 1 + w.padding_low + w.padding_high
        span = (w.size - 1) * w.window_dilation + 1
        dims[d] = builtins.max(0, (size - span) // w.stride + 1) if size >= span else 0
    out_dtype = la.dtype if preferred_element_type is None else dtypes.canonicalize(preferred_element_type)
    shape = hlo_shape(out_dtype, dims)
    return bind("convolution", [lhs, rhs], attrs, shape=shape, name="conv_general_dilated")


_CONV_TRANSPOSE_DEFAULT_DIMS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                                5: ("NHWDC", "HWDIO", "NHWDC")}


def _conv_transpose_padding(k: int, s: int, padding: str) -> tuple[int, int]:
    """JAX's padding of the dilated input for a transposed convolution with kernel extent k and stride s."""
    if padding == "SAME":
        total = k + s - 2
        low = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + builtins.max(k - s, 0)
        low = k - 1
    else:
        raise lax_error("conv_transpose", f"unknown padding {padding!r}; use 'SAME', 'VALID' or pairs")
    return low, total - low


def conv_transpose(lhs, rhs, strides: Sequence[int], padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None):
    """JAX's lax.conv_transpose: the gradient-of-convolution form, a convolution of the stride-dilated input
    (lhs_dilation = strides) with padding chosen so that 'SAME'/'VALID' invert a forward convolution's shapes.
    transpose_kernel flips the kernel's spatial dims and swaps its input and output feature dims."""
    la, ra = aval(lhs), aval(rhs)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise lax_error("conv_transpose", f"lhs {la} and rhs {ra} must have equal rank >= 2")
    if dimension_numbers is None:
        dimension_numbers = _CONV_TRANSPOSE_DEFAULT_DIMS.get(la.ndim)
    _, rs, _ = _conv_specs(dimension_numbers, la.ndim)
    nsp = la.ndim - 2
    rhs_dil = tuple(rhs_dilation) if rhs_dilation else (1,) * nsp
    kernel = [(ra.shape[d] - 1) * rhs_dil[i] + 1 for i, d in enumerate(rs[2:])]
    if isinstance(padding, str):
        pads = [_conv_transpose_padding(k, int(st), padding.upper()) for k, st in zip(kernel, strides)]
    else:
        pads = [tuple(p) for p in padding]
    if transpose_kernel:
        rhs = rev(rhs, rs[2:])
        perm = list(range(ra.ndim))
        perm[rs[0]], perm[rs[1]] = perm[rs[1]], perm[rs[0]]
        rhs = transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * nsp, pads, lhs_dilation=tuple(strides), rhs_dilation=rhs_dil,
                                dimension_numbers=dimension_numbers, precision=precision,
                                preferred_element_type=preferred_element_type)
