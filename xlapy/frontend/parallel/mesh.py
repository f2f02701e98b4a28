"""Meshes and shardings (jax.sharding): Mesh, PartitionSpec (P), NamedSharding, SingleDeviceSharding.

A Mesh is an n-dimensional array of devices with a name per axis. A PartitionSpec says, per array dimension,
which mesh axes split it (None: not split; a name; a tuple of names, major first); mesh axes it does not name
replicate the array. A NamedSharding(mesh, spec) is that placement of an array:

    shard_shape(shape)          the shape of one shard
    indices(shape)              per mesh position (row-major over the mesh), the tuple of slices of its shard
    hlo_text(rank)              XLA's sharding attribute: {replicated}, {devices=[2,1]0,1},
                                {devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}

Device ids in HLO shardings and in the collectives are the mesh positions (row-major): partition p of the
partitioned program runs the shard of mesh position p (on the mesh's device at that position).
"""
from __future__ import annotations

import enum
import threading
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from ...errors import XlapyError


class Sharding:
    """The base class of every sharding (jax.sharding.Sharding)."""


class AxisType(enum.Enum):
    """How a mesh axis is used (jax.sharding.AxisType); xlapy treats every axis as Auto."""
    Auto = "auto"
    Explicit = "explicit"
    Manual = "manual"


class PartitionSpec(tuple):
    """Per array dimension: None, a mesh axis name, or a tuple of names (jax.sharding.PartitionSpec)."""

    UNCONSTRAINED = "unconstrained"

    def __new__(cls, *parts: Any):
        return super().__new__(cls, tuple(tuple(p) if isinstance(p, list) else p for p in parts))

    def __repr__(self) -> str:
        return f"PartitionSpec{tuple.__repr__(self)}"

    def axes(self, dim: int) -> tuple:
        """The mesh axes splitting dimension `dim` (none past the spec's length)."""
        if dim >= len(self) or self[dim] is None:
            return ()
        part = self[dim]
        return tuple(part) if isinstance(part, tuple) else (part,)

    def used(self) -> list:
        return [a for d in range(len(self)) for a in self.axes(d)]


P = PartitionSpec


class Mesh:
    """Devices in an n-d array with named axes (jax.sharding.Mesh); `with mesh:` makes it the current mesh."""

    def __init__(self, devices: Any, axis_names: Sequence[str] | str, *, axis_types: Any = None):
        self.devices = np.asarray(devices, dtype=object)
        self.axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if self.devices.ndim != len(self.axis_names):
            raise XlapyError(f"Mesh: {len(self.axis_names)} axis names {self.axis_names} for a device array of rank "
                             f"{self.devices.ndim}")
        if len(set(self.axis_names)) != len(self.axis_names):
            raise XlapyError(f"Mesh: axis names must be unique, got {self.axis_names}")

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[np.int64])(self.devices)

    @property
    def local_devices(self) -> list:
        return list(self.devices.flat)

    def __enter__(self) -> "Mesh":
        _CURRENT.stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _CURRENT.stack.pop()

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Mesh) and self.axis_names == other.axis_names and \
            self.devices.shape == other.devices.shape and (self.device_ids == other.device_ids).all()

    def __hash__(self) -> int:
        return hash((self.axis_names, self.devices.shape, tuple(self.device_ids.flat)))

    def __repr__(self) -> str:
        return f"Mesh({', '.join(f'{n!r}: {s}' for n, s in self.shape.items())})"


class _Current(threading.local):
    def __init__(self):
        self.stack: list[Mesh] = []


_CURRENT = _Current()


def current_mesh() -> Mesh | None:
    return _CURRENT.stack[-1] if _CURRENT.stack else None


def get_mesh() -> Mesh | None:
    """The mesh of the innermost `with mesh:` / set_mesh (jax.sharding.get_mesh)."""
    return current_mesh()


