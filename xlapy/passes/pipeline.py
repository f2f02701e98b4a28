"""Pass machinery: Pass, Pipeline, FixedPoint, the invariant checker and dump hooks (XLA's HloPassPipeline).

A pass has a `name` and `run(module) -> bool` (did it change anything). A Pipeline runs passes in order;
a FixedPoint re-runs its sub-pipeline until nothing changes (with an iteration cap), skipping a pass whose
last run changed nothing when no pass has changed the module since (it would find the same nothing: a pass is a
function of the module, unless it says otherwise with `depends_on_module_only = False`). Passes named in
`--xla_disable_hlo_passes` are skipped. With `check_invariants`, the verifier runs after every pass that
changed the module, and an error names the pass. With `--xla_dump_to` and `--xla_dump_hlo_pass_re`, the
module is dumped after every matching pass that changed it.
"""
from __future__ import annotations

from typing import Iterable

from .. import debug, trace_events
from ..errors import HloVerifierError, XlapyError
from ..hlo import Module


class Pass:
    """Base class. Subclasses set `name` and implement `run(module) -> bool`."""
    name = "pass"
    # run twice on a module nothing changed in between, the second run changes nothing (a FixedPoint skips it)
    depends_on_module_only = True

    def run(self, module: Module) -> bool:
        raise NotImplementedError(f"pass {type(self).__name__} has no run()")

    def __repr__(self) -> str:
        return f"<pass {self.name}>"


class _RunContext:
    """State shared by one top-level run: options, the dump step counter, the previous pass name."""

    def __init__(self, module: Module, options: debug.DebugOptions, check_invariants: bool):
        from . import dump
        self.options = options
        self.check_invariants = check_invariants
        self.dumper = dump.Dumper(module, options) if options.dumps_module(module.name) else None
        self.history: list[str] = []   # names of passes that changed the module, in order


class Pipeline(Pass):
    """An ordered list of passes (and nested pipelines); itself a pass."""

    def __init__(self, name: str, passes: Iterable[Pass] = (), check_invariants: bool = False):
        self.name = name
        self.passes: list[Pass] = list(passes)
        self.check_invariants = check_invariants

    def add(self, p: Pass) -> "Pass":
        self.passes.append(p)
        return p

    def pass_names(self) -> list[str]:
        names = []
        for p in self.passes:
            names.extend(p.pass_names() if isinstance(p, Pipeline) else [p.name])
        return names

    def run(self, module: Module, options: debug.DebugOptions | None = None) -> bool:
        ctx = _RunContext(module, options or debug.options(), self.check_invariants)
        changed = self._run(module, ctx)
        if ctx.dumper is not None:
            ctx.dumper.flush("pipeline-end")
        return changed

    def _run(self, module: Module, ctx: _RunContext, idle: set[int] | None = None) -> bool:
        """Run the passes in order. `idle` (a FixedPoint's): ids of passes that changed nothing in their last run,
        with no change since; they are skipped, and the set is kept up to date."""
        changed = False
        for p in self.passes:
            if p.name in ctx.options.disable_hlo_passes:
                continue
            if isinstance(p, Pipeline):
                did = p._run(module, ctx)
                if did and idle:
                    idle.clear()
                changed |= did
                continue
            if idle is not None and id(p) in idle:
                continue
            if ctx.dumper is not None:
                ctx.dumper.flush(p.name)
            try:
                with trace_events.span(p.name, "pass", pipeline=self.name):
                    did = bool(p.run(module))
            except XlapyError:
                raise
            except Exception as e:
                raise XlapyError(f"pass {p.name} (in pipeline {self.name}) failed on module {module.name}: "
                                 f"{type(e).__name__}: {e}") from e
            if not did:
                if idle is not None and p.depends_on_module_only:
                    idle.add(id(p))
                continue
            if idle:
                idle.clear()
            changed = True
            ctx.history.append(p.name)
            if ctx.check_invariants or self.check_invariants:
                _verify_after(module, p.name)
            if ctx.dumper is not None and ctx.options.dumps_pass(p.name):
                ctx.dumper.after_pass(self.name, p.name, module)
        return changed


class FixedPoint(Pipeline):
    """Runs its passes repeatedly until an iteration changes nothing (at most `max_iterations` times)."""

    def __init__(self, name: str, passes: Iterable[Pass] = (), max_iterations: int = 25,
                 check_invariants: bool = False):
        super().__init__(name, passes, check_invariants)
        self.max_iterations = max_iterations
        self.iterations_run = 0

    def _run(self, module: Module, ctx: _RunContext) -> bool:
        changed = False
        self.iterations_run = 0
        idle: set[int] = set()
        while self.iterations_run < self.max_iterations:
            self.iterations_run += 1
            if not super()._run(module, ctx, idle):
                break
            changed = True
        return changed


def _verify_after(module: Module, pass_name: str) -> None:
    from ..hlo import verify
    try:
        verify(module)
    except HloVerifierError as e:
        raise HloVerifierError(f"after pass {pass_name}: {e}") from None


def run_passes(module: Module, passes: Iterable[Pass], name: str = "passes", check_invariants: bool = True) -> bool:
    """Convenience: run `passes` once, in order, verifying after each one that changed the module."""
    return Pipeline(name, passes, check_invariants=check_invariants).run(module)
