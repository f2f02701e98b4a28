"""benchmarks/scaling.py's summary: time per instruction and the marginal time per added instruction."""
from __future__ import annotations

import os

from xlapy.testing import load_file

scaling = load_file("benchmarks/scaling.py", "scaling_benchmark")


def test_marginal_cost_per_added_instruction():
    rows = [{"N": 1, "xlapy": (500, 1.0)}, {"N": 2, "xlapy": (900, 1.1)}, {"N": 4, "xlapy": (1700, 1.3)},
            {"N": 8, "xlapy": (3300, 1.7)}]
    text = scaling.summary(rows)
    assert "| 4 | 1700 | 1.30 s | 0.76 | 0.25 |" in text          # (1.3 - 1.1) / (1700 - 900)
    assert "| 1 | 500 | 1.00 s | 2.00 | — |" in text
    assert "marginal compile time per added instruction (N >= 4): median 0.25 ms, spread +0% .. +0%" in text


def test_summary_with_xla_and_calls():
    rows = [{"N": 1, "xlapy": (100, 0.2), "jax": (120, 0.4)}, {"N": 2, "xlapy": (200, 0.4), "jax": (240, 0.8)}]
    assert "| 2 | 200 | 0.40 s | 2.00 | 2.00 | 0.80 s | 3.33 | 0.50x |" in scaling.summary(rows)
    assert "calls per instruction: median 150" in scaling.summary(
        [{"N": 1, "xlapy": (100, 10000.0)}, {"N": 2, "xlapy": (200, 40000.0)}], calls=True)


def test_importing_the_benchmark_leaves_the_environment_alone():
    """The cold-compile setting is main()'s: importing summary() must not turn the test run's cache off."""
    assert os.environ.get("XLAPY_CACHE_DIR") != "off"
