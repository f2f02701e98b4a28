"""Contention benchmark (issue 11): how much slower each workload runs when other processes share the cores.

    .venv-bench/bin/python benchmarks/contention.py                  # xlapy and JAX side by side
    .venv/bin/python benchmarks/contention.py --only B1,lstm         # xlapy alone, two workloads

Users run on laptops, CI machines and shared servers, where other processes want the same cores. A thread
pool that spins, or a parallel loop split into one fixed chunk per thread, collapses there: the caller waits
for a descheduled worker, or spinning workers take the cores the working threads need. This prints, for each
workload, the time on the machine as it is ("quiet") and with 1 and 2 competing busy-loop processes (pure
Python `while True: pass`), and the slowdown ratio contended / quiet, for xlapy and for JAX (XLA:CPU).

| workload | what it exercises |
|---|---|
| B1 | benchmarks/cases.py's sum(x + y*z) on 16M f32: a big elementwise fusion, its reduction split over threads |
| B2 | cases.py's row softmax 4096x1024: row fusions split over threads |
| B5 | cases.py's MLP training step: GEMMs split over the pool, many mid-size kernels |
| cnn | Flax's MNIST example CNN, one SGD step: convolutions as im2col + GEMM, pooling, dense layers |
| lstm | an LSTM cell in a fori_loop, 64 steps of a 16x192x512 GEMM and small elementwise kernels |
| MODEL/KIND | `--models`: a module of benchmarks/models (XLA's side compiles the same HLO text, tools/xla_check.py) |

`--pool-ab` adds the implementation "xlapy adapting": the same executables with the thread pool running a
parallel loop on its caller while the workers' help has not been paying (XLAPY_POOL_ADAPT=1,
threadpool.set_adapt(True); threadpool_share.py), timed in the same interleaved rounds as the default, which shares
every job; the adapting rule keeps its help measure across the switches. `--busy 1` times only the
configuration with one busy process.

Each configuration runs in a process of its own (`--worker N`): it compiles and warms every workload on the
machine as it is, then starts its N busy-loop processes, then times every implementation with
benchmarks/run.py's interleaved_medians (rounds that time each implementation in turn, so the machine's slow
phases hit all of them alike). XLAPY_NUM_THREADS is left as the user has it (unset: one thread per core).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tools"))
os.environ.setdefault("XLAPY_BACKEND", "cpu")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

IMPLS = ("xlapy", "xlapy adapting", "jax")
ADAPTING = "xlapy adapting"
BUSY = (0, 1, 2)                  # competing busy-loop processes per configuration


# -- the workloads ---------------------------------------------------------------------------------------
def _from_cases(name: str):
    """A case of benchmarks/cases.py, keeping the implementations this benchmark compares."""
    def build(peers):
        import cases
        case = next(c for c in cases.CASES if c.id == name)
        return {impl: make for impl, make in case.impls(peers).items() if impl in IMPLS}
    return build


LSTM_BATCH, LSTM_IN, LSTM_HIDDEN, LSTM_STEPS = 16, 64, 128, 64


def _lstm(np_mod, nn_mod, lax_mod):
    """An LSTM cell over LSTM_STEPS time steps (one fori_loop), written once against numpy-, nn- and lax-like
    modules (xlapy's or JAX's): each step is one GEMM and a handful of small elementwise kernels."""
    def run(xs, w, bias):
        def step(t, carry):
            h, c = carry
            z = np_mod.concatenate([xs[t], h], axis=1) @ w + bias
            i, f, g, o = np_mod.split(z, 4, axis=1)
            c = nn_mod.sigmoid(f) * c + nn_mod.sigmoid(i) * np_mod.tanh(g)
            h = nn_mod.sigmoid(o) * np_mod.tanh(c)
            return h, c
        zeros = np_mod.zeros((LSTM_BATCH, LSTM_HIDDEN), np.float32)
        h, _ = lax_mod.fori_loop(0, LSTM_STEPS, step, (zeros, zeros))
        return h
    return run


def lstm(peers):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((LSTM_STEPS, LSTM_BATCH, LSTM_IN)).astype(np.float32)
    w = (rng.standard_normal((LSTM_IN + LSTM_HIDDEN, 4 * LSTM_HIDDEN)) * 0.1).astype(np.float32)
    bias = np.zeros(4 * LSTM_HIDDEN, np.float32)

    def xlapy_impl():
        import xlapy
        import xlapy.numpy as xnp
        f = xlapy.jit(_lstm(xnp, xlapy.nn, xlapy.lax))
        args = [xlapy.device_put(a) for a in (xs, w, bias)]
        return lambda: f(*args).block_until_ready()
    impls = {"xlapy": xlapy_impl}
    if "jax" in peers:
        def jax_impl():
            jax = peers["jax"]
            f = jax.jit(_lstm(jax.numpy, jax.nn, jax.lax))
            args = [jax.device_put(a) for a in (xs, w, bias)]
            return lambda: f(*args).block_until_ready()
        impls["jax"] = jax_impl
    return impls


CNN_BATCH = 128


def _cnn_step(np_mod, nn_mod, lax_mod, grad):
    """Flax's MNIST example CNN (conv 32 3x3, relu, 2x2 average pool, conv 64 3x3, relu, pool, dense 256, relu,
    dense 10) as one SGD training step on a batch of CNN_BATCH 28x28 images, written once against numpy-, nn-
    and lax-like modules and a grad function (xlapy's or JAX's)."""
    def pool(x):
        n, h, w, c = x.shape
        return np_mod.mean(x.reshape(n, h // 2, 2, w // 2, 2, c), axis=(2, 4))

    def conv(x, k):
        return lax_mod.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def loss(params, x, y):
        k1, k2, w1, w2 = params
        h = pool(nn_mod.relu(conv(x, k1)))
        h = pool(nn_mod.relu(conv(h, k2)))
        h = nn_mod.relu(h.reshape(h.shape[0], -1) @ w1)
        return -np_mod.mean(np_mod.sum(nn_mod.log_softmax(h @ w2) * y, axis=1))

    def step(params, x, y):
        return [p - 0.01 * g for p, g in zip(params, grad(loss)(params, x, y))]
    return step


def cnn(peers):
    rng = np.random.default_rng(0)
    shapes = [(3, 3, 1, 32), (3, 3, 32, 64), (7 * 7 * 64, 256), (256, 10)]
    params = [(rng.standard_normal(s) / np.sqrt(np.prod(s[:-1]))).astype(np.float32) for s in shapes]
    x = rng.standard_normal((CNN_BATCH, 28, 28, 1)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, CNN_BATCH)]

    def xlapy_impl():
        import xlapy
        import xlapy.numpy as xnp
        f = xlapy.jit(_cnn_step(xnp, xlapy.nn, xlapy.lax, xlapy.grad))
        args = [[xlapy.device_put(p) for p in params], xlapy.device_put(x), xlapy.device_put(y)]
        return lambda: f(*args)[0].block_until_ready()
    impls = {"xlapy": xlapy_impl}
    if "jax" in peers:
        def jax_impl():
            jax = peers["jax"]
            f = jax.jit(_cnn_step(jax.numpy, jax.nn, jax.lax, jax.grad))
            args = [[jax.device_put(p) for p in params], jax.device_put(x), jax.device_put(y)]
            return lambda: f(*args)[0].block_until_ready()
        impls["jax"] = jax_impl
    return impls


def model(module_id: str):
    """A module of benchmarks/models: xlapy compiles its HLO text, XLA's side the same text (run_models.py)."""
    def build(peers):
        from run_models import _xla_runner, inputs
        entry = inputs.load_entry(module_id)
        text = entry["hlo_path"].read_text()
        args = inputs.make_inputs(entry)

        def xlapy_impl():
            import xlapy
            exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu")
            return lambda: exe(*args)
        impls = {"xlapy": xlapy_impl}
        if "jax" in peers:
            impls["jax"] = lambda: _xla_runner(text, args)
        return impls
    return build


