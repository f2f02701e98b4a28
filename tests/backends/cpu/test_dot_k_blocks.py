"""dot_loops' vector kernel sums K in blocks (k_block): each block's partial sums in fresh registers with fused
multiply-adds, added to the total after it. Rounding error grows like kb + K/kb instead of K; the bits are the same
at every LLVM level; the order is exactly the one emulated here."""
from __future__ import annotations

import math

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu.dot_loops import k_block
from xlapy.backends.cpu.elemental_contract import fused_on_host


def dot_module(m, k, n):
    return f"""HloModule m
ENTRY e {{
  a = f32[{m},{k}] parameter(0)
  b = f32[{k},{n}] parameter(1)
  ROOT d = f32[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}"""


def operands(m, k, n, seed=1):
    rng = np.random.default_rng(seed)
    a = np.maximum(rng.standard_normal((m, k)), 0).astype(np.float32)      # post-ReLU activations
    b = (rng.standard_normal((k, n)) / math.sqrt(k)).astype(np.float32)
    return a, b


def blocked(a, b, kb):
    """The kernel's order: per block, fma-accumulate from 0 (f64 product + add, rounded once to f32), then
    total += block sum in f32."""
    A, B = a.astype(np.float64), b.astype(np.float64)
    total = None
    for k0 in range(0, a.shape[1], kb or a.shape[1]):
        acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
        for k in range(k0, min(a.shape[1], k0 + (kb or a.shape[1]))):
            acc = (acc.astype(np.float64) + np.outer(A[:, k], B[k])).astype(np.float32)
        total = acc if total is None else total + acc
    return total


def rms(got, a, b):
    exact = a.astype(np.float64) @ b.astype(np.float64)
    return math.sqrt(((got - exact) ** 2).sum() / (exact ** 2).sum())


@pytest.mark.parametrize("k,kb", [(8, None), (9, 8), (24, 8), (48, 8), (144, 16), (336, 16), (1024, 32)])
def test_block_length_rule(k, kb):
    assert k_block(k) == kb


@pytest.mark.skipif(not fused_on_host(), reason="no FMA on this host: the emulation's single roundings differ")
@pytest.mark.parametrize("m,k,n", [(128, 144, 24), (128, 48, 8), (20, 70, 19)])
def test_blocks_in_order_and_same_bits_at_every_level(m, k, n, monkeypatch):
    monkeypatch.setenv("XLAPY_CACHE_DIR", "off")
    a, b = operands(m, k, n)
    got = {}
    for level in ("quick", "optimized"):
        monkeypatch.setenv("XLAPY_LLVM_LEVEL", level)
        got[level] = np.asarray(xlapy.compile(dot_module(m, k, n), backend="cpu", pipeline="cpu")(a, b))
    assert got["quick"].tobytes() == got["optimized"].tobytes()
    assert got["quick"].tobytes() == blocked(a, b, k_block(k)).tobytes()


def test_more_accurate_than_one_run_of_k():
    """[128,144] x [144,24] (a MobileNetV2 projection): one run of K, 1.5e-7 rms against exact (1.75x XLA:CPU's
    8.7e-8); blocks of 16, 8.0e-8."""
    a, b = operands(128, 144, 24)
    got = np.asarray(xlapy.compile(dot_module(128, 144, 24), backend="cpu", pipeline="cpu")(a, b))
    assert rms(got, a, b) <= 0.6 * rms(blocked(a, b, None), a, b)
