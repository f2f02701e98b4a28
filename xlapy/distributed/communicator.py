"""Collectives across processes over MPI (XLA:CPU's MPI collectives, in mpi4py).

A run under `xlapy.distributed.initialize()` gets an `MpiCommunicator` (`for_run()`): interpreter/collectives.run
asks it first for the op's family (`all_reduce`, `all_gather`, ...). A group held entirely by this process's
devices meets in shared memory as in one process (the local Rendezvous); a group that crosses processes maps
to one MPI collective over a communicator of the group's processes, in group order (MPI_Comm_create_group,
one per group of devices, made when the module is compiled: `prepare`):

| collective | MPI |
|---|---|
| all-reduce | Iallreduce into the result buffer (SUM, PROD, MAX, MIN, BAND/LAND, BOR/LOR, BXOR/LXOR); dtypes MPI lacks (f16, bf16, ...) and reducers of several ops: Iallgather, then the rank-order fold |
| reduce-scatter | Ireduce_scatter_block over dim 0 (straight into the result buffer); other dims: Iallreduce, then the piece |
| all-gather | Iallgather (into the result buffer when dim 0) |
| all-to-all | Ialltoall (into the result buffer when the split dim is 0; the tuple form stacks its operands) |
| collective-permute | Isend/Irecv between the pairs' processes (a tag per op, pair and operand: MPI's order keeps repeats apart) |
| collective-broadcast | Ibcast from the group's first device |

Each request is polled with a deadline ($XLAPY_COLLECTIVE_TIMEOUT), so a process that never arrives gives an
ExecutionError naming the op and the group, not a hang (MPI cannot cancel a collective: end the job then).
A group with one device per process is one MPI collective as above; a group with several devices in some
process (e.g. all 8 devices of 2 processes x 4) is served hierarchically (`_gathered`): the process's devices
meet in shared memory and one of them allgathers every process's operands over MPI (Iallgatherv of the pickled
arrays), then each computes its result in rank order; slower, but any collective and any dtype. Reductions over
MPI's Allreduce are MPI's, so sums agree with one process up to summation order.
"""
from __future__ import annotations

import pickle
import threading
import time
import zlib
from functools import lru_cache
from typing import Any

import numpy as np

from ..backends import devices as _devices
from ..backends.interpreter import collectives as semantics
from ..backends.interpreter import rendezvous
from ..errors import ExecutionError, UnimplementedError
from . import world

_COMMS: dict[tuple[int, ...], Any] = {}


def reset() -> None:
    for comm in _COMMS.values():
        try:
            comm.Free()
        except Exception:   # noqa: BLE001 -- best effort at shutdown
            pass
    _COMMS.clear()


def for_run() -> "MpiCommunicator":
    return MpiCommunicator()


def prepare(module, num_replicas: int, num_partitions: int, assignment) -> None:
    """Make the communicators of every group of `module`'s collectives that crosses processes, when it is compiled
    (every process compiles the same module): creating one is collective over its processes, so doing it at run
    time would hang where a peer skips the collective (a conditional) instead of timing out. Groups are made in
    one sorted order everywhere, each process joining those it has a device in."""
    from ..hlo.collectives import FAMILY, device_groups
    _, world_comm = world()
    me = world_comm.Get_rank()
    wanted = set()
    for comp in module.computations:
        for inst in comp.instructions:
            family = FAMILY.get(inst.opcode)
            if family is None or family == "collective-permute":
                continue
            for g in device_groups(inst, num_replicas, num_partitions, assignment):
                owners = {_devices.owner(d) for d in g}
                if len(owners) > 1 and me in owners:
                    wanted.add(tuple(g))
    for g in sorted(wanted):
        _communicator(world_comm, g)


def _communicator(world_comm, group: tuple):
    # one communicator per group of devices (two groups over the same processes, e.g. {0,2} and {1,3} with
    # two devices per process, run concurrently on two threads: they must not share one)
    comm = _COMMS.get(group)
    if comm is None:
        ranks = list(dict.fromkeys(_devices.owner(d) for d in group))   # its processes, in group order
        tag = zlib.crc32(repr(group).encode()) % 30000      # tells concurrent creations apart
        comm = world_comm.Create_group(world_comm.Get_group().Incl(ranks), tag)
        _COMMS[group] = comm
    return comm


