"""Many processes, over MPI: `xlapy.distributed.initialize()` as `jax.distributed.initialize`.

Launch the same script under MPI (`mpiexec -n 2 python train.py`); each process calls `initialize()` first.
It reads MPI's rank and size (through mpi4py, over the MPI the launcher started: the `mpich` wheel's
`mpiexec`, or the system's), exchanges every process's local device count
(`--xla_force_host_platform_device_count`, default 1), and from then on:

| call | value |
|---|---|
| xlapy.process_index(), process_count() | MPI's rank, size |
| xlapy.devices(), device_count() | every process's devices (ids: process 0's first, then process 1's ...) |
| xlapy.local_devices() | this process's devices |
| backends.spmd.execute(module, args) | runs this process's devices; collectives that cross processes go over MPI |

The MPI collectives used (communicator.py): Allreduce for all-reduce and reduce-scatter, Allgather, Alltoall,
Bcast for collective-broadcast and Isend/Irecv pairs for collective-permute, on the numpy buffers themselves
(the CPU backend's result buffers are received into directly). `mpi4py` and an MPI are an optional extra:
`pip install xlapy[mpi]` (the `mpich` and `mpi4py` wheels). Outside mpirun, `initialize()` raises one
DistributedError saying so.
"""
from __future__ import annotations

import os

from ..backends import devices as _devices
from ..errors import XlapyError


class DistributedError(XlapyError):
    """xlapy.distributed cannot start: not under mpirun, mpi4py absent, or called twice."""


# environment variables the MPI launchers set in each process they start: (rank, size)
LAUNCHER_ENV = (
    ("PMI_RANK", "PMI_SIZE"),                                  # MPICH / Intel MPI (hydra)
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),          # Open MPI
    ("PMIX_RANK", "OMPI_COMM_WORLD_SIZE"),                     # PMIx launchers
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),            # MVAPICH
    ("SLURM_PROCID", "SLURM_NTASKS"),                          # srun --mpi=pmi2
)

_STATE: dict = {}


def launched_by_mpi() -> tuple[int, int] | None:
    """(rank, size) from the launcher's environment, or None when this process was not started by mpirun."""
    for rank, size in LAUNCHER_ENV:
        if rank in os.environ and size in os.environ:
            try:
                return int(os.environ[rank]), int(os.environ[size])
            except ValueError:
                continue
    return None


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise DistributedError(f"xlapy.distributed needs mpi4py and an MPI library: pip install 'xlapy[mpi]' "
                               f"(the mpich and mpi4py wheels) ({e})") from None
    return MPI


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids=None) -> None:
    """Join the MPI job this process was launched in (under `mpirun`/`mpiexec`/`srun`). The arguments are
    jax.distributed.initialize's; MPI provides them, so given ones must agree with it."""
    if _STATE:
        raise DistributedError("xlapy.distributed.initialize() was already called in this process")
    launched = launched_by_mpi()
    if launched is None:
        raise DistributedError(
            "xlapy.distributed.initialize(): this process was not started by mpirun/mpiexec (none of "
            f"{', '.join(r for r, _ in LAUNCHER_ENV)} is set); launch it as `mpiexec -n 2 python script.py` "
            "(pip install 'xlapy[mpi]' provides mpiexec)")
    MPI = _mpi()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if (num_processes is not None and num_processes != size) or (process_id is not None and process_id != rank):
        raise DistributedError(f"initialize(num_processes={num_processes}, process_id={process_id}) disagrees with "
                               f"MPI: rank {rank} of {size}")
    local = len(local_device_ids) if local_device_ids is not None else _devices.local_device_count()
    counts = tuple(int(c) for c in comm.allgather(local))
    _devices.set_processes(rank, size, counts)
    _STATE.update(comm=comm, MPI=MPI, coordinator_address=coordinator_address)


def is_initialized() -> bool:
    return bool(_STATE)


def shutdown() -> None:
    """Forget the MPI job (devices are this process's again); MPI itself finalizes at exit."""
    if _STATE:
        from . import communicator
        communicator.reset()
        _STATE.clear()
        _devices.set_processes(0, 1, None)


def world():
    """(mpi4py's MPI module, COMM_WORLD) once initialized."""
    if not _STATE:
        raise DistributedError("xlapy.distributed.initialize() has not been called")
    return _STATE["MPI"], _STATE["comm"]


__all__ = ["DistributedError", "LAUNCHER_ENV", "initialize", "is_initialized", "launched_by_mpi", "shutdown",
           "world"]
