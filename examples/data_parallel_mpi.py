"""Data-parallel training of the digits MLP (examples/demo_models.py) over MPI processes.

    mpiexec -n 2 .venv/bin/python examples/data_parallel_mpi.py [--steps 200] [--batch 64]
    .venv/bin/python examples/data_parallel_mpi.py               # one process: the reference

Every process holds the whole model and takes its 1/N share of each global batch of --batch samples; its jitted
step computes the loss and gradients of its share (xlapy.jit over value_and_grad), one all-reduce sums them over
the processes (an HLO module with replica_count=N run by xlapy.backends.spmd: MPI's Allreduce under mpirun),
and every process applies the same SGD-with-momentum update to the mean. So the loss curve is the one
process's with the same global batch, up to summation order. Rank 0 prints it (and writes it with --losses).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import xlapy  # noqa: E402
from xlapy import distributed  # noqa: E402
from xlapy.backends import spmd  # noqa: E402

import demo_models as dm  # noqa: E402

MOMENTUM, LEARNING_RATE = 0.9, 0.1


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=64, help="global batch (split over the processes)")
    p.add_argument("--backend", default="cpu", choices=["cpu", "interpreter"])
    p.add_argument("--losses", default=None, help="rank 0 writes the loss of each step here (.npy)")
    p.add_argument("--quiet", action="store_true")
    return p.parse_args(argv)


def all_reduce_sum(size: int, processes: int, backend: str) -> spmd.SpmdExecutable:
    """A compiled all-reduce of one f32[size] vector over `processes` replicas (one device per process)."""
    text = f"""HloModule gradient_all_reduce, replica_count={processes}

add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}

ENTRY e {{
  g = f32[{size}] parameter(0)
  ROOT sum = f32[{size}] all-reduce(g), replica_groups={{}}, to_apply=add
}}
"""
    return spmd.compile(text, backend=backend)


def main(argv=None) -> list[float]:
    args = parse_args(argv)
    if distributed.launched_by_mpi():
        distributed.initialize()
    n, rank = xlapy.process_count(), xlapy.process_index()
    if args.batch % n:
        raise SystemExit(f"--batch {args.batch} does not split over {n} processes")
    images, labels, _, _ = dm.load_digits_split()
    params, _ = dm.init_mlp(seed=0)
    names = sorted(params)
    velocity = {k: np.zeros_like(v) for k, v in params.items()}

    def loss_fn(p, x, y):
        return dm.cross_entropy(dm.mlp_logits(p, x), y)
    grad_step = xlapy.jit(xlapy.value_and_grad(loss_fn), backend=args.backend)
    size = 1 + sum(params[k].size for k in names)
    reduce = all_reduce_sum(size, n, args.backend)

    share = args.batch // n
    order = np.random.default_rng(1).permutation(len(images))
    losses, times = [], []
    for step in range(args.steps):
        start = time.perf_counter()
        rows = np.take(order, np.arange(step * args.batch, (step + 1) * args.batch), mode="wrap")
        mine = rows[rank * share:(rank + 1) * share]
        loss, grads = grad_step(params, images[mine], labels[mine])
        flat = np.concatenate([np.asarray(loss, np.float32).reshape(1)] +
                              [np.asarray(grads[k], np.float32).reshape(-1) for k in names])
        (total,) = reduce([[flat]])
        mean = total / np.float32(n)
        offset = 1
        for k in names:
            g = mean[offset:offset + params[k].size].reshape(params[k].shape)
            offset += params[k].size
            velocity[k] = np.float32(MOMENTUM) * velocity[k] + g
            params[k] = np.asarray(params[k]) - np.float32(LEARNING_RATE) * velocity[k]
        losses.append(float(mean[0]))
        times.append(time.perf_counter() - start)
    if rank == 0:
        if not args.quiet:
            every = max(1, args.steps // 10)
            for i in range(0, args.steps, every):
                print(f"step {i:4d}  loss {losses[i]:.6f}")
            print(f"{n} process(es), global batch {args.batch}: final loss {losses[-1]:.6f}, median step "
                  f"{np.median(times[1:] or times) * 1e3:.2f} ms")
        if args.losses:
            np.save(args.losses, np.asarray(losses))
    reduce.close()
    return losses


if __name__ == "__main__":
    main()
