"""Arrays that know their sharding: `ShardedArray` (an xlapy.Array whose `.sharding` is a NamedSharding or the
sharding the partitioner chose), `device_put(x, sharding)`, and the shards of a value.

The value is kept whole in host memory (every device of one process shares it); `.addressable_shards` slices it
per device. What makes it sharded is the program that consumes it: sharded jit splits it by its sharding.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...errors import XlapyError
from ..array import Array, is_concrete_array
from ..pytree import tree_flatten, tree_unflatten
from .mesh import NamedSharding, PartitionSpec, SingleDeviceSharding, current_mesh


class TiledSharding:
    """A sharding the partitioner chose (an HLO tile assignment over N devices), when no PartitionSpec says it."""

    def __init__(self, tiles: Any, devices: Sequence[Any]):
        self.tiles = tiles              # passes.spmd_sharding.Sharding
        self.devices = list(devices)

    def indices(self, shape: Sequence[int]) -> list[tuple[slice, ...]]:
        local = self.tiles.local_dims(tuple(shape))
        out = []
        for p in range(self.tiles.num_devices):
            coords = np.argwhere(self.tiles.tiles == p)[0][:-1]
            out.append(tuple(slice(int(c) * n, (int(c) + 1) * n) for c, n in zip(coords, local)))
        return out

    def shard_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.tiles.local_dims(tuple(shape))

    def hlo_text(self, rank: int) -> str:
        return self.tiles.to_text()

    @property
    def device_set(self) -> set:
        return set(self.devices)

    @property
    def is_fully_replicated(self) -> bool:
        return self.tiles.is_replicated

    def __repr__(self) -> str:
        return f"GSPMDSharding({self.tiles.to_text()})"


@dataclass(frozen=True)
class Shard:
    """One device's part of an array (jax.Shard)."""
    device: Any
    index: tuple
    replica_id: int
    data: Array


def default_sharding() -> SingleDeviceSharding:
    from ...backends import devices
    return SingleDeviceSharding(devices.devices()[0])


class ShardedArray(Array):
    """An Array with a sharding (sharded jit's results, device_put with a sharding)."""
    __slots__ = ("_sharding",)

    def __init__(self, value: Any, sharding: Any, weak_type: bool = False):
        super().__init__(value, weak_type=weak_type)
        self._sharding = sharding

    @property
    def sharding(self) -> Any:
        return self._sharding

    @property
    def addressable_shards(self) -> list[Shard]:
        s = self._sharding
        if isinstance(s, SingleDeviceSharding):
            return [Shard(s.device, tuple(slice(None) for _ in self.shape), 0, Array(self._value))]
        devices = list(s.mesh.devices.flat) if isinstance(s, NamedSharding) else s.devices
        seen: dict[tuple, int] = {}
        out = []
        from ...backends import devices as device_table
        here = device_table.process_index()
        for device, index in zip(devices, s.indices(self.shape)):
            key = tuple((i.start, i.stop) for i in index)
            if getattr(device, "process_index", here) == here:       # under MPI: this process's devices only
                out.append(Shard(device, index, seen.get(key, 0), Array(self._value[index])))
            seen[key] = seen.get(key, 0) + 1
        return out

    def __reduce__(self):
        return (Array, (self._value,))


def resolve(sharding: Any, what: str) -> Any:
    """A NamedSharding / SingleDeviceSharding; a bare PartitionSpec takes the mesh of `with mesh:`."""
    if isinstance(sharding, PartitionSpec):
        mesh = current_mesh()
        if mesh is None:
            raise XlapyError(f"{what}: a bare PartitionSpec {sharding} needs a mesh: use NamedSharding(mesh, spec) "
                             f"or call it inside `with mesh:`")
        return NamedSharding(mesh, sharding)
    if sharding is None or isinstance(sharding, (NamedSharding, SingleDeviceSharding, TiledSharding)):
        return sharding
    if hasattr(sharding, "id") and hasattr(sharding, "platform"):         # a Device
        return SingleDeviceSharding(sharding)
    raise XlapyError(f"{what}: expected a NamedSharding, PartitionSpec, SingleDeviceSharding or device, got "
                     f"{type(sharding).__name__}")


def device_put(x: Any, device: Any = None, *, src: Any = None, donate: bool = False, may_alias: Any = None) -> Any:
    """Every array leaf of `x` as an xlapy.Array (jax.device_put); with a sharding (or a pytree prefix of them),
    an Array that carries it (its dimensions must divide into the sharding's tiles)."""
    leaves, tree = tree_flatten(x)
    if device is None:
        return tree_unflatten(tree, [v if is_concrete_array(v) else Array(v) for v in leaves])
    if isinstance(device, (NamedSharding, SingleDeviceSharding, PartitionSpec, TiledSharding)) or \
            hasattr(device, "platform"):
        targets = [device] * len(leaves)
    else:
        targets = tree_flatten(device, is_leaf=lambda s: s is None or isinstance(s, PartitionSpec))[0]
        if len(targets) != len(leaves):
            raise XlapyError(f"device_put: {len(targets)} shardings for {len(leaves)} arrays")
    out = []
    for v, s in zip(leaves, targets):
        s = resolve(s, "device_put")
        a = v if is_concrete_array(v) else Array(v)
        if isinstance(s, NamedSharding):
            s.shard_shape(a.shape)          # checks divisibility and the spec's rank
        out.append(ShardedArray(a, s, weak_type=a.weak_type) if s is not None else a)
    return tree_unflatten(tree, out)
