"""The persistent compilation cache, measured across processes: how long a fresh process takes to compile the B5
MLP training step (784-512-512-10, batch 128) with an empty cache (cold) and with the cache a previous process
filled (warm), side by side with JAX's persistent cache where JAX is installed; and `make demo` run twice.

    .venv/bin/python benchmarks/persistent_cache.py [--repeat 3] [--demo]

Each measurement is its own process (imports and backend start-up are not timed; the thread pool, which the
first compile needing it builds, is). Times are medians over --repeat processes:
  trace     jit(step).lower(params, x, y): tracing and autodiff (not cached: the key is the traced module)
  compile   lowered.compile(): the HLO passes and LLVM (cold), or the cache lookup and load (warm)
  LLVM      modules LLVM compiled in that process (0 on a warm hit)
The goal (issue 16): warm compile <= 10% of cold.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

XLAPY_CHILD = """
import json, sys, time
sys.path.insert(0, %(bench)r)
import numpy as np
import xlapy
import xlapy.backends.cpu       # imports are not timed: the backend loads once per process, hit or miss
from xlapy.backends import compilation_cache as cc
from xlapy.backends.cpu import compiler
import cases
step = cases._xlapy_mlp_step()
params, (x, y) = cases._mlp_params(), cases._mlp_data()
t0 = time.perf_counter()
lowered = step.lower(params, x, y)
t1 = time.perf_counter()
compiled = lowered.compile()
t2 = time.perf_counter()
print(json.dumps({"trace": t1 - t0, "compile": t2 - t1, "llvm": sum(compiler.LLVM_COMPILES.values()),
                  "hits": cc.STATS.hits}))
"""

JAX_CHILD = """
import json, sys, time
sys.path.insert(0, %(bench)r)
import jax
jax.config.update("jax_compilation_cache_dir", %(cache)r)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
jax.devices()                   # the backend starts once per process, hit or miss
import cases
step = cases._jax_mlp_step(jax)
params, (x, y) = cases._mlp_params(), cases._mlp_data()
t0 = time.perf_counter()
lowered = step.lower(params, x, y)
t1 = time.perf_counter()
compiled = lowered.compile()
t2 = time.perf_counter()
print(json.dumps({"trace": t1 - t0, "compile": t2 - t1, "llvm": -1, "hits": -1}))
"""


def _child(code: str, cache: str, env_extra: dict | None = None) -> dict:
    env = {**os.environ, "XLAPY_CACHE_DIR": cache, **(env_extra or {})}
    env.pop("PYTHONDONTWRITEBYTECODE", None)      # as users run: imports from .pyc
    r = subprocess.run([sys.executable, "-c", code % {"bench": str(REPO / "benchmarks"), "cache": cache}],
                       capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "child failed")
    return json.loads(r.stdout.strip().splitlines()[-1])


def measure(code: str, repeat: int) -> tuple[list[dict], list[dict]]:
    """(cold runs, warm runs): each cold run in a new empty cache, each warm run after a cold one filled it."""
    cold, warm = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="xlapy-bench-cache-") as d:
            cold.append(_child(code, d))
            warm.append(_child(code, d))
    return cold, warm


def _median(runs: list[dict], field: str) -> float:
    return statistics.median(r[field] for r in runs)


def demo_twice() -> tuple[float, float]:
    """Wall seconds of examples/digits_demo.py run twice on one new cache."""
    times = []
    with tempfile.TemporaryDirectory(prefix="xlapy-bench-cache-") as d, \
            tempfile.TemporaryDirectory(prefix="xlapy-bench-demo-") as out:
        for _ in range(2):
            t = time.perf_counter()
            r = subprocess.run([sys.executable, str(REPO / "examples" / "digits_demo.py"), "--out", out],
                               capture_output=True, text=True, env={**os.environ, "XLAPY_CACHE_DIR": d}, timeout=900)
            if r.returncode != 0:
                raise RuntimeError(r.stderr)
            times.append(time.perf_counter() - t)
            print("  " + next(line for line in r.stdout.splitlines() if line.startswith("compilation cache")))
    return times[0], times[1]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--demo", action="store_true", help="also run the demo twice")
    args = p.parse_args(argv)
    rows = [("xlapy", *measure(XLAPY_CHILD, args.repeat))]
    try:
        import jax  # noqa: F401
        rows.append(("jax", *measure(JAX_CHILD, args.repeat)))
    except ImportError:
        pass
    print(f"B5 MLP training step, a fresh process each, median of {args.repeat}:")
    print(f"  {'':6} {'trace':>8} {'compile cold':>13} {'compile warm':>13} {'warm/cold':>10} {'LLVM cold/warm':>15}")
    for name, cold, warm in rows:
        c, w = _median(cold, "compile"), _median(warm, "compile")
        llvm = f"{int(_median(cold, 'llvm'))}/{int(_median(warm, 'llvm'))}" if cold[0]["llvm"] >= 0 else "-"
        print(f"  {name:6} {_median(cold, 'trace'):7.3f}s {c:12.3f}s {w:12.3f}s {w / c:9.1%} {llvm:>15}")
    if args.demo:
        first, second = demo_twice()
        print(f"examples/digits_demo.py, one new cache: first run {first:.1f} s, second {second:.1f} s "
              f"({second / first:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