WORKLOADS = {
    "B1": ("sum(x + y*z), 16M f32", _from_cases("B1")),
    "B2": ("row softmax 4096x1024", _from_cases("B2")),
    "B5": ("MLP train step 784-512-512-10, b128", _from_cases("B5")),
    "cnn": (f"MNIST CNN train step (Flax example's model), b{CNN_BATCH}", cnn),
    "lstm": (f"LSTM cell, {LSTM_STEPS} steps of b{LSTM_BATCH} h{LSTM_HIDDEN} in a fori_loop", lstm),
}
DEFAULT_MODELS = ("resnet50/fwd",)


def _workloads(only: str | None, models: list[str]) -> dict:
    table = dict(WORKLOADS)
    for m in models:
        table[m] = (f"benchmarks/models {m}", model(m))
    if only:
        wanted = only.split(",")
        table = {k: v for k, v in table.items() if k in wanted}
    return table


# -- one configuration: a process of its own --------------------------------------------------------------
def _busy_loop() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def _peers() -> dict:
    try:
        import jax
        return {"jax": jax}
    except Exception:        # not installed: xlapy alone
        return {}


class _PoolMode:
    """Which sharing rule the pool follows now (None: as the process started), and the help measure the adapting
    rule had when it was left."""
    adapt: bool | None = None
    saved_help: int | None = None


def _in_pool_mode(fn, adapt: bool):
    """fn run with the pool adapting or sharing every job; switching keeps the adapting rule's measure."""
    def run():
        from xlapy.backends.cpu import threadpool
        if _PoolMode.adapt is None:
            _PoolMode.adapt = threadpool.ADAPT
        if _PoolMode.adapt != adapt:
            if _PoolMode.adapt:
                _PoolMode.saved_help = threadpool.helper_share()
            threadpool.set_adapt(adapt)
            if adapt and _PoolMode.saved_help is not None:
                threadpool.set_helper_share(_PoolMode.saved_help)
            _PoolMode.adapt = adapt
        return fn()
    return run


