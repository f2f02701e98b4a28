"""Per-op run time of xlapy against XLA:CPU on one model module: where xlapy spends more than XLA.

    .venv-models/bin/python benchmarks/kernel_compare.py gpt2/train                # two threads each
    .venv-models/bin/python benchmarks/kernel_compare.py lstm/fwd --one-core --top 15

Both executables run in this process and are traced for --calls calls each: xlapy with xlapy.profiler (one
CLOCK_MONOTONIC event per kernel, loop bodies' kernels included), XLA with jax.profiler (XLA:CPU's thunk
executor records one event per thunk, named as the instructions of its optimized HLO: `fusion.N`,
`ynn_fusion.N` (a dot with what YNNPACK fused into it), `dot.N`, `while.N` and its body's thunks). An op's time
is the lower quartile of its calls times its events per call, so a call that another process preempted counts
less (the machine is shared; run_models.py's interleaved figures are the end-to-end ones).

`--one-core` pins the process to one core before either runtime starts, and runs xlapy with one thread and
its BLAS serial: kernel code against kernel code, without the two runtimes' ways of using more cores (XLA runs
independent thunks side by side; xlapy splits a kernel's loop over its pool).

What a first run on the Intel machine (2026-11-29, --one-core, loaded) showed: gpt2/train's dots 37 ms
(xlapy) against 42 ms (XLA, ynn fusions included), its other ops 25 against 19 ms: the GELU fusions'
tanh (345 against ~120 us each) and the optimizer's updates; lstm/fwd's gate fusion 11.7 us per time step against
XLA's 7.1 us (its two fusions), its dots 12.1 + 6.3 against 15 + 7.7 us. On two threads (the other core
busy) gpt2/train's dots were 42.0 ms against 38.8: xlapy's split GEMMs ran no faster than on one thread.
"""
from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import re
import sys
import tempfile

CONTAINERS = {"while", "conditional", "call"}     # their time is their body's ops, counted on their own


def op_class(side: str, name: str, kind: str = "") -> str:
    """dot (a matrix product, with what the library fused into it), container, or loop (everything else)."""
    base = re.sub(r"\.\d+$", "", name)
    if base in CONTAINERS or kind in CONTAINERS:
        return "container"
    if side == "xla":
        return "dot" if base.startswith(("ynn_fusion", "dot", "custom-call")) else "loop"
    return "dot" if kind == "dot" else "loop"


