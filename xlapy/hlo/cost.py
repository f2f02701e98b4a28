"""The static cost model of HLO, in the shape of XLA's HloCostAnalysis: flops, transcendentals and bytes.

Three parts of xlapy read it: the front end's `cost_analysis()` (JAX's `Lowered/Compiled.cost_analysis()`), the
profiler (achieved GB/s and GFLOP/s of each kernel) and the CPU backend's compile plan (how much work a module
does, to choose its LLVM level). They all count a dot's contracted size and a convolution's window here, so
they cannot disagree about which dimensions a dot contracts or what a convolution's window is.

Counting: dot and convolution 2 flops per multiply-add; elementwise ops 1 per output element (transcendentals
counted apart); reduce and reduce-window 1 per input element; fusion, call, while and conditional the flops of
the computations they call (a while body once: the trip count is not known statically). Bytes accessed: the
operand and output bytes of an instruction, nothing for the ones that move no data.
"""
from __future__ import annotations

import math

from .ir import Computation, Instruction, Module
from .shape import Shape

FREE_OPCODES = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all"})
_CALLERS = ("while", "call", "conditional", "fusion")


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


def convolution_kernel_size(conv: Instruction) -> int:
    """The kernel's element count (window x input features x output features): what the CPU compile plan
    charges per output element, the multiply-adds of one output element times the output features."""
    return conv.operands[1].shape.numel


# -- the whole model ---------------------------------------------------------------------------------------
def shape_bytes(shape: Shape) -> int:
    """Bytes of every array leaf of `shape` (sub-byte types count a byte per element)."""
    if shape.is_tuple:
        return sum(shape_bytes(s) for s in shape.tuple_shapes)
    if not shape.is_array:
        return 0
    return shape.numel * max(1, shape.ptype.bits // 8)


def instruction_flops(inst: Instruction) -> tuple[float, float]:
    """(flops, transcendentals) of one instruction, the computations it calls included."""
    op = inst.opcode
    if op == "dot":
        return 2.0 * dot_multiply_adds(inst), 0.0
    if op == "convolution":
        return 2.0 * convolution_multiply_adds(inst), 0.0
    if op in ("reduce", "reduce-window"):
        return float(sum(o.shape.numel for o in inst.operands[: len(inst.operands) // 2])), 0.0
    if op in _CALLERS:
        f = t = 0.0
        for comp in inst.called_computations():
            cf, ct = computation_flops(comp)
            f, t = f + cf, t + ct
        return f, t
    out = inst.shape
    if inst.info.is_elementwise and not out.is_tuple:
        return float(out.numel), float(out.numel) if inst.info.is_expensive else 0.0
    return 0.0, 0.0


def instruction_bytes(inst: Instruction) -> int:
    """Bytes read and written by one instruction: its operands and its result (0 for the free ones)."""
    if inst.opcode in FREE_OPCODES:
        return 0
    return shape_bytes(inst.shape) + sum(shape_bytes(o.shape) for o in inst.operands)


def computation_flops(comp: Computation) -> tuple[float, float]:
    f = t = 0.0
    for inst in comp.instructions:
        a, b = instruction_flops(inst)
        f, t = f + a, t + b
    return f, t


def cost_analysis(module: Module) -> dict[str, float]:
    """{'flops', 'transcendentals', 'bytes accessed'} of the entry computation, as JAX's cost_analysis()."""
    flops, trans = computation_flops(module.entry)
    accessed = sum(instruction_bytes(inst) for inst in module.entry.instructions)
    return {"flops": flops, "transcendentals": trans, "bytes accessed": float(accessed)}