def worker(busy: int, workloads: dict, repeat: int, min_time: float, pool_ab: bool = False) -> int:
    """Compile and warm everything on the machine as it is, start `busy` busy loops, time, print one RESULT
    line of JSON {workload: {impl: seconds or error text}}."""
    from run import interleaved_medians
    peers = _peers()
    fns: dict = {}
    results: dict = {}
    for name, (_, build) in workloads.items():
        fns[name], results[name] = {}, {}
        for impl, make in build(peers).items():
            try:
                fn = make()
                fn()
                fns[name][impl] = fn
            except Exception as e:     # an implementation that cannot run this workload: say so, keep going
                results[name][impl] = f"error: {type(e).__name__}: {str(e)[:80]}"
        if pool_ab and "xlapy" in fns[name]:
            fn = fns[name]["xlapy"]
            fns[name]["xlapy"], fns[name][ADAPTING] = _in_pool_mode(fn, False), _in_pool_mode(fn, True)
    loops = [_busy_loop() for _ in range(busy)]
    try:
        time.sleep(0.5)                # let the busy loops get going
        for name, impl_fns in fns.items():
            results[name].update(interleaved_medians(impl_fns, repeat, min_time))
    finally:
        for p in loops:
            p.kill()
            p.wait()
    print("RESULT " + json.dumps(results), flush=True)
    return 0


def run_configuration(busy: int, a) -> dict:
    cmd = [sys.executable, __file__, "--worker", str(busy), "--repeat", str(a.repeat), "--min-time", str(a.min_time)]
    if a.pool_ab:
        cmd.append("--pool-ab")
    if a.only:
        cmd += ["--only", a.only]
    for m in a.models:
        cmd += ["--model", m]
    if not a.models:
        cmd.append("--no-models")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"configuration with {busy} busy loops failed:\n{proc.stderr[-2000:]}")


# -- the table ----------------------------------------------------------------------------------------------
def _ms(t) -> str:
    return f"{t * 1e3:.3g} ms" if isinstance(t, float) else str(t)


def _slowdown(t, quiet) -> str:
    return f"{t / quiet:.2f}x" if isinstance(t, float) and isinstance(quiet, float) else "—"


def table(workloads: dict, by_busy: dict[int, dict]) -> str:
    busy = sorted(by_busy)
    quiet = 0 in busy
    loaded = [n for n in busy if n]
    head = (["workload", "impl"] + ["quiet" if n == 0 else f"{n} busy" for n in busy]
            + ([f"{n} busy / quiet" for n in loaded] if quiet else []))
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, (title, _) in workloads.items():
        for impl in IMPLS:
            times = [by_busy[n].get(name, {}).get(impl) for n in busy]
            if all(t is None for t in times):
                continue
            slowdowns = [_slowdown(t, times[0]) for t in times[1:]] if quiet else []
            cells = [f"{name} {title}", impl] + [_ms(t) for t in times] + slowdowns
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="comma-separated workloads (B1,B2,B5,cnn,lstm,MODEL/KIND)")
    p.add_argument("--model", dest="models", action="append",
                   help=f"a benchmarks/models module to add (repeatable; default {', '.join(DEFAULT_MODELS)})")
    p.add_argument("--no-models", action="store_true", help="leave the real models out")
    p.add_argument("--repeat", type=int, default=7, help="interleaved rounds per workload")
    p.add_argument("--min-time", type=float, default=0.7, help="seconds of timing per implementation and workload")
    p.add_argument("--pool-ab", action="store_true",
                   help="also time xlapy with the pool's adapting rule (XLAPY_POOL_ADAPT=1), interleaved")
    p.add_argument("--busy", type=int, action="append", choices=BUSY,
                   help=f"the configurations to time (repeatable; default all of {', '.join(map(str, BUSY))})")
    p.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.models is None:
        a.models = [] if a.no_models else list(DEFAULT_MODELS)
    workloads = _workloads(a.only, a.models)
    if a.worker is not None:
        return worker(a.worker, workloads, a.repeat, a.min_time, a.pool_ab)
    by_busy = {}
    for n in sorted(set(a.busy or BUSY)):
        t0 = time.perf_counter()
        by_busy[n] = run_configuration(n, a)
        print(f"{n} busy: done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    threads = os.environ.get("XLAPY_NUM_THREADS") or f"unset ({os.cpu_count()} threads)"
    print(f"{os.cpu_count()} cores, XLAPY_NUM_THREADS {threads}, medians of {a.repeat} interleaved rounds; "
          f"slowdown = time with N busy-loop processes / quiet time")
    print(table(workloads, by_busy))
    return 0


if __name__ == "__main__":
    sys.exit(main())
