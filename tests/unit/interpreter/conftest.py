"""Shared harness for the interpreter op tests (fixture `hlo`): one-op HLO modules from a table row, exact
comparisons. Tests receive this module as the `hlo` fixture (no __init__ files, importlib test discovery)."""
from __future__ import annotations

import types

import numpy as np
import pytest

import xlapy
from xlapy.hlo import type_name_of_dtype


def shape_text(a) -> str:
    a = np.asarray(a)
    return f"{type_name_of_dtype(a.dtype)}[{','.join(str(d) for d in a.shape)}]"


def run_text(text: str, *args):
    return xlapy.compile(xlapy.hlo.parse(text), backend="interpreter")(*args)


def one_op_module(op: str, args, out_shape: str, attrs: str = "") -> str:
    params = "\n".join(f"  p{i} = {shape_text(a)} parameter({i})" for i, a in enumerate(args))
    operands = ", ".join(f"p{i}" for i in range(len(args)))
    tail = f", {attrs}" if attrs else ""
    return f"HloModule m\n\nENTRY e {{\n{params}\n  ROOT r = {out_shape} {op}({operands}){tail}\n}}\n"


def run_op(op: str, args, out_type: str | None = None, attrs: str = "", dims=None):
    """Run `op` on numpy `args`; the result has element type out_type (default: args[0]'s) and dims
    (default: args[0]'s)."""
    args = [np.asarray(a) for a in args]
    out_type = out_type or type_name_of_dtype(args[0].dtype)
    dims = args[0].shape if dims is None else dims
    out_shape = f"{out_type}[{','.join(str(d) for d in dims)}]"
    return run_text(one_op_module(op, args, out_shape, attrs), *args)


def assert_exact(got, want) -> None:
    """Same dtype and shape; equal values; floats: same NaN positions and same sign of zero."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
        return
    wide = np.complex128 if want.dtype.kind == "c" else np.float64
    g, w = got.astype(wide), want.astype(wide)
    for a, b in ((g.real, w.real), (g.imag, w.imag)) if want.dtype.kind == "c" else ((g, w),):
        assert np.array_equal(np.isnan(a), np.isnan(b)), f"NaN positions differ: {got} vs {want}"
        ok = ~np.isnan(b)
        assert np.array_equal(a[ok], b[ok]), f"{got} != {want}"
        assert np.array_equal(np.signbit(a[ok]), np.signbit(b[ok])), f"signs of zero differ: {got} vs {want}"


@pytest.fixture
def hlo() -> types.SimpleNamespace:
    return types.SimpleNamespace(run_op=run_op, run_text=run_text, assert_exact=assert_exact,
                                 shape_text=shape_text, one_op_module=one_op_module)
