"""How hard LLVM works on each kernel: its tier, by the work one run of the kernel does.

Most of a training step's kernels are tiny (a scalar step counter, a bias gradient of 64 elements, a norm's
statistics) and a few hundred run over the activations. LLVM's loop and SLP vectorizers, interleaving and the
O3 pass list cost the same per line on both kinds, but only the hot ones repay them. So each kernel (kernels.py)
gets a tier, and llvm_parallel.py compiles each tier's kernels in modules of their own with the tier's pipeline:

| tier | when | IR pipeline | code generation |
|---|---|---|---|
| hot | work >= LIGHT_WORK_LIMIT, or unknown | O3, vectorizers, interleaving, no unrolling (compiler.py) | O3 |
| light | work < LIGHT_WORK_LIMIT | O1, no vectorizers | O1 |
| entry | llvm_parallel's entry part when it holds the entry function alone | O1, no vectorizers | O0 (FastISel) |
| straight | the same, when its code is straight-line (no branch: no while loop or conditional in the entry) | O0 | O0 |
| launch | a pool kernel's `optnone` launch code and workers (kernels._launch_only, parallel.py) | O0 | O0 |

The entry function is straight-line code: loads of the parameters, scratch offsets and calls of the kernels (a while
loop around calls at most), run once per call, so its code's speed does not matter, while O3 code generation of
its 150-900 lines was the longest step the calling thread starts the end with (vit/fwd 43 -> 27 ms, resnet50/fwd
127 -> 50 ms of thread time).

An `optnone` function is selected by FastISel whatever the level, but an O3 target machine still runs its
register allocator and machine passes over it: vit/fwd's 35 launch kernels and workers cost 28 ms of LLVM in
one O3 module and 17 ms in one O0 one. So llvm_parallel gives them parts of the launch tier, and the loop bodies
they call (the work) parts of their kernel's tier.

Straight-line entry code (vit/fwd: 551 lines, 144 calls, one block) runs once per call, and O1 did nothing for it
that is worth its time: 13.9 -> 8.0 ms of thread CPU at O0, the object 13.1 -> 14.6 KB. An entry with a loop keeps
O1 (a recurrent model's step loop runs its calls thousands of times). The launch tier's code is all optnone, which
O1's function passes skip; its module passes cost 15.1 -> 13.4 ms of vit/fwd's launch part for the same object.

The work of a kernel is compile_plan's element-operation estimate of its instruction (the largest array it
touches, times the work of what it calls; dots their multiply-adds), times the trips of every while loop around
it: known_trip_count from the backend config, else LOOP_TRIPS. The entry function and every function that is
not a kernel (the entry's own pool workers) are hot.
"""
from __future__ import annotations

import re

from ...hlo import Computation, Instruction, Module
from . import compile_plan
from .kernels import GENERIC_PREFIX, KERNEL_PREFIX, kernel_stem

HOT, LIGHT, LAUNCH = "hot", "light", "launch"
TIERS = (HOT, LIGHT, LAUNCH)     # the tiers of llvm_parallel's parts of kernels (launch last: it calls the others)
ENTRY, STRAIGHT = "entry", "straight"     # llvm_parallel's entry part (straight: no branch in it)
LIGHT_WORK_LIMIT = 100_000       # element operations per run of the module
LOOP_TRIPS = 1000                # a while loop whose trip count is not known

_SUFFIX = re.compile(r"\.\d+$")          # llvmlite's suffix for a name already taken


_TUNING: dict = {}               # tier -> its options, made once (tuning)


def tuning(tier: str):
    """LLVM pipeline tuning options for `tier` (the O3 ones are compiler.pipeline_tuning), made once per process:
    a pass builder only reads them, so both of llvm_parallel's threads may share them, and each part saved six
    calls into LLVM (each one a wait for the GIL on thread 2: gil_handoff.py)."""
    pto = _TUNING.get(tier)
    if pto is None:
        pto = _TUNING.setdefault(tier, _new_tuning(tier))
    return pto


def _new_tuning(tier: str):
    import llvmlite.binding as llvm
    if tier == HOT:
        from .compiler import pipeline_tuning
        return pipeline_tuning()
    pto = llvm.create_pipeline_tuning_options(speed_level=0 if tier in (STRAIGHT, LAUNCH) else 1)
    pto.loop_vectorization = False
    pto.slp_vectorization = False
    pto.loop_interleaving = False
    pto.loop_unrolling = False
    return pto


def codegen_level(tier: str) -> int:
    return 3 if tier == HOT else 0 if tier in (ENTRY, STRAIGHT, LAUNCH) else 1


def _trips(inst: Instruction) -> int:
    config = inst.attrs.get("backend_config")
    m = re.search(r'known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"(\d+)"', config) if isinstance(config, str) else None
    return int(m.group(1)) if m else LOOP_TRIPS


def _runs(module: Module) -> dict[int, int]:
    """How many times one run of the module runs each computation (by id): the trips of the loops around it."""
    runs: dict[int, int] = {}

    def visit(comp: Computation, n: int) -> None:
        if runs.get(id(comp), 0) >= n:
            return
        runs[id(comp)] = n
        for inst in comp.instructions:
            factor = _trips(inst) if inst.opcode == "while" else 1
            for called in inst.called_computations():
                if inst.opcode in ("fusion",):
                    continue                # a fusion's body is the kernel itself
                visit(called, n * factor)
    if module.entry is not None:
        visit(module.entry, 1)
    return runs


class Tiers:
    """The tier of each kernel function of a module, by its name (kernels.py: `xlapy_kernel.<instruction>`)."""

    def __init__(self, module: Module):
        runs = _runs(module)
        self._by_name: dict[str, tuple[Instruction, int]] = {}
        for comp in module.computations:
            n = runs.get(id(comp))
            if n is None:
                continue
            for inst in comp.instructions:
                self._by_name[kernel_stem(inst.name)] = (inst, n)

    def of(self, function: str) -> str:
        if function.startswith(GENERIC_PREFIX):        # a generic kernel has the tier of its first member's
            function = KERNEL_PREFIX + function[len(GENERIC_PREFIX):]
        if not function.startswith(KERNEL_PREFIX):
            return HOT
        found = self._by_name.get(function) or self._by_name.get(_SUFFIX.sub("", function))
        if found is None:
            return HOT
        inst, runs = found
        try:
            hot = compile_plan.work_reaches(inst, LIGHT_WORK_LIMIT, runs)
        except Exception:            # a while inside (unbounded work), or an estimate that does not apply
            return HOT
        return HOT if hot else LIGHT


__all__ = ["HOT", "LIGHT", "LAUNCH", "TIERS", "ENTRY", "STRAIGHT", "LIGHT_WORK_LIMIT", "LOOP_TRIPS", "tuning", "codegen_level", "Tiers"]
