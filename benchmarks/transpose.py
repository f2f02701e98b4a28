"""Transposes on the CPU backend (issue 11): representative transposes and transposing fusions of the real-model
suite, timed against numpy's `np.ascontiguousarray(x.transpose(...))` and, where JAX is installed, jax.jit.

    .venv/bin/python benchmarks/transpose.py                       # single-threaded, CPU time (thread_time)
    .venv/bin/python benchmarks/transpose.py --threads 2           # xlapy on 2 threads: wall time
    PYTHONPATH=/work/main .venv-models/bin/python benchmarks/transpose.py --only 'gpt2|256'   # with JAX
    .venv/bin/python benchmarks/transpose.py --model gpt2/train --top 12     # a model's transposing kernels
    .venv/bin/python benchmarks/transpose.py --model gpt2/train --step --threads 2 --repeat 20   # its whole step

`--model` compiles a module of the real-model suite, takes its N kernels that transpose (a transpose, a fusion
holding one) moving the most elements (operands and results), and times each as a module of its own compiled tiled and untiled (tiled_transpose.ENABLED)
in this process: the kernel-level before/after of benchmarks/transpose_results.md. `--step` compiles the whole
module tiled and untiled instead and runs the two alternately (CPU time of the calling thread and wall time).

Each case is HLO text (so every side runs the same program; XLA gets a fusion as a call and fuses it itself); the
numpy and JAX columns compute the same values. Medians of `--repeat` interleaved rounds (benchmarks/run.py); with
one thread the xlapy and numpy samples are CPU time of the calling thread (`time.thread_time()`), which other
processes on a shared machine disturb far less than wall time; JAX's are wall time (XLA:CPU runs the program on
threads of its own), its inputs placed on the device once. Ratios are xlapy / numpy and xlapy / JAX (above 1: xlapy slower); GB/s counts one read and one write of
the transposed array.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import time

import numpy as np

try:
    import ml_dtypes
    BF16 = ml_dtypes.bfloat16
except ImportError:      # pragma: no cover
    BF16 = None

def _matrix_transpose(ty: str, shape: tuple[int, int], dtype):
    """The case of a plain row-major matrix transpose."""
    (r, c) = shape
    text = (f"\nHloModule t\nENTRY e {{ p = {ty}[{r},{c}]{{1,0}} parameter(0)\n"
            f"  ROOT t = {ty}[{c},{r}]{{1,0}} transpose(p), dimensions={{1,0}} }}")
    return (f"{ty}[{r},{c}] {{1,0}}", text, lambda x: np.ascontiguousarray(x.T), [(shape, dtype)])


# (name, HLO text, numpy function of the arguments, argument shapes and dtypes)
CASES = [
    ("attn f32[8,64,6,32] {0,2,1,3}", """
HloModule t
ENTRY e { p = f32[8,64,6,32]{3,2,1,0} parameter(0)
  ROOT t = f32[8,6,64,32]{3,2,1,0} transpose(p), dimensions={0,2,1,3} }""",
     lambda x: np.ascontiguousarray(x.transpose(0, 2, 1, 3)), [((8, 64, 6, 32), np.float32)]),
    _matrix_transpose("f32", (256, 768), np.float32),
    _matrix_transpose("f32", (1024, 1024), np.float32),
    _matrix_transpose("bf16", (256, 768), "bf16"),
    _matrix_transpose("f64", (512, 384), np.float64),
    ("fused exp(x)^T + y f32[512,768]", """
HloModule t
fused {
  x = f32[512,768]{1,0} parameter(0)
  y = f32[768,512]{1,0} parameter(1)
  e = f32[512,768]{1,0} exponential(x)
  t = f32[768,512]{1,0} transpose(e), dimensions={1,0}
  ROOT a = f32[768,512]{1,0} add(t, y) }