@lru_cache(maxsize=256)
def _op(MPI, reducer: str, dtype: np.dtype):
    logical = np.dtype(dtype) == np.bool_
    table = {"add": MPI.LOR if logical else MPI.SUM, "multiply": MPI.LAND if logical else MPI.PROD,
             "maximum": MPI.LOR if logical else MPI.MAX, "minimum": MPI.LAND if logical else MPI.MIN,
             "and": MPI.LAND if logical else MPI.BAND, "or": MPI.LOR if logical else MPI.BOR,
             "xor": MPI.LXOR if logical else MPI.BXOR}
    return table[reducer]


@lru_cache(maxsize=4096)
def _route_of(group: tuple, rank: int, counts: tuple) -> str:
    """"local" (every device here), "mpi" (one device per process: one MPI collective) or "gathered" (several
    devices in some process: each process's devices meet here, its first one exchanges them all). `counts`:
    every process's device count (part of the key: a later initialize() may change the devices)."""
    owners = [_devices.owner(d) for d in group]
    if all(o == rank for o in owners):
        return "local"
    return "mpi" if len(set(owners)) == len(owners) else "gathered"


_MPI_KINDS = {np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                    np.uint16, np.uint32, np.uint64, np.bool_, np.complex64, np.complex128)}


class MpiCommunicator:
    """One run's communicator: the local Rendezvous for groups inside this process, MPI for the others."""

    def __init__(self):
        self.local = rendezvous.Rendezvous()
        self.MPI, self.world = world()
        self.rank = _devices.process_index()        # MPI's rank (initialize() set it)

    # the generic meeting (local groups only)
    def meet(self, key, group, device, value, compute, what, after=None):
        self._require_local(group, what)        # every family that crosses processes is served above
        return self.local.meet(key, group, device, value, compute, what, after)

    def abort(self, why: str) -> None:
        self.local.abort(why)

    def _require_local(self, group, what: str) -> None:
        if any(_devices.owner(d) != self.rank for d in group):
            raise UnimplementedError(f"{what}: this collective crosses processes over a group MPI cannot serve "
                                     f"({list(group)})")

    # -- helpers ---------------------------------------------------------------------------------------
    def _route(self, group) -> str:
        return _route_of(tuple(group), self.rank, _devices._counts())

    def _gathered(self, spec, ctx, group, operands, outs):
        """Any collective of a group with several devices in a process: the process's devices of the group meet
        in the Rendezvous, the first of them allgathers every process's operands over MPI (pickled, so any dtype),
        and each device computes its own result from all of them (interpreter/collectives.results_from_all)."""
        local = [d for d in group if _devices.owner(d) == self.rank]
        comm = self._comm(group)
        key = ctx.next_key(("gathered", spec.name, spec.opcode, spec.attrs))

        def compute(values, local_rank, shared):
            with shared["lock"]:
                done = shared.setdefault("done", threading.Event())
            if local_rank == 0:
                try:
                    shared["all"] = self._allgather_objects(comm, dict(zip(local, values)), spec, group)
                finally:
                    done.set()
            elif not done.wait(rendezvous.timeout()):
                raise ExecutionError(f"{spec.what}: timed out waiting for this process's exchange over MPI")
            if "all" not in shared:
                raise ExecutionError(f"{spec.what}: this process's exchange over MPI failed")
            everyone = shared["all"]
            results = semantics.results_from_all(spec, [everyone[d] for d in group], group.index(ctx.device))
            return [self._finish(outs, k, np.ascontiguousarray(r)) for k, r in enumerate(results)]
        return self.local.meet(key, local, ctx.device, [np.asarray(x) for x in operands], compute, spec.what)

    def _allgather_objects(self, comm, obj, spec, group) -> dict:
        data = np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
        sizes = np.empty(comm.Get_size(), np.int64)
        self._wait([comm.Iallgather(np.asarray([data.size], np.int64), sizes)], spec, group)
        buf = np.empty(int(sizes.sum()), np.uint8)
        self._wait([comm.Iallgatherv(data, [buf, sizes])], spec, group, buf.nbytes)
        merged: dict = {}
        for chunk in np.split(buf, np.cumsum(sizes)[:-1]):
            merged.update(pickle.loads(chunk.tobytes()))
        return merged

    def _comm(self, group):
        return _communicator(self.world, tuple(group))    # made by prepare() when the module was compiled

    def _wait(self, requests, spec, group, nbytes: int = 0) -> None:
        """Poll until every request completes: a pure spin first (as MPI's own blocking calls spin: each poll
        drives the transfer) for 1 ms plus the time `nbytes` take at 200 MB/s, then yielding the core between
        polls (a late peer may want it: processes can outnumber cores), short sleeps after a second; an
        ExecutionError at the deadline."""
        limit = rendezvous.timeout()
        spin_s = 0.001 + nbytes / 2e8
        start = time.monotonic()
        spins = 0
        test = self.MPI.Request.Testall
        while not test(requests):
            spins += 1
            if spins & 127 == 0:
                waited = time.monotonic() - start
                if waited > limit:
                    raise ExecutionError(f"{spec.what}: timed out after {limit:g} s waiting over MPI for devices "
                                         f"{list(group)} (another process never reached this collective; MPI "
                                         f"cannot cancel it: end the job)")
                if waited > spin_s:
                    time.sleep(0 if waited < 1 else 0.0005)

    @staticmethod
    def _out(outs, k: int, shape, dtype) -> np.ndarray:
        if outs is not None and outs[k].flags.c_contiguous:
            return outs[k]
        return np.empty(shape, dtype)

    @staticmethod
    def _finish(outs, k: int, value: np.ndarray) -> np.ndarray:
        if outs is None:
            return value
        if outs[k] is not value:
            outs[k][...] = value
        return outs[k]

    # -- the families ------------------------------------------------------------------------------------
    def all_reduce(self, spec, ctx, group, operands, outs):
        route = self._route(group)
        if route != "mpi":
            return None if route == "local" else self._gathered(spec, ctx, group, operands, outs)
        comm = self._comm(group)
        results = []
        for k, x in enumerate(operands):
            if type(x) is not np.ndarray or not x.flags.c_contiguous:
                x = np.ascontiguousarray(x)
            if x.dtype in _MPI_KINDS and spec.reducer is not None:
                out = self._out(outs, k, x.shape, x.dtype)
                self._wait([comm.Iallreduce(x, out, _op(self.MPI, spec.reducer, x.dtype))], spec, group, x.nbytes)
            else:
                out = semantics.fold(list(self._gather(comm, x, spec, group)), semantics.combiner(spec, x.dtype))
            results.append(self._finish(outs, k, out))
        return results

    def _gather(self, comm, x: np.ndarray, spec, group) -> np.ndarray:
        n = comm.Get_size()
        buf = np.empty((n,) + x.shape, x.dtype)
        raw = (lambda a: a.view(np.uint8)) if x.dtype not in _MPI_KINDS else (lambda a: a)
        self._wait([comm.Iallgather(raw(np.ascontiguousarray(x)), raw(buf))], spec, group, buf.nbytes)
        return buf

    def reduce_scatter(self, spec, ctx, group, operands, outs):
        route = self._route(group)
        if route != "mpi":
            return None if route == "local" else self._gathered(spec, ctx, group, operands, outs)
        comm = self._comm(group)
        n = len(group)
        rank = group.index(ctx.device)
        results = []
        for k, x in enumerate(operands):
            x = np.ascontiguousarray(x)
            d = spec.dimension
            if d == 0 and x.dtype in _MPI_KINDS and spec.reducer is not None:
                out = self._out(outs, k, (x.shape[0] // n,) + x.shape[1:], x.dtype)
                self._wait([comm.Ireduce_scatter_block(x, out, _op(self.MPI, spec.reducer, x.dtype))], spec, group,
                           x.nbytes)
            else:
                total = self.all_reduce(spec, ctx, group, [x], None)[0]
                out = np.split(total, n, axis=d)[rank]
            results.append(self._finish(outs, k, out))
        return results

    def all_gather(self, spec, ctx, group, operands, outs):
        route = self._route(group)
        if route != "mpi":
            return None if route == "local" else self._gathered(spec, ctx, group, operands, outs)
        comm = self._comm(group)
        n = len(group)
        results = []
        for k, x in enumerate(operands):
            d = spec.dimension
            if d == 0 and x.dtype in _MPI_KINDS:
                out = self._out(outs, k, (x.shape[0] * n,) + x.shape[1:], x.dtype)
                self._wait([comm.Iallgather(np.ascontiguousarray(x), out)], spec, group, out.nbytes)
            else:
                out = np.concatenate(list(self._gather(comm, x, spec, group)), axis=d)
            results.append(self._finish(outs, k, out))
        return results

    def all_to_all(self, spec, ctx, group, operands, outs):
        route = self._route(group)
        if route != "mpi":
            return None if route == "local" else self._gathered(spec, ctx, group, operands, outs)
        comm = self._comm(group)
        n = len(group)
        if spec.split_dimension is not None:
            x, d = operands[0], spec.split_dimension
            send = np.ascontiguousarray(x) if d == 0 else np.ascontiguousarray(np.stack(np.split(x, n, axis=d)))
            if d == 0:
                out = self._out(outs, 0, x.shape, x.dtype)
                self._exchange(comm, send, out, spec, group)
                return [self._finish(outs, 0, out)]
            recv = np.empty_like(send)
            self._exchange(comm, send, recv, spec, group)
            return [self._finish(outs, 0, np.concatenate(list(recv), axis=d))]
        send = np.ascontiguousarray(np.stack(operands))
        recv = np.empty_like(send)
        self._exchange(comm, send, recv, spec, group)
        return [self._finish(outs, j, recv[j]) for j in range(n)]

    def _exchange(self, comm, send, recv, spec, group) -> None:
        if send.dtype in _MPI_KINDS:
            self._wait([comm.Ialltoall(send, recv)], spec, group, send.nbytes)
        else:
            self._wait([comm.Ialltoall(send.view(np.uint8), recv.view(np.uint8))], spec, group, send.nbytes)

    def collective_broadcast(self, spec, ctx, group, operands, outs):
        route = self._route(group)
        if route != "mpi":
            return None if route == "local" else self._gathered(spec, ctx, group, operands, outs)
        comm = self._comm(group)
        results = []
        for k, x in enumerate(operands):
            out = self._out(outs, k, x.shape, x.dtype)
            if group.index(ctx.device) == 0:
                out[...] = x
            self._wait([comm.Ibcast(out.view(np.uint8) if x.dtype not in _MPI_KINDS else out, root=0)],
                       spec, group, out.nbytes)
            results.append(self._finish(outs, k, out))
        return results

    def ragged_all_to_all(self, spec, ctx, group, operands, outs):
        route = self._route(group)
        if route == "local":
            return None
        return self._gathered(spec, ctx, group, operands, outs)      # slices of any size: exchanged whole

    def collective_permute(self, spec, ctx, pairs, operands, outs):
        members = sorted({d for p in pairs for d in p})
        if all(_devices.owner(d) == self.rank for d in members):
            return None
        # every pair over MPI, those inside this process too (a message to itself): tags tell the pairs apart
        if spec.in_place:
            raise UnimplementedError(f"{spec.what}: the in-place (slice) form of collective-permute")
        me = ctx.device
        requests, results = [], []

        def tag(s: int, t: int, k: int) -> int:       # per op, pair and operand: device threads share COMM_WORLD
            return zlib.crc32(f"{spec.name}/{s}->{t}/{k}".encode()) % 30000
        for k, x in enumerate(operands):
            x = np.ascontiguousarray(x)
            raw = (lambda a: a) if x.dtype in _MPI_KINDS else (lambda a: a.view(np.uint8))
            out = self._out(outs, k, x.shape, x.dtype)
            source = next((s for s, t in pairs if t == me), None)
            for s, t in pairs:
                if s == me and t != me:
                    requests.append(self.world.Isend(raw(x), dest=_devices.owner(t), tag=tag(s, t, k)))
            if source is None:
                out[...] = 0
            elif source == me:
                out[...] = x
            else:
                requests.append(self.world.Irecv(raw(out), source=_devices.owner(source), tag=tag(source, me, k)))
            results.append(out)
        self._wait(requests, spec, members, sum(np.asarray(x).nbytes for x in operands))
        return [self._finish(outs, k, r) for k, r in enumerate(results)]


__all__ = ["MpiCommunicator", "for_run", "prepare", "reset"]
