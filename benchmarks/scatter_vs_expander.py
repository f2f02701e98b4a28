"""Scatter on the CPU backend: the scatter emitter (backends/cpu/scatter_emitter.py) against ScatterExpander's while
loop (one dynamic-slice / combine / dynamic-update-slice per update window), on gather/scatter-heavy modules.

    .venv/bin/python benchmarks/scatter_vs_expander.py [--repeat 7]

Each module compiles twice through the whole CPU pipeline, once as it is (the emitter) and once after
ScatterExpander (the while loop XLA:CPU makes); the table gives compile seconds (the expansion included) and the
median run time of each, and checks that both give the same numbers. It decided that CPU_PIPELINE runs no
ScatterExpander (XLA-optimized modules never ran it: they skip the pipeline).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import xlapy

ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] add(a, b)\n}\n"


def embedding_step(vocab: int, dim: int, tokens: int) -> str:
    """An embedding layer's training step: gather rows, a loss gradient, its scatter-add into the table's
    gradient, an SGD update."""
    return f"""HloModule embedding_step
{ADD}
ENTRY e {{
  table = f32[{vocab},{dim}] parameter(0)
  ids = s32[{tokens}] parameter(1)
  target = f32[{tokens},{dim}] parameter(2)
  ids2 = s32[{tokens},1] reshape(ids)
  rows = f32[{tokens},{dim}] gather(table, ids2), offset_dims={{1}}, collapsed_slice_dims={{0}}, start_index_map={{0}}, index_vector_dim=1, slice_sizes={{1,{dim}}}
  diff = f32[{tokens},{dim}] subtract(rows, target)
  zero = f32[] constant(0)
  zeros = f32[{vocab},{dim}] broadcast(zero), dimensions={{}}
  grad = f32[{vocab},{dim}] scatter(zeros, ids2, diff), update_window_dims={{1}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=add
  lr = f32[] constant(0.01)
  lrs = f32[{vocab},{dim}] broadcast(lr), dimensions={{}}
  step = f32[{vocab},{dim}] multiply(grad, lrs)
  ROOT new = f32[{vocab},{dim}] subtract(table, step)
}}
"""


def segment_sum(segments: int, points: int) -> str:
    """A graph network's message aggregation: scalar updates summed into segments (window size 1)."""
    return f"""HloModule segment_sum
{ADD}
ENTRY e {{
  values = f32[{points}] parameter(0)
  seg = s32[{points}] parameter(1)
  seg2 = s32[{points},1] reshape(seg)
  zero = f32[] constant(0)
  zeros = f32[{segments}] broadcast(zero), dimensions={{}}
  ROOT sums = f32[{segments}] scatter(zeros, seg2, values), update_window_dims={{}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=add
}}
"""


def cases():
    rng = np.random.default_rng(0)
    v, d, t = 10000, 64, 4096
    yield ("embedding grad 10000x64, 4096 tokens", embedding_step(v, d, t),
           [rng.standard_normal((v, d)).astype(np.float32), rng.integers(0, v, t).astype(np.int32),
            rng.standard_normal((t, d)).astype(np.float32)])
    v, d, t = 1000, 32, 256
    yield ("embedding grad 1000x32, 256 tokens", embedding_step(v, d, t),
           [rng.standard_normal((v, d)).astype(np.float32), rng.integers(0, v, t).astype(np.int32),
            rng.standard_normal((t, d)).astype(np.float32)])
    s, p = 1000, 200000
    yield ("segment sum 200000 -> 1000", segment_sum(s, p),
           [rng.standard_normal(p).astype(np.float32), rng.integers(0, s, p).astype(np.int32)])


def compile_with(text: str, expander: bool):
    """Compile through the CPU pipeline; with expander, ScatterExpander first rewrites every scatter into its
    while loop (what XLA:CPU does, and CPU_PIPELINE did before the emitter)."""
    from xlapy.passes.registry import make_pass
    t0 = time.perf_counter()
    module = xlapy.hlo.parse(text)
    if expander:
        make_pass("scatter_expander").run(module)
    exe = xlapy.compile(module, backend="cpu")
    return exe, time.perf_counter() - t0


def median_run(exe, args, repeat: int) -> float:
    exe(*args)
    samples = []
    for _ in range(repeat):
        n, t0 = 0, time.perf_counter()
        while True:
            exe(*args)
            n += 1
            if time.perf_counter() - t0 > 0.2:
                break
        samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    print("| module | compile: expander / emitter (s) | run: expander / emitter (ms) | speed-up |")
    print("|---|---|---|---|")
    for name, text, args in cases():
        expanded, ce = compile_with(text, expander=True)
        emitted, cs = compile_with(text, expander=False)
        assert "scatter" not in [i.opcode for i in expanded.module.instructions()]
        assert "scatter" in [i.opcode for i in emitted.module.instructions()]
        np.testing.assert_allclose(expanded(*args), emitted(*args), rtol=1e-5, atol=1e-5)
        re, rs = median_run(expanded, args, a.repeat), median_run(emitted, args, a.repeat)
        print(f"| {name} | {ce:.2f} / {cs:.2f} | {re * 1e3:.3f} / {rs * 1e3:.3f} | {re / rs:.1f}x |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