ENTRY e { x = f32[512,768]{1,0} parameter(0)
  y = f32[768,512]{1,0} parameter(1)
  ROOT f = f32[768,512]{1,0} fusion(x, y), kind=kLoop, calls=fused }""",
     lambda x, y: np.exp(x).T + y, [((512, 768), np.float32), ((768, 512), np.float32)]),
    ("gpt2 [4,64,768]->[768,256] + bias", """
HloModule t
fused {
  x = f32[256,768]{1,0} parameter(0)
  b = f32[768]{0} parameter(1)
  r = f32[4,64,768]{2,1,0} reshape(x)
  bb = f32[4,64,768]{2,1,0} broadcast(b), dimensions={2}
  a = f32[4,64,768]{2,1,0} add(r, bb)
  t = f32[768,4,64]{2,1,0} transpose(a), dimensions={2,0,1}
  ROOT o = f32[768,256]{1,0} reshape(t) }
ENTRY e { x = f32[256,768]{1,0} parameter(0)
  b = f32[768]{0} parameter(1)
  ROOT f = f32[768,256]{1,0} fusion(x, b), kind=kLoop, calls=fused }""",
     lambda x, b: np.ascontiguousarray((x + b).T), [((256, 768), np.float32), ((768,), np.float32)]),
    ("vit [128,4,32]->[128,128]^T", """
HloModule t
fused {
  p = f32[128,4,32]{2,1,0} parameter(0)
  t = f32[4,32,128]{2,1,0} transpose(p), dimensions={1,2,0}
  ROOT r = f32[128,128]{1,0} reshape(t) }
ENTRY e { p = f32[128,4,32]{2,1,0} parameter(0)
  ROOT f = f32[128,128]{1,0} fusion(p), kind=kLoop, calls=fused }""",
     lambda x: np.ascontiguousarray(x.reshape(128, 128).T), [((128, 4, 32), np.float32)]),
    ("vit heads [8,4,65,32]->[128,520]", """
HloModule t
fused {
  p = f32[8,4,65,32]{3,2,1,0} parameter(0)
  r = f32[8,4,65,1,32]{4,3,2,1,0} reshape(p)
  t = f32[8,65,4,1,32]{4,3,1,2,0} transpose(r), dimensions={0,2,1,3,4}
  r2 = f32[8,65,4,32]{3,2,1,0} reshape(t)
  t2 = f32[4,32,8,65]{3,2,1,0} transpose(r2), dimensions={2,3,0,1}
  ROOT o = f32[128,520]{1,0} reshape(t2) }
ENTRY e { p = f32[8,4,65,32]{3,2,1,0} parameter(0)
  ROOT f = f32[128,520]{1,0} fusion(p), kind=kLoop, calls=fused }""",
     lambda x: np.ascontiguousarray(x.transpose(1, 3, 0, 2).reshape(128, 520)), [((8, 4, 65, 32), np.float32)]),
]


def _arg(shape, dtype, rng):
    if dtype == "bf16":
        return rng.standard_normal(shape).astype(np.float32).astype(BF16)
    return rng.standard_normal(shape).astype(dtype)


def _medians(fns: dict, repeat: int, min_time: float, clock, clocks: dict | None = None) -> dict:
    """benchmarks/run.py's interleaved rounds with a choice of clock (`clocks`: per fn, where it differs)."""
    inner, samples = {}, {}
    clocks = clocks or {}
    for name, fn in fns.items():
        c = clocks.get(name, clock)
        fn()
        t0 = c()
        fn()
        inner[name] = max(1, int(min_time / repeat / max(c() - t0, 1e-7)))
        samples[name] = []
    for _ in range(repeat):
        for name, n in inner.items():
            c = clocks.get(name, clock)
            t0 = c()
            for _ in range(n):
                fns[name]()
            samples[name].append((c() - t0) / n)
    return {name: statistics.median(v) for name, v in samples.items()}


