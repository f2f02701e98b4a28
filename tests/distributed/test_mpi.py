"""Collectives across 2 MPI processes: real `mpiexec -n 2` jobs on this machine (skipped without mpi4py or
mpiexec: `pip install 'xlapy[mpi]'`), and the clear error outside mpirun."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from xlapy import distributed

HERE = Path(__file__).resolve().parent
WORKER = HERE / "mpi_worker.py"


def mpiexec() -> str | None:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


needs_mpi = pytest.mark.skipif(mpiexec() is None, reason="mpi4py or mpiexec absent (pip install 'xlapy[mpi]')")


def run_job(args: list[str], env: dict | None = None, timeout: float = 120) -> tuple[int, str]:
    """Run an mpiexec job in its own process group; past `timeout` the whole group is killed (no orphans)."""
    proc = subprocess.Popen(args, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{' '.join(args)} hung for {timeout} s:\n{out}")
    return proc.returncode, out


def launch(n: int, cases: list[str], env: dict | None = None, timeout: float = 120) -> str:
    _, out = run_job([mpiexec(), "-n", str(n), sys.executable, str(WORKER), *cases], env, timeout)
    for case in cases:
        for rank in range(n):
            assert f"ok {case} rank {rank}" in out, out
    return out


@needs_mpi
def test_every_collective_across_two_processes():
    launch(2, ["everything", "timeout"])


@needs_mpi
def test_four_devices_over_two_processes_group_modes_and_xla_programs():
    launch(2, ["everything", "modes", "xla"], {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"})


@needs_mpi
def test_eight_devices_over_two_processes():
    launch(2, ["everything"], {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"})


def test_initialize_outside_mpirun_is_one_clear_error(monkeypatch):
    for rank, size in distributed.LAUNCHER_ENV:
        monkeypatch.delenv(rank, raising=False)
        monkeypatch.delenv(size, raising=False)
    with pytest.raises(distributed.DistributedError, match="not started by mpirun/mpiexec"):
        distributed.initialize()
    assert not distributed.is_initialized()


@needs_mpi
def test_data_parallel_example_matches_one_process(tmp_path):
    pytest.importorskip("sklearn")
    example = HERE.parents[1] / "examples" / "data_parallel_mpi.py"
    sys.path.insert(0, str(example.parent))
    try:
        import data_parallel_mpi
        reference = data_parallel_mpi.main(["--steps", "15", "--quiet"])
    finally:
        sys.path.remove(str(example.parent))
    losses = tmp_path / "losses.npy"
    code, out = run_job([mpiexec(), "-n", "2", sys.executable, str(example), "--steps", "15", "--quiet",
                         "--losses", str(losses)])
    assert code == 0, out
    import numpy as np
    np.testing.assert_allclose(np.load(losses), reference, rtol=1e-5, atol=1e-6)   # up to summation order
    assert reference[-1] < reference[0] * 0.6


def test_initialize_without_mpi4py_says_how_to_install_it(monkeypatch):
    monkeypatch.setenv("PMI_RANK", "0")
    monkeypatch.setenv("PMI_SIZE", "1")
    monkeypatch.setitem(sys.modules, "mpi4py", None)        # `from mpi4py import MPI` raises ImportError
    with pytest.raises(distributed.DistributedError, match=r"needs mpi4py and an MPI library: pip install 'xlapy\[mpi\]'"):
        distributed.initialize()
    assert not distributed.is_initialized()
