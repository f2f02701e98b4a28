"""Dots whose outputs are each one inner product (N == 1) sum with vector partial sums (dot_loops._partial_sums):
the same association at every LLVM level (so the same bits from a small module's quick compile, a light kernel at
O1 and a hot one at O3), and an error against exact arithmetic no worse than a sequential sum's."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import dot_loops
from xlapy.backends.cpu.vector_width import loop_vector_bytes

CASES = [  # (lhs shape, rhs shape, dot attributes, dtype)
    ((16, 64), (64, 1), "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "f32"),      # K = 8 vectors
    ((7, 29), (29, 1), "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "f32"),       # a 5-lane tail
    ((5, 300), (300,), "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "f32"),        # 4 chains, tail of 4
    ((3, 4, 131), (3, 131, 1), "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
     "rhs_contracting_dims={1}", "f32"),
    ((6, 37), (37, 1), "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "f64"),
    ((6, 45), (45, 1), "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "bf16"),
    ((5, 3), (3, 1), "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "f32"),          # K < one vector
    ((40, 9), (40, 1), "lhs_contracting_dims={0}, rhs_contracting_dims={0}", "f32"),        # K stride 9 in lhs
]
NP = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16}


def _module(ls, rs, attrs, ty):
    out = [d for d in ls[:-1]] if "batch" not in attrs else [ls[0], ls[1]]
    if "lhs_contracting_dims={0}" in attrs:
        out = [ls[1]]
    out += [rs[-1]] if len(rs) > 1 and "batch" not in attrs else ([rs[2]] if "batch" in attrs else [])
    shape = lambda s: f"{ty}[{','.join(map(str, s))}]"
    return (f"HloModule d\nENTRY e {{ a = {shape(ls)} parameter(0)\n b = {shape(rs)} parameter(1)\n"
            f" ROOT d = {shape(out)} dot(a, b), {attrs} }}")


def _inputs(ls, rs, ty, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) + 0.3).astype(NP[ty]) for s in (ls, rs)]


@pytest.mark.parametrize("ls,rs,attrs,ty", CASES)
def test_same_bits_at_every_llvm_level(ls, rs, attrs, ty):
    text = _module(ls, rs, attrs, ty)
    a, b = _inputs(ls, rs, ty)
    quick = np.asarray(xlapy.compile(xlapy.hlo.parse(text), backend="cpu", llvm_level="quick")(a, b))
    optimized = np.asarray(xlapy.compile(xlapy.hlo.parse(text), backend="cpu", llvm_level="optimized")(a, b))
    assert quick.view(np.uint8).tobytes() == optimized.view(np.uint8).tobytes()
    exact = np.einsum("...k,...k->...", *np.broadcast_arrays(*[x.astype(np.float64) for x in
                                                                 _operands(ls, rs, attrs, a, b)]))
    np.testing.assert_allclose(quick.astype(np.float64).reshape(exact.shape), exact,
                               rtol=0, atol=(3e-2 if ty == "bf16" else 1e-4) * np.abs(exact).max())


def _operands(ls, rs, attrs, a, b):
    """lhs and rhs as [..., K] arrays whose last axes pair up, for the float64 check."""
    if "batch" in attrs:
        return a[:, :, :], np.swapaxes(b, 1, 2)[:, :1, :]
    if "lhs_contracting_dims={0}" in attrs:
        return a.T, b.reshape(1, -1)
    return a, b.reshape(1, -1)


def test_more_accurate_than_a_sequential_sum():
    """12 rows of 1300-term inner products (under dot_plan's GEMV_MIN_ELEMENTS: emitted loops, not BLAS), three
    draws: the partial sums' rms error against float64 is well under a sequential float32 sum's (which grows like
    K, not like K / lanes)."""
    from xlapy.backends.cpu.dot_plan import GEMV_MIN_ELEMENTS
    ls, rs = (12, 1300), (1300, 1)
    assert ls[0] * ls[1] < GEMV_MIN_ELEMENTS
    exe = xlapy.compile(xlapy.hlo.parse(_module(ls, rs, CASES[0][2], "f32")), backend="cpu", llvm_level="quick")
    err_got = err_seq = 0.0
    for seed in range(3):
        a, b = _inputs(ls, rs, "f32", seed)
        exact = a.astype(np.float64) @ b[:, 0].astype(np.float64)
        seq = np.zeros(ls[0], np.float32)
        for k in range(ls[1]):
            seq = (seq + a[:, k] * b[k, 0]).astype(np.float32)
        err_got += float(((np.asarray(exe(a, b))[:, 0] - exact) ** 2).sum())
        err_seq += float(((seq - exact) ** 2).sum())
    assert err_got < 0.25 * err_seq        # squared errors: the rms error under half


def test_chains_follow_k():
    """One chain for short sums (each product rounded once less), up to SUM_CHAINS for long ones."""
    from xlapy.backends.cpu.dot_plan import DotDims, DotShape, Operand
    from xlapy.hlo.shape import primitive_type
    f32 = primitive_type("f32")

    def chains(k):
        d = DotShape(Operand((4, k), (k, 1), f32), Operand((k, 1), (1, 1), f32), Operand((4, 1), (1, 1), f32),
                     DotDims((), (1,), (), (0,)))
        found = dot_loops._partial_sums(d, f32)
        return None if found is None else found[1]
    lanes = loop_vector_bytes() // 4
    assert chains(lanes - 1) is None
    assert chains(lanes) == 1 and chains(4 * lanes - 1) == 1
    assert chains(16 * lanes) == dot_loops.SUM_CHAINS
