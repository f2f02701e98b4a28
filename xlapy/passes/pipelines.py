"""The CPU optimization pipeline, in the order of XLA's cpu_compiler.cc (RunHloPassesThroughLayoutAssn and
RunHloPassesAfterLayoutAssn): canonicalize and expand, simplify to a fixed point, assign layouts, fuse,
insert copies. Each entry names a pass in registry.PASSES, optionally with its options."""
from __future__ import annotations

from .pipeline import FixedPoint, Pipeline
from .registry import make_pass

# the first dce leaves unreachable computations to the last one: walking every instruction of every computation
# for calls, twice per iteration, was most of DCE's time
SIMPLIFICATION = ["algsimp", "simplify-sorts", ("dce", {"remove_dead_computations": False}), "reshape-mover", "constant_folding", "simplify-conditional",
                  "while-loop-invariant-code-motion", "while-loop-constant-sinking", "simplify-while-loops",
                  "tuple-simplifier", "cse", "dce"]

CPU_PIPELINE = [
    # Unlike XLA:CPU, no scatter_expander: the CPU backend's scatter emitter beats the expanded while loop
    # (benchmarks/scatter_vs_expander.py: 1.7-2.6x on embedding gradients, 26-36x on a segment sum; compiles faster).
    ("pipeline", "expanders", ["call-inliner", "dynamic_padder", "zero_sized_hlo_elimination",
                               "batchnorm_expander", "logistic-expander", "select-and-scatter-expander",
                               "map-inline"]),
    ("fixed-point", "simplification", SIMPLIFICATION),
    # XLA:CPU never folds transposes into convolutions: that would undo convolution-canonicalization.
    ("pipeline", "canonicalization", ["dot_decomposer", "conv-base-dilation-decomposition",
                                      "convolution-canonicalization",
                                      ("transpose-folding", {"fold_convolutions": False}), "cse", "dce"]),
    ("fixed-point", "simplification-2", SIMPLIFICATION),
    ("pipeline", "layout-assignment", ["layout-assignment"]),
    ("pipeline", "fusion", ["fusion", "fusion_merger", "multi_output_fusion", "row-fusion", "dce"]),
    ("pipeline", "copy-insertion", ["copy-insertion", "dce"]),
]


# XLA's SPMD partitioning (cpu_compiler.cc, when use_spmd_partitioning): run by sharded jit before the CPU pipeline
# on a module with num_partitions > 1 and sharding annotations (frontend/parallel/sharded_jit.py)
SPMD_PIPELINE = ["call-inliner", "sharding-propagation", "spmd-partitioner"]


def spmd_pipeline() -> Pipeline:
    """Sharding propagation, then the SPMD partitioner: a module for N partitions -> the program of one."""
    return Pipeline("spmd-partitioning", _passes(SPMD_PIPELINE, False))


def _passes(entries, fast_math, entry_layouts="declared"):
    out = []
    for entry in entries:
        name, options = entry if isinstance(entry, tuple) else (entry, {})
        if name == "algsimp":
            options = {**options, "fast_math": fast_math}
        if name == "layout-assignment":
            options = {**options, "entry_layouts": entry_layouts}
        out.append(make_pass(name, **options))
    return out


def cpu_pipeline(fast_math: bool = False, check_invariants: bool = False,
                 entry_layouts: str = "declared") -> Pipeline:
    """The ordered CPU pipeline (a fresh instance: passes keep per-run state). entry_layouts: "row-major" lets
    layout assignment make every layout row-major, the entry's too (the JIT; layout_assignment.py)."""
    top = Pipeline("cpu-pipeline", check_invariants=check_invariants)
    for kind, name, names in CPU_PIPELINE:
        passes = _passes(names, fast_math, entry_layouts)
        top.add(FixedPoint(name, passes) if kind == "fixed-point" else Pipeline(name, passes))
    return top


def cpu_quick_pipeline(fast_math: bool = False) -> Pipeline:
    """CPU_PIPELINE without its simplification fixed points: what lowering needs (expanders, canonicalization,
    layouts, fusion, copies) and nothing that only makes code faster. For modules built around one op (eager
    execution), where simplification finds nothing to do but costs most of the pipeline's time."""
    top = Pipeline("cpu-quick-pipeline")
    for kind, name, names in CPU_PIPELINE:
        if kind != "fixed-point":
            top.add(Pipeline(name, _passes(names, fast_math)))
    return top


def passes_pipeline(names: list[str], check_invariants: bool = True) -> Pipeline:
    """A pipeline of the named passes, in the order given (`xlapy opt --passes a,b`)."""
    return Pipeline("opt", [make_pass(n) for n in names], check_invariants=check_invariants)
