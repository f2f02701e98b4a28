"""Real-model benchmark (issue 11): compile time and run time of xlapy against XLA:CPU on benchmarks/models.

    make bench-models                                         # every module, quiet machine
    .venv-models/bin/python benchmarks/run_models.py --only 'gpt2|lstm' --busy --out /tmp/models.md
    .venv-models/bin/python benchmarks/run_models.py --torch --only 'vit|resnet50'   # and the PyTorch twins

XLA's side compiles the committed HLO text through jaxlib's XLA client (tools/xla_check.py), rather than
`jax.jit` of the Python function: both compilers get the same text (TensorFlow's modules too, which jax.jit
cannot produce), neither side's time includes tracing or lowering, and the generator's record pass has
checked that XLA's run of this text reproduces jax.jit's outputs (within 1e-5; TF's within 1e-3).
It needs an environment with xlapy and jax: .venv-models (tools/setup_models_env.sh) or .venv-bench.

Each module runs in its own worker process (a crash or a runaway compile stays there): the worker compiles
with XLA, then with xlapy under a time limit (--timeout, reported as "timeout"; one compile each, as a user
pays it, in a process where each compiler has already compiled a 2-instruction module: importing jax alone is
about 0.9 s, which the figures before 2026-11-28 18:20 UTC counted in XLA's compile time), checks xlapy's outputs against XLA's recorded ones (benchmarks/models/outputs.py, the test's
tolerance), and times both executables with benchmarks/run.py's interleaved_medians (rounds that time each
implementation in turn, so the machine's slow phases hit both alike). `--busy` starts one competing
busy-loop process for the whole run, the contended figure issue 11 asks for; one worker's busy run ratio swings
+-15% on unchanged code, so `--runs N` times each module in N worker processes and reports the medians. Ratios are xlapy / XLA: above 1
means xlapy is slower. Besides each compile's wall time, its process CPU time (every thread: xlapy's LLVM threads,
XLA's): with another process busy, the kernel shares the cores out by session, so a compile's wall time follows
its CPU time, and the CPU ratio is the one that holds from run to run on a loaded machine.

`--torch` adds the PyTorch twins of the modules that exist in both (benchmarks/models/torch_twins.py: the same
layers at the same sizes, written with torch.nn): eager PyTorch and torch.compile (inductor) are timed in the
same interleaved rounds as XLA and xlapy, and torch.compile's first call, in a fresh inductor cache, is its
compile time. A second table gives xlapy / torch.compile and xlapy / eager.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tools"))
import model_harness  # noqa: E402

inputs = model_harness.corpus("inputs")
outputs = model_harness.corpus("outputs")


class CompileTimeout(BaseException):
    """Raised by the alarm: a BaseException, so that xlapy's passes, which wrap an Exception in an XlapyError
    naming the pass, let it through."""


def _emit(result: dict) -> None:
    print("RESULT " + json.dumps(result), flush=True)


def _xla_runner(text: str, args):
    """Compile `text` with XLA:CPU; returns a function running it once on device buffers of `args`."""
    exe, device = model_harness.xla_compile(text)
    return model_harness.xla_call(exe, device, args, model_harness.donates(text))


def _warm_up() -> None:
    """Compile and run a 2-instruction module on each side first (model_harness.warm_up_xla / warm_up_xlapy), so
    that neither compile time below counts importing the compiler or creating its runtime: both figures are a warm
    process's compile."""
    model_harness.warm_up_xla()
    model_harness.warm_up_xlapy()


