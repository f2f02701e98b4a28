"""dot_panels: f32 GEMMs as the emitted panel kernel instead of sgemm: W stored [N, K] (transposing pack), with the
tails of every loop (rows past the last register block, a narrower last panel, a short last K block), each panel's
K block packed just before its row blocks (one M block, one thread) or W packed whole first (two M blocks); on two
threads the panels shared out, each thread packing its own, or the rows after one pack (one panel); W stored [K, N] as one panel, read in place when aligned and copied when not."""
import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import dot_plan, runtime
from xlapy.backends.cpu.vector_width import loop_vector_bytes

pytestmark = pytest.mark.skipif(loop_vector_bytes() != 64, reason="dot_panels is an AVX-512 kernel")

NT = """HloModule m

ENTRY e {{
  a = f32[{m},{k}] parameter(0)
  w = f32[{n},{k}] parameter(1)
  ROOT d = f32[{m},{n}] dot(a, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
}}
"""


def _text(m: int, n: int, k: int, rhs_contracting: int = 1) -> str:
    text = NT.format(m=m, n=n, k=k)
    if rhs_contracting == 0:
        text = text.replace(f"f32[{n},{k}] parameter(1)", f"f32[{k},{n}] parameter(1)").replace(
            "rhs_contracting_dims={1}", "rhs_contracting_dims={0}")
    return text


def _plan(m, n, k, rhs_contracting=1):
    rhs = (n, k) if rhs_contracting else (k, n)
    dims = dot_plan.DotDims((), (1,), (), (rhs_contracting,))
    return dot_plan.plan_dot((m, k), rhs, (m, n), dims, "f32")


@pytest.mark.parametrize("m,n,k,threads", [(128, 256, 512, 1), (130, 208, 304, 1), (130, 208, 304, 2),
                                           (37, 96, 1040, 2), (300, 96, 272, 1), (130, 48, 304, 2)])
def test_transposed_rhs_runs_the_panel_kernel(m, n, k, threads):
    assert _plan(m, n, k).strategy == "panels"
    exe = xlapy.compile(xlapy.hlo.parse(_text(m, n, k)), backend="cpu", num_threads=threads)
    symbol = runtime.blas_symbol("gemm", "f32")
    if symbol is not None:
        assert symbol not in exe.llvm_ir
    rng = np.random.default_rng(0)
    a, w = rng.standard_normal((m, k), np.float32), rng.standard_normal((n, k), np.float32)
    exact = a.astype(np.float64) @ w.T.astype(np.float64)
    got = np.asarray(exe(a, w))
    # each K block of 256 one chain of FMAs, as OpenBLAS's sgemm sums: its error, not K's
    assert np.abs(got - exact).max() <= 2 * np.abs(a @ w.T - exact).max() + 1e-6


@pytest.mark.parametrize("m,n,threads", [(128, 64, 1), (130, 48, 2)])
def test_one_panel_w_read_in_place_or_copied(m, n, threads):
    """W [K, N], N <= 64: the kernel reads it where it is 64-byte aligned, else a copy in scratch (same results)."""
    k = 576
    assert _plan(m, n, k, rhs_contracting=0).strategy == "panels"
    exe = xlapy.compile(xlapy.hlo.parse(_text(m, n, k, rhs_contracting=0)), backend="cpu", num_threads=threads)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k), np.float32)
    buf = np.empty(k * n + 32, np.float32)
    first = (-buf.ctypes.data % 64) // 4
    exact = None
    for offset in (first, first + 4):           # aligned, then 16 bytes off
        w = buf[offset:offset + k * n].reshape(k, n)
        w[...] = rng.standard_normal((k, n), np.float32) if exact is None else w_values
        w_values = w.copy()
        got = np.asarray(exe(a, w))
        exact = a.astype(np.float64) @ w_values.astype(np.float64)
        assert np.abs(got - exact).max() <= 2 * np.abs(a @ w_values - exact).max() + 1e-6


def test_rule_keeps_blas_outside_the_window():
    assert _plan(128, 256, 512, rhs_contracting=0).strategy == "gemm"        # W [K, N] wider than one panel
    assert _plan(128, 200, 512).strategy != "panels"                         # N not a multiple of 16
    assert _plan(2048, 256, 512).strategy == "gemm"                          # lhs past PANELS_MAX_LHS_BYTES
    assert _plan(128, 1024, 512).strategy == "gemm"                          # W past PANELS_MAX_RHS_BYTES
    assert _plan(8, 256, 256).strategy == "gemm"                             # below PANELS_MIN_M
