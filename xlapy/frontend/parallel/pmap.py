"""pmap (jax.pmap): map a function over the leading axis of its arguments, one slice per device.

At the top level (outside any trace) pmap traces the function once per signature on the per-device shapes, with
its axis bound as a device axis (collectives become HLO collectives), compiles one module with
num_partitions = N (device_program.py, backends/spmd.py), runs it on N devices in parallel with the arguments
split along in_axes, and stacks the per-device results along out_axes.

Under several processes (xlapy.distributed.initialize), each process maps over its local devices and the axis
spans every process's devices (JAX's multi-process pmap): collectives go over MPI (backends/spmd.py).

Inside another trace (jit, grad, vmap, or the body of another pmap / shard_map) pmap is vmap with the same
axis_name: the same values, computed in the enclosing program. That is how grad differentiates through pmap, and
how a nested pmap runs (the outer axis on the devices, the inner one vectorized on each of them).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Iterable

import numpy as np

from ...errors import XlapyError
from .. import dtypes
from ..pytree import tree_flatten, tree_unflatten
from ..tracer import ShapedArray, aval, current_trace
from ..transforms import _broadcast_prefix, _check_axes_spec, _mapped_size, _name_of, vmap
from .axis_env import AxisFrame
from .device_program import ProgramCache, backend_name, check_devices, compile_program, to_arrays


class Pmapped:
    """The result of pmap(f): call it like f, with the mapped axes of the arguments of size <= device_count()."""

    def __init__(self, fun: Callable, axis_name: Any, in_axes: Any, out_axes: Any,
                 static_broadcasted_argnums: Iterable[int], devices: Any, backend: str | None, axis_size: int | None):
        self.fun = fun
        self.axis_name = axis_name if axis_name is not None else object()      # unnamed: nothing can refer to it
        self.in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        self.out_axes = out_axes
        self.static = tuple(sorted({static_broadcasted_argnums} if isinstance(static_broadcasted_argnums, int)
                                   else set(static_broadcasted_argnums)))
        self.devices = None if devices is None else list(devices)
        self.backend = backend
        self.axis_size = axis_size
        self._cache = ProgramCache()
        _check_axes_spec("pmap in_axes", self.in_axes, top_tuple=True)
        _check_axes_spec("pmap out_axes", self.out_axes, top_tuple=False)
        self.__name__ = f"pmap_{_name_of(fun)}"
        functools.update_wrapper(self, fun, updated=())

    def _split_static(self, args: tuple):
        n = len(args)
        positions = {i % n for i in self.static if -n <= i < n}
        static = tuple((i, args[i]) for i in sorted(positions))
        for i, value in static:
            try:
                hash(value)
            except TypeError:
                raise XlapyError(f"pmap: static_broadcasted_argnums argument {i} must be hashable, got "
                                 f"{type(value).__name__}") from None
        dyn = tuple(a for i, a in enumerate(args) if i not in positions)
        in_axes = self.in_axes
        if isinstance(in_axes, tuple) and len(in_axes) == n and positions:
            in_axes = tuple(a for i, a in enumerate(in_axes) if i not in positions)
        values = dict(static)

        def fun(*dyn_args, **kwargs):
            it = iter(dyn_args)
            full = [values[i] if i in values else next(it) for i in range(n)]
            return self.fun(*full, **kwargs)
        return static, dyn, in_axes, fun

    def __call__(self, *args, **kwargs):
        static, dyn, in_axes, fun = self._split_static(args)
        if current_trace() is not None:
            return vmap(fun, in_axes, self.out_axes, axis_name=self.axis_name, axis_size=self.axis_size)(*dyn, **kwargs)
        if isinstance(in_axes, tuple) and len(in_axes) != len(dyn):
            raise XlapyError(f"pmap in_axes must be an int, None, or a tuple with one entry per positional argument: "
                             f"got len(in_axes)={len(in_axes)} for {len(dyn)} arguments")
        leaves, tree = tree_flatten((dyn, dict(kwargs)))
        axes = []
        for x, a in zip(leaves, _broadcast_prefix("pmap in_axes", (in_axes, 0), tree)):
            nd = aval(x).ndim
            if a is not None and not -nd <= a < nd:
                raise XlapyError(f"pmap was asked to map an argument of shape {aval(x).shape} along axis {a}")
            axes.append(None if a is None else a % nd)
        n = _mapped_size(self.fun, dyn, kwargs, leaves, tree, axes, self.axis_size)
        if self.devices is not None and len(self.devices) != n:
            raise XlapyError(f"pmap: the mapped axis has size {n} but devices= lists {len(self.devices)} devices "
                             f"(they must be equal)")
        size = _global_size(n)          # several processes (xlapy.distributed): the axis spans all their devices
        check_devices(size, f"pmap of {_name_of(self.fun)} over an axis of size {size}")
        in_avals = []
        for x, a in zip(leaves, axes):
            av = aval(x)
            in_avals.append(av if a is None else ShapedArray(av.shape[:a] + av.shape[a + 1:], av.dtype, av.weak_type))
        backend = backend_name(self.backend)
        key = (tree, tuple(in_avals), tuple(axes), static, size, backend, bool(dtypes.config.enable_x64))
        program = self._cache.get(key, lambda: compile_program(
            lambda a, k: fun(*a, **k), in_avals, tree, [AxisFrame(self.axis_name, size, "device")],
            self.__name__, backend))
        hosts = [np.asarray(x) if a is not None else x for x, a in zip(leaves, axes)]
        per_device = [[np.take(h, d, axis=a) if a is not None else h for h, a in zip(hosts, axes)] for d in range(n)]
        outs = program.run(per_device)
        targets = _broadcast_prefix("pmap out_axes", self.out_axes, program.out_tree)
        results = []
        for k, t in enumerate(targets):
            if t is None:
                results.append(outs[0][k])
                continue
            nd = program.out_avals[k].ndim + 1
            if not -nd <= t < nd:
                raise XlapyError(f"pmap out_axes: axis {t} is out of range for an output of rank {nd}")
            results.append(np.stack([o[k] for o in outs], axis=t % nd))
        avals = [ShapedArray((), a.dtype, a.weak_type) for a in program.out_avals]
        return tree_unflatten(program.out_tree, to_arrays(results, avals))

    def lower(self, *args, **kwargs) -> "PmapLowered":
        """The per-device program for these arguments (compiled): `.as_text()` is its HLO (jax.pmap(f).lower)."""
        before = set(self._cache._programs)
        self(*args, **kwargs)
        new = [k for k in self._cache._programs if k not in before] or list(self._cache._programs)
        return PmapLowered(self._cache._programs[new[-1]])


class PmapLowered:
    def __init__(self, program):
        self.program = program

    def as_text(self) -> str:
        return self.program.module_text()

    def compile(self) -> "PmapLowered":
        return self


def _global_size(n: int) -> int:
    """The axis size of a pmap over n local slices: n, or under several processes every process's devices (each
    process maps over its local devices, as JAX's pmap does after jax.distributed.initialize)."""
    from ...backends import devices
    if devices.process_count() == 1:
        return n
    local = devices.local_device_count()
    if n != local:
        raise XlapyError(f"pmap: with {devices.process_count()} processes the mapped axis must have this process's "
                         f"{local} local devices, got size {n}")
    return devices.device_count()


def pmap(fun: Callable | None = None, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Iterable[int] = (), devices: Any = None, backend: str | None = None,
         axis_size: int | None = None, donate_argnums: Any = (), global_arg_shapes: Any = None) -> Any:
    """Parallel map over devices (jax.pmap); usable as a decorator with functools.partial. donate_argnums is
    accepted and ignored (the host arrays are copied to the devices)."""
    del donate_argnums, global_arg_shapes
    if fun is None:
        return lambda f: Pmapped(f, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices, backend,
                                 axis_size)
    return Pmapped(fun, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices, backend, axis_size)
