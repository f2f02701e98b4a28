"""Multiply-add contraction (elemental_contract.py): a fused f32/f64 multiply whose one user is an add or subtract
is one fused multiply-add, as XLA:CPU's LLVM target options make it, at every LLVM level; nothing else is."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu.elemental_contract import fused_on_host

N = 96
FUSED = pytest.mark.skipif(not fused_on_host(), reason="no FMA on this host: llvm.fmuladd is two roundings")


def module(ty: str, root: str, extra: str = "", out: str | None = None, shape: str | None = None) -> str:
    """The fusion computes `r = root` from m = a * b; `out` (with `extra` before it) is its ROOT, else r is."""
    body = f"  r = {ty}[{N}] {root}\n  {extra}\n  ROOT out = {out}" if out else f"  ROOT r = {ty}[{N}] {root}"
    return f"""HloModule m
fused {{
  a = {ty}[{N}] parameter(0)
  b = {ty}[{N}] parameter(1)
  c = {ty}[{N}] parameter(2)
  m = {ty}[{N}] multiply(a, b)
{body}
}}
ENTRY e {{
  a = {ty}[{N}] parameter(0)
  b = {ty}[{N}] parameter(1)
  c = {ty}[{N}] parameter(2)
  ROOT f = {shape or f"{ty}[{N}]"} fusion(a, b, c), kind=kLoop, calls=fused
}}
"""


def run(text: str, *args, level: str | None = None, monkeypatch=None):
    if level is not None:
        monkeypatch.setenv("XLAPY_LLVM_LEVEL", level)
    out = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", run_pipeline=False)(*args)
    return [np.asarray(o) for o in out] if isinstance(out, (tuple, list)) else [np.asarray(out)]


def inputs(dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(N).astype(dtype) for _ in range(3)]


def fused(a, b, c, sa=1, sc=1):
    """(sa*a)*b + sc*c rounded once: exact rationals, then Python's correctly rounded int division."""
    out = [float(Fraction(float(x)) * Fraction(float(y)) * sa + Fraction(float(z)) * sc) for x, y, z in zip(a, b, c)]
    return np.array(out, np.float64).astype(a.dtype) if a.dtype == np.float64 else \
        np.array([float(np.float32(Fraction(float(x)) * Fraction(float(y)) * sa + Fraction(float(z)) * sc))
                  for x, y, z in zip(a, b, c)], np.float32)


# (root, the multiply's sign, c's sign): every row of elemental_contract.RULES
ROWS = [("add(m, c)", 1, 1), ("add(c, m)", 1, 1), ("subtract(m, c)", 1, -1), ("subtract(c, m)", -1, 1)]


@FUSED
@pytest.mark.parametrize("ty,dtype", [("f32", np.float32), ("f64", np.float64)])
@pytest.mark.parametrize("root,sa,sc", ROWS, ids=[r[0] for r in ROWS])
def test_contracted_rounds_once_at_every_level(ty, dtype, root, sa, sc, monkeypatch):
    a, b, c = inputs(dtype)
    text = module(ty, root)
    want = fused(a, b, c, sa, sc)
    for level in ("quick", "optimized"):
        got = run(text, a, b, c, level=level, monkeypatch=monkeypatch)[0]
        assert got.tobytes() == want.tobytes(), level
    unfused = (sa * (a * b) + sc * c).astype(dtype)
    assert not np.array_equal(want, unfused)      # the inputs tell the two apart


def test_off_switch_gives_op_by_op_results(monkeypatch):
    monkeypatch.setenv("XLAPY_FP_CONTRACT", "0")
    monkeypatch.setenv("XLAPY_CACHE_DIR", "off")
    a, b, c = inputs(np.float32)
    got = run(module("f32", "subtract(c, m)"), a, b, c)[0]
    assert got.tobytes() == (c - a * b).tobytes()


@pytest.mark.parametrize("case,root,extra,out", [
    ("multiply read twice", "add(m, c)", "u = f32[96] add(m, a)", "f32[96] add(r, u)"),
    ("multiply also an output", "add(m, c)", "", "(f32[96], f32[96]) tuple(r, m)"),
    ("add of a multiply and itself", "add(m, m)", "", "f32[96] add(r, c)"),
])
def test_not_contracted(case, root, extra, out):
    a, b, c = inputs(np.float32)
    shape = "(f32[96], f32[96])" if out.startswith("(") else None
    got = run(module("f32", root, extra, out, shape), a, b, c)
    m = a * b
    want = {"multiply read twice": (m + c) + (m + a), "multiply also an output": m + c,
            "add of a multiply and itself": (m + m) + c}[case]
    assert got[0].tobytes() == want.tobytes(), case


def test_narrow_floats_round_after_each_op():
    rng = np.random.default_rng(3)
    import ml_dtypes
    a, b, c = (rng.standard_normal(N).astype(ml_dtypes.bfloat16) for _ in range(3))
    got = run(module("bf16", "add(m, c)"), a, b, c)[0]
    m = (a.astype(np.float32) * b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    want = (m.astype(np.float32) + c.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert got.tobytes() == want.tobytes()


def test_a_multiply_in_another_kernel_is_not_fused():
    text = f"""HloModule m
ENTRY e {{
  a = f32[{N}] parameter(0)
  b = f32[{N}] parameter(1)
  c = f32[{N}] parameter(2)
  m = f32[{N}] multiply(a, b)
  ROOT r = f32[{N}] add(m, c)
}}
"""
    a, b, c = inputs(np.float32)
    assert run(text, a, b, c)[0].tobytes() == (a * b + c).tobytes()


def test_specials_as_op_by_op():
    """NaN, infinities and signed zeros: fmuladd(a, b, c) against a*b + c where the product is exact."""
    a = np.array([0.0, -0.0, -1.0, np.inf, np.nan, 0.0, np.inf, -2.0, 1.0, -0.0] * 9 + [1.0] * 6, np.float32)
    b = np.array([-1.0, 1.0, 0.0, 2.0, 1.0, np.inf, 0.0, 3.0, 1.0, -0.0] * 9 + [1.0] * 6, np.float32)
    c = np.array([-0.0, -0.0, 0.0, -np.inf, 1.0, 1.0, 1.0, 6.0, -1.0, 0.0] * 9 + [1.0] * 6, np.float32)
    for root, op in (("add(m, c)", lambda: a * b + c), ("subtract(m, c)", lambda: a * b - c),
                     ("subtract(c, m)", lambda: c - a * b)):
        with np.errstate(all="ignore"):
            want = op()
        got = run(module("f32", root), a, b, c)[0]
        assert got.tobytes() == want.tobytes(), root
