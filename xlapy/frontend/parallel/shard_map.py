"""shard_map (jax.shard_map): run a function on each shard of its arguments, one per mesh position.

    shard_map(f, mesh, in_specs, out_specs)(*args)

in_specs / out_specs are PartitionSpecs, or tree prefixes of the arguments / results holding them. Each mesh
position gets the shard of every argument its spec selects (a mesh axis the spec does not name: the whole
dimension, replicated); f sees the per-shard shapes, with every mesh axis bound as a named axis for collectives.
The results are the per-position outputs put back together by out_specs (an axis out_specs does not name must
hold the same value at every position along it; position 0's is taken).

At the top level the program runs on mesh.size devices (device_program.py); under several processes
(xlapy.distributed) a mesh of every global device runs each process's positions there, and the results are
whole in every process (process_shards.py). Inside another trace (jit, grad)
shard_map is the same function over the mesh axes as nested vmaps with those axis names (each argument
reshaped so its split dimensions lead): the same values, in the enclosing program. Under jit with in_shardings /
out_shardings the arguments and results are marked with their shard_map shardings, and the SPMD partitioner
turns the blocks back into one program per device (the psum of a block: an all-reduce).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ...errors import XlapyError
from .. import dtypes
from ..pytree import PyTreeDef, tree_flatten, tree_unflatten
from ..tracer import ShapedArray, aval, bind, current_trace
from ..transforms import _name_of, vmap
from .axis_env import AxisFrame
from .collectives import _reshape, _shape, _transpose
from .device_program import ProgramCache, backend_name, check_devices, compile_program, to_arrays
from .mesh import Mesh, NamedSharding, PartitionSpec, check_spec, current_mesh, tiles
from .process_shards import assemble, device_assignment, local_args, placement


def spec_leaves(what: str, specs: Any, tree: PyTreeDef) -> list[PartitionSpec]:
    """The spec of every leaf of `tree`, from `specs`: a tree prefix of it with PartitionSpecs (or None) at its
    leaves."""
    def go(s: Any, t: PyTreeDef, path: str) -> list:
        if s is None or isinstance(s, PartitionSpec):
            return [s if s is not None else PartitionSpec()] * t.num_leaves
        children = list(s.values()) if isinstance(s, dict) else list(s) if isinstance(s, (tuple, list)) else None
        if children is None or t.node_type is None or len(children) != len(t.children):
            raise XlapyError(f"shard_map {what}: the specs must be PartitionSpecs or a tree prefix of the value; at "
                             f"{what}{path} got {s!r} for a value of structure {t!r}")
        out = []
        for i, (c, ct) in enumerate(zip(children, t.children)):
            out.extend(go(c, ct, f"{path}[{i}]"))
        return out
    return go(specs, tree, "")


class ShardMapped:
    def __init__(self, fun: Callable, mesh: Mesh | None, in_specs: Any, out_specs: Any, backend: str | None):
        self.fun, self._mesh, self.in_specs, self.out_specs, self.backend = fun, mesh, in_specs, out_specs, backend
        self._cache = ProgramCache()
        self.__name__ = f"shard_map_{_name_of(fun)}"
        functools.update_wrapper(self, fun, updated=())

    def _mesh_now(self) -> Mesh:
        mesh = self._mesh or current_mesh()
        if mesh is None:
            raise XlapyError("shard_map needs a mesh: pass mesh=, or call it inside `with mesh:`")
        return mesh

    def __call__(self, *args):
        mesh = self._mesh_now()
        leaves, tree = tree_flatten(tuple(args))
        specs = spec_leaves("in_specs", self.in_specs, tree)
        shard_avals = []
        for k, (x, spec) in enumerate(zip(leaves, specs)):
            a = aval(x)
            check_spec(mesh, spec, a.ndim, f"shard_map in_specs (argument leaf {k} of shape {a.shape})")
            shard = NamedSharding(mesh, spec).shard_shape(a.shape)
            shard_avals.append(ShapedArray(shard, a.dtype, a.weak_type))
        if current_trace() is not None:
            return self._emulated(mesh, leaves, tree, specs)
        check_devices(mesh.size, f"shard_map over the mesh {mesh}")
        backend = backend_name(self.backend)
        key = (tree, tuple(shard_avals), tuple(tuple(s) for s in specs), mesh, backend,
               bool(dtypes.config.enable_x64))
        frames = [AxisFrame(n, s, "device") for n, s in mesh.shape.items()]
        program = self._cache.get(key, lambda: compile_program(
            lambda *a: self.fun(*a), shard_avals, tree, frames, self.__name__, backend, device_assignment(mesh)))
        place = placement(program.executable)
        hosts = [np.asarray(x) for x in leaves]
        outs = program.run(local_args(place, hosts, [NamedSharding(mesh, spec).indices(h.shape)
                                                     for h, spec in zip(hosts, specs)]))
        out_specs = spec_leaves("out_specs", self.out_specs, program.out_tree)
        results = []
        for k, (spec, oa) in enumerate(zip(out_specs, program.out_avals)):
            check_spec(mesh, spec, oa.ndim, f"shard_map out_specs (result leaf {k} of per-shard shape {oa.shape})")
            shape = tuple(n * t for n, t in zip(oa.shape, tiles(mesh, spec, oa.ndim)))
            results.append(assemble(place, shape, oa.dtype, NamedSharding(mesh, spec).indices(shape),
                                    [o[k] for o in outs]))
        return tree_unflatten(program.out_tree, to_arrays(results, program.out_avals))

    # -- inside a trace: nested vmaps over the mesh axes ------------------------------------------------------
    def _emulated(self, mesh: Mesh, leaves: list, tree: PyTreeDef, specs: list) -> Any:
        names = list(mesh.axis_names)
        leaves = [_constrained(x, mesh, spec) for x, spec in zip(leaves, specs)]
        blocked, present = [], []
        for x, spec in zip(leaves, specs):
            a = aval(x)
            shard = NamedSharding(mesh, spec).shard_shape(a.shape)
            dims, where = [], {}
            for d in range(a.ndim):
                for ax in spec.axes(d):
                    where[ax] = len(dims)
                    dims.append(mesh.shape[ax])
                dims.append(shard[d])
            lead = [ax for ax in names if ax in where]
            rest = [i for i in range(len(dims)) if i not in {where[ax] for ax in lead}]
            blocked.append(_transpose(_reshape(x, dims), [where[ax] for ax in lead] + rest))
            present.append(set(lead))
        out_tree_box: list = []

        def level(k: int, xs: list) -> Any:
            if k == len(names):
                out = self.fun(*tree_unflatten(tree, xs))
                flat, out_tree = tree_flatten(out)
                out_tree_box.append(out_tree)
                return flat
            in_axes = tuple(0 if names[k] in p else None for p in present)
            return vmap(lambda *ys: level(k + 1, list(ys)), in_axes=in_axes, out_axes=0, axis_name=names[k])(*xs)
        flat = level(0, blocked)
        out_tree = out_tree_box[-1]
        out_specs = spec_leaves("out_specs", self.out_specs, out_tree)
        return tree_unflatten(out_tree, [_constrained(self._assemble(mesh, y, spec), mesh, spec)
                                         for y, spec in zip(flat, out_specs)])

    @staticmethod
    def _assemble(mesh: Mesh, y: Any, spec: PartitionSpec) -> Any:
        """[m_0, ..., m_k, *shard] (every mesh axis leading) -> the global array out_spec describes."""
        names = list(mesh.axis_names)
        k = len(names)
        shape = list(aval(y).shape)
        rank = len(shape) - k
        check_spec(mesh, spec, rank, "shard_map out_specs")
        used = spec.used()
        unused = [i for i, n in enumerate(names) if n not in used]
        if unused:
            from ...hlo.attrs import SliceRange
            ranges = tuple(SliceRange(0, 1 if i in unused else n, 1) for i, n in enumerate(shape))
            sliced = [1 if i in unused else n for i, n in enumerate(shape)]
            y = bind("slice", [y], {"slice": ranges}, shape=_shape(y, sliced), name="slice")
            y = _reshape(y, [n for i, n in enumerate(shape) if i not in unused])
        kept = [n for n in names if n in used]
        perm = []
        for d in range(rank):
            perm += [kept.index(ax) for ax in spec.axes(d)] + [len(kept) + d]
        y = _transpose(y, perm)
        out = [n * t for n, t in zip(shape[k:], tiles(mesh, spec, rank))]
        return _reshape(y, out)


def _constrained(x: Any, mesh: Mesh, spec: PartitionSpec) -> Any:
    """x marked with its shard_map sharding when a sharded jit traces (its partitioner then places the blocks on
    the mesh); x itself otherwise."""
    from .sharded_jit import with_sharding_constraint
    return with_sharding_constraint(x, NamedSharding(mesh, spec))


def shard_map(f: Callable | None = None, mesh: Mesh | None = None, in_specs: Any = None, out_specs: Any = None, *,
              check_rep: bool = True, check_vma: bool = True, auto: Any = frozenset(), axis_names: Any = None,
              backend: str | None = None) -> Any:
    """jax.shard_map / jax.experimental.shard_map.shard_map; check_rep / check_vma / auto are accepted."""
    if out_specs is None:
        raise XlapyError("shard_map needs out_specs")
    if f is None:
        return lambda g: ShardMapped(g, mesh, in_specs, out_specs, backend)
    return ShardMapped(f, mesh, in_specs, out_specs, backend)


def smap(f: Callable | None = None, /, *, in_axes: Any = 0, out_axes: Any, axis_name: Any) -> Any:
    """shard_map over one axis of the current mesh (jax.smap): in_axes / out_axes say which dimension of each
    argument / result that axis splits (an int, None, or a tuple with one entry per argument)."""
    def spec(axis: Any) -> PartitionSpec:
        return PartitionSpec() if axis is None else PartitionSpec(*([None] * axis + [axis_name]))

    def specs(axes: Any) -> Any:
        return tuple(spec(a) for a in axes) if isinstance(axes, (tuple, list)) else spec(axes)

    def wrap(g: Callable) -> Callable:
        @functools.wraps(g)
        def run(*args):
            in_specs = specs(in_axes) if isinstance(in_axes, (tuple, list)) else (spec(in_axes),) * len(args)
            return shard_map(g, mesh=None, in_specs=in_specs, out_specs=specs(out_axes))(*args)
        return run
    return wrap if f is None else wrap(f)
