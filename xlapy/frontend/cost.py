"""A static cost model of an HLO module, in the shape of XLA's HloCostAnalysis / JAX's cost_analysis():
flops (dot and convolution 2 per multiply-add, counted by hlo/cost.py; elementwise ops and reductions 1 per
element), transcendentals, and bytes accessed (operand and output bytes of each top-level instruction)."""
from __future__ import annotations

from ..hlo import Computation, Instruction, Module, Shape
from ..hlo.cost import convolution_multiply_adds, dot_multiply_adds

_FREE = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all"}


def _bytes(shape: Shape) -> int:
    if shape.is_tuple:
        return sum(_bytes(s) for s in shape.tuple_shapes)
    if not shape.is_array:
        return 0
    return shape.numel * max(1, shape.ptype.bits // 8)


def _flops(inst: Instruction) -> tuple[float, float]:
    """(flops, transcendentals) of one instruction, called computations included."""
    op = inst.opcode
    out = inst.shape
    if op == "dot":
        return 2.0 * dot_multiply_adds(inst), 0.0
    if op == "convolution":
        return 2.0 * convolution_multiply_adds(inst), 0.0
    if op in ("reduce", "reduce-window"):
        return float(sum(o.shape.numel for o in inst.operands[: len(inst.operands) // 2])), 0.0
    if op in ("while", "call", "conditional", "fusion"):
        f = t = 0.0
        for comp in inst.called_computations():
            cf, ct = computation_flops(comp)
            f, t = f + cf, t + ct
        return f, t
    if inst.info.is_elementwise and not out.is_tuple:
        return float(out.numel), float(out.numel) if inst.info.is_expensive else 0.0
    return 0.0, 0.0


def computation_flops(comp: Computation) -> tuple[float, float]:
    f = t = 0.0
    for inst in comp.instructions:
        a, b = _flops(inst)
        f, t = f + a, t + b
    return f, t


def cost_analysis(module: Module) -> dict[str, float]:
    flops, trans = computation_flops(module.entry)
    accessed = 0
    for inst in module.entry.instructions:
        if inst.opcode in _FREE:
            continue
        accessed += _bytes(inst.shape) + sum(_bytes(o.shape) for o in inst.operands)
    return {"flops": flops, "transcendentals": trans, "bytes accessed": float(accessed)}
