"""How hard to optimize a module's LLVM code: "optimized" (LLVM O3, the default) or "quick" (no IR optimization,
O0 code generation in a shared engine: llvm_jit.py).

An O3 pipeline plus an optimizing code generator costs ~20 ms even for a ten-line function, which dominates an
eager op (one small module per op and signature). Code for a module whose whole run touches at most
QUICK_WORK_LIMIT elements is fast enough unoptimized (tens of microseconds), so such modules go the quick way.
The estimate, per instruction: the largest array it reads or writes (times EXPENSIVE_WEIGHT for
transcendentals); dots and convolutions count their multiply-adds, reductions and windows their inputs times the
reducer, fusions and calls their bodies. A module with a `while` (unknown trip count) is never quick.
"""
from __future__ import annotations

import math
import os
from typing import Iterator

from ...errors import XlapyError
from ...hlo import Computation, Instruction, Module
from ...hlo.cost import convolution_kernel_size, dot_contracted_size

QUICK_WORK_LIMIT = 1 << 15
EXPENSIVE_WEIGHT = 16
OPTIMIZED, QUICK = "optimized", "quick"
LEVELS = (OPTIMIZED, QUICK)

_PER_ELEMENT_CALLERS = {"reduce", "reduce-window", "map", "scatter", "select-and-scatter", "sort", "all-reduce",
                        "reduce-scatter"}


class _Unbounded(Exception):
    pass


def _numel(shape) -> int:
    if shape.is_tuple:
        return max((_numel(s) for s in shape.tuple_shapes), default=0)
    return shape.numel if shape.is_array else 0


def _work(inst: Instruction) -> int:
    return sum(_work_terms(inst))


def _work_terms(inst: Instruction) -> Iterator[int]:
    """_work(inst) as the terms it sums: the instruction's own work, then (a fusion, a call) each instruction of the
    computations it calls; work_reaches stops at the term that reaches its limit."""
    op = inst.opcode
    base = max([_numel(inst.shape)] + [_numel(o.shape) for o in inst.operands])
    if op == "while":
        raise _Unbounded
    if op == "dot":
        yield _numel(inst.shape) * max(dot_contracted_size(inst), 1) + base
        return
    if op == "convolution":      # every kernel element per output: hlo.cost's multiply-adds times the output features
        yield _numel(inst.shape) * max(convolution_kernel_size(inst), 1) + base
        return
    if op == "sort":
        yield base * max(1, math.ceil(math.log2(max(base, 2)))) * (1 + _calls(inst))
        return
    if op == "reduce-window":
        window = inst.attrs.get("window")
        size = math.prod(d.size for d in getattr(window, "dims", ()))
        yield max(base, _numel(inst.shape) * size) * (1 + _calls(inst))
        return
    if op in _PER_ELEMENT_CALLERS:
        yield base * (1 + _calls(inst))
        return
    if inst.info.is_expensive:                   # transcendentals: a polynomial of a few dozen ops per element
        base *= EXPENSIVE_WEIGHT
    yield base
    for comp in inst.called_computations():
        for sub in comp.instructions:
            yield _work(sub)


def work_reaches(inst: Instruction, limit: float, runs: int = 1) -> bool:
    """_work(inst) * runs >= limit, walking inst's called computations (a fusion's body) only until the sum gets
    there: a kernel over a large array is hot without its body being walked (opt_levels.Tiers)."""
    total = 0
    for term in _work_terms(inst):
        total += term
        if total * runs >= limit:
            return True
    return False


def _calls(inst: Instruction) -> int:
    """Instructions run per element by the computations inst calls (a reducer, a comparator)."""
    return sum(len(c.instructions) for c in inst.called_computations())


def _computation_work(comp: Computation) -> int:
    return sum(_work(inst) for inst in comp.instructions)


def work_estimate(module: Module) -> float:
    """Element operations one run of `module` performs, roughly; inf where a loop makes it unbounded."""
    try:
        return float(_computation_work(module.entry))
    except _Unbounded:
        return math.inf


def choose_level(module: Module) -> str:
    """QUICK for modules whose run is cheap (see the module docstring), else OPTIMIZED; the environment
    variable XLAPY_LLVM_LEVEL=optimized|quick overrides the choice (the CPU backend's tests run optimized)."""
    forced = os.environ.get("XLAPY_LLVM_LEVEL", "").strip()
    if forced:
        if forced not in LEVELS:
            raise XlapyError(f"XLAPY_LLVM_LEVEL must be one of {', '.join(LEVELS)}, got {forced!r}")
        return forced
    return OPTIMIZED if _exceeds(module, QUICK_WORK_LIMIT) else QUICK


def _exceeds(module: Module, limit: int) -> bool:
    """work_estimate(module) > limit, stopping at the first instruction that makes it so (a large module's whole
    estimate walked every fused computation: 3% of vit/fwd's emission)."""
    total = 0
    try:
        for inst in module.entry.instructions:
            total += _work(inst)
            if total > limit:
                return True
    except _Unbounded:
        return True
    return False