class set_mesh:        # noqa: N801 -- jax.set_mesh: a function that may also be used as a context manager
    """Make `mesh` the current mesh (jax.set_mesh): `with set_mesh(mesh):`, or for the rest of the thread."""

    def __init__(self, mesh: Mesh):
        if not isinstance(mesh, Mesh):
            raise XlapyError(f"set_mesh needs a Mesh, got {type(mesh).__name__}")
        self.mesh = mesh
        _CURRENT.stack.append(mesh)

    def __enter__(self) -> Mesh:
        return self.mesh

    def __exit__(self, *exc) -> None:
        if _CURRENT.stack and _CURRENT.stack[-1] is self.mesh:
            _CURRENT.stack.pop()


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], *, devices: Any = None,
              axis_types: Any = None) -> Mesh:
    """A mesh of the first prod(axis_shapes) devices (jax.make_mesh)."""
    from ...backends import devices as device_table
    n = int(np.prod(axis_shapes, dtype=np.int64))
    available = list(devices) if devices is not None else device_table.devices()
    if n > len(available):
        raise XlapyError(f"make_mesh: a mesh of shape {tuple(axis_shapes)} needs {n} devices, but only "
                         f"{len(available)} are available (XLA_FLAGS=--xla_force_host_platform_device_count={n})")
    arr = np.empty(n, dtype=object)
    arr[:] = available[:n]
    return Mesh(arr.reshape(tuple(axis_shapes)), axis_names)


def check_spec(mesh: Mesh, spec: PartitionSpec, rank: int, what: str) -> None:
    if len(spec) > rank:
        raise XlapyError(f"{what}: the spec {spec} has {len(spec)} entries for an array of rank {rank}")
    used = spec.used()
    unknown = [a for a in used if a not in mesh.axis_names]
    if unknown:
        raise XlapyError(f"{what}: the spec {spec} names the axes {unknown}, which the mesh {mesh} does not have")
    if len(set(used)) != len(used):
        raise XlapyError(f"{what}: the spec {spec} uses a mesh axis twice")


def tiles(mesh: Mesh, spec: PartitionSpec, rank: int) -> list[int]:
    """The number of shards along each dimension."""
    return [int(np.prod([mesh.shape[a] for a in spec.axes(d)], dtype=np.int64)) for d in range(rank)]


def block_index(mesh: Mesh, spec: PartitionSpec, dim: int, coords: dict[str, int]) -> int:
    """The shard index along `dim` of the mesh position `coords` (row-major over the dim's axes)."""
    index = 0
    for a in spec.axes(dim):
        index = index * mesh.shape[a] + coords[a]
    return index


def positions(mesh: Mesh) -> Iterator[dict[str, int]]:
    """Every mesh position as {axis: coordinate}, row-major (position p is partition p)."""
    for flat in range(mesh.size):
        yield dict(zip(mesh.axis_names, (int(c) for c in np.unravel_index(flat, mesh.axis_sizes))))


class NamedSharding(Sharding):
    """An array placed on a mesh by a PartitionSpec (jax.sharding.NamedSharding)."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec | None = None, *, memory_kind: Any = None):
        if not isinstance(mesh, Mesh):
            raise XlapyError(f"NamedSharding needs a Mesh, got {type(mesh).__name__}")
        self.mesh = mesh
        self.spec = spec if isinstance(spec, PartitionSpec) else PartitionSpec(*(spec or ()))
        check_spec(mesh, self.spec, max(len(self.spec), 0), "NamedSharding")

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, NamedSharding) and self.mesh == other.mesh and \
            tuple(self.spec) == tuple(other.spec)

    def __hash__(self) -> int:
        return hash((self.mesh, tuple(self.spec)))

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    @property
    def device_set(self) -> set:
        return set(self.mesh.devices.flat)

    @property
    def addressable_devices(self) -> set:
        """The mesh's devices this process runs (all of them in one process)."""
        from ...backends import devices
        here = devices.process_index()
        return {d for d in self.device_set if getattr(d, "process_index", here) == here}

    def is_fully_replicated_for(self, rank: int) -> bool:
        return all(t == 1 for t in tiles(self.mesh, self.spec, rank))

    @property
    def is_fully_replicated(self) -> bool:
        return not self.spec.used()

    def shard_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        check_spec(self.mesh, self.spec, len(shape), "NamedSharding")
        out = []
        for d, (n, t) in enumerate(zip(shape, tiles(self.mesh, self.spec, len(shape)))):
            if n % t:
                raise XlapyError(f"NamedSharding {self.spec}: dimension {d} of the shape {tuple(shape)} (size {n}) is "
                                 f"not divisible by the {t} shards of the mesh axes {self.spec.axes(d)}")
            out.append(n // t)
        return tuple(out)

    def indices(self, shape: Sequence[int]) -> list[tuple[slice, ...]]:
        """Per mesh position (row-major), the slices of its shard of an array of `shape`."""
        block = self.shard_shape(shape)
        out = []
        for coords in positions(self.mesh):
            out.append(tuple(slice(block_index(self.mesh, self.spec, d, coords) * b,
                                   (block_index(self.mesh, self.spec, d, coords) + 1) * b)
                             for d, b in enumerate(block)))
        return out

    def devices_indices_map(self, shape: Sequence[int]) -> dict:
        return dict(zip(self.mesh.devices.flat, self.indices(shape)))

    def hlo_text(self, rank: int) -> str:
        """The HLO sharding attribute of an array of this rank."""
        check_spec(self.mesh, self.spec, rank, "NamedSharding")
        t = tiles(self.mesh, self.spec, rank)
        if all(x == 1 for x in t):
            return "{replicated}"
        used = self.spec.used()
        order = used + [a for a in self.mesh.axis_names if a not in used]
        ids = np.arange(self.mesh.size).reshape(self.mesh.axis_sizes)
        ids = np.transpose(ids, [self.mesh.axis_names.index(a) for a in order]).reshape(-1)
        replicate = self.mesh.size // int(np.prod(t, dtype=np.int64))
        dims = t + ([replicate] if replicate > 1 else [])
        text = "{devices=[%s]%s" % (",".join(map(str, dims)), ",".join(map(str, ids)))
        return text + (" last_tile_dim_replicate}" if replicate > 1 else "}")


class SingleDeviceSharding(Sharding):
    """The whole array on one device (jax.sharding.SingleDeviceSharding)."""

    def __init__(self, device: Any, *, memory_kind: Any = None):
        self.device = device

    @property
    def device_set(self) -> set:
        return {self.device}

    @property
    def num_devices(self) -> int:
        return 1

    is_fully_replicated = True

    def shard_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(shape)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SingleDeviceSharding) and self.device == other.device

    def __hash__(self) -> int:
        return hash(self.device)

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self.device!r})"


