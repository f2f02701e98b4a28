"""The data-parallel training step of an MLP through the front end's many-device paths, against one device:
plain jit (1 device), pmap with pmean of the gradients, and jit with in_shardings (the SPMD partitioner), at
1, 2 and 4 host devices of one process. Medians of --reps calls after a warm-up; the global batch is fixed.
On 2 cores shared with other work the times are noisy; run it on an idle machine for figures to keep.

    .venv/bin/python benchmarks/parallel_step.py [--batch 512] [--hidden 256] [--reps 20]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
# the BLAS keeps its own thread count: replicated runs make it single-threaded while their devices run
# (backends/spmd_blas.py); before that, its own threads on every device made a 2-device step ~100x slower

import numpy as np  # noqa: E402

import xlapy  # noqa: E402
import xlapy.numpy as jnp  # noqa: E402
from xlapy import lax  # noqa: E402
from xlapy.sharding import NamedSharding, PartitionSpec as P  # noqa: E402


def loss(params, x, y):
    w1, w2 = params
    return ((jnp.tanh(x @ w1) @ w2 - y) ** 2).mean()


def sgd(params, grads):
    return tuple(p - 0.1 * g for p, g in zip(params, grads))


def median_ms(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        np.asarray(out[0])
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    d, h = 64, args.hidden
    params = (rng.standard_normal((d, h)).astype(np.float32) / 8, rng.standard_normal((h, 10)).astype(np.float32) / 8)
    x = rng.standard_normal((args.batch, d)).astype(np.float32)
    y = rng.standard_normal((args.batch, 10)).astype(np.float32)
    step = xlapy.jit(lambda p, x, y: sgd(p, xlapy.grad(loss)(p, x, y)))
    base = median_ms(lambda: step(params, x, y), args.reps)
    print(f"jit, 1 device: {base:.2f} ms")
    for n in (1, 2, 4):
        def dp(p, x, y):
            return sgd(p, lax.pmean(xlapy.grad(loss)(p, x, y), "d"))
        pstep = xlapy.pmap(dp, axis_name="d", in_axes=(None, 0, 0), out_axes=None)
        xs, ys = x.reshape(n, -1, d), y.reshape(n, -1, 10)
        t = median_ms(lambda: pstep(params, xs, ys), args.reps)
        mesh = xlapy.make_mesh((n,), ("d",))
        rep, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("d"))
        sstep = xlapy.jit(lambda p, x, y: sgd(p, xlapy.grad(loss)(p, x, y)), in_shardings=((rep, rep), split, split))
        s = median_ms(lambda: sstep(params, x, y), args.reps)
        print(f"{n} devices: pmap {t:.2f} ms ({base / t:.2f}x jit), sharded jit {s:.2f} ms ({base / s:.2f}x jit)")


if __name__ == "__main__":
    main()
