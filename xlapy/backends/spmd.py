"""Replicated execution: one instance of a module per device, in parallel, meeting at its collectives.

    from xlapy.backends import spmd
    outs = spmd.execute(module, per_device_args, backend="cpu", num_replicas=None, num_partitions=None,
                        device_assignment=None)
    exe = spmd.compile(module, backend="cpu", num_replicas=4)      # compile once ...
    outs = exe(per_device_args)                                      # ... run many times

| argument | meaning |
|---|---|
| module | an xlapy.hlo Module or HLO text |
| per_device_args | per_device_args[d]: the positional arguments of the instance on local device d (a list/tuple of arrays) |
| num_replicas, num_partitions | default: the module header's replica_count / num_partitions (1 when absent) |
| device_assignment | an R x P array of global device ids; default XLA's: device = replica * P + partition |
| backend | "cpu" (compiled once; one executable instance per device) or "interpreter" |
| result | outs[d]: what the instance on local device d returned (an array, or a tuple for a tuple root) |

Devices are ordered replica-major (d = replica * num_partitions + partition) under the default assignment.
In one process, the local devices are all R * P devices. Under MPI (`xlapy.distributed.initialize()`), a module
for every global device runs across the processes: each runs the devices it owns (backends/devices.py: process
k owns ids first_local_id(k) ...), so per_device_args and the result cover only those, and collectives between
processes go over MPI; a module for at most this process's device count runs inside the process, as without MPI.

Each device runs on its own thread (the caller's thread runs the first, the others take idle threads of one
process-wide set, `_Workers`, which grows to the largest concurrent demand); collectives meet in a Rendezvous
(interpreter/rendezvous.py): shared memory, no copies of operands. A peer that never arrives raises an
ExecutionError after $XLAPY_COLLECTIVE_TIMEOUT seconds (default 60); a device that fails aborts the run and its
error is raised. The CPU code between collectives is compiled as usual (single-threaded per device by default:
the devices are the parallelism, so the BLAS runs single-threaded during the run too: spmd_blas.py); each
collective calls back into the runtime (cpu/collectives_emitter.py).
Results of 1 MiB and more come from `ResultPool` (buffers reused once the arrays made from them are garbage).
"""
from __future__ import annotations

import contextlib
import itertools
import math
import threading
import queue
from concurrent.futures import Future
from typing import Any, Sequence

import numpy as np

from ..errors import XlapyError
from ..hlo import Module, parse
from ..hlo.collectives import default_assignment, module_counts
from . import devices as _devices
from . import spmd_blas
from .interpreter import rendezvous

_RUN_IDS = itertools.count(1)


class _Workers:
    """Device threads shared by every SpmdExecutable: a run takes idle ones (starting more when none is idle),
    so the process holds as many as its largest concurrent demand, not one pool per compiled program."""

    def __init__(self):
        self._idle: list[queue.SimpleQueue] = []
        self._lock = threading.Lock()

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._loop, args=(inbox,), name="xlapy-device", daemon=True).start()
        inbox.put((fn, args, future))
        return future

    def _loop(self, inbox: queue.SimpleQueue) -> None:
        while True:
            fn, args, future = inbox.get()
            try:
                future.set_result(fn(*args))
            except BaseException as e:      # noqa: BLE001 -- handed to the caller
                future.set_exception(e)
            del fn, args, future
            with self._lock:
                self._idle.append(inbox)


_WORKERS = _Workers()


class _Pooled:
    """A result buffer lent by `ResultPool`: the arrays made from it keep it alive (it is their base); when the
    last of them is gone, the buffer goes back to the pool, its pages already touched."""
    __slots__ = ("_pool", "_raw", "__array_interface__")

    def __init__(self, pool: "ResultPool", raw: tuple, dims: tuple, typestr: str):
        self._pool, self._raw = pool, raw
        self.__array_interface__ = {"data": (raw[1], False), "shape": dims, "typestr": typestr, "version": 3}

    def __del__(self):
        self._pool.give_back(self._raw)


