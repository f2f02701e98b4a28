"""The arithmetic cost of a dot and of a convolution, read from their dimension numbers.

Two parts of xlapy count multiply-adds: the front end's cost_analysis() (flops, as XLA's HloCostAnalysis
reports them) and the CPU backend's compile plan (how much work a module does, to choose its LLVM level).
Both read the contracted size of a dot and the window of a convolution here, so they cannot disagree about
which dimensions a dot contracts or what a convolution's window is.
"""
from __future__ import annotations

import math

from .ir import Instruction


def dot_contracted_size(dot: Instruction) -> int:
    """K: the product of the lhs contracting dimensions (1 when the dot contracts nothing, an outer product)."""
    lhs = dot.operands[0].shape
    return math.prod(lhs.dims[d] for d in dot.attrs.get("lhs_contracting_dims", ()))


def dot_multiply_adds(dot: Instruction) -> int:
    """One multiply-add per output element per contracted element."""
    return dot.shape.numel * dot_contracted_size(dot)


def convolution_window_size(conv: Instruction) -> int:
    """The kernel's spatial elements (1 where the dimension labels are unknown)."""
    rhs, dn = conv.operands[1].shape, conv.attrs["dim_labels"]
    return math.prod(rhs.dims[d] for d in dn.kernel_spatial) if dn.known else 1


def convolution_input_features(conv: Instruction) -> int:
    """The kernel's input features: what one output element sums over at each window position."""
    rhs, dn = conv.operands[1].shape, conv.attrs["dim_labels"]
    return rhs.dims[dn.kernel_input_feature] if dn.known else 1


def convolution_multiply_adds(conv: Instruction) -> int:
    """One multiply-add per output element per window element per input feature."""
    return conv.shape.numel * convolution_window_size(conv) * convolution_input_features(conv)
