"""Side-by-side benchmarks: numpy eager, xlapy, and JAX jit / torch.compile where installed, in ONE process.

    make bench          # numpy and xlapy
    make bench-peers    # also JAX and PyTorch (installed into .venv-bench)

Prints a table of medians and ratios (peer time / xlapy time: above 1 means xlapy is faster) and writes
benchmarks/out/results.md and benchmarks/out/results.png (ignored by git; `make bench-publish` copies them over
the tracked benchmarks/results.md and results.png that the README quotes). Timings are medians over interleaved rounds after warm-up:
each round times every implementation once, so the machine's slow phases hit them all alike.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# xlapy's column is the compiled (LLVM) backend unless XLAPY_BACKEND says otherwise
os.environ.setdefault("XLAPY_BACKEND", "cpu")
# compile times are cold compiles: the persistent compilation cache (which would turn a second run's compiles into
# loads) is off in this process and its children
os.environ["XLAPY_CACHE_DIR"] = "off"


# Pause before each sample: the thread pools of the implementation timed just before (OpenBLAS, OpenMP, XLA's
# and xlapy's own) spin for a while after their last job and would steal cores from the next one.
SETTLE = 0.25


def interleaved_medians(fns: dict, repeat: int, min_time: float) -> dict:
    """Median seconds per call of each fn, measured in `repeat` rounds that take one sample of every fn in turn
    (each sample loops until it takes about min_time/repeat, after a SETTLE pause), so a slow phase of the
    machine hits every implementation alike rather than whichever ran during it. A fn that raises gets its
    error text."""
    inner, out = {}, {}
    for name, fn in fns.items():
        try:
            fn()  # warm-up (compiles)
            t0 = time.perf_counter()
            fn()
            one = max(time.perf_counter() - t0, 1e-7)
            inner[name] = max(1, int(min_time / repeat / one))
        except Exception as e:  # a peer that cannot run this case: say so, keep going
            out[name] = f"error: {type(e).__name__}: {str(e)[:80]}"
    samples: dict = {name: [] for name in inner}
    for _ in range(repeat):
        for name, n in inner.items():
            fn = fns[name]
            time.sleep(SETTLE)
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - t0) / n)
    out.update({name: statistics.median(v) for name, v in samples.items()})
    return out


def one_shot_medians(makers: dict, repeat: int) -> dict:
    """For cases that measure themselves (compile time): `repeat` rounds, each running every maker once."""
    samples: dict = {name: [] for name in makers}
    errors = {}
    for _ in range(repeat):
        for name, make in makers.items():
            if name in errors:
                continue
            try:
                samples[name].append(make())
            except Exception as e:
                errors[name] = f"error: {type(e).__name__}: {str(e)[:80]}"
    return {**{n: statistics.median(v) for n, v in samples.items() if v}, **errors}


def _peers() -> dict[str, object]:
    found = {}
    for name in ("jax", "torch"):
        try:
            found[name] = importlib.import_module(name)
        except Exception:  # not installed: that column is left out
            pass
    return found


def machine_info() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}"


def main(argv=None) -> int:
    import cases
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="comma-separated case ids (B1,B2,...)")
    p.add_argument("--repeat", type=int, default=11, help="interleaved rounds per case")
    p.add_argument("--min-time", type=float, default=1.0, help="seconds of timing per implementation and case")
    p.add_argument("--one-shot-repeat", type=int, default=3, help="rounds for compile-time cases")
    p.add_argument("--out", default=str(HERE / "out" / "results.md"),
                   help="the table (the chart goes beside it as .png); default benchmarks/out/results.md")
    args = p.parse_args(argv)
    peers = _peers()
    wanted = set(args.only.split(",")) if args.only else None
    rows = []
    for case in cases.CASES:
        if wanted and case.id not in wanted:
            continue
        makers = case.impls(peers)
        if case.one_shot:       # make() returns the measured seconds itself
            times = one_shot_medians(makers, args.one_shot_repeat)
        else:
            fns, times = {}, {}
            for impl, make in makers.items():
                try:
                    fns[impl] = make()
                except Exception as e:
                    times[impl] = f"error: {type(e).__name__}: {str(e)[:80]}"
            times.update(interleaved_medians(fns, args.repeat, args.min_time))
        times = {impl: times[impl] for impl in makers if impl in times}
        rows.append((case, times))
        print(_row_text(case, times), flush=True)
    write_results(rows, Path(args.out))
    return 0


def _fmt(t) -> str:
    if isinstance(t, str):
        return t
    for unit, scale in (("s", 1), ("ms", 1e3), ("µs", 1e6)):
        if t * scale >= 1 or unit == "µs":
            return f"{t * scale:.3g} {unit}"
    return str(t)


def _ratio(times, impl) -> str:
    x, t = times.get("xlapy"), times.get(impl)
    if not isinstance(x, float) or not isinstance(t, float):
        return "—"
    return f"{t / x:.2f}×"


IMPLS = ("numpy", "xlapy", "jax", "torch")


def _row_text(case, times) -> str:
    cols = "  ".join(f"{i}={_fmt(times[i])}" for i in IMPLS if i in times)
    return f"{case.id} {case.title}: {cols}"


def write_results(rows, out: Path) -> None:
    date = datetime.date.today().isoformat()
    lines = [f"# xlapy benchmarks ({date})", "", f"Machine: {machine_info()}",
             f"xlapy backend: {os.environ.get('XLAPY_BACKEND')}, peers: {', '.join(_peers()) or 'none'}", "",
             "Medians; ratio = that implementation's time / xlapy's time (above 1: xlapy is faster).", "",
             "| case | " + " | ".join(IMPLS) + " | numpy/xlapy | jax/xlapy | torch/xlapy |",
             "|---|" + "---|" * (len(IMPLS) + 3)]
    for case, times in rows:
        installed = {"numpy", "xlapy", *_peers()}
        cells = [_fmt(times[i]) if i in times else ("—" if i in installed else "not installed") for i in IMPLS]
        lines.append(f"| {case.id} {case.title} | " + " | ".join(cells) + " | "
                     + " | ".join(_ratio(times, i) for i in ("numpy", "jax", "torch")) + " |")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    try:
        _plot(rows, out.with_suffix(".png"))
        print(f"wrote {out.with_suffix('.png')}")
    except ImportError:
        print("matplotlib not installed: no chart (pip install matplotlib)")


def _plot(rows, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.2
    for k, impl in enumerate(IMPLS):
        vals = []
        for _, times in rows:
            x, t = times.get("xlapy"), times.get(impl)
            vals.append(t / x if isinstance(x, float) and isinstance(t, float) else 0)
        ax.bar([i + k * width for i in range(len(rows))], vals, width, label=impl)
    ax.set_xticks([i + 1.5 * width for i in range(len(rows))], [c.id for c, _ in rows])
    ax.set_ylabel("time relative to xlapy (higher = xlapy faster)")
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
