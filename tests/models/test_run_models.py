"""benchmarks/run_models.py's bookkeeping (the benchmark itself needs jax; these need numpy only)."""
from __future__ import annotations

import os

from xlapy.testing import load_file

run_models = load_file("benchmarks/run_models.py", "run_models")


def test_compile_times_are_medians_over_processes():
    first = {"module": "m", "xla_compile_s": 1.0, "xlapy_compile_s": 0.9, "xla_run_s": 0.01, "xlapy_run_s": 0.005,
             "xla_compile_cpu_s": 2.0, "xlapy_compile_cpu_s": 1.0, "xlapy": "ok"}
    more = [{"xla_compile_s": 1.2, "xlapy_compile_s": 0.7, "xla_compile_cpu_s": 1.6, "xlapy_compile_cpu_s": 1.2},
            {"xla_compile_s": 0.8, "xlapy_compile_s": 1.5, "xla_compile_cpu_s": 1.8, "xlapy_compile_cpu_s": 0.9}]
    out = run_models.with_medians(first, more)
    assert (out["xla_compile_s"], out["xlapy_compile_s"], out["processes"]) == (1.0, 0.9, 3)
    assert (out["xla_compile_cpu_s"], out["xlapy_compile_cpu_s"]) == (1.8, 1.0)
    assert (out["xla_run_s"], out["xlapy_run_s"]) == (0.01, 0.005)          # run times: the first worker's
    row = next(line for line in run_models.table([out]).splitlines() if line.startswith("| m |"))
    assert "| 0.90× | 0.56× |" in row                                        # wall, then CPU: 1.0 / 1.8


def test_run_times_are_medians_over_processes_with_runs():
    """--runs N: each worker's run times (its own interleaved medians) are medianed too; a worker whose xlapy
    output mismatched or failed does not vote."""
    first = {"module": "m", "xla_compile_s": 1.0, "xlapy_compile_s": 0.9, "xla_run_s": 0.010, "xlapy_run_s": 0.013,
             "xlapy": "ok"}
    more = [{"xla_compile_s": 1.1, "xlapy_compile_s": 0.8, "xla_run_s": 0.012, "xlapy_run_s": 0.008, "xlapy": "ok"},
            {"xla_compile_s": 0.9, "xlapy_compile_s": 0.7, "xla_run_s": 0.011, "xlapy_run_s": 0.009, "xlapy": "ok"},
            {"xla_compile_s": 0.9, "xlapy_compile_s": 0.7, "xla_run_s": 0.011, "xlapy_run_s": 0.001,
             "xlapy": "MISMATCH out 0"}]
    out = run_models.with_medians(first, more, runs=True)
    assert (out["xla_run_s"], out["xlapy_run_s"], out["processes"]) == (0.011, 0.009, 4)
    assert run_models.with_medians(first, more)["xlapy_run_s"] == 0.013     # without runs: the first worker's


def test_importing_the_benchmark_leaves_the_environment_alone():
    """Cold compiles turn the persistent cache off in the benchmark's processes only (test_demo checks the cache)."""
    assert os.environ.get("XLAPY_CACHE_DIR") != "off"
