"""dot_loops' vector kernel covers the last rows and columns (M or N not a multiple of its register block) with a
last block that overlaps the one before (_last_at), and a shorter last K block in the loop over K blocks
(_k_span), not with code of their own: the overlapping outputs are computed again in the same order, so every
output keeps the bits of the kernel's summation order."""
from __future__ import annotations

import re

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu.dot_loops import k_block
from xlapy.backends.cpu.elemental_contract import fused_on_host


def dot_module(m, k, n, batch=0):
    pre = f"{batch}," if batch else ""
    dims = ("lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}" if batch
            else "lhs_contracting_dims={1}, rhs_contracting_dims={0}")
    return f"""HloModule m
ENTRY e {{
  a = f32[{pre}{m},{k}] parameter(0)
  b = f32[{pre}{k},{n}] parameter(1)
  ROOT d = f32[{pre}{m},{n}] dot(a, b), {dims}
}}"""


def compiled(m, k, n, batch=0):
    return xlapy.compile(xlapy.hlo.parse(dot_module(m, k, n, batch)), backend="cpu")


# vit/fwd's attention products (batch 32: 8 images x 4 heads; 65 tokens), and shapes with both remainders
SHAPES = [(65, 32, 65, 32), (32, 65, 65, 32), (13, 24, 40, 0), (7, 9, 33, 0), (5, 16, 47, 3)]


def blocked(a, b, kb):
    """The kernel's order for every output (test_dot_k_blocks.blocked, batched): per K block, fma-accumulate from 0
    (f64 product + add, rounded once to f32), then total += block sum in f32."""
    A, B, k = a.astype(np.float64), b.astype(np.float64), a.shape[-1]
    total = None
    for k0 in range(0, k, kb or k):
        acc = np.zeros(a.shape[:-1] + b.shape[-1:], np.float32)
        for j in range(k0, min(k, k0 + (kb or k))):
            acc = (acc.astype(np.float64) + A[..., :, j:j + 1] * B[..., j:j + 1, :]).astype(np.float32)
        total = acc if total is None else total + acc
    return total


@pytest.mark.skipif(not fused_on_host(), reason="no FMA on this host: the emulation's single roundings differ")
@pytest.mark.parametrize("m,k,n,batch", SHAPES)
def test_remainder_outputs_in_the_kernels_order(m, k, n, batch, monkeypatch):
    """Every output, those the last blocks compute twice included, has the bits of the kernel's order."""
    monkeypatch.setenv("XLAPY_CACHE_DIR", "off")
    rng = np.random.default_rng(0)
    lead = (batch,) if batch else ()
    a = rng.standard_normal(lead + (m, k)).astype(np.float32)
    b = rng.standard_normal(lead + (k, n)).astype(np.float32)
    got = np.asarray(compiled(m, k, n, batch)(a, b))
    assert got.tobytes() == blocked(a, b, k_block(k)).tobytes()


def test_remainders_are_no_code_of_their_own():
    """vit/fwd's [65,32] x [32,65] (batch 32): one row-block loop and one column-tile loop, no one-row loop (mr),
    no scalar columns (llvm.fmuladd.f32)."""
    text = compiled(65, 32, 65, 32).llvm_ir
    assert re.search(r'^nt1\.header:', text, re.M) and re.search(r'^mb1\.header:', text, re.M)
    assert not re.search(r'^mr1\.header:', text, re.M)
    assert "llvm.fmuladd.f32" not in text


def test_a_shorter_last_k_block_is_no_copy_of_the_k_loop():
    """vit/fwd's [32,65] x [65,65] (K = 65: 8 blocks of 8, then 1): one K loop in the kernel."""
    text = compiled(32, 65, 65, 32).llvm_ir
    assert len(re.findall(r'^kb1\.header:', text, re.M)) == 1
    assert len(re.findall(r'^k\d*\.header(\.\d+)?:', text, re.M)) == 1


@pytest.mark.skipif(not fused_on_host(), reason="no FMA on this host: the emulation's single roundings differ")
@pytest.mark.parametrize("b0,m,k,n", [(3, 5, 16, 40), (2, 7, 65, 33), (5, 3, 9, 70)])
def test_overlapping_rows_of_a_two_dim_m(b0, m, k, n, monkeypatch):
    """M of two dims ([b0, m] flattened: 15, 14, 15 rows): the overlapping last row block's rows unflattened right."""
    monkeypatch.setenv("XLAPY_CACHE_DIR", "off")
    text = f"""HloModule m
ENTRY e {{
  a = f32[{b0},{m},{k}] parameter(0)
  b = f32[{k},{n}] parameter(1)
  ROOT d = f32[{b0},{m},{n}] dot(a, b), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}
}}"""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((b0, m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu")
    assert re.search(r'^nt1\.header:', exe.llvm_ir, re.M)           # the vector kernel
    assert np.asarray(exe(a, b)).tobytes() == blocked(a, b, k_block(k)).tobytes()
