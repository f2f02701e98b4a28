"""shard_map and jit with NamedSharding over a mesh of every process's devices: 2 MPI processes x 2 devices,
each running its own mesh positions, results whole in every process and equal to the unsharded computation
(skipped without mpi4py or mpiexec: `pip install 'xlapy[mpi]'`)."""
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
import xlapy.numpy as jnp
from xlapy import distributed, lax
from xlapy.sharding import NamedSharding, PartitionSpec as P
distributed.initialize()
r = xlapy.process_index()
assert xlapy.device_count() == 4 and len(xlapy.local_devices()) == 2
x = np.arange(32, dtype=np.float32).reshape(8, 4)            # the same global value in every process
w = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5) / 7

mesh = xlapy.make_mesh((4,), ("d",))
f = xlapy.shard_map(lambda b: (b * 2, lax.psum(b.sum(0), "d"), lax.axis_index("d").reshape(1)), mesh=mesh,
                    in_specs=P("d"), out_specs=(P("d"), P(), P("d")))
doubled, total, where = f(x)
assert np.array_equal(np.asarray(doubled), x * 2), doubled
assert np.array_equal(np.asarray(total), x.sum(0)), total
assert np.asarray(where).tolist() == [0, 1, 2, 3], where

backwards = xlapy.sharding.Mesh(np.array(xlapy.devices()[::-1]), ("d",))    # position p on device 3 - p
h = xlapy.shard_map(lambda b: (lax.psum(b, "d"), lax.ppermute(b, "d", [(i, (i + 1) % 4) for i in range(4)])),
                    mesh=backwards, in_specs=P("d"), out_specs=(P(), P("d")))
total, moved = h(x)
assert np.array_equal(np.asarray(total), x.reshape(4, 2, 4).sum(0))
assert np.array_equal(np.asarray(moved), np.roll(x, 2, 0))

mesh2 = xlapy.make_mesh((2, 2), ("a", "b"))                    # "a" across the processes, "b" inside each
g = xlapy.shard_map(lambda b: lax.psum(b, "b") + lax.axis_index("a"), mesh=mesh2, in_specs=P("a", "b"),
                    out_specs=P("a"))
want = np.concatenate([x[:4, :2] + x[:4, 2:], x[4:, :2] + x[4:, 2:] + 1])
assert np.array_equal(np.asarray(g(x)), want), g(x)

def loss(w, x):
    return ((jnp.tanh(x @ w)) ** 2).mean()
rep, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("d"))
step = xlapy.jit(lambda w, x: (x @ w, xlapy.grad(loss)(w, x)), in_shardings=(rep, rows), out_shardings=(rows, rep))
y, gw = step(w, x)
y0, gw0 = xlapy.jit(lambda w, x: (x @ w, xlapy.grad(loss)(w, x)))(w, x)
assert np.allclose(np.asarray(y), np.asarray(y0), rtol=1e-6) and np.allclose(np.asarray(gw), np.asarray(gw0), rtol=1e-5)
assert y.sharding == rows
assert [s.device.id for s in y.addressable_shards] == [2 * r, 2 * r + 1]
assert rows.addressable_devices == set(xlapy.local_devices())
assert np.array_equal(np.asarray(y.addressable_shards[1].data), np.asarray(y0)[(2 * r + 1) * 2:(2 * r + 2) * 2])
cols = xlapy.jit(lambda x: x * 3, in_shardings=NamedSharding(mesh2, P(None, ("a", "b"))))(x)
assert np.array_equal(np.asarray(cols), x * 3), cols
inner = xlapy.shard_map(lambda b: lax.psum(b, "d"), mesh=mesh, in_specs=P("d"), out_specs=P())
summed = xlapy.jit(inner, in_shardings=rows, out_shardings=rep)(x)      # shard_map inside a sharded jit
assert np.array_equal(np.asarray(summed), x.reshape(4, 2, 4).sum(0)), summed

mine = x[4 * r:4 * r + 4]                       # this process's rows: its 2 devices' shards under P("d")
for shape in ((8, 4), None):
    g = xlapy.make_array_from_process_local_data(rows, mine, shape)
    assert np.array_equal(np.asarray(g), x) and g.sharding == rows, g
try:
    xlapy.make_array_from_process_local_data(rows, x, (8, 4))
    raise AssertionError("the whole array accepted as one process's block")
except xlapy.errors.XlapyError as e:
    assert "of shape (4, 4); got local data of shape (8, 4)" in str(e), e

three = xlapy.sharding.Mesh(np.array(xlapy.devices()[:3]), ("d",))       # neither every device nor one process's
try:
    xlapy.shard_map(lambda b: b, mesh=three, in_specs=P("d"), out_specs=P("d"))(np.zeros(3, np.float32))
    raise AssertionError("a mesh of 3 of the 4 devices of 2 processes ran")
except xlapy.errors.XlapyError as e:
    assert "needs 3 devices" in str(e) and "across all processes' devices or inside one process" in str(e), e
print(f"ok sharded rank {r}", flush=True)
"""


@needs_mpi
def test_shard_map_and_sharded_jit_over_the_devices_of_two_processes():
    code, out = run_job([mpiexec(), "-n", "2", sys.executable, "-c", WORKER],
                        {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"})
    assert code == 0 and "ok sharded rank 0" in out and "ok sharded rank 1" in out, out
