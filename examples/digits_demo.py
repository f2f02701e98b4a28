"""`make demo`: train two classifiers on scikit-learn's handwritten digits with xlapy, JAX-style.

    .venv/bin/python examples/digits_demo.py [--out demo_out] [--mlp-epochs 20] [--cnn-epochs 15]

It trains an MLP and a small CNN (examples/demo_models.py) with a jitted training step, prints test accuracy,
compile time and step time, then times the MLP's training step three ways -- xlapy jit (one compiled program),
xlapy op-by-op (the same step function without jit) and a hand-written numpy step -- and writes to --out a
loss/accuracy plot, the training step's HLO before and after optimization and an HTML graph of it.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

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
                   help="auto: the cpu (LLVM) backend where it compiles the model, else the interpreter")
    p.add_argument("--timing-steps", type=int, default=30, help="steps timed per way (fewer for op-by-op)")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bars")
    return p.parse_args(argv)


# -- compiling: the cpu backend where it can, else the interpreter ----------------------------------

def backends_to_try(choice: str) -> list[str]:
    if choice != "auto":
        return [choice]
    return [b for b in ("cpu", "interpreter") if b in BACKENDS]


def first_call(step, backends: list[str], example: tuple):
    """jit `step` on the first backend that compiles it; returns (jitted, backend, outputs, seconds, notes)."""
    notes = []
    for backend in backends:
        jitted = xlapy.jit(step, backend=backend)
        start = time.perf_counter()
        try:
            outputs = jitted(*example)
        except xlapy.XlapyError as e:
            notes.append(f"{backend} backend cannot compile it yet: {str(e).splitlines()[0]}")
            continue
        return jitted, backend, outputs, time.perf_counter() - start, notes
    raise SystemExit("no backend could compile the training step:\n  " + "\n  ".join(notes))


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


def train(name: str, data: tuple, args: argparse.Namespace, progress) -> dict:
    x_train, y_train, x_test, y_test = data
    init, logits_fn = dm.MODELS[name]
    params, init_source = init(seed=0) if name == "mlp" else init(seed=0, channels=args.channels)
    velocity = dm.zeros_like_tree(params)
    step = dm.make_step(logits_fn, MOMENTUM)
    rng = np.random.default_rng(1)
    batch = min(args.batch, len(x_train))

    epochs = getattr(args, f"{name}_epochs")
    total_steps = epochs * (len(x_train) // batch)

    def learning_rate(step_number: int) -> np.float32:
        return dm.cosine_learning_rate(BASE_LEARNING_RATE[name], step_number, total_steps)

    epoch_batches = batches(rng, len(x_train), batch)
    first = epoch_batches[0]
    jitted, backend, (params, velocity, loss), compile_s, notes = first_call(
        step, backends_to_try(args.backend), (params, velocity, x_train[first], y_train[first], learning_rate(0)))
    for note in notes:
        print(f"  [{name}] {note}; falling back")
    print(f"  [{name}] jitted training step on the {backend!r} backend; first call (trace + optimize + compile) "
          f"{compile_s:.2f} s; parameters from {init_source}")
    predict = xlapy.jit(logits_fn, backend=backend)

    history = {"loss": [], "test_accuracy": []}
    step_times = []
    start, step_number = time.perf_counter(), 1
    for epoch in range(epochs):
        if epoch > 0:
            epoch_batches = batches(rng, len(x_train), batch)
        losses = [float(loss)] if epoch == 0 else []
        todo = epoch_batches[1:] if epoch == 0 else epoch_batches
        bar = progress(todo, desc=f"{name} epoch {epoch + 1:2d}/{epochs}", unit="step", leave=True)
        for idx in bar:
            t = time.perf_counter()
            params, velocity, loss = jitted(params, velocity, x_train[idx], y_train[idx], learning_rate(step_number))
            step_number += 1
            losses.append(float(loss))
            step_times.append(time.perf_counter() - t)
        history["loss"].append(float(np.mean(losses)))
        history["test_accuracy"].append(dm.accuracy(predict, params, x_test, y_test))
        bar.set_postfix(loss=f"{history['loss'][-1]:.3f}", test_acc=f"{history['test_accuracy'][-1]:.3f}")
        bar.close()
    return {"name": name, "backend": backend, "step": step, "jitted": jitted, "params": params,
            "velocity": velocity, "history": history, "accuracy": history["test_accuracy"][-1] if epochs else
            dm.accuracy(predict, params, x_test, y_test), "compile_s": compile_s,
            "step_s": statistics.median(step_times) if step_times else float("nan"),
            "train_s": time.perf_counter() - start, "epochs": epochs, "batch": batch,
            "example": (x_train[first], y_train[first], learning_rate(0)), "retraces": jitted.trace_count - 1}


# -- timing three ways ----------------------------------------------------------------------------------

def median_time(fn, args: tuple, repeats: int) -> float:
    times = []
    for _ in range(max(1, repeats)):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def time_three_ways(mlp: dict, args: argparse.Namespace) -> list[tuple[str, float, str]]:
    """The MLP training step as one jitted program, op by op, and by hand in numpy (same batch, same params)."""
    params = {k: np.asarray(v) for k, v in mlp["params"].items()}
    velocity = {k: np.asarray(v) for k, v in mlp["velocity"].items()}
    step_args = (params, velocity, *mlp["example"])
    backend = mlp["backend"]
    rows = [(f"xlapy jit ({backend})", median_time(mlp["jitted"], step_args, args.timing_steps),
             "one compiled program: forward, backward and update together")]
    with eager_backend(backend):
        before = xlapy.frontend.eager_stats()
        warm = median_time(mlp["step"], step_args, 1)          # compiles each op's tiny module once
        eager = median_time(mlp["step"], step_args, max(3, args.timing_steps // 6))
        after = xlapy.frontend.eager_stats()
    rows.append((f"xlapy op-by-op ({backend})", eager,
                 f"no jit: {after['entries']} cached one-op executables ({after['compiles'] - before['compiles']} "
                 f"compiled in the {warm:.2f} s warm-up call); grad retraces every call"))
    numpy_step = dm.numpy_mlp_step(MOMENTUM)
    rows.append(("numpy by hand", median_time(numpy_step, step_args, args.timing_steps * 5),
                 "hand-written forward/backward, no compiler"))
    return rows


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


def write_hlo(result: dict, out: Path) -> list[Path]:
    """The training step's HLO before and after the optimizer, and an HTML graph of the optimized module."""
    from xlapy.passes.graph import to_html
    name = result["name"]
    args = (result["params"], result["velocity"], *result["example"])
    lowered = xlapy.jit(result["step"], backend=result["backend"]).lower(*args)
    compiled = lowered.compile()
    paths = [out / f"{name}_train_step.before_optimizations.txt", out / f"{name}_train_step.after_optimizations.txt",
             out / f"{name}_train_step.after_optimizations.html"]
    paths[0].write_text(lowered.as_text())
    paths[1].write_text(compiled.as_text())
    optimized = getattr(compiled.executable, "module", None)
    paths[2].write_text(to_html(optimized if optimized is not None else xlapy.hlo.parse(compiled.as_text())))
    return paths


