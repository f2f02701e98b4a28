"""Optimize a module the way a backend compiler does, with XLA's dumps around it."""
from __future__ import annotations

from .. import debug
from ..hlo import Module
from ..hlo.gc_pause import paused as gc_paused
from . import dump
from .pipeline import Pipeline


def optimize(module: Module, pipeline: Pipeline, platform: str = "cpu",
             options: debug.DebugOptions | None = None) -> Module:
    """Run `pipeline` on `module` in place. With --xla_dump_to, writes PREFIX.before_optimizations.txt,
    the per-pass dumps selected by --xla_dump_hlo_pass_re, and PREFIX.{platform}_after_optimizations.txt."""
    options = options or debug.options()
    dump.write_module(module, "before_optimizations", options)
    with gc_paused():
        pipeline.run(module, options)
    dump.write_module(module, f"{platform}_after_optimizations", options)
    return module