def _jax_fn(text: str):
    try:
        import jax
        sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent / "tools"))
        import xla_check
    except ImportError:
        return None
    # a fusion is HLO after XLA's own passes: hand XLA the same computation as a call, for it to fuse itself
    text = re.sub(r"fusion\(([^)]*)\), kind=k\w+, calls=(\S+)", r"call(\1), to_apply=\2", text)
    exe, device = xla_check.compile_hlo_text(text)

    def placed(args):
        buffers = [jax.device_put(a, device) for a in args]
        return lambda: [x.block_until_ready() for x in exe.execute(buffers)]
    return placed


def _callees(comp) -> list:
    """comp and every computation it calls, callees first."""
    out: list = []

    def visit(c):
        for i in c.instructions:
            for callee in i.called_computations():
                visit(callee)
        if c not in out:
            out.append(c)
    visit(comp)
    return out


def _model_inputs():
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("model_inputs", Path(__file__).parent / "models" / "inputs.py")
    inputs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(inputs)
    return inputs


def _model_step(module_id: str, threads: int, repeat: int) -> None:
    """The whole module compiled tiled and untiled, run alternately (the order flips every round)."""
    import os
    import xlapy
    from xlapy.backends.cpu import tiled_transpose
    os.environ["XLAPY_CACHE_DIR"] = "off"
    inputs = _model_inputs()
    entry = inputs.load_entry(module_id)
    text, args = entry["hlo_path"].read_text(), inputs.make_inputs(entry)
    exes = {}
    for on in (True, False):
        tiled_transpose.ENABLED = on
        exes["tiled" if on else "untiled"] = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", num_threads=threads)
    tiled_transpose.ENABLED = True
    cpu, wall = {k: [] for k in exes}, {k: [] for k in exes}
    for r in range(repeat):
        for k in (list(exes) if r % 2 == 0 else list(exes)[::-1]):
            w0, t0 = time.perf_counter(), time.thread_time()
            exes[k](*args)
            cpu[k].append(time.thread_time() - t0)
            wall[k].append(time.perf_counter() - w0)
    for what, samples in (("CPU time (calling thread)", cpu), ("wall time", wall)):
        med = {k: statistics.median(v) for k, v in samples.items()}
        print(f"{module_id}, {threads} thread(s), {what}: untiled {med['untiled'] * 1e3:.1f} ms, tiled "
              f"{med['tiled'] * 1e3:.1f} ms, tiled / untiled {med['tiled'] / med['untiled']:.3f}")


