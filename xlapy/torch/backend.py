"""The dynamo backend: `torch.compile(model, backend="xlapy")`.

    dynamo's FX graph ──AOTAutograd (core ATen decompositions, functionalized)──▶ forward / backward graphs
        each graph ──translate.graph_function──▶ one xlapy function ──jit──▶ one HLO module ──▶ CPU code

Parameters and buffers arrive as graph inputs; batch norm's running-stat updates come back as extra forward
outputs that AOTAutograd's runtime copies into the buffers. A graph that cannot be translated (an op without a
row, a dtype or device xlapy does not take) runs as its FX GraphModule in eager PyTorch instead, and the op is
recorded (`xlapy.torch.report()`, with a TorchFallbackWarning). Dynamic shapes: a graph that dynamo made
symbolic (`mark_dynamic`, or its automatic dynamic shapes after a recompile) is specialized to each concrete
shape it is called with, one compile per shape; `dynamic=True` does the same, with a warning that says so.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

import torch
from torch._decomp import core_aten_decompositions
from torch._functorch.aot_autograd import aot_module_simplified, make_boxed_func

from .errors import TranslationError
from .report import record_compiled, record_fallback
from .runtime import CompiledGraph

_ATEN = torch.ops.aten


@functools.lru_cache(maxsize=1)
def decompositions() -> dict:
    """Core ATen's decompositions, less those whose op xlapy translates as one rule (cheaper, fewer nodes)."""
    table = dict(core_aten_decompositions())
    for op in (_ATEN.native_layer_norm.default, _ATEN.gelu.default):
        table.pop(op, None)
    return table


def _graph_compiler(kind: str) -> Callable:
    def compile_graph(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        try:
            compiled = CompiledGraph(gm, name=f"torch_{kind}", example_inputs=example_inputs)
        except TranslationError as e:
            record_fallback(e.op, e.reason, kind)
            return make_boxed_func(gm.forward)
        except Exception as e:      # noqa: BLE001 - never crash the user's model: run the graph eagerly
            record_fallback("<graph>", f"{type(e).__name__}: {e}", kind)
            return make_boxed_func(gm.forward)
        record_compiled()
        return compiled
    return compile_graph


def _static(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    return aot_module_simplified(gm, example_inputs, fw_compiler=_graph_compiler("forward"),
                                 bw_compiler=_graph_compiler("backward"),
                                 inference_compiler=_graph_compiler("inference"),
                                 decompositions=decompositions())


def _symbolic(example_inputs: list) -> bool:
    for x in example_inputs:
        if isinstance(x, torch.SymInt) or (isinstance(x, torch.Tensor) and any(
                isinstance(d, torch.SymInt) for d in x.shape)):
            return True
    return False


class _Specializing:
    """A dynamo graph with symbolic shapes, compiled once per concrete signature of its inputs."""

    def __init__(self, gm: torch.fx.GraphModule):
        self.gm = gm
        self.cache: dict[tuple, Callable] = {}
        self.lock = threading.Lock()

    def __call__(self, *args: Any) -> Any:
        key = tuple((tuple(a.shape), a.dtype, a.requires_grad) if isinstance(a, torch.Tensor) else
                    (type(a), a) for a in args)
        fn = self.cache.get(key)
        if fn is None:
            with self.lock:
                fn = self.cache.get(key)
                if fn is None:
                    fn = self.cache[key] = _static(self.gm, list(args))
        return fn(*args)


def backend(gm: torch.fx.GraphModule, example_inputs: list, **options: Any) -> Callable:
    """The `torch.compile` backend (`backend="xlapy"`, or `backend=xlapy.torch.backend`)."""
    if options:
        raise TypeError(f"xlapy's torch backend takes no options, got {sorted(options)}")
    if _symbolic(example_inputs):
        return _Specializing(gm)
    return _static(gm, example_inputs)
