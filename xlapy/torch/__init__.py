"""PyTorch front end: `torch.compile(model, backend="xlapy")` runs a model's graphs through xlapy.

    import torch, xlapy.torch
    compiled = torch.compile(model, backend="xlapy")     # the entry point; or backend=xlapy.torch.backend
    loss = compiled(x).sum(); loss.backward()            # forward and backward graphs both compiled by xlapy
    xlapy.torch.report()                                 # the ops that fell back to eager PyTorch, if any

Needs PyTorch (`pip install xlapy[torch]`); inside this package `import torch` is the real torch. Files:
backend.py (the dynamo backend: AOTAutograd, decompositions, dynamic shapes), translate.py (FX graph -> one
xlapy function), runtime.py (the compiled graph and its DLPack boundary), aten_*.py (the ATen op tables),
dtypes.py, report.py, errors.py.
"""
from __future__ import annotations

from .backend import backend, decompositions
from .errors import TranslationError
from .report import Fallback, TorchFallbackWarning, clear_report, counts, report
from .translate import RANDOM, TABLE

__all__ = ["backend", "decompositions", "TranslationError", "Fallback", "TorchFallbackWarning", "clear_report",
           "counts", "report", "TABLE", "RANDOM"]