def entry_size(text: str) -> int:
    """Instructions in the entry computation (a fusion counts as one)."""
    return len(xlapy.hlo.parse(text).entry.instructions)


# -- main -------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    started = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from tqdm import tqdm

    def progress(items, **kwargs):
        return tqdm(items, disable=args.no_progress, **kwargs)

    data = dm.load_digits_split(limit=args.limit)
    print(f"xlapy {xlapy.__version__}: digits 8x8, {len(data[0])} train / {len(data[2])} test images; "
          f"backends {sorted(BACKENDS)}; reductions from {dm.numpy_front_end()}; {os.cpu_count()} cores")
    results = [train("mlp", data, args, progress), train("cnn", data, args, progress)]

    print("\ntiming the MLP training step three ways ...")
    mlp = results[0]
    rows = time_three_ways(mlp, args)
    paths = [out / "training.png"]
    write_plot(results, paths[0])
    for r in results:
        paths += write_hlo(r, out)
    total = time.perf_counter() - started

    print(f"\n{'model':5} {'backend':12} {'test acc':>8} {'compile':>8} {'step':>9} {'epochs':>6} {'train':>7}")
    for r in results:
        print(f"{r['name']:5} {r['backend']:12} {r['accuracy']:8.1%} {r['compile_s']:7.2f}s "
              f"{r['step_s'] * 1e3:7.2f}ms {r['epochs']:6d} {r['train_s']:6.1f}s")
    jit_s = rows[0][1]
    print(f"\nMLP training step (batch {mlp['batch']}), median wall time per step:")
    for label, seconds, note in rows:
        print(f"  {label:26} {seconds * 1e3:9.3f} ms  {seconds / jit_s:7.1f}x jit   {note}")
    print(f"  op-by-op / jit = {rows[1][1] / jit_s:.1f}x;  numpy / jit = {rows[2][1] / jit_s:.2f}x")
    before, after = (paths[1], paths[2])
    print(f"\nHLO of the MLP step: {entry_size(before.read_text())} instructions in the entry before optimization, "
          f"{entry_size(after.read_text())} after")
    print(f"outputs in {out}/:")
    for path in paths:
        print(f"  {path}")
    print(f"open {paths[3]} in a browser for the graph of the optimized training step")
    print(f"total demo time {total:.1f} s")
    return {"results": results, "timing": rows, "paths": paths, "total_s": total}


if __name__ == "__main__":
    main()
