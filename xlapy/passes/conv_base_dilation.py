"""ConvBaseDilationDecomposition: a convolution whose input is dilated (lhs_dilate=s, the transposed
convolution of ConvTranspose2d and the input gradient of a strided convolution) becomes s^n convolutions of the
undilated input, one per output phase, interleaved. The dilated input is zero at all but one in s positions of
each spatial dim, so the direct form multiplies by zero s^n - 1 times in s^n: a 4x4 kernel with lhs_dilate=2x2
does 4x the work it needs.

One spatial dim, input x of size N, window K, padding lo/hi, output size O. Output o = s*q + p (phase p) reads
dilated position o + k - lo, which is x[(o + k - lo) / s] when divisible, zero otherwise. So only the taps
k = k0 + s*m with k0 = (lo - p) mod s contribute, and

    out[s*q + p] = sum_m x[q + m + c] * w[k0 + s*m],   c = (p + k0 - lo) / s,  m < M = ceil((K - k0) / s)

a plain convolution of x with the sub-kernel w[k0::s], padding -c low, for Q_p = ceil((O - p) / s) outputs:

| rewrite | when |
|---|---|
| conv(x, w, lhs_dilate=s) => interleave over phases p of conv(slice(x), slice(w, k0::s), pad=(-c, ...)) | some lhs_dilate > 1, and a window of at least s there (every phase has a tap), at least 2s with feature groups (two taps or more); every stride, rhs_dilate 1, no window reversal, batch_group_count 1 |
| a phase with no tap (M = 0) or no output (Q_p = 0) | zeros of its shape |
| negative padding | the input is sliced instead |

Smaller windows are left alone (`decompose` itself handles any window). A 1x1 window with s = 2 (the input
gradient of ResNet-50's strided 1x1 convolutions) has phases without taps: its training step ran no faster with
them rewritten (one thread: 62.9 ms against 66.1 ms). The 3x3 window of a strided 3x3 convolution's input gradient
(phases of one tap and two) is rewritten: im2col + GEMM over the dilated input multiplied zeros 3 times in 4
(benchmarks/conv.py, ResNet-50's 3x3/2 32->32: 0.73 ms -> 0.24 ms, one thread). Grouped convolutions keep the
2s rule: the direct loops they take skip dilation holes without multiplying, so there is less to gain. (An earlier 2x slowdown with small windows was a backend bug: a phase's
zeros were folded into a 256 KB constant that kernels read through a pointer; constant folding now makes
uniform results broadcasts, and kernels name constants directly.)

Phases are interleaved dim by dim: each padded to ceil(O/s) outputs, given a unit dim after the spatial dim,
concatenated along it (size s), the two dims merged by a reshape, and the excess sliced off. The sums run over
the same non-zero products as before, in another order. Not an XLA pass: XLA:CPU hands such convolutions to
Eigen's spatial convolution with its inflated input.
"""
from __future__ import annotations

import itertools
import math

from ..hlo import Instruction, Shape
from ..hlo.attrs import ConvDimensionNumbers, PadDim, SliceRange, Window, WindowDim
from .build import emit, make_constant
from .op_expander import OpExpanderPass


