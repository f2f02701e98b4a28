"""An FX graph of core ATen ops -> one xlapy function, jitted into one HLO module.

`graph_function(gm)` checks the graph (every op has a row in TABLE or RANDOM; every placeholder is a tensor of
static shape and a dtype xlapy carries), then returns `fn(key, *arrays) -> list of arrays` that walks the nodes
in order and calls each op's rule on xlapy values. After every node the result is cast to the dtype PyTorch's
fake tensor recorded for it and its shape is checked against it, so a rule that disagrees with PyTorch fails at
trace time (and the graph falls back to eager PyTorch) instead of giving a wrong result. Random ops get their
own key, folded from the `key` argument by node number.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from .. import numpy as jnp
from .. import random
from ..hlo.tables import merge_rule_tables, module_tables
from . import aten_attention, aten_elementwise, aten_nn, aten_random, aten_reduce, aten_shapes
from .dtypes import BOUNDARY, WIDE_FLOATS, computed, x64
from .errors import TranslationError

TABLE: dict[str, Callable] = merge_rule_tables(
    "ATen translations", *module_tables("TABLE", aten_elementwise, aten_shapes, aten_reduce, aten_nn,
                                        aten_attention))
RANDOM: dict[str, Callable] = dict(aten_random.TABLE)

# keyword arguments that describe where a tensor lives, not what it holds
_PLACEMENT = {"device", "layout", "pin_memory", "memory_format", "non_blocking"}


def op_name(target: Any) -> str:
    return "getitem" if target is operator.getitem else str(target)


def supported(node: torch.fx.Node) -> bool:
    if node.op != "call_function":
        return True
    name = op_name(node.target)
    return name == "getitem" or name in TABLE or name in RANDOM


def _meta(node: torch.fx.Node) -> Any:
    return node.meta.get("val", node.meta.get("example_value"))


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    torch_dtype: torch.dtype
    dtype: np.dtype               # what xlapy computes it in
    permutation: tuple[int, ...] | None = None     # the input crosses as tensor.permute(*permutation)


# A 2-d convolution's weight (O, I, H, W) crosses as (H, W, I, O), the layout of the CPU convolution kernel
# (passes/conv_canonicalization.py): the graph transposes it back, and that transpose cancels against the
# canonicalization's, so no transpose of the weight runs per call. The runtime caches the permuted copy while the
# weight is unchanged (tensor._version), so inference permutes each weight once.
CONV_WEIGHT_LAYOUT = (2, 3, 1, 0)
# a weight gradient leaves in the kernel's layout too, (H, W, I, O). (Its own layout, (I, H, W, O), would spare
# one transpose, but xlapy's convolution writing that layout is slower than the transpose: measured.)
WEIGHT_GRAD_LAYOUT = CONV_WEIGHT_LAYOUT
_CONV_OPS = {"aten.convolution.default": 1, "aten.convolution_backward.default": 2}


def _is_conv_weight_grad(node: torch.fx.Node) -> bool:
    """A graph output that is the weight gradient of a 2-d convolution_backward: it leaves as WEIGHT_GRAD_LAYOUT
    and the runtime hands PyTorch a permuted view, (O, I, H, W) again, without a transpose in xlapy."""
    if node.target is not operator.getitem or node.args[1] != 1:
        return False
    src = node.args[0]
    meta = _meta(node)
    return (isinstance(src, torch.fx.Node) and src.op == "call_function"
            and op_name(src.target) == "aten.convolution_backward.default" and not src.args[7]
            and isinstance(meta, torch.Tensor) and meta.dim() == 4)


def _conv_weight_only(node: torch.fx.Node) -> bool:
    """Whether every use of `node` is as the weight of a non-transposed 2-d convolution (or its backward)."""
    if not any(u.op == "call_function" for u in node.users):
        return False
    for user in node.users:
        if user.op == "output":         # passed through: the runtime returns the torch tensor itself
            continue
        slot = _CONV_OPS.get(op_name(user.target)) if user.op == "call_function" else None
        if slot is None or len(user.args) <= slot or user.args[slot] is not node:
            return False
        transposed = user.args[6] if slot == 1 else user.args[7]
        if transposed or any(a is node for i, a in enumerate(user.args) if i != slot):
            return False
    meta = _meta(node)
    return isinstance(meta, torch.Tensor) and meta.dim() == 4


def tensor_spec(value: Any, where: str) -> TensorSpec:
    if isinstance(value, torch.SymInt) or (isinstance(value, torch.Tensor) and any(
            isinstance(d, torch.SymInt) for d in value.shape)):
        raise TranslationError("<graph>", f"{where} has a symbolic (dynamic) shape: xlapy compiles static shapes")
    if not isinstance(value, torch.Tensor):
        raise TranslationError("<graph>", f"{where} is a {type(value).__name__}, not a tensor")
    if value.dtype not in BOUNDARY:
        raise TranslationError("<graph>", f"{where} has dtype {value.dtype}, which cannot cross to xlapy")
    if value.dtype in WIDE_FLOATS and not x64():
        raise TranslationError("<graph>", f"{where} is {value.dtype}: enable xlapy's x64 mode "
                               f"(xlapy.config.update('jax_enable_x64', True)) to compile 64-bit floats")
    if value.device.type != "cpu":
        raise TranslationError("<graph>", f"{where} lives on {value.device}; xlapy's arrays live in host memory")
    return TensorSpec(tuple(int(d) for d in value.shape), value.dtype, computed(value.dtype))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass
class GraphFunction:
    fn: Callable                         # fn(key, *arrays) -> list of arrays (one array per TensorSpec input)
    inputs: list[TensorSpec | int]       # per graph input: its spec, or the int it was specialized to
    outputs: list[tuple[str, Any]]       # per graph output: ("computed", k), ("input", i) or ("const", value)
    out_specs: list[TensorSpec]          # per computed output
    uses_rng: bool


def graph_function(gm: torch.fx.GraphModule, example_inputs: list | None = None) -> GraphFunction:
    """Check `gm` and build its xlapy function (raises TranslationError naming the first op it cannot take).
    example_inputs (what AOTAutograd passes its compilers) stand in for placeholders without metadata."""
    graph = gm.graph
    for node in graph.nodes:
        if not supported(node):
            raise TranslationError(op_name(node.target), "no xlapy translation")
        if node.op not in ("placeholder", "call_function", "output"):
            raise TranslationError("<graph>", f"FX node {node.name} is a {node.op}")
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    # an int input (a size, when AOTAutograd specialized a symbolic graph to concrete values) is a constant of
    # this compile; the runtime checks that each call passes the same value
    examples = list(example_inputs) if example_inputs is not None else [None] * len(placeholders)
    metas = [_meta(n) if _meta(n) is not None else ex for n, ex in zip(placeholders, examples)]
    inputs = [m if _is_int(m) else tensor_spec(m, f"input {n.name}") for n, m in zip(placeholders, metas)]
    for k, (n, spec) in enumerate(zip(placeholders, inputs)):
        if isinstance(spec, TensorSpec) and _conv_weight_only(n):
            inputs[k] = TensorSpec(tuple(spec.shape[d] for d in CONV_WEIGHT_LAYOUT), spec.torch_dtype, spec.dtype,
                                   CONV_WEIGHT_LAYOUT)
    position = {n: i for i, n in enumerate(placeholders)}
    tensor_inputs = [n for n, spec in zip(placeholders, inputs) if isinstance(spec, TensorSpec)]
    constants = {n: spec for n, spec in zip(placeholders, inputs) if not isinstance(spec, TensorSpec)}
    (results,) = [n.args[0] for n in graph.nodes if n.op == "output"]
    outputs, computed_nodes, out_specs = [], [], []
    for r in (results if isinstance(results, (list, tuple)) else [results]):
        if isinstance(r, torch.fx.Node) and r in position:
            outputs.append(("input", position[r]))
        elif isinstance(r, torch.fx.Node):
            outputs.append(("computed", len(computed_nodes)))
            computed_nodes.append(r)
            spec = tensor_spec(_meta(r), f"output {r.name}")
            if _is_conv_weight_grad(r):
                spec = TensorSpec(tuple(spec.shape[d] for d in WEIGHT_GRAD_LAYOUT), spec.torch_dtype, spec.dtype,
                                  WEIGHT_GRAD_LAYOUT)
            out_specs.append(spec)
        else:
            outputs.append(("const", r))
    uses_rng = any(n.op == "call_function" and op_name(n.target) in RANDOM for n in graph.nodes)

    def fn(key, *arrays):
        env = dict(zip(tensor_inputs, arrays))
        for n, spec in zip(placeholders, inputs):
            if isinstance(spec, TensorSpec) and spec.permutation is not None:
                env[n] = jnp.transpose(env[n], tuple(np.argsort(spec.permutation)))
        env.update(constants)
        for i, node in enumerate(graph.nodes):
            if node.op == "call_function":
                env[node] = _run_node(node, env, key, i)
        return [_read(env[n]) if spec.permutation is None else jnp.transpose(_read(env[n]), spec.permutation)
                for n, spec in zip(computed_nodes, out_specs)]

    return GraphFunction(fn, inputs, outputs, out_specs, uses_rng)


@dataclass(frozen=True)
class _Unset:
    """A result a rule left out (None) where PyTorch's is a tensor (e.g. the empty statistics of batch norm in
    eval mode): zeros of its shape, made only if a later node or the output reads it."""
    shape: tuple[int, ...]
    dtype: np.dtype

    def value(self) -> Any:
        return jnp.zeros(self.shape, self.dtype)


def _read(value: Any) -> Any:
    if isinstance(value, _Unset):
        return value.value()
    if isinstance(value, list):
        return [_read(v) for v in value]
    return value


def _value(arg: Any, env: dict) -> Any:
    if isinstance(arg, torch.fx.Node):
        return env[arg] if arg.target is operator.getitem or arg.op != "call_function" else _read(env[arg])
    if isinstance(arg, (list, tuple)):
        return type(arg)(_value(a, env) for a in arg)
    if isinstance(arg, torch.dtype):
        dt = computed(arg)
        if dt is None:
            raise TranslationError("<graph>", f"dtype {arg} has no xlapy counterpart")
        return dt
    if isinstance(arg, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise TranslationError("<graph>", "a symbolic scalar argument (dynamic shapes)")
    if isinstance(arg, torch.Tensor):
        raise TranslationError("<graph>", "a tensor constant inside the graph")
    return arg


def _run_node(node: torch.fx.Node, env: dict, key: Any, index: int) -> Any:
    name = op_name(node.target)
    args = _value(node.args, env)
    if name == "getitem":
        return _read(args[0][args[1]]) if node.users else None
    kwargs = {k: _value(v, env) for k, v in node.kwargs.items() if k not in _PLACEMENT}
    if kwargs.pop("generator", None) is not None:
        raise TranslationError(name, "an explicit torch.Generator")
    try:
        if name in RANDOM:
            out = RANDOM[name](random.fold_in(key, index), *args, **kwargs)
        else:
            out = TABLE[name](*args, **kwargs)
    except TranslationError:
        raise
    except Exception as e:          # noqa: BLE001 - any failure of a rule is that op's translation failure
        raise TranslationError(name, f"{type(e).__name__}: {e}") from e
    return _conform(name, out, _meta(node))


def _conform(name: str, out: Any, meta: Any) -> Any:
    """`out` cast to the dtype of PyTorch's fake tensor `meta` and checked against its shape (recursively for
    tuples); None where the rule left an output out and PyTorch's is a tensor becomes an _Unset of its shape."""
    if isinstance(meta, (list, tuple)):
        if not isinstance(out, (list, tuple)) or len(out) != len(meta):
            raise TranslationError(name, f"gave {type(out).__name__} for {len(meta)} results")
        return [_conform(name, o, m) for o, m in zip(out, meta)]
    if not isinstance(meta, torch.Tensor):
        return out
    dtype = computed(meta.dtype)
    shape = tuple(int(d) for d in meta.shape)
    if out is None:
        return _Unset(shape, dtype)
    out = jnp.asarray(out)
    if out.dtype != dtype:
        out = out.astype(dtype)
    if tuple(out.shape) != shape:
        raise TranslationError(name, f"gave shape {tuple(out.shape)}, PyTorch's is {shape}")
    return out


def example_arrays(specs: list[TensorSpec]) -> list[np.ndarray]:
    return [np.zeros(s.shape, s.dtype) for s in specs]
