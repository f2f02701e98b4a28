"""jax.pure_callback: a Python function called from compiled code, as a custom-call to a registered host function.

    pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None, **kwargs)

Traced, it is `custom-call(args...), custom_call_target="xlapy_host_callback", backend_config="<key>"` with one
result per leaf of result_shape_dtypes (backends/interpreter/host_callback.py keeps the callbacks: the
interpreter calls them from Python, the CPU backend through a ctypes trampoline). Outside a trace it runs as an
eager op like any other. The callback receives numpy arrays (the pytree of args/kwargs) and must return arrays of
the declared shapes and dtypes (results are canonicalized first, as JAX: float64 becomes float32 without x64).

vmap follows `vmap_method` (batching/rules_control.py): "sequential"/"sequential_unrolled" call it once per
example, "expand_dims"/"broadcast_all" once with a leading batch axis, None raises NotImplementedError (JAX's
documented default). Differentiating through it raises JAX's ValueError (autodiff/rules_decompositions.py).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..backends.interpreter import host_callback as hc
from ..hlo import Shape, type_name_of_dtype
from . import dtypes
from .pytree import tree_flatten, tree_unflatten
from .tracer import aval, bind, current_trace

_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized", None)


def _result_shape(x: Any) -> Shape:
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        raise TypeError(f"pure_callback: result_shape_dtypes leaves must have .shape and .dtype (a "
                        f"ShapeDtypeStruct or an array), got {x!r}")
    dt = np.dtype(x.dtype)
    if dtypes.canonicalize(dt) != dt:
        raise ValueError("result_shape_dtypes cannot specify 64-bit types when `jax_enable_x64` is disabled")
    return Shape.array(type_name_of_dtype(dt), tuple(int(d) for d in x.shape))


def pure_callback(callback: Callable, result_shape_dtypes: Any, *args: Any, sharding: Any = None,
                  vmap_method: str | None = None, **kwargs: Any) -> Any:
    """Call the host function `callback(*args, **kwargs)` from (possibly compiled) code; its results have the
    shapes and dtypes of `result_shape_dtypes` (a pytree of ShapeDtypeStruct-like leaves)."""
    del sharding            # one device
    if vmap_method not in _METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {list(_METHODS)}, but got: {vmap_method}")
    if vmap_method == "legacy_vectorized":
        vmap_method = "expand_dims"
    res_leaves, res_tree = tree_flatten(result_shape_dtypes)
    results = tuple(_result_shape(x) for x in res_leaves)
    arg_leaves, arg_tree = tree_flatten((args, kwargs))
    name = getattr(callback, "__name__", "callback")

    def host(*arrays):
        a, k = tree_unflatten(arg_tree, list(arrays))
        out = callback(*a, **k)
        out_leaves, out_tree = tree_flatten(out)
        if out_tree != res_tree:
            raise TypeError(f"Callback func {callback} should have returned a result with pytree {res_tree} but "
                            f"returned {out_tree}")
        values = []
        for v in out_leaves:
            arr = np.asarray(v)
            canon = dtypes.canonicalize(arr.dtype)
            values.append(arr if canon == arr.dtype else arr.astype(canon))
        return values

    if current_trace() is None:         # eager: call it now (as one op would)
        from .array import Array
        values = hc.run_fn(host, results, [np.asarray(x) for x in arg_leaves])
        return tree_unflatten(res_tree, [Array(v) for v in values])
    operand_shapes = tuple(aval(x).hlo_shape for x in arg_leaves)
    key = hc.register(hc.HostCallback(host, operand_shapes, results, name, vmap_method))
    attrs = {"custom_call_target": hc.TARGET, "backend_config": str(key)}
    outs = bind("custom-call", list(arg_leaves), attrs, shape=Shape.tuple_of(list(results)),
                name=f"pure_callback_{name}")
    outs = outs if isinstance(outs, list) else [outs]
    return tree_unflatten(res_tree, outs)


__all__ = ["pure_callback"]
