"""A translated FX graph compiled by xlapy, called with torch tensors: the zero-copy boundary.

Inputs cross as DLPack (`np.from_dlpack` views the tensor's memory; a tensor that is not contiguous is made so
first, and int64 becomes int32 unless x64 is on); the executable's native entry (`fast_call`) runs on those
arrays, and its results cross back with `torch.from_dlpack` (torch then owns a view of xlapy's result buffer).
The callable is "boxed" as AOTAutograd prefers: it takes the argument list and clears it, so inputs that the
graph no longer needs can be freed early.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from ..frontend.jit import jit
from .errors import TranslationError
from .translate import GraphFunction, TensorSpec, example_arrays, graph_function

_KEY_SPEC = np.zeros((2,), np.uint32)

# whether a convolution weight's permuted copy is reused while the weight's version counter is unchanged
CACHE_PERMUTED_WEIGHTS = True


class CompiledGraph:
    """`gm` translated and compiled now (errors surface here, before the first call)."""

    _boxed_call = True

    def __init__(self, gm: torch.fx.GraphModule, name: str = "torch_graph", example_inputs: list | None = None):
        start = time.perf_counter()
        self.graph: GraphFunction = graph_function(gm, example_inputs)
        g = self.graph
        self._tensor_specs = [s for s in g.inputs if isinstance(s, TensorSpec)]
        self._ints = [(i, s) for i, s in enumerate(g.inputs) if not isinstance(s, TensorSpec)]

        def traced(key, *arrays):
            return g.fn(key, *arrays)
        traced.__name__ = name
        self.lowered = self.compiled = None
        self._call = lambda *_: ()
        if g.out_specs:             # a graph may only pass inputs through
            self.lowered = jit(traced).lower(_KEY_SPEC, *example_arrays(self._tensor_specs))
            self.compiled = self.lowered.compile()
            exe = self.compiled.executable
            self._call = getattr(exe, "fast_call", None) or exe
        self._n_out = len(g.out_specs)
        self._casts = [(i, s.dtype if s.dtype != _np(s.torch_dtype) else None, s.permutation)
                       for i, s in enumerate(g.inputs) if isinstance(s, TensorSpec)]
        self._permuted: dict[int, tuple] = {}      # input index -> ((data_ptr, _version, shape), permuted copy)
        self._back = [(s.torch_dtype if _np(s.torch_dtype) != s.dtype else None,
                       None if s.permutation is None else tuple(np.argsort(s.permutation).tolist()))
                      for s in g.out_specs]
        self.compile_seconds = time.perf_counter() - start

    def as_text(self) -> str:
        """The optimized HLO this graph runs."""
        return "" if self.compiled is None else self.compiled.as_text()

    def __call__(self, args: list) -> list:
        g = self.graph
        for i, value in self._ints:
            if args[i] != value:
                raise TranslationError("<graph>", f"compiled for the size {value} at input {i}, called with "
                                       f"{args[i]}")
        arrays = []
        for i, cast, perm in self._casts:
            t = args[i]
            if perm is not None:
                t = self._permute(i, t, perm)
            a = np.from_dlpack(_plain(t))
            arrays.append(a if cast is None else a.astype(cast))
        key = _draw_key() if g.uses_rng else _KEY_SPEC
        tensors = args[:]
        args.clear()
        out = self._call(key, *arrays)
        if self._n_out == 1:
            out = (out,)
        results = []
        for o, (back, perm) in zip(out, self._back):
            t = torch.from_dlpack(o)
            if back is not None:
                t = t.to(back)
            results.append(t if perm is None else t.permute(*perm))
        return [results[v] if kind == "computed" else tensors[v] if kind == "input" else v
                for kind, v in g.outputs]


    def _permute(self, i: int, t: torch.Tensor, perm: tuple) -> torch.Tensor:
        """`t` permuted and made contiguous, reused while `t` holds the same data: in-place updates (an optimizer
        step, `with torch.no_grad(): w.mul_(2)`) bump its version counter. Writes through `w.data`, which autograd
        does not track either, are not seen: set CACHE_PERMUTED_WEIGHTS = False for code that does that."""
        key = (t.data_ptr(), t._version, tuple(t.shape))
        cached = self._permuted.get(i)
        if CACHE_PERMUTED_WEIGHTS and cached is not None and cached[0] == key:
            return cached[1]
        out = t.detach().permute(*perm).contiguous()
        self._permuted[i] = (key, out)
        return out


def _np(dtype: torch.dtype) -> np.dtype:
    from .dtypes import to_numpy
    return to_numpy(dtype)


def _plain(t: torch.Tensor) -> torch.Tensor:
    if t.requires_grad:
        t = t.detach()
    if not t.is_contiguous():
        t = t.contiguous()
    return t


def _draw_key() -> np.ndarray:
    """A fresh xlapy key from torch's default generator (torch.manual_seed governs compiled dropout)."""
    return torch.randint(0, 1 << 31, (2,), dtype=torch.int64).numpy().astype(np.uint32)
