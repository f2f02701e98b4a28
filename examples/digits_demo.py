"""`make demo`: train two classifiers on scikit-learn's handwritten digits with xlapy, JAX-style.

    .venv/bin/python examples/digits_demo.py [--out demo_out] [--mlp-epochs 20] [--cnn-epochs 10] [--help]

It trains an MLP and a small CNN (examples/demo_models.py) with a jitted training step, prints test accuracy,
compile time and step time, then times the MLP's training step four ways -- xlapy jit (one compiled program),
xlapy op-by-op (the same step function without jit), the same in lazy mode (xlapy.lazy(): recorded, compiled
once, replayed) and a hand-written numpy step -- and writes to --out a
loss/accuracy plot, the training step's HLO before and after optimization and an HTML graph of it.

Each model runs on the cpu (LLVM) backend where it compiles and its projected training time fits
--train-budget, else on the interpreter; the CNN's max-pool is lax.reduce_window unless neither backend runs
its gradient fast enough, when the demo says so and uses the reshape+max formulation (see choose()).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import xlapy  # noqa: E402
from xlapy.backends import BACKENDS  # noqa: E402

import demo_models as dm  # noqa: E402

MOMENTUM = 0.9
BASE_LEARNING_RATE = {"mlp": 0.2, "cnn": 0.2}      # cosine-decayed to 0 over the run


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="demo_out", help="directory for the plot, HLO and HTML (default demo_out)")
    p.add_argument("--mlp-epochs", type=int, default=20)
    p.add_argument("--cnn-epochs", type=int, default=10)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--channels", type=int, default=16, help="CNN feature maps")
    p.add_argument("--limit", type=int, default=None, help="use only this many of the 1,797 samples")
    p.add_argument("--backend", choices=["auto", *sorted(BACKENDS)], default="auto",
                   help="auto: the cpu (LLVM) backend where it compiles the model and fits the budget, "
                        "else the interpreter")
    p.add_argument("--timing-steps", type=int, default=30, help="steps timed per way (fewer for op-by-op)")
    p.add_argument("--pool", choices=["auto", "reduce_window", "reshape"], default="auto",
                   help="CNN max-pool: lax.reduce_window, or reshape+max; auto tries reduce_window first")
    p.add_argument("--train-budget", type=float, default=90.0,
                   help="seconds of training per model: a way of running the step projected to take longer "
                        "is replaced by the next (see choose())")
    p.add_argument("--no-progress", action="store_true",
                   help="no tqdm progress bars (they are off anyway when the output is not a terminal)")
    return p.parse_args(argv)


# -- choosing how to run: the cpu backend where it compiles and is fast enough, else the interpreter ----

def backends_to_try(choice: str) -> list[str]:
    if choice != "auto":
        return [choice]
    return [b for b in ("cpu", "interpreter") if b in BACKENDS]


@dataclass
class Choice:
    variant: str
    logits_fn: Callable
    step: Callable
    backend: str
    jitted: Any
    compile_s: float
    warm_step_s: float
    first_outputs: tuple


def choose(name: str, variants: dict, backends: list[str], example: tuple, total_steps: int,
           budget_s: float) -> Choice:
    """The first (variant, backend) that compiles and whose projected training time fits the budget, trying
    the demo's own formulation first and the cpu backend before the interpreter; else the fastest one. Each
    candidate's first call is its compile time; one more call measures a warm step."""
    tried: list[Choice] = []
    for variant, logits_fn in variants.items():
        for backend in backends:
            step = dm.make_step(logits_fn, MOMENTUM)
            jitted = xlapy.jit(step, backend=backend)
            start = time.perf_counter()
            try:
                outputs = jitted(*example)
            except xlapy.XlapyError as e:
                print(f"  [{name}] {variant} on {backend}: cannot compile yet ({str(e).splitlines()[0]})")
                continue
            compile_s = time.perf_counter() - start
            start = time.perf_counter()
            jitted(*example)
            choice = Choice(variant, logits_fn, step, backend, jitted, compile_s, time.perf_counter() - start,
                            outputs)
            projected = choice.warm_step_s * total_steps
            if projected <= budget_s:
                return choice
            print(f"  [{name}] {variant} on {backend}: {choice.warm_step_s * 1e3:.1f} ms/step, "
                  f"{projected:.0f} s projected for training > {budget_s:.0f} s budget; trying the next way")
            tried.append(choice)
    if not tried:
        raise SystemExit(f"{name}: no backend could compile the training step")
    best = min(tried, key=lambda c: c.warm_step_s)
    print(f"  [{name}] nothing fits the budget; using the fastest: {best.variant} on {best.backend}")
    return best


