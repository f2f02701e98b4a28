"""Optimize a module the way a backend compiler does, with XLA's dumps around it."""
from __future__ import annotations

import contextlib
import gc

from .. import debug
from ..hlo import Module
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


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector off while the passes run (as it was, after). Passes make and drop many
    instructions, and each full collection this triggers walks every live object of the process: the module,
    and whatever the caller holds (a traced program, its first module). On the 32-layer scaling step that was
    1.9 s of the pipeline's 15 s wall (3 collections), against 0.02 s at 4 layers: compile time grew faster than
    the module. What the passes leave as cyclic garbage (removed fused computations) is collected afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
