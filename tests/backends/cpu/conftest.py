"""Shared harness for the CPU backend tests (fixture `cpu`): run HLO on "cpu" and on the reference interpreter and
compare. Tests receive this module as the `cpu` fixture (no __init__ files, importlib test discovery)."""
from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
import pytest

import xlapy
from xlapy.testing import assert_same

DTYPES = {"pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64, "u8": np.uint8,
          "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
          "f32": np.float32, "f64": np.float64}

FLOAT_CORNERS = [np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.7, -3.7,
                 100.25, -1e4, 1e-3, 7.0, 0.25]


def corners(ty: str, n: int = 48, seed: int = 0) -> np.ndarray:
    """n values of type `ty`: the corner values first, then random ones."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(DTYPES[ty])
    if ty == "pred":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        base = [info.min, info.max, 0, 1, 2, 3, 7, info.max - 1] + ([-1, -2, info.min + 1, -7] if dt.kind == "i" else [])
        rand = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
        vals = np.concatenate([np.array(base, dtype=dt), rand])[:n]
        return vals.astype(dt)
    vals = np.concatenate([np.array(FLOAT_CORNERS), rng.standard_normal(n) * 10])[:n]
    return vals.astype(dt)


def run_both(text: str, *args, pipeline: bool = False):
    module = xlapy.hlo.parse(text)
    try:
        xlapy.hlo.verify(module)
    except xlapy.errors.HloVerifierError as e:
        pytest.skip(f"not a valid HLO op/type combination: {e}")
    cpu = xlapy.compile(module, backend="cpu", run_pipeline=pipeline)
    ref = xlapy.compile(module, backend="interpreter")
    return cpu(*args), ref(*args)


def check(text: str, *args, pipeline: bool = False, rtol=None) -> None:
    got, want = run_both(text, *args, pipeline=pipeline)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, where=f"output {i}", rtol=rtol)
    else:
        assert_same(got, want, rtol=rtol)


def dims_text(shape) -> str:
    return ",".join(str(d) for d in shape)


@pytest.fixture
def cpu():
    return sys.modules[__name__]


def multi_op_module(params, rows) -> str:
    """One module computing many ops at once (one compile): params = [(name, shape text)], rows = [(label,
    result shape text, expression)]; the root is the tuple of all rows."""
    lines = [f"  {n} = {s} parameter({i})" for i, (n, s) in enumerate(params)]
    lines += [f"  r{i} = {shape} {expr}" for i, (_, shape, expr) in enumerate(rows)]
    shapes = ", ".join(shape for _, shape, _ in rows)
    lines.append(f"  ROOT out = ({shapes}) tuple({', '.join(f'r{i}' for i in range(len(rows)))})")
    return "HloModule m\nENTRY e {\n" + "\n".join(lines) + "\n}\n"


def check_ops(params, rows, *args, pipeline: bool = False) -> None:
    """Run every row on both backends; invalid op/type rows are dropped (the verifier decides)."""
    valid = []
    for row in rows:
        try:
            xlapy.hlo.verify(xlapy.hlo.parse(multi_op_module(params, [row])))
            valid.append(row)
        except xlapy.errors.HloVerifierError:
            pass
    if not valid:
        pytest.skip("no valid op for this type")
    got, want = run_both(multi_op_module(params, valid), *args, pipeline=pipeline)
    for (label, _, _), g, w in zip(valid, got, want):
        assert_same(g, w, where=label)


@pytest.fixture(autouse=True)
def _llvm_optimized(request, monkeypatch):
    """The CPU backend's tests compile at LLVM O3, as jitted real work is, rather than the quick O0 level small
    modules get otherwise: O3 is where wrong flags (nsw, inbounds, invariant loads) turn into wrong code.
    test_compile_plan.py tests the choice itself."""
    if request.path.name != "test_compile_plan.py":
        monkeypatch.setenv("XLAPY_LLVM_LEVEL", "optimized")