def _phase(p: int, s: int, ksize: int, lo: int, out: int) -> tuple[int, int, int, int]:
    """(k0, M, c, Q) of phase p of one spatial dim (see the module docstring)."""
    k0 = (lo - p) % s
    m = -(-(ksize - k0) // s) if ksize > k0 else 0
    c = (p + k0 - lo) // s
    q = -(-(out - p) // s) if out > p else 0
    return k0, m, c, q


def _slice(comp, x: Instruction, dim: int, start: int, limit: int, stride: int = 1) -> Instruction:
    if (start, limit, stride) == (0, x.shape.dims[dim], 1):
        return x
    ranges = tuple(SliceRange(start, limit, stride) if d == dim else SliceRange(0, n, 1)
                   for d, n in enumerate(x.shape.dims))
    return emit(comp, "slice", [x], {"slice": ranges})


def _zero(comp, element_type: str) -> Instruction:
    return comp.add_instruction(make_constant(0, element_type))


def _zeros(comp, element_type: str, dims: list[int]) -> Instruction:
    return emit(comp, "broadcast", [_zero(comp, element_type)], {"dimensions": ()},
                shape=Shape.array(element_type, dims))


def _phase_conv(comp, conv: Instruction, phase: tuple[int, ...]) -> Instruction:
    """The convolution of the undilated input for one output phase (one p per spatial dim), or zeros of its
    shape when the phase has no tap or no output."""
    dn: ConvDimensionNumbers = conv.attrs["dim_labels"]
    window: Window = conv.attrs["window"]
    x, w = conv.operands
    et = conv.shape.element_type
    params = [_phase(p, wd.base_dilation, wd.size, wd.padding_low, conv.shape.dims[od])
              for p, wd, od in zip(phase, window.dims, dn.output_spatial)]
    out_dims = list(conv.shape.dims)
    for od, (_, _, _, q) in zip(dn.output_spatial, params):
        out_dims[od] = q
    if any(m == 0 or q == 0 for _, m, _, q in params):
        return _zeros(comp, et, out_dims)
    wdims = []
    for i, (k0, m, c, q) in enumerate(params):
        s = window.dims[i].base_dilation
        xd, kd = dn.input_spatial[i], dn.kernel_spatial[i]
        w = _slice(comp, w, kd, k0, k0 + s * (m - 1) + 1, s)
        lo, hi = -c, q - x.shape.dims[xd] + c + m - 1
        if lo < 0:                       # negative padding: drop input elements instead
            x = _slice(comp, x, xd, -lo, x.shape.dims[xd])
            lo = 0
        if hi < 0:
            x = _slice(comp, x, xd, 0, x.shape.dims[xd] + hi)
            hi = 0
        wdims.append(WindowDim(m, 1, lo, hi))
    attrs = dict(conv.attrs)
    attrs["window"] = Window(tuple(wdims))
    out = emit(comp, "convolution", [x, w], attrs, element_type=et)
    assert list(out.shape.dims) == out_dims, (out.shape, out_dims)
    return out


def _interleave(comp, parts: list[Instruction], dim: int, s: int, size: int) -> Instruction:
    """out[s*q + p] = parts[p][q] along `dim`, `size` outputs."""
    qmax = parts[0].shape.dims[dim]
    padded = []
    for part in parts:
        dims = list(part.shape.dims)
        if dims[dim] < qmax:
            pads = tuple(PadDim(0, qmax - n if d == dim else 0) for d, n in enumerate(dims))
            part = emit(comp, "pad", [part, _zero(comp, part.shape.element_type)], {"padding": pads})
            dims = list(part.shape.dims)
        padded.append(emit(comp, "reshape", [part], shape=Shape.array(part.shape.element_type,
                                                                      dims[:dim + 1] + [1] + dims[dim + 1:])))
    stacked = padded[0] if s == 1 else emit(comp, "concatenate", padded, {"dimensions": (dim + 1,)})
    dims = list(stacked.shape.dims)
    merged = emit(comp, "reshape", [stacked], shape=Shape.array(stacked.shape.element_type,
                                                                dims[:dim] + [qmax * s] + dims[dim + 2:]))
    return _slice(comp, merged, dim, 0, size)


def decompose(conv: Instruction) -> Instruction | None:
    comp = conv.parent
    dn: ConvDimensionNumbers = conv.attrs["dim_labels"]
    window: Window = conv.attrs["window"]
    strides = [wd.base_dilation for wd in window.dims]
    parts = {phase: _phase_conv(comp, conv, phase) for phase in itertools.product(*(range(s) for s in strides))}
    # interleave the last spatial dim first: the arrays of a group differ only in that dim's phase
    for i in reversed(range(len(strides))):
        groups: dict[tuple, list] = {}
        for phase, part in sorted(parts.items()):
            groups.setdefault(phase[:i], []).append(part)
        od = dn.output_spatial[i]
        parts = {key: _interleave(comp, group, od, strides[i], conv.shape.dims[od]) for key, group in groups.items()}
    (result,) = parts.values()
    return result


class ConvBaseDilationDecomposition(OpExpanderPass):
    name = "conv-base-dilation-decomposition"
    opcodes = frozenset({"convolution"})

    def matches(self, inst: Instruction) -> bool:
        if inst.opcode != "convolution" or len(inst.operands) != 2:
            return False
        dn = inst.attrs.get("dim_labels")
        window = inst.attrs.get("window")
        if dn is None or not dn.known or window is None or not window.dims:
            return False
        if int(inst.attrs.get("batch_group_count", 1)) != 1 or inst.shape.numel == 0:
            return False
        dims = window.dims
        # every phase has a tap; with feature groups (the direct loops, which skip holes) two taps or more
        min_taps = 1 if int(inst.attrs.get("feature_group_count", 1)) == 1 else 2
        return (any(wd.base_dilation > 1 for wd in dims) and all(wd.stride == 1 for wd in dims)
                and all(wd.window_dilation == 1 and not wd.window_reversal for wd in dims)
                and all(wd.size >= min_taps * wd.base_dilation for wd in dims if wd.base_dilation > 1)
                and math.prod(wd.base_dilation for wd in dims) <= 16)

    def expand(self, inst: Instruction) -> Instruction | None:
        return decompose(inst)
