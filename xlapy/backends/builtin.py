"""The two built-in backends as plugins: their factories and the opcodes each compiles, read from live tables.

`backends/__init__.py` registers them with the same `register()` call an out-of-tree backend uses:

| backend | priority | factory | supported opcodes |
|---|---|---|---|
| interpreter | 0 (the last resort) | `interpreter.compile_module` | its `handler_table()` + `BOUND_BY_DRIVER` |
| cpu | 100 (the default) | `cpu.compile_module` | `emitter.HANDLERS` + `elemental.TABLE` + `BOUND_BY_DRIVER` + `CPU_EXPANDED` |

Both factories import their package on first use. `CPU_EXPANDED` is the one statement of which opcodes the CPU
pipeline rewrites away before the emitters see them; tools/op_coverage.py reads its reasons from it.
"""
from __future__ import annotations

# every backend's driver binds the entry's arguments itself: no rule table has a "parameter" rule
BOUND_BY_DRIVER = frozenset({"parameter"})

# opcode -> (the pass in passes/pipelines.CPU_PIPELINE that rewrites it away, a note)
CPU_EXPANDED: dict[str, tuple[str, str]] = {
    "batch-norm-training": ("batchnorm_expander", ""),
    "batch-norm-inference": ("batchnorm_expander", ""),
    "batch-norm-grad": ("batchnorm_expander", ""),
    "select-and-scatter": ("select-and-scatter-expander", ""),
    "dynamic-reshape": ("dynamic_padder", "buffers keep their bound size"),
    "get-dimension-size": ("dynamic_padder", "buffers keep their bound size"),
    "set-dimension-size": ("dynamic_padder", "buffers keep their bound size"),
}


def compile_interpreter(module, **options):
    from .interpreter import compile_module
    return compile_module(module, **options)


def compile_cpu(module, **options):
    from .cpu import compile_module
    return compile_module(module, **options)


def interpreter_opcodes() -> frozenset[str]:
    from .interpreter.evaluator import handler_table
    return frozenset(handler_table()) | BOUND_BY_DRIVER


def cpu_opcodes() -> frozenset[str]:
    from .cpu import elemental, emitter
    return frozenset(emitter.HANDLERS) | frozenset(elemental.TABLE) | BOUND_BY_DRIVER | frozenset(CPU_EXPANDED)


__all__ = ["BOUND_BY_DRIVER", "CPU_EXPANDED", "compile_interpreter", "compile_cpu", "interpreter_opcodes",
           "cpu_opcodes"]
