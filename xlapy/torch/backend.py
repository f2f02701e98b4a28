"""The dynamo backend: `torch.compile(model, backend="xlapy")`.

    dynamo's FX graph ──AOTAutograd (core ATen decompositions, functionalized)──▶ forward / backward graphs
        each graph ──translate.graph_function──▶ one xlapy function ──jit──▶ one HLO module ──▶ CPU code

Parameters and buffers arrive as graph inputs; batch norm's running-stat updates come back as extra forward
outputs that AOTAutograd's runtime copies into the buffers. An op without a row in the tables runs in eager
PyTorch, as a graph break would: the graph is partitioned around it and each supported part compiled by xlapy.
A graph that fails otherwise (a dtype or device xlapy does not take, a rule that disagrees with PyTorch's fake
tensors) runs as its FX GraphModule in eager PyTorch. Both are recorded (`xlapy.torch.report()`, with a
TorchFallbackWarning naming the op). Dynamic shapes: a graph that dynamo made
symbolic (`mark_dynamic`, `dynamic=True`, or its automatic dynamic shapes after a recompile) is specialized to
each concrete shape it is called with: AOTAutograd traces it again with those sizes, one compile per shape.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

import torch
from torch._decomp import core_aten_decompositions
from torch._functorch.aot_autograd import aot_module_simplified, make_boxed_func

from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from .errors import TranslationError
from .report import record_compiled, record_fallback
from .runtime import CompiledGraph
from .translate import op_name, supported

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
        unsupported = [n for n in gm.graph.nodes if not supported(n)]
        if unsupported:
            return _partitioned(gm, kind, unsupported)
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


class _Support(OperatorSupport):
    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        return node.op == "call_function" and supported(node)


class _XlapyPart(torch.nn.Module):
    """A partition of a graph, compiled by xlapy, standing in for its fused submodule."""

    def __init__(self, compiled: CompiledGraph, single: bool):
        super().__init__()
        self.compiled, self.single = compiled, single

    def forward(self, *args):
        out = self.compiled(list(args))
        return out[0] if self.single else tuple(out)


def _partitioned(gm: torch.fx.GraphModule, kind: str, unsupported: list) -> Callable:
    """The graph split around the ops xlapy has no rule for: those run in eager PyTorch (as a graph break
    would), each maximal supported part is compiled by xlapy."""
    fused = CapabilityBasedPartitioner(gm, _Support(), allows_single_node_partition=True).partition_and_fuse()
    parts = 0
    for name, sub in list(fused.named_children()):
        (result,) = [n.args[0] for n in sub.graph.nodes if n.op == "output"]
        try:
            compiled = CompiledGraph(sub, name=f"torch_{kind}_{name}")
        except Exception:           # noqa: BLE001 - that part stays eager, as the whole graph would
            continue
        setattr(fused, name, _XlapyPart(compiled, not isinstance(result, (list, tuple))))
        parts += 1
        record_compiled()
    names = sorted({op_name(n.target) for n in unsupported})
    for op in names:
        record_fallback(op, "no xlapy translation", kind,
                        f"it runs in eager PyTorch, the rest of the graph in {parts} xlapy part(s)")
    return make_boxed_func(fused.forward)


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
