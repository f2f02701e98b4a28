"""Backends compile a Module into an Executable. The table maps backend names to compile functions."""
from __future__ import annotations

from ..errors import XlapyError


def _interpreter(module, **options):
    from .interpreter import compile_module
    return compile_module(module, **options)


BACKENDS = {"interpreter": _interpreter,
            "cpu": lambda module, **options: __import__("xlapy.backends.cpu", fromlist=["compile_module"]).compile_module(module, **options)}


def compile(module, backend: str = "interpreter", pipeline=None, **options):
    """Compile `module` (a Module or HLO text) for `backend`; returns an Executable.

    pipeline: None runs the module as given (the interpreter's default: it is the reference); "cpu" runs
    xlapy.passes.cpu_pipeline() first (on a copy), or pass any Pipeline. Dump flags in XLA_FLAGS apply."""
    from ..hlo import Module, parse
    if isinstance(module, str):
        module = parse(module)
    if not isinstance(module, Module):
        raise XlapyError(f"compile expects an HLO Module or HLO text, got {type(module).__name__}")
    if backend not in BACKENDS:
        raise XlapyError(f"unknown backend {backend!r}; available: {', '.join(sorted(BACKENDS))}")
    if pipeline is not None:
        from ..passes.optimize import optimize
        from ..passes.pipelines import cpu_pipeline
        if pipeline == "cpu":
            pipeline = cpu_pipeline()
        elif isinstance(pipeline, str):
            raise XlapyError(f"unknown pipeline {pipeline!r}; use 'cpu' or a Pipeline object")
        module = optimize(module.clone(), pipeline)
    return BACKENDS[backend](module, **options)
