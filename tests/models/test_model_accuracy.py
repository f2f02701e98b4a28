"""benchmarks/model_accuracy.py's error measures (the benchmark itself needs jax; these need numpy only)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from xlapy.testing import load_file

accuracy = load_file("benchmarks/model_accuracy.py", "model_accuracy")


def test_exact_outputs_have_no_error():
    ref = [np.array([1.0, -2.0, 4.0]), np.arange(6.0).reshape(2, 3)]
    assert accuracy.errors([r.astype(np.float32) for r in ref], ref) == (0.0, 0.0)


def test_max_and_rms_errors():
    ref = [np.array([1.0, -2.0, 4.0]), np.array([0.0, 3.0])]
    got = [np.array([1.0, -2.0, 4.5], np.float32), np.array([0.0, 3.0], np.float32)]
    worst, rms = accuracy.errors(got, ref)
    assert worst == pytest.approx(0.5 / 4.0)                      # per output, relative to its own max |ref|
    assert rms == pytest.approx(0.5 / math.sqrt(1 + 4 + 16 + 9))  # pooled over every float output


def test_integer_outputs_are_not_float_errors_and_nonfinite_are_skipped():
    assert accuracy.errors([np.array([3, 4])], [np.array([3, 5])]) is None
    worst, rms = accuracy.errors([np.array([np.inf, 1.0, 2.0], np.float32)], [np.array([np.inf, 1.0, 2.5])])
    assert worst == pytest.approx(0.5 / 2.5) and math.isfinite(rms)


def test_draw_zero_is_the_corpus_inputs_and_later_draws_differ():
    inputs = accuracy.model_harness.corpus("inputs")
    entry = inputs.load_entry("gnn/fwd")
    first, again, other = accuracy.draw(entry, 0), inputs.make_inputs(entry), accuracy.draw(entry, 1)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    floats = [(a, b) for a, b in zip(first, other) if a.dtype.kind == "f" and a.size > 1]
    assert floats and all(a.shape == b.shape and a.dtype == b.dtype and not np.array_equal(a, b) for a, b in floats)


def test_importing_the_benchmark_leaves_the_environment_alone():
    """The benchmark turns the compilation cache off in its own processes only (test_demo, run after this file in
    the same worker, checks the cache's report)."""
    import os
    assert os.environ.get("XLAPY_CACHE_DIR") != "off"


def test_modules_with_few_outputs_get_more_draws():
    assert accuracy.draws_for(16, 3, 4096, 64) == 64           # gnn/fwd's 16 predictions: capped
    assert accuracy.draws_for(80, 3, 4096, 64) == 52           # mobilenetv2/fwd's 8 x 10 logits
    assert accuracy.draws_for(100_000, 3, 4096, 64) == 3       # enough values in one draw
    assert accuracy.draws_for(0, 3, 4096, 64) == 3             # no float output


def test_outlier_draws_are_counted_against_the_lower_quartile():
    xla = [1e-7, 1.2e-7, 0.9e-7, 5e-4, 1.1e-7]          # one flipped draw
    xlapy = [1e-7, 3e-4, 2e-4, 1.0e-7, 0.8e-7]          # two
    assert accuracy.outliers(xla, xlapy) == (1, 2)
    assert accuracy.outliers([1.0, 1.0], [1.0, 1.0]) == (0, 0)


def test_clean_draws_compare_the_arithmetic_where_neither_flipped():
    xla = [1e-7, 1.2e-7, 0.9e-7, 5e-4, 1.0e-7]          # draw 3 flipped in XLA
    xlapy = [0.5e-7, 3e-4, 0.9e-7, 1.0e-7, 1.5e-7]      # draw 1 in xlapy
    ratio, n = accuracy.clean_ratio(xla, xlapy)
    assert n == 3 and ratio == 1.0                        # draws 0, 2, 4: 0.5, 1.0, 1.5
    assert accuracy.clean_ratio([1e-3, 1e-3], [1e-3, 1e-3]) == (1.0, 2)


def test_outliers_are_found_when_most_draws_of_both_flip():
    # 3 of 5 draws flipped in each compiler: both medians are flipped draws, the pooled lower quartile is not
    xla = [1e-7, 4e-4, 5e-4, 1.1e-7, 3e-4]
    xlapy = [0.9e-7, 2e-4, 6e-4, 7e-4, 1.2e-7]
    assert accuracy.outliers(xla, xlapy) == (3, 3)
    assert accuracy.clean_ratio(xla, xlapy) == (0.9, 1)     # draw 0 alone: neither flipped
