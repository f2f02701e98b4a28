"""HLO-to-HLO passes. Target-independent: nothing here imports a backend."""
from .pipeline import FixedPoint, Pass, Pipeline, run_passes

__all__ = ["Pass", "Pipeline", "FixedPoint", "run_passes"]
