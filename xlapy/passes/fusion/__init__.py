"""Fusion: XLA:CPU's InstructionFusion, then FusionMerger and MultiOutputFusion, over one set of mechanics.

    fusible.py              the fusibility tables (loop-fusible ops, expensive ops, element reuse)
    fuse.py                 creating and growing `fusion` instructions and their fused computations
    instruction_fusion.py   `fusion`: producers into consumers, consumers in reverse post order
    fusion_merger.py        `fusion_merger`: a fusion into all its consumer fusions
    multi_output_fusion.py  `multi_output_fusion`: siblings / producer-consumer into one tuple-rooted fusion
    row_fusion.py           `row-fusion`: a row reduction and its consumers run row by row (kCustom)
"""
from .fuse import fuse_into, fused_computation, fused_instructions, is_fusion, wrap_in_fusion
from .fusion_merger import FusionMerger
from .instruction_fusion import InstructionFusion, decide
from .multi_output_fusion import MultiOutputFusion
from .row_fusion import RowFusion

__all__ = ["InstructionFusion", "FusionMerger", "MultiOutputFusion", "RowFusion", "cpu_fusion_passes", "decide", "fuse_into", "fused_computation", "fused_instructions", "is_fusion",
           "wrap_in_fusion"]


def cpu_fusion_passes(multi_output: bool = True) -> list:
    """The fusion passes in pipeline order (the CPU backend's choice to make; this is the tested one).
    Leave out multi-output fusion where the emitter cannot yet emit a tuple-rooted loop fusion."""
    passes = [InstructionFusion(), FusionMerger()]
    return passes + [MultiOutputFusion()] if multi_output else passes
