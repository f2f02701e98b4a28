"""Programs over a mesh of every process's devices (under `xlapy.distributed.initialize()`): which mesh
positions this process runs, and global results from the shards each process computed.

A mesh position p runs on the device mesh.devices.flat[p] (spmd's device assignment is the mesh's device ids),
so the process owning that device runs it. Arguments are global values in every process (as a jitted function's
numpy arguments are in JAX); a process passes only its positions' shards. Results are put back together
whole in every process: the tiles no process holds entirely are exchanged by one MPI Allgatherv per result
(each distinct tile sent once, by the owner of its first position); a result whose tiles every process
already holds (replicated, or split only along this process's devices) needs no message.

| case | positions run here | results |
|---|---|---|
| one process, or a mesh of at most this process's devices | every position | the local tiles |
| a mesh of every global device | those of this process's devices | local tiles + Allgatherv of the others |
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np


@dataclass(frozen=True)
class Placement:
    """positions[i]: the mesh position run by the executable's i-th local instance; owners[p]: the process
    running position p (all 0 when the program runs inside this process)."""
    positions: tuple[int, ...]
    owners: tuple[int, ...]
    spans_processes: bool


def device_assignment(mesh: Any) -> Any:
    """spmd's device assignment for a program over `mesh` (a 1 x mesh.size table), or None when one process
    runs it (then positions are the local devices in order, as before)."""
    from ...backends import devices
    if devices.process_count() == 1 or mesh.size != devices.device_count():
        return None
    return np.asarray([[d.id for d in mesh.devices.flat]], dtype=np.int64)


def placement(executable: Any) -> Placement:
    """Where the positions of a program compiled by spmd.compile(num_partitions=mesh.size) run."""
    from ...backends import devices
    n = executable.num_partitions
    if not executable.spans_processes:
        return Placement(tuple(range(n)), (0,) * n, False)
    ids = executable.assignment.reshape(-1)
    return Placement(tuple(p for _, p in executable.logical), tuple(devices.owner(int(d)) for d in ids), True)


def local_args(place: Placement, values: Sequence[np.ndarray], indices: Sequence[Sequence[tuple]]) -> list[list]:
    """Per local instance, its shard of every value (indices[k][p]: value k's slices at position p)."""
    return [[v[idx[p]] for v, idx in zip(values, indices)] for p in place.positions]


def assemble(place: Placement, shape: tuple, dtype: Any, indices: Sequence[tuple], local_tiles: Sequence[Any]
             ) -> np.ndarray:
    """The whole result from the tiles of the local instances (local_tiles[i]: position place.positions[i]'s);
    indices[p]: the slices of position p's tile."""
    full = np.empty(shape, dtype)
    mine = dict(zip(place.positions, local_tiles))
    for p in reversed(place.positions):
        full[indices[p]] = mine[p]
    if not place.spans_processes or full.size == 0:
        return full
    keys = [tuple((s.start, s.stop) for s in idx) for idx in indices]
    first: dict[tuple, int] = {}
    for p, key in enumerate(keys):
        first.setdefault(key, p)
    held = [{keys[p] for p, o in enumerate(place.owners) if o == k} for k in range(max(place.owners) + 1)]
    if all(len(h) == len(first) for h in held):
        return full                         # every process holds every tile already
    senders = sorted(first.values())        # each distinct tile once, from its first position's owner
    from ...distributed import world
    MPI, comm = world()
    itemsize = np.dtype(dtype).itemsize
    sizes = {p: int(np.prod(full[indices[p]].shape, dtype=np.int64)) * itemsize for p in senders}
    counts = [sum(sizes[p] for p in senders if place.owners[p] == k) for k in range(comm.Get_size())]
    send = [np.ascontiguousarray(mine[p]).reshape(-1).view(np.uint8) for p in senders
            if place.owners[p] == comm.Get_rank()]
    sendbuf = np.concatenate(send) if send else np.empty(0, np.uint8)
    recv = np.empty(sum(counts), np.uint8)
    displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    comm.Allgatherv(sendbuf, [recv, counts, displs.tolist(), MPI.BYTE])
    offset = {k: int(displs[k]) for k in range(len(counts))}
    for p in senders:               # a process's tiles arrive in its senders' order
        k = place.owners[p]
        tile_shape = full[indices[p]].shape
        full[indices[p]] = recv[offset[k]:offset[k] + sizes[p]].view(dtype).reshape(tile_shape)
        offset[k] += sizes[p]
    return full


def from_process_local(sharding: Any, local_data: Any, global_shape: Any = None) -> np.ndarray:
    """jax.make_array_from_process_local_data under several processes: `local_data` is the block of the global
    array this process's devices' shards cover (their bounding box, e.g. its rows of a batch split over a mesh
    axis that spans the processes); the processes exchange their blocks (one MPI Allgatherv) and each gets the
    whole value. global_shape None: the data is split along dimension 0 between the processes (JAX's guess)."""
    from ...backends import devices
    from ...distributed import world
    from ...errors import XlapyError
    local = np.ascontiguousarray(np.asarray(local_data))
    count, me = devices.process_count(), devices.process_index()
    shape = tuple(int(d) for d in global_shape) if global_shape is not None else \
        (local.shape[0] * count,) + tuple(local.shape[1:]) if local.ndim else ()
    indices = sharding.indices(shape)
    owners = [getattr(d, "process_index", 0) for d in sharding.mesh.devices.flat]
    boxes = []
    for k in range(count):
        mine = [idx for idx, o in zip(indices, owners) if o == k]
        if not mine:
            raise XlapyError(f"make_array_from_process_local_data: process {k} has no device in the mesh "
                             f"{sharding.mesh}")
        boxes.append(tuple(slice(min(i[d].start for i in mine), max(i[d].stop for i in mine))
                           for d in range(len(shape))))
    want = tuple(b.stop - b.start for b in boxes[me])
    if local.shape != want:
        raise XlapyError(f"make_array_from_process_local_data: process {me}'s devices hold the block "
                         f"{[(b.start, b.stop) for b in boxes[me]]} of the global shape {shape} under {sharding}, "
                         f"of shape {want}; got local data of shape {local.shape}")
    MPI, comm = world()
    itemsize = local.dtype.itemsize
    counts = [int(np.prod([b.stop - b.start for b in box], dtype=np.int64)) * itemsize for box in boxes]
    displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64).tolist()
    recv = np.empty(sum(counts), np.uint8)
    comm.Allgatherv(local.reshape(-1).view(np.uint8), [recv, counts, displs, MPI.BYTE])
    full = np.empty(shape, local.dtype)
    for box, n, at in zip(boxes, counts, displs):
        full[box] = recv[at:at + n].view(local.dtype).reshape([b.stop - b.start for b in box])
    return full


__all__ = ["Placement", "assemble", "device_assignment", "from_process_local", "local_args", "placement"]