class ResultPool:
    """Large result arrays of replicated runs from reused buffers: a fresh 16 MiB array costs the first touch
    of 4096 pages on every call, as much as the all-reduce that fills it. Buffers return only when the
    arrays made from them are garbage, so results are never shared; at most LIMIT bytes are kept. A take is on
    every call's path, so it does little: the buffers' addresses are kept with them, dtypes are looked up once."""
    MIN_BYTES = 1 << 20
    LIMIT = 1 << 29

    def __init__(self):
        self._free: dict[int, list[tuple]] = {}         # nbytes -> [(raw uint8 array, its address)]
        self._held = 0
        self._lock = threading.Lock()
        self._dtypes: dict[Any, tuple] = {}             # dtype -> (np.dtype, typestr, itemsize) or None

    def _dtype(self, dtype: Any) -> tuple | None:
        known = self._dtypes.get(dtype, False)
        if known is False:
            d = np.dtype(dtype)
            known = (d, d.str, d.itemsize) if d.kind in "biufc" and d.type.__module__ == "numpy" else None
            self._dtypes[dtype] = known
        return known

    def take(self, dims: tuple, dtype: np.dtype) -> np.ndarray:
        known = self._dtype(dtype)
        nbytes = math.prod(dims) * known[2] if known is not None else 0
        if nbytes < self.MIN_BYTES:
            return np.empty(dims, dtype)
        with self._lock:
            free = self._free.get(nbytes)
            raw = free.pop() if free else None
            if raw is not None:
                self._held -= nbytes
        if raw is None:
            buffer = np.empty(nbytes, np.uint8)
            raw = (buffer, buffer.ctypes.data)
        return np.asarray(_Pooled(self, raw, tuple(dims), known[1]))

    def give_back(self, raw: tuple) -> None:
        nbytes = raw[0].nbytes
        with self._lock:
            if self._held + nbytes <= self.LIMIT:
                self._free.setdefault(nbytes, []).append(raw)
                self._held += nbytes


_RESULTS = ResultPool()


class SpmdExecutable:
    """A module compiled once for R replicas x P partitions; `exe(per_device_args)` runs the local devices."""

    def __init__(self, module: Module, backend: str, num_replicas: int, num_partitions: int,
                 assignment: np.ndarray, **options):
        self.module = module
        self.backend = backend
        self.num_replicas, self.num_partitions = num_replicas, num_partitions
        self.assignment = assignment
        total = num_replicas * num_partitions
        self.spans_processes = _spans_processes(total)
        self.local_ids = _local_ids(total)
        logical = {int(assignment[r, p]): (r, p) for r in range(num_replicas) for p in range(num_partitions)}
        self.logical = [logical[d] for d in self.local_ids]
        self._instances = _compile_instances(module, backend, len(self.local_ids), **options)
        # the module as given (its dots, convolutions and linalg calls are still there; reading the optimized one
        # back would parse it on every persistent-cache hit)
        self.serial_blas = spmd_blas.wanted(backend, int(options.get("num_threads", 1)), module)
        self._assignment_key = np.ascontiguousarray(assignment, np.int64).tobytes()
        if self.spans_processes:
            from ..distributed import communicator       # noqa: PLC0415 -- MPI only when initialized
            communicator.prepare(module, num_replicas, num_partitions, assignment)
        self._lock = threading.Lock()

    @property
    def num_devices(self) -> int:
        return len(self.local_ids)

    def __call__(self, per_device_args: Sequence[Sequence[Any]]) -> list:
        n = len(self.local_ids)
        if len(per_device_args) != n:
            raise XlapyError(f"spmd: module {self.module.name} runs on {n} local devices "
                             f"({self.num_replicas} replicas x {self.num_partitions} partitions); got arguments "
                             f"for {len(per_device_args)}")
        for d, args in enumerate(per_device_args):
            if not isinstance(args, (list, tuple)):
                raise XlapyError(f"spmd: per_device_args[{d}] must be a list of device {self.local_ids[d]}'s arguments "
                                 f"(module {self.module.name} takes {len(self.module.entry.parameters)}), got "
                                 f"{type(args).__name__}")
        comm = _communicator(self)
        run_id = next(_RUN_IDS)
        contexts = [rendezvous.DeviceContext(d, r, p, self.num_replicas, self.num_partitions, self.assignment,
                                             comm, run_id) for d, (r, p) in zip(self.local_ids, self.logical)]
        for ctx in contexts:
            ctx.__dict__["_assignment_key"] = self._assignment_key       # (its cache key, made once)
        blas = spmd_blas.serial() if self.serial_blas else contextlib.nullcontext()
        with self._lock, blas:      # one run at a time: the instances and their scratch belong to it
            if n == 1:
                return [self._run(0, contexts[0], per_device_args[0], comm)]
            futures = [_WORKERS.submit(self._run, i, contexts[i], per_device_args[i], comm) for i in range(1, n)]
            outs: list = [None] * n
            errors: list = []
            try:
                outs[0] = self._run(0, contexts[0], per_device_args[0], comm)
            except BaseException as e:      # noqa: BLE001 -- the first device error wins, after the others end
                errors.append(e)
            for i, f in enumerate(futures, 1):
                try:
                    outs[i] = f.result()
                except BaseException as e:  # noqa: BLE001
                    errors.append(e)
        if errors:
            first = next((e for e in errors if "aborted" not in str(e)), errors[0])
            raise first
        return outs

    def _run(self, i: int, ctx: rendezvous.DeviceContext, args: Sequence[Any], comm) -> Any:
        try:
            with rendezvous.entered(ctx):
                return self._instances[i](*args)
        except BaseException as e:
            if hasattr(comm, "abort"):
                comm.abort(f"device {ctx.device} failed: {type(e).__name__}: {e}")
            raise

    def close(self) -> None:
        """Nothing to release (device threads are shared); kept so callers may close what they compiled."""