def _torch_twin(module_id: str, result: dict) -> dict:
    """{"torch": eager step, "torch.compile": compiled step} of the module's PyTorch twin
    (benchmarks/models/torch_twins.py), with the compiled step's first call (dynamo, AOTAutograd, inductor's C++
    builds, in a fresh cache directory) timed into result["torch_compile_s"]; {} without a twin or torch."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-"))   # a cold compile
    os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
    os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")
    try:
        torch_twins = model_harness.corpus("torch_twins")
    except ImportError as e:
        result["torch"] = f"not installed ({e.name})"
        return {}
    if not torch_twins.has_twin(module_id):
        return {}
    try:
        eager, compiled = torch_twins.make(module_id)
        eager()
        t0, c0 = time.perf_counter(), time.process_time()
        compiled()
        result["torch_compile_s"] = time.perf_counter() - t0
        result["torch_compile_cpu_s"] = time.process_time() - c0
    except Exception as e:
        result["torch"] = f"error: {type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
        return {}
    result["torch"] = "ok"
    return {"torch": eager, "torch.compile": compiled}


def worker(module_id: str, timeout: float, repeat: int, min_time: float, torch: bool = False) -> int:
    """Measure one module; prints a RESULT line after XLA's figures and again after xlapy's. With `torch`, the
    module's PyTorch twin (eager and torch.compile) is timed in the same interleaved rounds as xlapy and XLA."""
    import numpy as np
    import xla_check
    from run import interleaved_medians
    import xlapy
    from xlapy.tools import npz
    xla_check.ENABLE_X64 = True          # s64 parameters (Keras' step counter) keep their type
    entry = inputs.load_entry(module_id)
    text = entry["hlo_path"].read_text()
    args = inputs.make_inputs(entry)
    result = {"module": module_id, "instructions": entry["instructions"]}
    _warm_up()
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        run_xla = _xla_runner(text, args)
        result["xla_compile_s"] = time.perf_counter() - t0
        result["xla_compile_cpu_s"] = time.process_time() - c0
        result["xla_run_s"] = interleaved_medians({"xla": run_xla}, repeat, min_time)["xla"]
    except Exception as e:   # XLA cannot re-read some of its own optimized dumps: time xlapy alone
        run_xla = None
        result["xla_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
    _emit(result)

    def on_alarm(signum, frame):
        raise CompileTimeout()
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(timeout))
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu")
    except CompileTimeout:
        result["xlapy"] = f"timeout ({timeout:.0f} s)"
        _emit(result)
        return 0
    except Exception as e:
        result["xlapy"] = f"compile error: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
        _emit(result)
        return 0
    finally:
        signal.alarm(0)
    result["xlapy_compile_s"] = time.perf_counter() - t0
    result["xlapy_compile_cpu_s"] = time.process_time() - c0
    try:
        got = npz.flatten(exe(*args))
    except Exception as e:
        result["xlapy"] = f"run error: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
        _emit(result)
        return 0
    records = entry["outputs"] if "outputs" in entry else inputs.load_entry(
        f"{entry['model']}/{entry['expected_from']}")["outputs"]
    problems = outputs.compare(got, records, dict(np.load(entry["expected_path"])), outputs.tolerance(entry))
    result["xlapy"] = "ok" if not problems else f"MISMATCH {problems[0][:150]}"
    fns = {"xla": run_xla, "xlapy": lambda: exe(*args)} if run_xla else {"xlapy": lambda: exe(*args)}
    if torch:
        fns.update(_torch_twin(module_id, result))
    times = interleaved_medians(fns, repeat, min_time)
    result["xla_run_s"], result["xlapy_run_s"] = times.get("xla"), times["xlapy"]
    result["torch_run_s"], result["torch_compiled_run_s"] = times.get("torch"), times.get("torch.compile")
    _emit(result)
    return 0


def run_worker(module_id: str, a, repeat: int | None = None, min_time: float | None = None) -> dict:
    cmd = [sys.executable, __file__, "--worker", module_id, "--timeout", str(a.timeout),
           "--repeat", str(a.repeat if repeat is None else repeat),
           "--min-time", str(a.min_time if min_time is None else min_time)] + (["--torch"] if a.torch else [])
    result = {"module": module_id, "xlapy": "worker died"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout + 600)
        tail = proc.stderr.strip().splitlines()[-1:] if proc.returncode else []
        if tail:
            result["xlapy"] = f"worker died (rc {proc.returncode}): {tail[0][:120]}"
        stdout = proc.stdout
    except subprocess.TimeoutExpired as e:
        result["xlapy"] = "timeout (worker killed)"
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            last = json.loads(line[len("RESULT "):])
            result = {**result, **last} if "xlapy" in last else {**last, "xlapy": result["xlapy"]}
    return result


