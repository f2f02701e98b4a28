"""Lazy eager mode and autojit against eager op-by-op and jit (issue 15's goals; run: .venv/bin/python
benchmarks/lazy_eager.py [--quick]). Medians of interleaved repeats; results in benchmarks/lazy_eager.md.

  1. the demo's MLP training step (examples/demo_models.py, batch 32): eager op by op, lazy op by op, the same
     step under autojit (warm calls replay its recorded cluster without running its Python), jit
  2. a function with xnp.unique in the middle: autojit against the hand-split version (two jits and numpy)
  3. the first call of a 100-op script (fresh processes, persistent cache off, eager and lazy alternating): lazy against eager
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))

import xlapy                            # noqa: E402
import xlapy.numpy as xnp               # noqa: E402


def interleaved(fns: dict, repeats: int) -> dict:
    """Median seconds of each function, calling them in turn `repeats` times (contention hits all alike)."""
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def mlp_step(repeats: int) -> dict:
    import demo_models as dm
    params, _ = dm.init_mlp(0)
    velocity = dm.zeros_like_tree(params)
    rng = np.random.default_rng(0)
    images = rng.random((32, 8, 8, 1), dtype=np.float32)
    labels = rng.integers(0, 10, 32).astype(np.int32)
    step = dm.make_step(dm.mlp_logits, 0.9)
    args = (params, velocity, images, labels, np.float32(0.1))
    jitted = xlapy.jit(step)
    auto = xlapy.autojit(step)

    def lazy_step():
        with xlapy.lazy():
            out = step(*args)
            float(out[2])           # the loop reads the loss: the cut (the whole step, one cached executable)
        return out

    def eager_step():
        out = step(*args)
        float(out[2])
        return out

    def jit_step():
        out = jitted(*args)
        float(out[2])
        return out

    def autojit_step():
        out = auto(*args)
        float(out[2])
        return out
    # lazy and autojit: op by op at the first cut, compiled at the second
    for f in (lazy_step, lazy_step, eager_step, jit_step, autojit_step, autojit_step):
        f()
    before = xlapy.lazy_stats()
    times = interleaved({"eager": eager_step, "lazy": lazy_step, "autojit": autojit_step, "jit": jit_step}, repeats)
    after = xlapy.lazy_stats()
    times["lazy_compiles_when_warm"] = after["compiles"] - before["compiles"]
    times["autojit_stats"] = dict(auto.stats)
    return times


def unique_functions():
    def first(x):
        return xnp.round(xnp.tanh(x * 1.5) * 4.0)

    def second(u, x):
        return xnp.sum(xnp.sin(u)[:, None] * xnp.cos(x)[None, :]) + xnp.max(x)

    def whole(x):
        u = xnp.unique(first(x))
        return second(u, x)
    return first, second, whole


def unique_middle(repeats: int, n: int) -> dict:
    first, second, whole = unique_functions()
    auto = xlapy.autojit(whole)
    j1, j2 = xlapy.jit(first), xlapy.jit(second)
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)

    def hand_split():
        return float(j2(np.unique(np.asarray(j1(x))), x))

    def autojitted():
        return float(auto(x))
    assert abs(hand_split() - autojitted()) <= 1e-3 * abs(hand_split()) + 1e-3
    times = interleaved({"hand_split": hand_split, "autojit": autojitted}, repeats)
    times["report"] = auto.report() + f"\n  calls: {auto.stats}"
    return times


SCRIPT = """
import time, numpy as np
t0 = time.perf_counter()
import xlapy, xlapy.numpy as xnp
t1 = time.perf_counter()
lazy = {lazy}
x = xnp.asarray(np.linspace(-1, 1, 256, dtype=np.float32).reshape(16, 16))
with xlapy.lazy(lazy):
    y = x
    for i in range(25):                 # 100 ops: 4 per round, a few kinds, varying constants
        y = xnp.tanh(y * 0.9 + 0.01 * i) - xnp.exp(-y * y) * 0.5
    print(float(xnp.sum(y)))
print("SECONDS", time.perf_counter() - t1)
"""


def first_call(lazy: bool) -> float:
    env = dict(os.environ, XLAPY_CACHE_DIR="off", PYTHONPATH=str(ROOT))
    env.pop("XLAPY_LAZY", None)
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(lazy=lazy)], env=env, capture_output=True, text=True,
                         check=True).stdout
    return float(out.split("SECONDS")[1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    args = ap.parse_args(argv)
    repeats = 15 if args.quick else 60
    print(f"xlapy lazy eager benchmark ({os.cpu_count()} cores, {'quick' if args.quick else 'full'})")
    mlp = mlp_step(repeats)
    print(f"\n1. MLP training step (batch 32), median of {repeats}:")
    for k in ("eager", "lazy", "autojit", "jit"):
        print(f"  {k:7} {mlp[k] * 1e3:8.3f} ms  {mlp[k] / mlp['jit']:7.1f}x jit")
    print(f"  lazy compiles during the timed steps: {mlp['lazy_compiles_when_warm']}; autojit calls: "
          f"{mlp['autojit_stats']}")
    for n in (1000, 1_000_000):
        u = unique_middle(max(5, repeats // 3), n)
        print(f"\n2. xnp.unique in the middle, {n} elements:")
        print(f"  hand-split (jit, numpy, jit) {u['hand_split'] * 1e3:8.3f} ms")
        print(f"  autojit                      {u['autojit'] * 1e3:8.3f} ms  {u['autojit'] / u['hand_split']:5.2f}x")
    print("\n" + u["report"])
    runs = 1 if args.quick else 5
    pairs = [(first_call(False), first_call(True)) for _ in range(runs)]      # alternating: contention hits both
    eager = statistics.median(p[0] for p in pairs)
    lazy = statistics.median(p[1] for p in pairs)
    print(f"\n3. first call of a 100-op script (fresh process, persistent cache off, median of {runs}):")
    print(f"  eager {eager:.3f} s, lazy {lazy:.3f} s ({lazy / eager:.2f}x)")


if __name__ == "__main__":
    main()