def _spans_processes(total: int) -> bool:
    """Under MPI a module for every global device runs across the processes; one for at most this process's
    devices runs inside the process, as without MPI (each process its own run, e.g. per-process work)."""
    if _devices.process_count() == 1 or total <= _devices.local_device_count() < _devices.device_count():
        return False
    if _devices.device_count() != total:
        raise XlapyError(f"spmd: the module needs {total} devices; the {_devices.process_count()} processes have "
                         f"{_devices.device_count()} in all, {_devices.local_device_count()} in this one (a module "
                         f"runs across all processes' devices or inside one process)")
    return True


def _local_ids(total: int) -> list[int]:
    if not _spans_processes(total):
        return list(range(total))
    first, n = _devices.first_local_id(), _devices.local_device_count()
    return list(range(first, first + n))


def _communicator(exe: SpmdExecutable):
    if exe.spans_processes:
        from ..distributed import communicator       # noqa: PLC0415 -- MPI only when initialized
        return communicator.for_run()
    return rendezvous.Rendezvous()


def _compile_instances(module: Module, backend: str, n: int, **options) -> list:
    from . import compile as compile_backend
    if backend == "interpreter":
        exe = compile_backend(module, "interpreter")
        return [exe] * n                 # the evaluator keeps no state between calls
    if backend == "cpu":
        from .cpu.collectives_emitter import ensure_symbol
        ensure_symbol()             # before a persistent-cache hit loads code that calls it
        options.setdefault("num_threads", 1)
        exe = compile_backend(module, "cpu", pipeline="cpu", **options)
        instances = [exe.instance() for _ in range(n)]
        for inst in instances:
            inst.result_allocator = _RESULTS.take
        return instances
    raise XlapyError(f"spmd: backend {backend!r} is not supported (use 'cpu' or 'interpreter')")


def compile(module: Module | str, *, backend: str = "cpu", num_replicas: int | None = None,
            num_partitions: int | None = None, device_assignment: Any = None, **options) -> SpmdExecutable:
    """Compile `module` once for replicated execution; see the module docstring."""
    if isinstance(module, str):
        module = parse(module)
    if not isinstance(module, Module):
        raise XlapyError(f"spmd.compile expects an HLO Module or HLO text, got {type(module).__name__}")
    header_r, header_p = module_counts(module)
    r = header_r if num_replicas is None else int(num_replicas)
    p = header_p if num_partitions is None else int(num_partitions)
    if r < 1 or p < 1:
        raise XlapyError(f"spmd: num_replicas={r} and num_partitions={p} must be at least 1")
    if device_assignment is None:
        da = default_assignment(r, p)
    else:
        da = np.asarray(device_assignment, dtype=np.int64).reshape(r, p) \
            if np.size(device_assignment) == r * p else None
        if da is None or sorted(da.reshape(-1).tolist()) != list(range(r * p)):
            raise XlapyError(f"spmd: device_assignment must be an {r} x {p} table of the device ids 0..{r * p - 1}, "
                             f"got {np.asarray(device_assignment).tolist()}")
    if (r, p) != (header_r, header_p):
        module = module.clone()
        module.attrs["replica_count"] = str(r)
        module.attrs["num_partitions"] = str(p)
    return SpmdExecutable(module, backend, r, p, da, **options)


def execute(module: Module | str, per_device_args: Sequence[Sequence[Any]], *, backend: str = "cpu",
            num_replicas: int | None = None, num_partitions: int | None = None, device_assignment: Any = None,
            **options) -> list:
    """Run `module` once per device; returns each local device's outputs (see the module docstring)."""
    exe = compile(module, backend=backend, num_replicas=num_replicas, num_partitions=num_partitions,
                  device_assignment=device_assignment, **options)
    try:
        return exe(per_device_args)
    finally:
        exe.close()


__all__ = ["SpmdExecutable", "compile", "execute"]