_COMPILE_KEYS = ("xla_compile_s", "xlapy_compile_s", "xla_compile_cpu_s", "xlapy_compile_cpu_s", "torch_compile_s",
                 "torch_compile_cpu_s")
_RUN_KEYS = ("xla_run_s", "xlapy_run_s", "torch_run_s", "torch_compiled_run_s")


def with_medians(first: dict, more: list[dict], runs: bool = False) -> dict:
    """`first` (a worker's result, run times included) with each compiler's compile time replaced by the median over
    it and `more` (workers of the same module, each a fresh process: a second compile in one process would find
    xlapy's and LLVM's in-process caches warm), and with `runs` its run times too (each worker's are the medians of
    its own interleaved rounds). One compile swings 10-20% between runs on both sides; with a busy process one
    worker's run ratio swings +-15% (session 31: vit/fwd 1.18x, then 0.70-0.88x in four more workers)."""
    out = dict(first)
    for key in _COMPILE_KEYS + (_RUN_KEYS if runs else ()):
        values = [r[key] for r in [first, *more] if r.get(key) and (key in _COMPILE_KEYS or r.get("xlapy") == "ok")]
        if values:
            out[key] = statistics.median(values)
    out["processes"] = 1 + len(more)
    return out


def _time(seconds) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1e3:.3g} ms"


def _ratio(a, b) -> str:
    return f"{a / b:.2f}×" if a and b else "—"


def _geomean(values) -> float | None:
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def table(results: list[dict]) -> str:
    lines = ["| module | instructions | XLA compile | xlapy compile | compile xlapy/XLA | compile CPU xlapy/XLA | "
             "XLA run | xlapy run | run xlapy/XLA | xlapy |", "|---|---|---|---|---|---|---|---|---|---|"]
    compile_ratios, cpu_ratios, run_ratios = [], [], []
    for r in results:
        xc, yc, xr, yr = (r.get(k) for k in ("xla_compile_s", "xlapy_compile_s", "xla_run_s", "xlapy_run_s"))
        xcpu, ycpu = r.get("xla_compile_cpu_s"), r.get("xlapy_compile_cpu_s")
        if xc and yc:
            compile_ratios.append(yc / xc)
        if xcpu and ycpu:
            cpu_ratios.append(ycpu / xcpu)
        if xr and yr and r.get("xlapy") == "ok":
            run_ratios.append(yr / xr)
        status = r.get("xlapy", "—") + (f" (XLA: {r['xla_error']})" if "xla_error" in r else "")
        status = status.replace("|", "\\|")         # |x| in a mismatch message would split the table cell
        lines.append(f"| {r['module']} | {r.get('instructions', '—')} | {_time(xc)} | {_time(yc)} | "
                     f"{_ratio(yc, xc)} | {_ratio(ycpu, xcpu)} | {_time(xr)} | {_time(yr)} | {_ratio(yr, xr)} | "
                     f"{status} |")
    cg, pg, rg = _geomean(compile_ratios), _geomean(cpu_ratios), _geomean(run_ratios)
    lines.append(f"| geometric mean | | | | {f'{cg:.2f}×' if cg else '—'} ({len(compile_ratios)}) | "
                 f"{f'{pg:.2f}×' if pg else '—'} ({len(cpu_ratios)}) | | | "
                 f"{f'{rg:.2f}×' if rg else '—'} ({len(run_ratios)}) | |")
    return "\n".join(lines)


