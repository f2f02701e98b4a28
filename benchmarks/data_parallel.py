"""The data-parallel training step time at 1, 2 and 4 MPI processes (examples/data_parallel_mpi.py: the digits
MLP, one gradient all-reduce per step), with the same global batch (strong scaling).

    .venv/bin/python benchmarks/data_parallel.py [--processes 1,2,4] [--batch 256] [--steps 60]

Each run is a fresh `mpiexec -n P` job (P=1 runs without mpiexec); the example prints the median step time
(after the first, compiling, step) and its final loss, which must agree across P up to summation order.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "data_parallel_mpi.py"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--processes", default="1,2,4")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=60)
    args = p.parse_args()
    mpiexec = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    print(f"global batch {args.batch}, {args.steps} steps\n")
    print("| processes | median step | final loss |")
    print("|---|---|---|")
    for n in [int(x) for x in args.processes.split(",")]:
        cmd = [sys.executable, str(EXAMPLE), "--steps", str(args.steps), "--batch", str(args.batch)]
        if n > 1:
            if mpiexec is None:
                print(f"| {n} | (mpiexec absent: pip install 'xlapy[mpi]') | |")
                continue
            cmd = [mpiexec, "-n", str(n)] + cmd
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True).stdout
        m = re.search(r"final loss ([\d.]+), median step ([\d.]+) ms", out)
        print(f"| {n} | {m.group(2)} ms | {m.group(1)} |" if m else f"| {n} | (no result: {out[-200:]!r}) | |")


if __name__ == "__main__":
    main()
