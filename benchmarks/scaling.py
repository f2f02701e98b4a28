"""Compile time against module size: an N-layer transformer training step, N = 1, 2, 4, ..., 32 (issue 11).

    .venv/bin/python benchmarks/scaling.py                  # xlapy alone
    .venv-bench/bin/python benchmarks/scaling.py --layers 1,2,4,8,16,32    # and XLA (JAX) side by side

The model is written once against a (numpy, nn, jit, grad) namespace, so xlapy and JAX trace the same program: a
pre-norm decoder (embedding, N x [layer norm, causal multi-head attention, layer norm, GELU MLP], tied output
projection, softmax cross-entropy) and one SGD step. For each N it reports the HLO instruction count of the
traced step, the compile time (xlapy: `jit(step).lower(...).compile()`, passes + LLVM; JAX: the same on XLA:CPU),
each per instruction, and the spread of xlapy's per-instruction time across N: issue 11 asks for it to stay
flat within +-25% (compile time linear in module size). The whole compile (not `--hlo-only`) shares identical layers' kernels, so its
time per instruction falls with N (N = 1's kernels are all new); the table's marginal column, the cost of each
instruction added from one N to the next, is what stays flat when growth is linear and rises when it is not. Every compile is a fresh trace in this process; the
median of `--repeat` compiles per N, after one untimed 1-layer compile per peer (imports and tables built on first
use would otherwise count as N=1's).

`--hlo-only` times the HLO half alone (the CPU pass pipeline on a clone of the traced module, as the CPU
compiler runs it, no LLVM) in this thread's CPU time, which other processes on a shared machine disturb less
than wall time:

    .venv/bin/python benchmarks/scaling.py --hlo-only --no-jax --repeat 3

`--cpu` times the whole compile (passes, emission and LLVM, whose threads count too) in this process's CPU time
instead of wall time: the full figure per N, as robust on a shared machine as `--hlo-only`'s:

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/scaling.py --cpu --no-jax --layers 1,2,4,8,16

The `--repeat` compiles go round the sizes (N=1, 2, ..., 32, then again), so that each N's median is taken over the
same stretch of a shared machine's load: even thread CPU time swings 2x there (a busy neighbour on the other core
slows this one's caches and memory), and one N timed while the machine was quiet skewed the spread.

`--calls` counts instead of timing: the Python function calls (and C functions called from Python) of the HLO
pipeline per instruction, under cProfile. The same module gives the same count on any machine, at any load, so a
pass whose work per instruction grows with the module shows as a growing count (flat counts are necessary for flat
time, not sufficient: a C-level scan inside one call, such as a list search, counts once):

    .venv/bin/python benchmarks/scaling.py --calls --no-jax
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np


VOCAB, SEQ, WIDTH, HEADS, BATCH = 256, 64, 128, 4, 8


def make_step(np_, nn, layers: int):
    """(step, params, batch) for an N-layer decoder written against numpy-like `np_` and `nn`."""
    def layer_norm(x, g, b):
        mu = np_.mean(x, axis=-1, keepdims=True)
        var = np_.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) / np_.sqrt(var + 1e-5) * g + b

    def attention(x, p):
        b, t, d = x.shape
        qkv = x @ p["qkv"]                                         # [b, t, 3d]
        q, k, v = (qkv[..., i * d:(i + 1) * d].reshape(b, t, HEADS, d // HEADS).transpose(0, 2, 1, 3)
                   for i in range(3))
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(d // HEADS))
        mask = np_.tril(np_.ones((t, t), dtype=bool))
        scores = np_.where(mask, scores, np.float32(-1e9))
        out = nn.softmax(scores, axis=-1) @ v                      # [b, h, t, dh]
        return out.transpose(0, 2, 1, 3).reshape(b, t, d) @ p["proj"]

    def loss(params, tokens, targets):
        x = params["embed"][tokens]
        for p in params["layers"]:
            x = x + attention(layer_norm(x, p["g1"], p["b1"]), p)
            h = nn.gelu(layer_norm(x, p["g2"], p["b2"]) @ p["up"])
            x = x + h @ p["down"]
        logits = layer_norm(x, params["gf"], params["bf"]) @ params["embed"].T
        logp = nn.log_softmax(logits, axis=-1)
        return -np_.mean(np_.take_along_axis(logp, targets[..., None], axis=-1))

    rng = np.random.default_rng(0)

    def w(*shape, scale=0.02):
        return (scale * rng.standard_normal(shape)).astype(np.float32)
    params = {"embed": w(VOCAB, WIDTH), "gf": np.ones(WIDTH, np.float32), "bf": np.zeros(WIDTH, np.float32),
              "layers": [{"qkv": w(WIDTH, 3 * WIDTH), "proj": w(WIDTH, WIDTH), "up": w(WIDTH, 4 * WIDTH),
                          "down": w(4 * WIDTH, WIDTH), "g1": np.ones(WIDTH, np.float32),
                          "b1": np.zeros(WIDTH, np.float32), "g2": np.ones(WIDTH, np.float32),
                          "b2": np.zeros(WIDTH, np.float32)} for _ in range(layers)]}
    tokens = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    targets = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    return loss, params, (tokens, targets)


CLOCK = time.perf_counter          # --cpu: time.process_time (every thread of this process)


def xlapy_compile(layers: int) -> tuple[int, float]:
    import xlapy
    import xlapy.nn
    import xlapy.numpy as xnp
    loss, params, batch = make_step(xnp, xlapy.nn, layers)

    def step(params, tokens, targets):
        l, g = xlapy.value_and_grad(loss)(params, tokens, targets)
        return l, xlapy.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g)
    lowered = xlapy.jit(step).lower(params, *batch)
    count = sum(len(c.instructions) for c in lowered.module.computations)
    t0 = CLOCK()
    lowered.compile()
    return count, CLOCK() - t0


def xlapy_hlo_pipeline(layers: int, count_calls: bool = False) -> tuple[int, float]:
    """The CPU pass pipeline alone on the traced step, in thread CPU time (compile_module's HLO half); count_calls:
    the function calls it makes instead (deterministic)."""
    import xlapy
    import xlapy.nn
    import xlapy.numpy as xnp
    from xlapy.passes.optimize import optimize
    from xlapy.passes.pipelines import cpu_pipeline
    loss, params, batch = make_step(xnp, xlapy.nn, layers)

    def step(params, tokens, targets):
        l, g = xlapy.value_and_grad(loss)(params, tokens, targets)
        return l, xlapy.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g)
    module = xlapy.jit(step).lower(params, *batch).module
    count = sum(len(c.instructions) for c in module.computations)
    if count_calls:
        import cProfile
        import pstats
        clone, pipeline = module.clone(), cpu_pipeline()
        profile = cProfile.Profile()
        profile.runcall(optimize, clone, pipeline)
        return count, float(pstats.Stats(profile).total_calls)
    t0 = time.thread_time()
    optimize(module.clone(), cpu_pipeline())
    return count, time.thread_time() - t0


def jax_compile(layers: int) -> tuple[int, float]:
    import jax
    import jax.numpy as jnp
    loss, params, batch = make_step(jnp, jax.nn, layers)

    def step(params, tokens, targets):
        l, g = jax.value_and_grad(loss)(params, tokens, targets)
        return l, jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g)
    lowered = jax.jit(step).lower(params, *batch)
    count = lowered.as_text(dialect="hlo").count(" = ")
    t0 = CLOCK()
    lowered.compile()
    return count, CLOCK() - t0


def _cell(name: str, runs: list, calls: bool) -> str:
    count, value = runs[0][0], statistics.median(t for _, t in runs)
    if calls:
        return f"{name}: {count} instr {value:.0f} calls ({value / count:.0f} calls/instr)"
    return f"{name}: {count} instr {value:.2f} s ({value / count * 1e3:.2f} ms/instr)"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="1,2,4,8,16,32", help="comma-separated N")
    ap.add_argument("--repeat", type=int, default=1, help="compiles per N (median)")
    ap.add_argument("--no-jax", action="store_true", help="xlapy only, even where JAX is installed")
    ap.add_argument("--hlo-only", action="store_true",
                    help="time xlapy's HLO pass pipeline alone (thread CPU time), no LLVM")
    ap.add_argument("--cpu", action="store_true",
                    help="time each compile in process CPU time (all threads) instead of wall time")
    ap.add_argument("--calls", action="store_true",
                    help="count the HLO pipeline's function calls per instruction instead of timing (deterministic)")
    args = ap.parse_args(argv)
    # compile times are cold compiles: the persistent compilation cache (which would turn a second run's compiles
    # into loads) is off in this process and its children; set here, not at import (tests import summary())
    os.environ["XLAPY_CACHE_DIR"] = "off"
    os.environ.setdefault("XLAPY_BACKEND", "cpu")
    global CLOCK
    if args.cpu:
        CLOCK = time.process_time
    if args.calls:
        args.hlo_only, args.no_jax, args.repeat = True, True, 1
    peers = {"xlapy": (lambda n: xlapy_hlo_pipeline(n, True)) if args.calls
             else xlapy_hlo_pipeline if args.hlo_only else xlapy_compile}
    if args.hlo_only:
        from xlapy.backends.interpreter.evaluator import handler_table
        handler_table()                 # constant folding's first use imports the interpreter: not per module
    if not args.no_jax:
        try:
            import jax  # noqa: F401
            peers["jax"] = jax_compile
        except ImportError:
            pass
    for fn in peers.values():
        fn(1)                           # one-time costs (imports, tables built on first use) are not per instruction
    sizes = [int(v) for v in args.layers.split(",")]
    runs: dict = {(n, name): [] for n in sizes for name in peers}
    for r in range(args.repeat):                    # round the sizes, repeat times (see the docstring)
        for n in sizes:
            for name, fn in peers.items():
                runs[n, name].append(fn(n))
            if r == args.repeat - 1:
                cells = "  ".join(_cell(k, runs[n, k], args.calls) for k in peers)
                print(f"N={n:3d}  {cells}", flush=True)
            elif args.repeat > 1 and n == sizes[-1]:
                print(f"(round {r + 1} of {args.repeat} done)", flush=True)
    rows = [{"N": n, **{k: (runs[n, k][0][0], statistics.median(t for _, t in runs[n, k])) for k in peers}}
            for n in sizes]
    print(summary(rows, args.calls))

def summary(rows: list[dict], calls: bool = False) -> str:
    """The per-N table (rows: {"N", "xlapy": (instructions, seconds or calls)[, "jax": ...]}) and its spreads.

    Besides each N's time per instruction, the marginal time per added instruction from one N to the next: the
    whole compile shares identical layers' kernels (kernels.KernelCache), so its time per instruction falls
    with N from N = 1's all-new kernels; linear growth is the marginal cost staying flat, superlinear growth is
    it rising."""
    per = [r["xlapy"][1] / r["xlapy"][0] for r in rows]
    mid = statistics.median(per)
    spread = f"spread {min(per) / mid - 1:+.0%} .. {max(per) / mid - 1:+.0%}"
    if calls:
        return f"\nxlapy HLO pipeline function calls per instruction: median {mid:.0f}, {spread}"
    out = [f"\nxlapy compile time per instruction: median {mid * 1e3:.2f} ms, {spread} (goal: within +-25%)"]
    marginal = [None] + [(b["xlapy"][1] - a["xlapy"][1]) / (b["xlapy"][0] - a["xlapy"][0])
                         for a, b in zip(rows, rows[1:])]
    later = [m for m in marginal[2:] if m is not None]
    if later:
        mm = statistics.median(later)
        out.append(f"xlapy marginal compile time per added instruction (N >= {rows[2]['N']}): median "
                   f"{mm * 1e3:.2f} ms, spread {min(later) / mm - 1:+.0%} .. {max(later) / mm - 1:+.0%}")
    jax = "jax" in rows[0]
    out.append("\n| N | instructions | xlapy compile | ms/instr | marginal ms/instr |"
               + (" XLA compile | ms/instr | xlapy/XLA |" if jax else ""))
    out.append("|---|---|---|---|---|" + ("---|---|---|" if jax else ""))
    for r, m in zip(rows, marginal):
        c, t = r["xlapy"]
        line = f"| {r['N']} | {c} | {t:.2f} s | {t / c * 1e3:.2f} | {'—' if m is None else f'{m * 1e3:.2f}'} |"
        if jax:
            jc, jt = r["jax"]
            line += f" {jt:.2f} s | {jt / jc * 1e3:.2f} | {t / jt:.2f}x |"
        out.append(line)
    return "\n".join(out)

if __name__ == "__main__":
    sys.exit(main())