def torch_table(results: list[dict]) -> str:
    """xlapy against the modules' PyTorch twins: torch.compile's first call (its compile) and run time, eager
    PyTorch's run time, and the ratios xlapy / torch.compile."""
    lines = ["| module | torch.compile compile | xlapy compile | compile xlapy/torch.compile | torch eager run | "
             "torch.compile run | xlapy run | run xlapy/torch.compile | run xlapy/eager |",
             "|---|---|---|---|---|---|---|---|---|"]
    compile_ratios, run_ratios, eager_ratios = [], [], []
    for r in results:
        if "torch" not in r:
            continue
        tc, yc = r.get("torch_compile_s"), r.get("xlapy_compile_s")
        te, tr, yr = r.get("torch_run_s"), r.get("torch_compiled_run_s"), r.get("xlapy_run_s")
        ok = r.get("xlapy") == "ok" and r["torch"] == "ok"
        if ok:
            compile_ratios.append(yc / tc if yc and tc else None)
            run_ratios.append(yr / tr if yr and tr else None)
            eager_ratios.append(yr / te if yr and te else None)
        status = "" if r["torch"] == "ok" else f" ({r['torch']})"
        lines.append(f"| {r['module']}{status} | {_time(tc)} | {_time(yc)} | {_ratio(yc, tc)} | {_time(te)} | "
                     f"{_time(tr)} | {_time(yr)} | {_ratio(yr, tr)} | {_ratio(yr, te)} |")
    gm = [_geomean(v) for v in (compile_ratios, run_ratios, eager_ratios)]
    fmt = lambda g, v: f"{g:.2f}× ({len([x for x in v if x])})" if g else "—"
    lines.append(f"| geometric mean | | | {fmt(gm[0], compile_ratios)} | | | | {fmt(gm[1], run_ratios)} | "
                 f"{fmt(gm[2], eager_ratios)} |")
    return "\n".join(lines)


def _torch_version() -> str:
    try:
        import torch
        return f"{torch.__version__} ({torch.get_num_threads()} threads)"
    except ImportError:
        return "(not installed)"


def _busy_loop() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="regex on module ids (model/kind), e.g. 'gpt2|lstm/train'")
    p.add_argument("--busy", action="store_true", help="run one competing busy-loop process meanwhile")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds allowed for one xlapy compile")
    p.add_argument("--repeat", type=int, default=7, help="interleaved rounds of the run-time measurement")
    p.add_argument("--min-time", type=float, default=1.0, help="seconds of run timing per implementation")
    p.add_argument("--out", help="also write the table (markdown) to this file")
    p.add_argument("--compiles", type=int, default=1,
                   help="compile each module this many times, each in a fresh process, and report the medians")
    p.add_argument("--runs", type=int, default=1,
                   help="time each module's runs in this many fresh processes (each its own interleaved rounds) and "
                        "report the medians; the compile medians then cover those processes too")
    p.add_argument("--torch", action="store_true",
                   help="also time each module's PyTorch twin (benchmarks/models/torch_twins.py), eager and "
                        "torch.compile, in the same rounds; needs torch in this environment")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    model_harness.environment()
    if a.worker:
        return worker(a.worker, a.timeout, a.repeat, a.min_time, a.torch)
    ids = [m for m in inputs.module_ids() if not a.only or re.search(a.only, m)]
    busy = _busy_loop() if a.busy else None
    results = []
    try:
        for module_id in ids:
            t0 = time.perf_counter()
            first = run_worker(module_id, a)
            rounds = {} if a.runs > 1 else {"repeat": 1, "min_time": 0.0}
            more = [run_worker(module_id, a, **rounds) for _ in range(max(a.compiles, a.runs) - 1)]
            results.append(with_medians(first, more, runs=a.runs > 1) if more else first)
            print(f"{module_id}: {results[-1].get('xlapy')} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr,
                  flush=True)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    import jax
    header = (f"{datetime.date.today()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
              f"jax/jaxlib {jax.__version__} (XLA:CPU), {'one competing busy-loop process' if a.busy else 'quiet'}; "
              f"xlapy compile limit {a.timeout:.0f} s; run times: medians of {a.repeat} interleaved rounds"
              + (f"; medians over {max(a.compiles, a.runs)} processes of "
                 + ("compile and run times" if a.runs > 1 else "compile times") if max(a.compiles, a.runs) > 1 else ""))
    text = header + "\n\n" + table(results) + "\n"
    if a.torch:
        text += "\nPyTorch twins (benchmarks/models/torch_twins.py), torch " + _torch_version() + \
            ", in the same interleaved rounds:\n\n" + torch_table(results) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
