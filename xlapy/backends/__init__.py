"""Backends compile a Module into an Executable. Each is a `Backend` in the registry (registry.py): a name, a
factory `factory(module, **options) -> Executable`, a priority and the opcodes it compiles. The two built-ins
(builtin.py) are registered below with the same `register()` call an out-of-tree backend uses, or it declares
an entry point in the `xlapy.backends` group. `compile()` checks the module against the backend's opcodes and,
with `allow_soft_placement=True`, runs what it lacks on other backends (placement.py)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Iterator

from ..errors import UnknownBackendError, UnsupportedOpcodeError, XlapyError
from . import builtin
from .placement import PlacedExecutable, SoftPlacementWarning, compile_placed
from .registry import (Backend, BackendPluginWarning, backends, default_backend, get, names, rediscover, register,
                       unregister)

register("interpreter", builtin.compile_interpreter, priority=0, supported_opcodes=builtin.interpreter_opcodes)
register("cpu", builtin.compile_cpu, priority=100, supported_opcodes=builtin.cpu_opcodes)


class _Factories(Mapping):
    """`BACKENDS`: a live read-only view of the registry, name -> factory, highest priority first."""

    def __getitem__(self, name: str) -> Callable[..., Any]:
        try:
            return get(name).factory
        except UnknownBackendError:
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter(names())

    def __len__(self) -> int:
        return len(names())

    def __repr__(self) -> str:
        return f"BACKENDS({', '.join(names())})"


BACKENDS: Mapping[str, Callable[..., Any]] = _Factories()


def compile(module, backend: str | None = "interpreter", pipeline=None, *, allow_soft_placement: bool = False,
            **options):
    """Compile `module` (a Module or HLO text) for `backend` (a registered name; None: `default_backend()`);
    returns an Executable.

    pipeline: None runs the module as given (the interpreter's default: it is the reference); "cpu" runs
    xlapy.passes.cpu_pipeline() first (on a copy), or pass any Pipeline. Dump flags in XLA_FLAGS apply.
    A module holding an opcode the backend does not declare raises UnsupportedOpcodeError, unless
    allow_soft_placement: then that part runs on the next backend that has it (placement.py)."""
    from ..hlo import Module, parse
    if isinstance(module, str):
        module = parse(module)
    if not isinstance(module, Module):
        raise XlapyError(f"compile expects an HLO Module or HLO text, got {type(module).__name__}")
    chosen = get(default_backend() if backend is None else backend)
    if pipeline == "cpu" and chosen.name == "cpu":
        # the CPU backend runs cpu_pipeline itself, after looking the module up in the persistent cache
        options.setdefault("run_pipeline", True)
        pipeline = None
    if pipeline is not None:
        from ..passes.optimize import optimize
        from ..passes.pipelines import cpu_pipeline
        if pipeline == "cpu":
            pipeline = cpu_pipeline()
        elif isinstance(pipeline, str):
            raise XlapyError(f"unknown pipeline {pipeline!r}; use 'cpu' or a Pipeline object")
        module = optimize(module.clone(), pipeline)
    return compile_placed(module, chosen, allow_soft_placement, **options)


__all__ = ["BACKENDS", "Backend", "BackendPluginWarning", "PlacedExecutable", "SoftPlacementWarning",
           "UnknownBackendError", "UnsupportedOpcodeError", "backends", "compile", "default_backend", "get", "names",
           "rediscover", "register", "unregister"]
