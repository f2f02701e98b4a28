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
    out = run_models.with_median_compiles(first, more)
    assert (out["xla_compile_s"], out["xlapy_compile_s"], out["compiles"]) == (1.0, 0.9, 3)
    assert (out["xla_compile_cpu_s"], out["xlapy_compile_cpu_s"]) == (1.8, 1.0)
    assert (out["xla_run_s"], out["xlapy_run_s"]) == (0.01, 0.005)          # run times: the first worker's
    row = next(line for line in run_models.table([out]).splitlines() if line.startswith("| m |"))
    assert "| 0.90× | 0.56× |" in row                                        # wall, then CPU: 1.0 / 1.8


def test_importing_the_benchmark_leaves_the_environment_alone():
    """Cold compiles turn the persistent cache off in the benchmark's processes only (test_demo checks the cache)."""
    assert os.environ.get("XLAPY_CACHE_DIR") != "off"
