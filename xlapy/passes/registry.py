"""Every pass by its XLA name: name -> (module, class). `xlapy opt --passes a,b` and `cpu_pipeline()` look
passes up here; `--xla_disable_hlo_passes` uses the same names."""
from __future__ import annotations

import importlib

from ..errors import XlapyError
from .pipeline import Pass

PASSES: dict[str, tuple[str, str]] = {
    # simplification
    "algsimp": ("algsimp", "AlgebraicSimplifier"),
    "constant_folding": ("constant_folding", "HloConstantFolding"),
    "cse": ("cse", "HloCSE"),
    "dce": ("dce", "HloDCE"),
    "tuple-simplifier": ("tuple_simplifier", "TupleSimplifier"),
    "reshape-mover": ("reshape_mover", "ReshapeMover"),
    "zero_sized_hlo_elimination": ("zero_sized", "ZeroSizedHloElimination"),
    "simplify-while-loops": ("while_loop_simplifier", "WhileLoopSimplifier"),
    "while-loop-constant-sinking": ("while_loop_constant_sinking", "WhileLoopConstantSinking"),
    "while-loop-invariant-code-motion": ("while_loop_invariant_code_motion", "WhileLoopInvariantCodeMotion"),
    "simplify-conditional": ("conditional_simplifier", "ConditionalSimplifier"),
    "simplify-sorts": ("sort_simplifier", "SortSimplifier"),
    "call-inliner": ("call_inliner", "CallInliner"),
    "map-inline": ("map_inliner", "MapInliner"),
    # expanders and canonicalization
    "batchnorm_expander": ("batchnorm_expander", "BatchNormExpander"),
    "logistic-expander": ("logistic_expander", "LogisticExpander"),
    "dot_decomposer": ("dot_decomposer", "DotDecomposer"),
    "convolution-canonicalization": ("conv_canonicalization", "ConvCanonicalization"),
    "conv-base-dilation-decomposition": ("conv_base_dilation", "ConvBaseDilationDecomposition"),
    "transpose-folding": ("transpose_folding", "TransposeFolding"),
    "scatter_expander": ("scatter_expander", "ScatterExpander"),
    "select-and-scatter-expander": ("select_and_scatter_expander", "SelectAndScatterExpander"),
    "dynamic_padder": ("dynamic_padder", "DynamicPadder"),
    # after layout assignment
    "layout-assignment": ("layout_assignment", "LayoutAssignment"),
    "fusion": ("fusion", "InstructionFusion"),
    "fusion_merger": ("fusion", "FusionMerger"),
    "multi_output_fusion": ("fusion", "MultiOutputFusion"),
    "row-fusion": ("fusion", "RowFusion"),
    "copy-insertion": ("copy_insertion", "CopyInsertion"),
    # SPMD partitioning (num_partitions > 1 with sharding annotations)
    "sharding-propagation": ("sharding_propagation", "ShardingPropagation"),
    "spmd-partitioner": ("spmd_partitioner", "SpmdPartitioner"),
}

# short aliases accepted on the command line
ALIASES = {"simp": "algsimp", "fold": "constant_folding", "bn": "batchnorm_expander"}


def available(name: str) -> bool:
    name = ALIASES.get(name, name)
    if name not in PASSES:
        return False
    try:
        mod = importlib.import_module(f"xlapy.passes.{PASSES[name][0]}")
    except ImportError:
        return False
    return hasattr(mod, PASSES[name][1])


def make_pass(name: str | tuple[str, dict], **options) -> Pass:
    """A new instance of the pass called `name`; XlapyError lists the known names otherwise. `name` may also be a
    pipeline entry, (name, options) (pipelines.CPU_PIPELINE)."""
    if isinstance(name, tuple):
        name, entry_options = name
        options = {**entry_options, **options}
    key = ALIASES.get(name, name)
    if key not in PASSES:
        raise XlapyError(f"unknown pass {name!r}; known passes: {', '.join(sorted(PASSES))}")
    module_name, cls_name = PASSES[key]
    try:
        cls = getattr(importlib.import_module(f"xlapy.passes.{module_name}"), cls_name)
    except (ImportError, AttributeError) as e:
        raise XlapyError(f"pass {key!r} is not available ({e})") from None
    return cls(**options)
