"""Op-by-op execution outside jit, and the assembly of traced computations into a Module.

Outside any trace, `bind` lands here: the single op is traced into a tiny module whose parameters are the
operands (Python scalars included, so `x + 1` and `x + 2` share one executable), compiled once per
op signature and run. The cache key is structural — (opcode, name, attributes in a hashable form, each operand's
(shape, dtype, weak_type), grouping, result shape, backend) — so a hit neither builds nor prints a module; only
attributes with no value-hashable form (a called computation) fall back to keying on the module's text.
`eager_stats()` counts compiles and cache hits — the point of the seed example is the cost of this op-by-op path
against one compiled whole program. In lazy mode (lazy/state.py: XLAPY_LAZY=1, `xlapy.lazy()`) the op is recorded
instead (lazy/graph.py) and runs with the others pending at the next cut (lazy/cut.py). The cache keeps at most `config.eager_cache_size` executables (least recently
used dropped first) and is shared by all threads: an op signature that several threads miss at once compiles once
(compile_cache.py).
"""
from __future__ import annotations

from typing import Any, Hashable, Sequence

import numpy as np

from .. import trace_events
from ..errors import XlapyError
from ..hlo import Computation, Module
from . import dtypes
from .backend import registry_default
from .compile_cache import CompileCache
from .lazy import graph as lazy_graph
from .lazy import state as lazy_state
from .tracer import Packed, ShapedArray, Trace, Tracer, concrete_value, make_op, numpy_aval

_CACHE = CompileCache(lambda: dtypes.config.eager_cache_size)


def eager_stats() -> dict[str, int]:
    """{'compiles': n, 'hits': n, 'evictions': n, 'entries': n} of the eager executable cache."""
    return dict(_CACHE.stats, entries=len(_CACHE))


def clear_eager_cache() -> None:
    """Drop every cached eager executable (its machine code is freed once no Array computation uses it)."""
    _CACHE.clear()


def aval_of_value(value: Any) -> ShapedArray:
    aval = getattr(value, "aval", None)
    if aval is not None:
        return aval
    if type(value) is np.ndarray:
        return numpy_aval(value)
    arr = concrete_value(value)
    return ShapedArray(arr.shape, arr.dtype, dtypes.is_python_scalar(value))


def build_module(name: str, entry: Computation) -> Module:
    """A Module whose entry is `entry` (named `main`), with every computation it calls, callees first.
    Reducers and loop bodies named `region` are numbered region_0, region_1, ... as JAX names them."""
    module = Module(name)
    order: list[Computation] = []
    seen: set[int] = {id(entry)}

    def visit(comp: Computation) -> None:
        for inst in comp.instructions:
            for callee in inst.called_computations():
                if id(callee) not in seen:
                    seen.add(id(callee))
                    visit(callee)
                    order.append(callee)
    visit(entry)
    regions = 0
    for comp in order:
        if comp.parent is not None:
            raise XlapyError(f"computation {comp.name} already belongs to module {comp.parent.name}")
        if comp.name == "region":
            comp.name = f"region_{regions}"
            regions += 1
        module.add_computation(comp)
    entry.name = "main"
    module.add_computation(entry, entry=True)
    return module


def compile_op_module(module: Module, backend: str):
    """Compile a module built for one eager op. On the CPU backend it gets the quick pipeline
    (cpu_quick_pipeline: lowering without simplification, which finds nothing in one op) and the LLVM level
    fits its size (small: no LLVM optimization, compile_plan.py); the persistent cache keys it before the pipeline."""
    from ..backends import compile as compile_module
    if backend != "cpu":
        return compile_module(module, backend=backend)
    return compile_module(module, backend=backend, run_pipeline="quick")


def get_executable(module: Module, backend: str, key: tuple | None = None):
    """The cached executable for `module` on `backend`, under `key` (default: the module's text). On a miss
    the module is compiled and consumed (compile_op_module)."""
    if key is None:
        key = (module.to_text(), backend, trace_events.session() is not None)
    return _CACHE.get_or_make(key, lambda: compile_op_module(module, backend))


class _Unhashable(Exception):
    """An attribute with no value-hashable form: the op is keyed by its module text instead."""


def _freeze(value: Any) -> Hashable:
    """A hashable form of an attribute value that tells apart what prints differently (1 vs 1.0 vs True)."""
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return value if type(value) in (str, int) else (type(value).__name__, value)
    if isinstance(value, float):
        return ("float", repr(value))                 # repr: NaN keys must equal themselves
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_freeze(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _freeze(v)) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))))
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        return ("array", arr.dtype.str, arr.shape, arr.tobytes())
    if isinstance(value, np.dtype):
        return ("dtype", value.str, value.name)
    if type(value).__hash__ is object.__hash__ or type(value).__hash__ is None:
        raise _Unhashable                             # identity-hashed (a Computation) or unhashable
    return (type(value).__name__, value)


def _op_key(opcode: str, operands: Sequence[Any], avals: Sequence[ShapedArray], attrs: dict | None, shape,
            name: str | None, backend: str) -> tuple | None:
    try:
        frozen = _freeze(attrs) if attrs else None
        frozen_shape = None if shape is None else _freeze(shape)
    except _Unhashable:
        return None
    groups = tuple(len(o) if isinstance(o, Packed) else -1 for o in operands)
    flags = dtypes.config.tracing_flags()       # every front-end flag (x64, ...) the op may depend on
    try:
        hash(flags)
    except TypeError:
        return None
    return (opcode, name, frozen, frozen_shape, groups, tuple((a.shape, a.dtype, a.weak_type) for a in avals),
            flags, backend, trace_events.session() is not None)    # under the profiler: an instrumented twin


def run_eagerly(opcode: str, operands: Sequence[Any], attrs: dict | None, *, shape=None, name=None,
                weak_type: bool = False) -> Any:
    values = [v for o in operands for v in (o if isinstance(o, Packed) else [o])]
    avals = [aval_of_value(v) for v in values]
    backend = dtypes.config.default_backend or registry_default()
    if lazy_state.enabled():                    # lazy mode: record the op, compute it at the next cut (lazy/)
        key = lazy_graph.op_key(opcode, operands, avals, attrs, shape, name, backend)
        if key is not None:
            return lazy_graph.record(opcode, operands, attrs, values, avals, key, shape, name, weak_type)
    from .array import Array, host_value
    key = _op_key(opcode, operands, avals, attrs, shape, name, backend)
    exe = _CACHE.get(key) if key is not None else None
    if exe is None:
        trace = Trace("main")
        params = iter([trace.new_param(aval, f"Arg_{i}") for i, aval in enumerate(avals)])
        param_operands = [Packed(next(params) for _ in o) if isinstance(o, Packed) else next(params)
                          for o in operands]
        inst = make_op(trace, opcode, param_operands, attrs, shape, name)
        trace.comp.add_instruction(inst)
        trace.comp.root = inst
        module = build_module(f"jit_{(name or opcode).replace('-', '_')}", trace.comp)
        exe = get_executable(module, backend, key)
    out = exe(*[host_value(v) for v in values])
    if isinstance(out, tuple):
        return [Array(o) for o in out]
    return Array(out, weak_type=weak_type)


__all__ = ["eager_stats", "clear_eager_cache", "build_module", "compile_op_module", "run_eagerly", "Tracer"]