# -- the rest of jax.sharding's names: abstract meshes and axis-type helpers (xlapy's axes are all Auto) -----------
@dataclass(frozen=True)
class AbstractDevice:
    """The kind of device a mesh is made of (jax.sharding.AbstractDevice)."""
    device_kind: str
    num_cores: int | None
    platform: str


class AbstractMesh:
    """A mesh's axis names and sizes without devices (jax.sharding.AbstractMesh)."""

    def __init__(self, axis_sizes: Sequence[int], axis_names: Sequence[str], axis_types: Any = None, *,
                 abstract_device: Any = None):
        self.axis_sizes, self.axis_names = tuple(axis_sizes), tuple(axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise XlapyError(f"AbstractMesh: {len(self.axis_names)} names for {len(self.axis_sizes)} sizes")
        self.abstract_device = abstract_device

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return int(np.prod(self.axis_sizes, dtype=np.int64))

    def __repr__(self) -> str:
        return f"AbstractMesh({', '.join(f'{n!r}: {s}' for n, s in self.shape.items())})"


@dataclass(frozen=True)
class ManualAxisType:
    """jax.sharding.ManualAxisType: which manual axes a value varies over (xlapy does not track it)."""
    varying: frozenset = frozenset()
    unreduced: frozenset = frozenset()
    reduced: frozenset = frozenset()


def get_abstract_mesh() -> AbstractMesh | None:
    """The current mesh's AbstractMesh (jax.sharding.get_abstract_mesh); None outside any mesh."""
    mesh = current_mesh()
    return None if mesh is None else AbstractMesh(mesh.axis_sizes, mesh.axis_names)


def use_abstract_mesh(mesh: Any):
    """jax.sharding.use_abstract_mesh: a concrete Mesh becomes current; an AbstractMesh changes nothing."""
    import contextlib
    return set_mesh(mesh) if isinstance(mesh, Mesh) else contextlib.nullcontext(mesh)


def make_single_device_sharding(device: Any, *, memory_kind: Any = None) -> SingleDeviceSharding:
    return SingleDeviceSharding(device, memory_kind=memory_kind)


def _same_function(name: str):
    def decorator(f=None, /, **options):
        if f is None:
            return lambda g: g
        return f
    decorator.__name__ = name
    decorator.__doc__ = (f"jax.sharding.{name}: f itself (xlapy's mesh axes are all Auto: sharding in types is not "
                         f"modelled)")
    return decorator


auto_axes = _same_function("auto_axes")
explicit_axes = _same_function("explicit_axes")
