"""The lazy-mode subset of the normal suite (`XLAPY_LAZY=1 pytest tests/frontend` runs all of it lazily): the
xlapy.numpy case table of test_numpy_ops.py recorded lazily (a third of it; each case's first cut runs op by op),
and one case in eight compiled as a lazy cluster and run under autojit (twice: recorded, then replayed), against
the same numpy references, on both backends."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.frontend.lazy import is_pending, state

sys.path.insert(0, str(Path(__file__).parent))      # pytest's importlib mode does not: the shared case table
from test_numpy_ops import CASES, TOLERANCE, _check, _reference     # noqa: E402

LAZY = CASES[::3]          # a third of the table (the first cut runs op by op, as eager: test_numpy_eager)
SAMPLE = CASES[1::8]       # compiled clusters cost a compile each: one case in eight


def _leaves(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("case", LAZY, ids=[c[0] for c in LAZY])
def test_numpy_lazy(case):
    name, fn, args, dtype = case[:4]
    with xlapy.lazy():
        got = fn(xnp, *[xlapy.Array(a) for a in args])
        xlapy.sync()
    assert not any(is_pending(o) for o in _leaves(got))
    _check(got, _reference(case), dtype, TOLERANCE.get(name))


@pytest.mark.parametrize("case", SAMPLE, ids=[c[0] for c in SAMPLE])
def test_numpy_lazy_compiled_and_autojit(case):
    name, fn, args, dtype = case[:4]
    old = state.COMPILE_AT[0]
    state.COMPILE_AT[0] = 1                  # compile at the first cut
    try:
        with xlapy.lazy():
            got = fn(xnp, *[xlapy.Array(a) for a in args])
        _check(got, _reference(case), dtype, TOLERANCE.get(name))
        auto = xlapy.autojit(lambda *a: fn(xnp, *a))
        _check(auto(*args), _reference(case), dtype, TOLERANCE.get(name))
        _check(auto(*args), _reference(case), dtype, TOLERANCE.get(name))     # replayed (lazy/tape.py) or recorded
    finally:
        state.COMPILE_AT[0] = old
