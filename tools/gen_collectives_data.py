"""Regenerate tests/backends/collectives_data: JAX programs over 4 CPU devices (shard_map and pmap with psum,
pmax, pmean, all_gather, psum_scatter, all_to_all, ppermute, axis_index, on a 1-D and a 2x2 mesh), each as
the per-device HLO module XLA compiled (after its SPMD partitioner: num_partitions=4, channel ids, global
device ids) with every device's input and XLA's output. tests/backends/test_collectives_xla.py runs the modules
on xlapy's devices and compares.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 .venv-models/bin/python tools/gen_collectives_data.py
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "tests" / "backends" / "collectives_data"
RING = [(j, (j + 1) % 4) for j in range(4)]


def shard_mapped(fn, mesh, spec):
    return jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False))


def cases():
    devices = np.array(jax.devices()[:4])
    line = Mesh(devices, ("i",))
    square = Mesh(devices.reshape(2, 2), ("a", "b"))
    x = np.arange(4 * 4 * 6, dtype=np.float32).reshape(16, 6) / 7 - 3
    i32 = np.arange(16 * 4, dtype=np.int32).reshape(16, 4) * 3 - 50
    one = P("i")
    both = P(("a", "b"))
    yield "psum", shard_mapped(lambda v: lax.psum(v, "i"), line, one), x
    yield "pmax_int", shard_mapped(lambda v: lax.pmax(v, "i"), line, one), i32
    yield "pmean", shard_mapped(lambda v: lax.pmean(v, "i"), line, one), x
    yield "all_gather", shard_mapped(lambda v: lax.all_gather(v, "i", tiled=True), line, one), x
    yield "all_gather_axis1", shard_mapped(lambda v: lax.all_gather(v, "i", axis=1, tiled=True), line, one), x
    yield "psum_scatter", shard_mapped(lambda v: jnp.tile(lax.psum_scatter(v, "i", tiled=True), (4, 1)),
                                       line, one), x
    yield "all_to_all", shard_mapped(lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True), line, one), x
    yield "all_to_all_axis1", shard_mapped(lambda v: lax.all_to_all(v, "i", 1, 1, tiled=True), line, one), i32
    yield "all_to_all_split0_concat1", shard_mapped(lambda v: lax.all_to_all(v, "i", 0, 1, tiled=True), line, one), x
    yield "psum_scatter_axis1", shard_mapped(lambda v: jnp.tile(lax.psum_scatter(v, "i", scatter_dimension=1,
                                                                                tiled=True), (1, 4)), line, one), i32
    yield "pmin_bf16", shard_mapped(lambda v: lax.pmin(v.astype(jnp.bfloat16), "i").astype(jnp.float32), line, one), x
    yield "ppermute", shard_mapped(lambda v: lax.ppermute(v, "i", RING), line, one), x
    yield "axis_index", shard_mapped(lambda v: v + lax.axis_index("i").astype(v.dtype), line, one), x
    yield "psum_rows_of_2x2", shard_mapped(lambda v: lax.psum(v, "a"), square, both), x
    yield "psum_cols_of_2x2", shard_mapped(lambda v: lax.psum(v, "b"), square, both), x
    yield "gather_cols_of_2x2", shard_mapped(lambda v: lax.all_gather(v, "b", axis=1, tiled=True), square, both), x
    yield "pmap_psum_index", jax.pmap(lambda v: lax.psum(v, "i") * lax.axis_index("i"), axis_name="i"), \
        x.reshape(4, 4, 6)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*"):
        old.unlink()
    for name, fn, x in cases():
        text = fn.lower(x).compile().as_text()
        out = np.asarray(fn(x))
        arrays = {}
        for d, (block_in, block_out) in enumerate(zip(np.split(x, 4), np.split(out, 4))):
            arrays[f"in_{d}"], arrays[f"out_{d}"] = block_in, block_out
        (OUT / f"{name}.hlo").write_text(text)
        np.savez(OUT / f"{name}.npz", **arrays)
        print(name, "num_partitions=4" in text, "replica_count=4" in text)


if __name__ == "__main__":
    main()