@contextlib.contextmanager
def eager_backend(backend: str):
    """Op-by-op execution (outside jit) on `backend`, so the comparison with jit is on the same backend."""
    old = xlapy.config.default_backend
    xlapy.config.default_backend = backend
    try:
        yield
    finally:
        xlapy.config.default_backend = old


# -- training ---------------------------------------------------------------------------------------

def batches(rng: np.random.Generator, n: int, batch: int) -> list[np.ndarray]:
    """Index arrays of one shuffled epoch; the last partial batch is dropped (one shape, one compile)."""
    order = rng.permutation(n)
    return [order[i:i + batch] for i in range(0, n - batch + 1, batch)]


def progress_bars_wanted(args: argparse.Namespace) -> bool:
    """tqdm's bars only on a terminal: redirected to a file or a pipe, every bar leaves its lines behind, so
    there the demo logs one line per epoch instead."""
    return not args.no_progress and sys.stdout.isatty() and sys.stderr.isatty()


def train(name: str, data: tuple, args: argparse.Namespace) -> dict:
    from tqdm import tqdm
    x_train, y_train, x_test, y_test = data
    init, variants = dm.MODELS[name]
    if name == "cnn" and args.pool != "auto":
        variants = {k: v for k, v in variants.items() if args.pool in k}
    params, init_source = init(seed=0) if name == "mlp" else init(seed=0, channels=args.channels)
    velocity = dm.zeros_like_tree(params)
    rng = np.random.default_rng(1)
    batch = min(args.batch, len(x_train))
    epochs = getattr(args, f"{name}_epochs")
    total_steps = epochs * (len(x_train) // batch)

    def learning_rate(step_number: int) -> np.float32:
        return dm.cosine_learning_rate(BASE_LEARNING_RATE[name], step_number, total_steps)

    epoch_batches = batches(rng, len(x_train), batch)
    first = epoch_batches[0]
    example = (x_train[first], y_train[first], learning_rate(0))
    choice = choose(name, variants, backends_to_try(args.backend), (params, velocity, *example), total_steps,
                    args.train_budget)
    params, velocity, loss = choice.first_outputs
    print(f"  [{name}] {choice.variant}, jitted training step on the {choice.backend!r} backend: first call "
          f"(trace + optimize + compile) {choice.compile_s:.2f} s; parameters from {init_source}")
    predict = xlapy.jit(choice.logits_fn, backend=choice.backend)

    bars = progress_bars_wanted(args)
    history = {"loss": [], "test_accuracy": []}
    step_times = []
    start, step_number = time.perf_counter(), 1
    for epoch in range(epochs):
        if epoch > 0:
            epoch_batches = batches(rng, len(x_train), batch)
        losses = [float(loss)] if epoch == 0 else []
        todo = epoch_batches[1:] if epoch == 0 else epoch_batches
        bar = tqdm(todo, desc=f"{name} epoch {epoch + 1:2d}/{epochs}", unit="step", disable=not bars)
        for idx in bar:
            t = time.perf_counter()
            params, velocity, loss = choice.jitted(params, velocity, x_train[idx], y_train[idx],
                                                   learning_rate(step_number))
            losses.append(float(loss))
            step_times.append(time.perf_counter() - t)
            step_number += 1
        history["loss"].append(float(np.mean(losses)))
        history["test_accuracy"].append(dm.accuracy(predict, params, x_test, y_test))
        if bars:
            bar.set_postfix(loss=f"{history['loss'][-1]:.3f}", test_acc=f"{history['test_accuracy'][-1]:.3f}")
        else:
            print(f"  [{name}] epoch {epoch + 1:2d}/{epochs}: loss {history['loss'][-1]:.3f}, "
                  f"test accuracy {history['test_accuracy'][-1]:.3f}", flush=True)
        bar.close()
    return {"name": name, "variant": choice.variant, "backend": choice.backend, "step": choice.step,
            "jitted": choice.jitted, "params": params, "velocity": velocity, "history": history,
            "accuracy": dm.accuracy(predict, params, x_test, y_test), "compile_s": choice.compile_s,
            "step_s": statistics.median(step_times) if step_times else choice.warm_step_s,
            "train_s": time.perf_counter() - start, "epochs": epochs, "batch": batch, "example": example,
            "retraces": choice.jitted.trace_count - 1}


# -- timing three ways ----------------------------------------------------------------------------------

def median_time(fn, args: tuple, repeats: int) -> float:
    times = []
    for _ in range(max(1, repeats)):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def time_three_ways(mlp: dict, executable: Any, args: argparse.Namespace) -> list[tuple[str, float, str]]:
    """The MLP training step as one jitted program, op by op, and by hand in numpy (same batch, same params)."""
    params = {k: np.asarray(v) for k, v in mlp["params"].items()}
    velocity = {k: np.asarray(v) for k, v in mlp["velocity"].items()}
    step_args = (params, velocity, *mlp["example"])
    backend = mlp["backend"]
    rows = [(f"xlapy jit ({backend})", median_time(mlp["jitted"], step_args, args.timing_steps),
             "one compiled program: forward, backward and update together")]
    leaves = [np.asarray(leaf) for leaf in xlapy.tree_util.tree_flatten(step_args)[0]]
    rows.append(("  its executable alone", median_time(executable, leaves, args.timing_steps),
                 "the same program called on flat arrays: the rest of a jit call is Python dispatch"))
    with eager_backend(backend):
        before = xlapy.frontend.eager_stats()
        warm = median_time(mlp["step"], step_args, 1)          # compiles each op's tiny module once
        eager = median_time(mlp["step"], step_args, max(3, args.timing_steps // 6))
        after = xlapy.frontend.eager_stats()
    rows.append((f"xlapy op-by-op ({backend})", eager,
                 f"no jit: each call re-traces and re-differentiates the loss, runs it as one cached `call`, "
                 f"then the update op by op ({after['compiles'] - before['compiles']} executables compiled in the "
                 f"{warm:.2f} s warm-up call)"))
    rows.append(lazy_row(mlp["step"], step_args, backend, args.timing_steps))
    numpy_step = dm.numpy_mlp_step(MOMENTUM)
    rows.append(("numpy by hand", median_time(numpy_step, step_args, args.timing_steps * 5),
                 "hand-written forward/backward, no compiler"))
    return rows


def lazy_row(step: Any, step_args: tuple, backend: str, timing_steps: int) -> tuple[str, float, str]:
    """The same op-by-op step in lazy mode (xlapy.lazy()): its ops are recorded and the read of the loss cuts
    them into one module, compiled at the second step and replayed from the cache afterwards."""
    def lazy_step(*a):
        with xlapy.lazy():
            out = step(*a)
            float(out[2])               # the training loop reads the loss: the cut
        return out
    with eager_backend(backend):
        before = xlapy.lazy_stats()
        lazy_step(*step_args)           # the first cut of a structure runs op by op; the second compiles it
        lazy_step(*step_args)
        seconds = median_time(lazy_step, step_args, max(3, timing_steps // 2))
        after = xlapy.lazy_stats()
    return (f"xlapy lazy op-by-op ({backend})", seconds,
            f"the same code under xlapy.lazy(): recorded, cut at float(loss), {after['compiles'] - before['compiles']} "
            f"cluster compiled, then replayed ({after['hits'] - before['hits']} cache hits)")


def profile_step(mlp: dict, optimized: Any, out: Path, steps: int) -> tuple[Any, Path]:
    """Run the MLP training step under xlapy.profiler: a trace for Perfetto, the kernel table, and the graph of
    the optimized step with each kernel coloured by its share of the time."""
    from xlapy.passes.graph import to_html
    params = {k: np.asarray(v) for k, v in mlp["params"].items()}
    velocity = {k: np.asarray(v) for k, v in mlp["velocity"].items()}
    step_args = (params, velocity, *mlp["example"])
    with xlapy.profiler.trace(out / "profile"):
        for _ in range(max(1, steps)):
            mlp["jitted"](*step_args)
    profile = xlapy.profiler.last_profile()
    graph = out / "mlp_train_step.profile.html"
    graph.write_text(to_html(optimized, times=profile.kernel_times()))
    return profile, graph


# -- outputs ----------------------------------------------------------------------------------------------

def write_plot(results: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for r in results:
        epochs = np.arange(1, r["epochs"] + 1)
        ax_loss.plot(epochs, r["history"]["loss"], marker="o", label=f"{r['name']} ({r['backend']})")
        ax_acc.plot(epochs, r["history"]["test_accuracy"], marker="o", label=r["name"])
    ax_loss.set(title="training loss (mean over the epoch)", xlabel="epoch", yscale="log")
    ax_acc.set(title="held-out test accuracy", xlabel="epoch", ylim=(0.5, 1.0))
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("xlapy on scikit-learn's digits")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def lower_and_compile(result: dict):
    """jit(step).lower(...) and .compile() for the trained model's step (the public AOT path)."""
    args = (result["params"], result["velocity"], *result["example"])
    lowered = xlapy.jit(result["step"], backend=result["backend"]).lower(*args)
    return lowered, lowered.compile()


def write_hlo(name: str, lowered: Any, compiled: Any, out: Path) -> list[Path]:
    """The training step's HLO before and after the optimizer, and an HTML graph of the optimized module."""
    from xlapy.passes.graph import to_html
    paths = [out / f"{name}_train_step.before_optimizations.txt", out / f"{name}_train_step.after_optimizations.txt",
             out / f"{name}_train_step.after_optimizations.html"]
    paths[0].write_text(lowered.as_text())
    paths[1].write_text(compiled.as_text())
    optimized = getattr(compiled.executable, "module", None)
    paths[2].write_text(to_html(optimized if optimized is not None else xlapy.hlo.parse(compiled.as_text())))
    return paths


# -- main -------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    started = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = dm.load_digits_split(limit=args.limit)
    print(f"xlapy {xlapy.__version__}: digits 8x8, {len(data[0])} train / {len(data[2])} test images; "
          f"backends {sorted(BACKENDS)}; {os.cpu_count()} cores")
    results = [train("mlp", data, args), train("cnn", data, args)]

    print("\nlowering and compiling the training steps ahead of time (jit(step).lower(...).compile()) ...")
    aot = {r["name"]: lower_and_compile(r) for r in results}
    print("timing the MLP training step four ways ...")
    mlp = results[0]
    rows = time_three_ways(mlp, aot["mlp"][1].executable, args)
    paths = [out / "training.png"]
    write_plot(results, paths[0])
    for r in results:
        paths += write_hlo(r["name"], *aot[r["name"]], out)
    print("profiling the MLP training step (xlapy.profiler) ...")
    profile, graph = profile_step(mlp, aot["mlp"][1].executable.module, out, args.timing_steps)
    paths += [profile.trace_path, profile.table_path, graph]
    total = time.perf_counter() - started

    print(f"\n{'model':5} {'':30} {'backend':12} {'test acc':>8} {'compile':>8} {'step':>9} {'epochs':>6} "
          f"{'train':>7}")
    for r in results:
        print(f"{r['name']:5} {r['variant']:30} {r['backend']:12} {r['accuracy']:8.1%} {r['compile_s']:7.2f}s "
              f"{r['step_s'] * 1e3:7.2f}ms {r['epochs']:6d} {r['train_s']:6.1f}s")
    jit_s = rows[0][1]
    print(f"\nMLP training step (batch {mlp['batch']}), median wall time per step:")
    for label, seconds, note in rows:
        print(f"  {label:26} {seconds * 1e3:9.3f} ms  {seconds / jit_s:7.1f}x jit   {note}")
    print(f"  op-by-op / jit = {rows[2][1] / jit_s:.1f}x;  lazy op-by-op / jit = {rows[3][1] / jit_s:.1f}x;  "
          f"numpy / jit = {rows[4][1] / jit_s:.2f}x")
    before, after = (xlapy.hlo.parse(paths[i].read_text()) for i in (1, 2))
    fusions = sum(1 for inst in after.entry.instructions if inst.opcode == "fusion")
    print(f"\nHLO of the MLP step: {sum(len(c.instructions) for c in before.computations)} instructions before "
          f"optimization; after it, {len(after.entry.instructions)} in the entry, {fusions} of them fusions")
    print(f"outputs in {out}/:")
    for path in paths:
        print(f"  {path}")
    print(f"\nwhere the MLP step's time goes (xlapy.profiler; the full table is {profile.table_path.name}):")
    print("\n".join("  " + line for line in profile.table(limit=8).splitlines()))
    print(f"open {paths[3]} in a browser for the graph of the optimized training step, and {graph.name} for the same "
          f"graph coloured by the profile; open {profile.trace_path} in https://ui.perfetto.dev (Open trace file)")
    print(cache_line())
    print(f"total demo time {total:.1f} s")
    return {"results": results, "timing": rows, "paths": paths, "total_s": total}


def cache_line() -> str:
    """What the persistent compilation cache did for this run (a second run loads what the first compiled)."""
    from xlapy.backends import compilation_cache
    store, stats = compilation_cache.store(), compilation_cache.STATS
    if store is None:
        return "compilation cache: off (XLAPY_CACHE_DIR=off)"
    return (f"compilation cache {store.root}: {stats.hits} modules loaded, {stats.writes} compiled and stored "
            f"(`xlapy cache info`, `xlapy cache clear`)")


if __name__ == "__main__":
    main()
