"""Op-by-op execution outside jit, and the assembly of traced computations into a Module.

Outside any trace, `bind` lands here: the single op is traced into a tiny module whose parameters are the
operands (Python scalars included, so `x + 1` and `x + 2` share one executable), compiled once per
(module text, backend) and run. `eager_stats()` counts compiles and cache hits — the point of the seed
example is the cost of this op-by-op path against one compiled whole program.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..errors import XlapyError
from ..hlo import Computation, Module
from . import dtypes
from .tracer import Packed, ShapedArray, Trace, Tracer, concrete_value, make_op

_CACHE: dict[tuple[str, str], Any] = {}
_STATS = {"compiles": 0, "hits": 0}


def eager_stats() -> dict[str, int]:
    """{'compiles': n, 'hits': n, 'entries': n} of the eager executable cache."""
    return dict(_STATS, entries=len(_CACHE))


def clear_eager_cache() -> None:
    _CACHE.clear()
    _STATS.update(compiles=0, hits=0)


def aval_of_value(value: Any) -> ShapedArray:
    aval = getattr(value, "aval", None)
    if aval is not None:
        return aval
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


def get_executable(module: Module, backend: str):
    from ..backends import compile as compile_module
    key = (module.to_text(), backend)
    exe = _CACHE.get(key)
    if exe is None:
        exe = compile_module(module, backend=backend)
        _CACHE[key] = exe
        _STATS["compiles"] += 1
    else:
        _STATS["hits"] += 1
    return exe


def run_eagerly(opcode: str, operands: Sequence[Any], attrs: dict | None, *, shape=None, name=None,
                weak_type: bool = False) -> Any:
    from .array import Array
    trace = Trace("main")
    values = [v for o in operands for v in (o if isinstance(o, Packed) else [o])]
    params = iter([trace.new_param(aval_of_value(v), f"Arg_{i}") for i, v in enumerate(values)])
    param_operands = [Packed(next(params) for _ in o) if isinstance(o, Packed) else next(params) for o in operands]
    inst = make_op(trace, opcode, param_operands, attrs, shape, name)
    trace.comp.add_instruction(inst)
    trace.comp.root = inst
    module = build_module(f"jit_{(name or opcode).replace('-', '_')}", trace.comp)
    exe = get_executable(module, dtypes.config.default_backend)
    out = exe(*[concrete_value(v) for v in values])
    if isinstance(out, tuple):
        return [Array(o) for o in out]
    return Array(out, weak_type=weak_type)


__all__ = ["eager_stats", "clear_eager_cache", "build_module", "run_eagerly", "Tracer"]
