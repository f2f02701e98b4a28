"""Backends compile a Module into an Executable. The table maps backend names to compile functions."""
from __future__ import annotations

from ..errors import XlapyError


def _interpreter(module, **options):
    from .interpreter import compile_module
    return compile_module(module, **options)


BACKENDS = {"interpreter": _interpreter}


def compile(module, backend: str = "interpreter", **options):
    """Compile `module` (a Module or HLO text) for `backend`; returns an Executable."""
    from ..hlo import Module, parse
    if isinstance(module, str):
        module = parse(module)
    if not isinstance(module, Module):
        raise XlapyError(f"compile expects an HLO Module or HLO text, got {type(module).__name__}")
    if backend not in BACKENDS:
        raise XlapyError(f"unknown backend {backend!r}; available: {', '.join(sorted(BACKENDS))}")
    return BACKENDS[backend](module, **options)
