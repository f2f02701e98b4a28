"""jit with in_shardings / out_shardings: one global program, partitioned by the SPMD partitioner (GSPMD).

jit traces the function on the global shapes as usual; the parameters get the HLO sharding of their
in_shardings (an argument without one: its own NamedSharding if device_put gave it one, else replicated), the
results those of out_shardings (the others: what propagation finds), with_sharding_constraint marks values
inside (`custom-call(x), custom_call_target="Sharding"`, as JAX lowers it). The module (num_partitions = the
mesh size) goes through sharding-propagation and spmd-partitioner (passes/; `--xla_dump_to` writes the
partitioned module as *.spmd_after_optimizations.txt), then backends/spmd.py compiles it once and runs it on
the mesh's devices, each argument split by its sharding; the results are put back together and carry their
shardings (ShardedArray). Under several processes (xlapy.distributed) a mesh of every global device runs each
process's positions there; the results are whole in every process (process_shards.py).
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ...errors import XlapyError
from ...hlo import Shape
from ..array import host_value
from ..pytree import PyTreeDef, tree_flatten
from ..tracer import Tracer, bind, current_trace
from .mesh import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding
from .process_shards import assemble, device_assignment, local_args, placement
from .sharded_array import ShardedArray, TiledSharding, device_put, resolve


class _Tracing(threading.local):
    def __init__(self):
        self.depth = 0


_TRACING = _Tracing()


def _is_leaf(s: Any) -> bool:
    return s is None or isinstance(s, (NamedSharding, SingleDeviceSharding, PartitionSpec, TiledSharding)) or \
        hasattr(s, "platform")


def prefix_leaves(what: str, spec: Any, tree: PyTreeDef) -> list:
    """A sharding per leaf of `tree` from `spec`, a tree prefix of it with shardings (or None) at its leaves."""
    if _is_leaf(spec):
        return [spec] * tree.num_leaves
    children = list(spec.values()) if isinstance(spec, dict) else list(spec) if isinstance(spec, (tuple, list)) \
        else None
    if children is None or tree.node_type is None or len(children) != len(tree.children):
        raise XlapyError(f"jit {what} must be a sharding or a tree prefix of the arguments / results; got {spec!r} "
                         f"for a value of structure {tree!r}")
    out = []
    for c, t in zip(children, tree.children):
        out.extend(prefix_leaves(what, c, t))
    return out


class _Program:
    def __init__(self, executable, n, param_tiles, out_shardings, out_tree, out_avals, devices):
        self.executable, self.n = executable, n
        self.param_tiles, self.out_shardings = param_tiles, out_shardings
        self.out_tree, self.out_avals, self.devices = out_tree, out_avals, devices


class ShardedJit:
    """The in_shardings / out_shardings of one jitted function and its partitioned programs by signature."""

    def __init__(self, in_shardings: Any, out_shardings: Any):
        self.in_shardings, self.out_shardings = in_shardings, out_shardings
        self._programs: dict = {}
        self._lock = threading.Lock()

    def call(self, jitted: Any, args: tuple, kwargs: dict) -> Any:
        sig, dyn, leaves = jitted._signature(args, kwargs)
        arg_shardings = self._arg_shardings(sig.tree, leaves)
        key = (sig, tuple(None if s is None else (type(s).__name__, hash(s)) for s in arg_shardings))
        with self._lock:
            program = self._programs.get(key)
            if program is None:
                program = self._programs[key] = self._compile(jitted, sig, args, kwargs, arg_shardings)
        place = placement(program.executable)
        hosts = [np.asarray(host_value(leaf)) for leaf in leaves]
        per_device = local_args(place, hosts, [tiles.indices(h.shape) for h, tiles in zip(hosts, program.param_tiles)])
        per_device = [[np.ascontiguousarray(v) if v.ndim else v for v in args] for args in per_device]
        outs = program.executable(per_device)
        outs = [list(o) if isinstance(o, (tuple, list)) else [o] for o in outs]
        results = []
        for k, (s, a) in enumerate(zip(program.out_shardings, program.out_avals)):
            full = assemble(place, a.shape, a.dtype, s.indices(a.shape), [o[k] for o in outs])
            results.append(ShardedArray(full, s, weak_type=a.weak_type))
        from ..pytree import tree_unflatten
        return tree_unflatten(program.out_tree, results)

    def _arg_shardings(self, tree: PyTreeDef, leaves: list) -> list:
        args_tree, kwargs_tree = tree.children
        if self.in_shardings is None:
            given = [None] * tree.num_leaves
        else:
            spec = self.in_shardings
            if isinstance(spec, list):
                spec = tuple(spec)
            given = prefix_leaves("in_shardings", spec, args_tree) + [None] * kwargs_tree.num_leaves
        out = []
        for s, leaf in zip(given, leaves):
            s = resolve(s, "jit in_shardings")
            if s is None and isinstance(leaf, ShardedArray) and isinstance(leaf.sharding, NamedSharding):
                s = leaf.sharding           # a committed argument keeps its sharding
            out.append(s)
        return out

    def _compile(self, jitted: Any, sig: Any, args: tuple, kwargs: dict, arg_shardings: list) -> _Program:
        from ...backends import spmd
        from ...passes.optimize import optimize
        from ...passes.pipelines import spmd_pipeline
        from ...passes.sharding_propagation import has_shardings, propagate
        from ...passes.spmd_partitioner import partition_module
        from .device_program import check_devices
        _TRACING.depth += 1
        try:
            lowered = jitted._trace(sig, args, kwargs)
        finally:
            _TRACING.depth -= 1
        out_given = prefix_leaves("out_shardings", self.out_shardings, lowered.out_tree) \
            if self.out_shardings is not None else [None] * lowered.out_tree.num_leaves
        out_given = [resolve(s, "jit out_shardings") for s in out_given]
        mesh = _mesh_of(arg_shardings + out_given)
        n = mesh.size
        check_devices(n, f"jit of {jitted.__name__} with shardings over {mesh}")
        module = lowered.module
        module.attrs["num_partitions"] = str(n)
        entry = module.entry
        for param, s in zip(entry.parameters, arg_shardings):
            param.attrs["sharding"] = _text(s, param.shape.rank)
        _annotate_outputs(entry, out_given)
        shardings = propagate(module)
        param_tiles = [TiledSharding(shardings[id(p)], list(mesh.devices.flat)) for p in entry.parameters]
        root = shardings[id(entry.root)]
        root_parts = list(root.elements) if root.is_tuple and lowered.out_tree.num_leaves != 1 else [root]
        out_shardings = [g if isinstance(g, NamedSharding) else named_or_tiled(mesh, r) for g, r in
                         zip(out_given, root_parts)]
        n_out = lowered.out_tree.num_leaves
        shapes = [entry.root.shape] if n_out == 1 else list(entry.root.shape.tuple_shapes)
        out_avals = [_Result(sh, w) for sh, w in zip(shapes, lowered.out_weak)]
        optimize(module, spmd_pipeline(), platform="spmd")
        if n == 1 and has_shardings(module):       # one partition: the passes skip it; drop the annotations
            partition_module(module)
        exe = spmd.compile(module, backend=sig.backend, num_partitions=n, device_assignment=device_assignment(mesh))
        return _Program(exe, n, param_tiles, out_shardings, lowered.out_tree, out_avals, list(mesh.devices.flat))


class _Result:
    """The global shape, dtype and weak type of one result."""

    def __init__(self, shape: Shape, weak_type: bool):
        self.shape, self.dtype, self.weak_type = tuple(shape.dims), shape.dtype, weak_type


def named_or_tiled(mesh: Mesh, tiles: Any) -> Any:
    """The NamedSharding over `mesh` whose HLO sharding is `tiles` (the partitioner's choice), if one is."""
    import itertools
    rank = tiles.rank
    text = tiles.to_text()
    for choice in itertools.product(range(rank + 1), repeat=len(mesh.axis_names)):
        parts = [tuple(a for a, c in zip(mesh.axis_names, choice) if c == d) for d in range(rank)]
        spec = PartitionSpec(*[None if not p else p[0] if len(p) == 1 else p for p in parts])
        if NamedSharding(mesh, spec).hlo_text(rank) == text:
            return NamedSharding(mesh, spec)
    return TiledSharding(tiles, list(mesh.devices.flat))


def _mesh_of(shardings: list) -> Mesh:
    meshes = {s.mesh for s in shardings if isinstance(s, NamedSharding)}
    if not meshes:
        raise XlapyError("jit in_shardings / out_shardings: no NamedSharding names a mesh (give one a "
                         "NamedSharding(mesh, spec))")
    if len(meshes) > 1:
        raise XlapyError(f"jit in_shardings / out_shardings use different meshes: {sorted(map(repr, meshes))}")
    return meshes.pop()


def _text(s: Any, rank: int) -> str:
    if isinstance(s, NamedSharding):
        return s.hlo_text(rank)
    return "{replicated}"


def _annotate_outputs(entry: Any, given: list) -> None:
    from ...passes.build import make
    root = entry.root
    def marked(op, s):
        return entry.add_instruction(make("custom-call", [op], {"custom_call_target": "Sharding",
                                                                "sharding": _text(s, op.shape.rank)},
                                          shape=op.shape, name="sharding"))
    if len(given) == 1:
        if given[0] is not None:
            entry.root = marked(root, given[0])
        return
    for i, s in enumerate(given):
        if s is not None:
            root.replace_operand_with(i, marked(root.operands[i], s))


def reshard(x: Any, out_shardings: Any) -> Any:
    """x with the sharding `out_shardings` (jax.reshard / jax.sharding.reshard)."""
    return with_sharding_constraint(x, out_shardings)


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """x, constrained to `shardings` inside a sharded jit (jax.lax.with_sharding_constraint); outside any trace,
    device_put(x, shardings); inside other traces, x itself (nothing is partitioned there)."""
    if current_trace() is None:
        return device_put(x, shardings)
    leaves, tree = tree_flatten(x)
    targets = prefix_leaves("with_sharding_constraint", shardings, tree)
    if _TRACING.depth == 0:
        return x
    out = []
    for v, s in zip(leaves, targets):
        s = resolve(s, "with_sharding_constraint")
        if not isinstance(v, Tracer) or s is None:
            out.append(v)
            continue
        text = _text(s, v.ndim)
        out.append(bind("custom-call", [v], {"custom_call_target": "Sharding", "sharding": text},
                        shape=v.aval.hlo_shape, name="sharding"))
    from ..pytree import tree_unflatten
    return tree_unflatten(tree, out)
