"""All-reduce bandwidth over message sizes: xlapy's devices in one process (threads over shared memory), and
2 MPI processes against mpi4py's own Allreduce on the same numpy arrays (the goal: >= 0.9x MPI's).

    .venv/bin/python benchmarks/allreduce.py [--sizes 4K,64K,1M,16M] [--devices 2,4] [--repeats 20] [--no-mpi]

Each row is the median of --repeats calls of a compiled module `all-reduce(f32[n])` (xlapy.backends.spmd,
CPU backend); bandwidth is bytes per device / time (algorithm bandwidth); ratios are bandwidth ratios (MPI's
time / xlapy's). The MPI half re-launches this script
under `mpiexec -n 2` (--mpi-worker) when mpi4py and mpiexec are installed (pip install 'xlapy[mpi]').
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xlapy.backends import spmd  # noqa: E402

UNITS = {"K": 1 << 10, "M": 1 << 20}


def parse_size(text: str) -> int:
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def module(elements: int, replicas: int) -> str:
    return f"""HloModule allreduce_{elements}, replica_count={replicas}

add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}

ENTRY e {{
  x = f32[{elements}] parameter(0)
  ROOT s = f32[{elements}] all-reduce(x), replica_groups={{}}, to_apply=add
}}
"""


def median_time(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def human(nbytes: int) -> str:
    return f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


def in_process(sizes: list[int], device_counts: list[int], repeats: int) -> None:
    print("## devices in one process (threads, shared memory)\n")
    print("| size | devices | median | bandwidth |")
    print("|---|---|---|---|")
    for n in device_counts:
        for nbytes in sizes:
            elements = nbytes // 4
            exe = spmd.compile(module(elements, n), backend="cpu")
            args = [[np.full(elements, d, np.float32)] for d in range(n)]
            t = median_time(lambda: exe(args), repeats)
            print(f"| {human(nbytes)} | {n} | {t * 1e3:.3f} ms | {nbytes / t / 1e9:.2f} GB/s |")
            exe.close()
    print()


def mpi_worker(sizes: list[int], repeats: int) -> None:
    from mpi4py import MPI

    from xlapy import distributed
    distributed.initialize()
    comm = MPI.COMM_WORLD
    rank, n = comm.Get_rank(), comm.Get_size()
    rows = []
    for nbytes in sizes:
        elements = nbytes // 4
        x = np.full(elements, rank + 1, np.float32)
        y = np.empty_like(x)
        exe = spmd.compile(module(elements, n), backend="cpu")

        def xlapy_call():
            exe([[x]])

        def mpi_call():
            comm.Allreduce(x, y)

        def mpi_fresh_call():           # a new result array per call, as xlapy's (and JAX's) calls return
            comm.Allreduce(x, np.empty_like(x))
        calls = (xlapy_call, mpi_call, mpi_fresh_call)
        times: list[list[float]] = [[] for _ in calls]
        # in blocks (a call right after one that freed a new 16 MiB buffer is slower, whatever it is), the blocks
        # alternated twice so drift of the shared machine hits all alike; each call after a barrier
        for _ in range(2):
            for fn, into in zip(calls, times):
                for k in range(repeats // 2 + 1):
                    comm.Barrier()
                    start = time.perf_counter()
                    fn()
                    if k:               # the first of a block warms up
                        into.append(time.perf_counter() - start)
        rows.append((nbytes, *(statistics.median(t) for t in times)))
        exe.close()
    if rank == 0:
        print(f"## {n} MPI processes: xlapy (spmd, CPU backend) against mpi4py's Allreduce\n")
        print("xlapy returns a new array per call; mpi4py's Allreduce is timed into a preallocated receive buffer "
              "and into a new one (np.empty_like per call: the first touch of its pages is part of the cost).\n")
        print("| size | xlapy | MPI, preallocated | MPI, new buffer | xlapy bandwidth | xlapy / MPI preallocated | "
              "xlapy / MPI new buffer |")
        print("|---|---|---|---|---|---|---|")
        for nbytes, tx, tm, tf in rows:
            print(f"| {human(nbytes)} | {tx * 1e3:.3f} ms | {tm * 1e3:.3f} ms | {tf * 1e3:.3f} ms | "
                  f"{nbytes / tx / 1e9:.2f} GB/s | {tm / tx:.2f}x | {tf / tx:.2f}x |")
    sys.stdout.flush()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="4K,64K,1M,16M")
    p.add_argument("--devices", default="2,4")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--no-mpi", action="store_true")
    p.add_argument("--mpi-worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    if args.mpi_worker:
        mpi_worker(sizes, args.repeats)
        return
    in_process(sizes, [int(d) for d in args.devices.split(",")], args.repeats)
    if args.no_mpi:
        return
    mpiexec = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        mpiexec = None
    if mpiexec is None:
        print("(mpi4py or mpiexec absent: pip install 'xlapy[mpi]' for the MPI half)")
        return
    subprocess.run([mpiexec, "-n", "2", sys.executable, __file__, "--mpi-worker", "--sizes", args.sizes,
                    "--repeats", str(args.repeats)], check=True, env=os.environ.copy())


if __name__ == "__main__":
    main()
