"""Dump files with XLA's names: module_NNNN.NAME.before_optimizations.txt, one file per pass that changed the
module (module_NNNN.NAME.SSSS.PIPELINE.after_PASS.before_NEXT.txt), ...cpu_after_optimizations.txt."""
from __future__ import annotations

import itertools
import re
from pathlib import Path

from .. import debug
from ..hlo import Module

_module_ids = itertools.count(1)


def module_id(module: Module) -> int:
    if getattr(module, "unique_id", None) is None:
        module.unique_id = next(_module_ids)
    return module.unique_id


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", name)


def file_prefix(module: Module) -> str:
    return f"module_{module_id(module):04d}.{_safe(module.name)}"


def write_module(module: Module, suffix: str, options: debug.DebugOptions | None = None) -> list[Path]:
    """Write `module` as PREFIX.suffix.{txt,dot,html} (the formats the options ask for); returns the paths."""
    options = options or debug.options()
    if not options.dumps_module(module.name):
        return []
    out = Path(options.dump_to)
    out.mkdir(parents=True, exist_ok=True)
    base = out / f"{file_prefix(module)}.{suffix}"
    paths = []
    if options.text_wanted():
        paths.append(base.with_name(base.name + ".txt"))
        paths[-1].write_text(module.to_text())
    if options.dump_hlo_as_dot or options.dump_hlo_as_html:
        from . import graph
        if options.dump_hlo_as_dot:
            paths.append(base.with_name(base.name + ".dot"))
            paths[-1].write_text(graph.to_dot(module))
        if options.dump_hlo_as_html:
            paths.append(base.with_name(base.name + ".html"))
            paths[-1].write_text(graph.to_html(module))
    return paths


class Dumper:
    """Per-pipeline-run dump state: a step counter and the dump waiting to learn the next pass's name."""

    def __init__(self, module: Module, options: debug.DebugOptions):
        self.module, self.options = module, options
        self.step = 0
        self.pending: tuple[str, str, str] | None = None   # (pipeline, pass, module text)

    def after_pass(self, pipeline: str, pass_name: str, module: Module) -> None:
        self.pending = (pipeline, pass_name, module.to_text())

    def flush(self, next_pass: str) -> None:
        if self.pending is None:
            return
        pipeline, pass_name, text = self.pending
        self.pending = None
        self.step += 1
        out = Path(self.options.dump_to)
        out.mkdir(parents=True, exist_ok=True)
        name = (f"{file_prefix(self.module)}.{self.step:04d}.{_safe(pipeline)}."
                f"after_{_safe(pass_name)}.before_{_safe(next_pass)}.txt")
        (out / name).write_text(text)
