"""Run by tests/distributed/test_mpi.py under `mpiexec -n 2`: one case per command-line word; each process
prints `ok CASE` per case that passed (or the error), and the test reads every process's lines."""
from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backends"))

import xlapy  # noqa: E402
from xlapy import distributed  # noqa: E402
from xlapy.backends import spmd  # noqa: E402
from xlapy.errors import ExecutionError  # noqa: E402

from test_collectives import everything, expected, inputs  # noqa: E402
from test_collectives_groups import MODES, NEVER_ARRIVES  # noqa: E402

REDUCED = {0, 3}        # everything()'s results that are sums: over MPI, equal up to summation order


def case_everything():
    # every device of every process: 1 per process is one MPI collective per op, several go hierarchically
    n, r = xlapy.device_count(), xlapy.process_index()
    local = [d.id for d in xlapy.local_devices()]
    assert [d.id for d in xlapy.devices()] == list(range(n)) and all(d.process_index == r for d in
                                                                       xlapy.local_devices())
    xs = inputs(n)
    # a module for this process's devices only runs inside the process, as without MPI
    own = inputs(len(local))
    inside = spmd.execute(everything(len(local)), [[x] for x in own], backend="interpreter")
    np.testing.assert_array_equal(inside[0][2], np.concatenate(own))
    for backend in ("interpreter", "cpu"):
        outs = spmd.execute(everything(n), [[xs[d]] for d in local], backend=backend)
        for d, out in zip(local, outs):
            for i, (g, w) in enumerate(zip(out, expected(xs)[d])):
                if i in REDUCED:
                    np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
                else:
                    np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=f"result {i} on {backend}")


def case_modes():
    # 2 processes x 2 devices: MODES runs 2 replicas x 2 partitions; device 2r+p lives in process r
    r = xlapy.process_index()
    x = np.asarray([[1, 2], [10, 20], [100, 200], [1000, 2000]], np.int32)
    for backend in ("interpreter", "cpu"):
        outs = spmd.execute(MODES, [[x[2 * r]], [x[2 * r + 1]]], backend=backend)
        for p, (cr, cp, rp, fl, sw, rid, pid) in enumerate(outs):
            d = 2 * r + p
            np.testing.assert_array_equal(cr, x[p] + x[2 + p])                 # across processes (MPI)
            np.testing.assert_array_equal(cp, [x[2 * r][p], x[2 * r + 1][p]])  # inside the process
            np.testing.assert_array_equal(rp, x[2 * r] + x[2 * r + 1])
            np.testing.assert_array_equal(fl, x[0] + x[3] if d in (0, 3) else x[1] + x[2])
            np.testing.assert_array_equal(sw, x[2 * r + (1 - p)])
            assert (int(rid), int(pid)) == (r, p)


def case_xla():
    # XLA's compiled shard_map/pmap programs for 4 devices (tests/backends/collectives_data), across processes
    data_dir = Path(__file__).resolve().parents[1] / "backends" / "collectives_data"
    local = [d.id for d in xlapy.local_devices()]
    for path in sorted(data_dir.glob("*.hlo")):
        data = np.load(path.with_suffix(".npz"))
        for backend in ("interpreter", "cpu"):
            outs = spmd.execute(path.read_text(), [[data[f"in_{d}"]] for d in local], backend=backend)
            for d, got in zip(local, outs):
                np.testing.assert_allclose(got, data[f"out_{d}"], rtol=1e-6, atol=1e-6,
                                           err_msg=f"{path.stem} on {backend}, device {d}")


def case_timeout():
    os.environ["XLAPY_COLLECTIVE_TIMEOUT"] = "1"
    r = xlapy.process_index()
    try:
        spmd.execute(NEVER_ARRIVES, [[np.asarray([1, 2], np.int32)]], backend="cpu")
    except ExecutionError as e:
        assert r == 0 and "timed out after 1 s waiting over MPI for devices [0, 1]" in str(e), str(e)
    else:
        assert r == 1, "replica 0 did not time out"


CASES = {"everything": case_everything, "modes": case_modes, "timeout": case_timeout, "xla": case_xla}


def main() -> None:
    distributed.initialize()
    for name in sys.argv[1:]:
        try:
            CASES[name]()
            print(f"ok {name} rank {xlapy.process_index()}", flush=True)
        except BaseException:      # noqa: BLE001 -- reported to the test
            print(f"FAILED {name} rank {xlapy.process_index()}\n{traceback.format_exc()}", flush=True)
    sys.stdout.flush()
    distributed.world()[1].Barrier()      # a process that leaves first would end the job for the others
    os._exit(0)         # a timed-out MPI request cannot be cancelled: leave without MPI_Finalize


if __name__ == "__main__":
    main()