def _model_kernels(module_id: str, top: int, repeat: int, min_time: float) -> None:
    import os
    from xlapy.backends.cpu import tiled_transpose
    from xlapy.hlo.printer import computation_to_text, shape_text
    import xlapy
    os.environ["XLAPY_CACHE_DIR"] = "off"
    text = _model_inputs().load_entry(module_id)["hlo_path"].read_text()
    optimized = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", num_threads=1).module
    kernels = [i for i in optimized.entry.instructions if i.opcode == "transpose" or i.opcode == "fusion" and any(
        x.opcode == "transpose" for x in i.attrs["calls"].instructions)]
    kernels.sort(key=lambda i: -sum(s.numel for x in [i, *i.operands] for s in x.shape.leaves() if s.is_array))
    rng = np.random.default_rng(0)
    print("| kernel | result | untiled | tiled | tiled / untiled |")
    print("|---|---|---|---|---|")
    total = {"tiled": 0.0, "untiled": 0.0}
    for inst in kernels[:top]:
        params = "\n".join(f"  p{k} = {shape_text(o.shape)} parameter({k})" for k, o in enumerate(inst.operands))
        names = ", ".join(f"p{k}" for k in range(len(inst.operands)))
        if inst.opcode == "fusion":
            called = "\n".join(computation_to_text(c) for c in _callees(inst.attrs["calls"])) + "\n"
            call = f"fusion({names}), kind={inst.attrs['kind']}, calls=%{inst.attrs['calls'].name}"
        else:
            called = "triv { a = f32[] parameter(0)\n  ROOT n = f32[] negate(a) }\n"    # keeps the pipeline off
            call = f"transpose({names}), dimensions={{{','.join(str(d) for d in inst.attrs['dimensions'])}}}"
        kernel = f"HloModule k\n{called}\nENTRY e {{\n{params}\n  ROOT r = {shape_text(inst.shape)} {call}\n}}\n"
        args = [rng.standard_normal(o.shape.dims).astype(o.shape.dtype) if o.shape.ptype.kind == "float"
                else np.zeros(o.shape.dims, o.shape.dtype) for o in inst.operands]
        fns = {}
        for on in (True, False):
            tiled_transpose.ENABLED = on
            exe = xlapy.compile(xlapy.hlo.parse(kernel), backend="cpu", num_threads=1)
            fns["tiled" if on else "untiled"] = (lambda e: lambda: e(*args))(exe)
        tiled_transpose.ENABLED = True
        t = _medians(fns, repeat, min_time, time.thread_time)
        for k in total:
            total[k] += t[k]
        print(f"| {inst.name} | {shape_text(inst.shape)[:60]} | {t['untiled'] * 1e6:.0f} us | {t['tiled'] * 1e6:.0f} us "
              f"| {t['tiled'] / t['untiled']:.2f}x |", flush=True)
    print(f"| all {min(top, len(kernels))} | | {total['untiled'] * 1e3:.2f} ms | {total['tiled'] * 1e3:.2f} ms | "
          f"{total['tiled'] / total['untiled']:.2f}x |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="regex on case names")
    p.add_argument("--threads", type=int, default=1, help="xlapy's num_threads (1: CPU-time samples)")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--min-time", type=float, default=0.3)
    p.add_argument("--no-jax", action="store_true")
    p.add_argument("--model", help="a real-model module id (gpt2/train): time its transposing kernels instead")
    p.add_argument("--top", type=int, default=12, help="with --model: how many kernels (largest first)")
    p.add_argument("--step", action="store_true", help="with --model: time the whole step instead")
    a = p.parse_args(argv)
    if a.model and a.step:
        _model_step(a.model, a.threads, a.repeat)
        return 0
    if a.model:
        _model_kernels(a.model, a.top, a.repeat, a.min_time)
        return 0
    import xlapy
    clock = time.thread_time if a.threads == 1 else time.perf_counter
    rng = np.random.default_rng(0)
    print(f"| case | MB moved | numpy | xlapy | xlapy GB/s | xlapy/numpy | JAX | xlapy/JAX |")
    print("|---|---|---|---|---|---|---|---|")
    for name, text, ref, specs in CASES:
        if a.only and not re.search(a.only, name):
            continue
        args = [_arg(s, d, rng) for s, d in specs]
        exe = xlapy.compile(text, backend="cpu", pipeline="cpu", num_threads=a.threads)
        got = np.asarray(exe(*args))
        want = np.asarray(ref(*args))
        assert np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1e-5), name
        fns = {"numpy": lambda: ref(*args), "xlapy": lambda: exe(*args)}
        jax_run = None if a.no_jax else _jax_fn(text)
        if jax_run is not None:
            fns["jax"] = jax_run(args)
        # XLA runs on its own threads: its column is wall time (perf_counter)
        t = _medians(fns, a.repeat, a.min_time, clock, {"jax": time.perf_counter})
        moved = 2 * got.nbytes
        jx = t.get("jax")
        print(f"| {name} | {moved / 1e6:.2f} | {t['numpy'] * 1e6:.1f} us | {t['xlapy'] * 1e6:.1f} us | "
              f"{moved / t['xlapy'] / 1e9:.2f} | {t['xlapy'] / t['numpy']:.2f}x | "
              + (f"{jx * 1e6:.1f} us | {t['xlapy'] / jx:.2f}x |" if jx else "— | — |"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