def per_call(samples: dict[str, list[float]], calls: int) -> dict[str, float]:
    """Seconds per call of each op: the lower quartile of its samples times how many it has per call."""
    out = {}
    for name, values in samples.items():
        values = sorted(values)
        out[name] = values[len(values) // 4] * max(1, len(values) // calls)
    return out


def totals(side: str, times: dict[str, float], kinds: dict[str, str]) -> dict[str, float]:
    sums: dict[str, float] = collections.defaultdict(float)
    for name, t in times.items():
        sums[op_class(side, name, kinds.get(name, ""))] += t
    return dict(sums)


def xla_samples(run, calls: int) -> dict[str, list[float]]:
    """{thunk name: [seconds]} of `calls` runs under jax.profiler."""
    import jax
    log_dir = tempfile.mkdtemp(prefix="kernel_compare_")
    jax.profiler.start_trace(log_dir)
    for _ in range(calls):
        run()
    jax.profiler.stop_trace()
    trace = sorted(glob.glob(os.path.join(log_dir, "plugins", "profile", "*", "*.trace.json.gz")))[-1]
    events = json.load(gzip.open(trace))["traceEvents"]
    samples = collections.defaultdict(list)
    for e in events:       # thunks are named as HLO instructions; runtime and Python spans are not
        name = e.get("name", "")
        if e.get("ph") == "X" and re.fullmatch(r"[\w\-]+(\.\d+)?", name) and "::" not in name:
            samples[name].append(e["dur"] * 1e-6)
    return samples


def xlapy_samples(exe_maker, args, calls: int) -> tuple[dict[str, list[float]], dict[str, str], dict]:
    """({kernel: [seconds]}, {kernel: kind}, {kernel: (bytes, flops)}) of `calls` runs under xlapy.profiler
    (the executable is compiled inside the trace: only then does it time its kernels)."""
    import xlapy.profiler
    with xlapy.profiler.trace(tempfile.mkdtemp(prefix="kernel_compare_")):
        exe = exe_maker()
        for _ in range(calls):
            exe(*args)
    samples, kinds, costs = collections.defaultdict(list), {}, {}
    for e in xlapy.profiler.last_profile().of("kernel"):
        samples[e.name].append(e.duration_ns * 1e-9)
        kinds[e.name] = e.args.get("kind", "")
        costs[e.name] = (e.args.get("bytes", 0), e.args.get("flops", 0))
    return samples, kinds, costs


def _slowest(times: dict[str, float], keep, top: int) -> list[tuple[str, float]]:
    return [kv for kv in sorted(times.items(), key=lambda kv: -kv[1]) if keep(kv[0])][:top]


def _ms(s: float) -> str:
    return f"{s * 1e3:9.3f} ms"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("module", help="model/kind, as in benchmarks/models (gpt2/train)")
    ap.add_argument("--calls", type=int, default=15)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--one-core", action="store_true")
    ap.add_argument("--class", dest="op_class", choices=("dot", "loop"),
                    help="list only this class of op (the totals still cover both)")
    a = ap.parse_args(argv)
    if a.one_core:      # before jax, xlapy or the BLAS start their threads
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        os.environ.update(XLAPY_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import model_harness
    model_harness.environment()
    import xla_check
    import xlapy
    xla_check.ENABLE_X64 = True
    inputs = model_harness.corpus("inputs")
    entry = inputs.load_entry(a.module)
    text = entry["hlo_path"].read_text()
    args = inputs.make_inputs(entry)

    exe, device = model_harness.xla_compile(text)
    xla_hlo = exe.hlo_modules()[0].to_string()
    run = model_harness.xla_call(exe, device, args, model_harness.donates(text))
    for _ in range(3):
        run()
    xla_times = per_call(xla_samples(run, a.calls), a.calls)
    samples, kinds, costs = xlapy_samples(lambda: xlapy.compile(xlapy.hlo.parse(text), backend="cpu"), args,
                                          a.calls)
    ours = per_call(samples, a.calls)

    t_xla, t_ours = totals("xla", xla_times, {}), totals("xlapy", ours, kinds)
    print(f"{a.module}: lower-quartile op times per call, {a.calls} calls each"
          + (" (one core)" if a.one_core else ""))
    for cls in ("dot", "loop"):
        x, o = t_xla.get(cls, 0.0), t_ours.get(cls, 0.0)
        print(f"  {cls:5s} XLA {_ms(x)}   xlapy {_ms(o)}   xlapy/XLA {o / x if x else float('nan'):.2f}")
    shapes = dict(re.findall(r"%([\w\-.]+) = (\S+) ", xla_hlo))
    print("\nXLA's slowest ops (not containers):")
    listed = {a.op_class} if a.op_class else {"dot", "loop"}
    for name, t in _slowest(xla_times, lambda n: op_class("xla", n) in listed, a.top):
        print(f"  {name:40s} {_ms(t)}  {shapes.get(name, '')[:60]}")
    print("\nxlapy's slowest kernels (not containers):")
    for name, t in _slowest(ours, lambda n: op_class("xlapy", n, kinds[n]) in listed, a.top):
        nbytes, flops = costs[name]
        print(f"  {name:40s} {_ms(t)}  {kinds[name]:12s} {nbytes / 1e3:9.1f} kB {flops / 1e6:9.2f} MFLOP")
    return 0


if __name__ == "__main__":
    sys.exit(main())
