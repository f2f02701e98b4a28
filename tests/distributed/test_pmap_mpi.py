"""pmap across 2 MPI processes (two devices each): each process maps over its local devices, the axis spans all
four, and the gradients of a data-parallel step are averaged over every process (skipped without mpi4py or
mpiexec: `pip install 'xlapy[mpi]'`)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_mpi_helpers", Path(__file__).with_name("test_mpi.py"))
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
needs_mpi, mpiexec, run_job = _helpers.needs_mpi, _helpers.mpiexec, _helpers.run_job

WORKER = r"""
import numpy as np
import xlapy
from xlapy import distributed, lax
distributed.initialize()
r = xlapy.process_index()
x = np.arange(2, dtype=np.float32) + 2 * r                  # this process's two slices of the global [0, 1, 2, 3]
s, i = xlapy.pmap(lambda v: (lax.psum(v, "i"), lax.axis_index("i")), axis_name="i")(x)
assert np.asarray(s).tolist() == [6.0, 6.0] and np.asarray(i).tolist() == [2 * r, 2 * r + 1], (s, i)
grad = xlapy.pmap(lambda w, v: lax.pmean(xlapy.grad(lambda w: (w * v) ** 2)(w), "i"), axis_name="i",
                  in_axes=(None, 0))(np.float32(1.0), x)
assert np.allclose(np.asarray(grad), 2 * (np.arange(4.0) ** 2).mean()), grad
print(f"ok pmap rank {r}", flush=True)
"""


@needs_mpi
def test_pmap_over_the_devices_of_two_processes():
    code, out = run_job([mpiexec(), "-n", "2", sys.executable, "-c", WORKER],
                        {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"})
    assert code == 0 and "ok pmap rank 0" in out and "ok pmap rank 1" in out, out
