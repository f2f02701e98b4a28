"""Which thread runs a while loop's iterations (loop_state.runs_on_caller, parallel.on_calling_thread): a body
with little work per iteration runs whole on the calling thread, with no pool jobs, its GEMMs as one BLAS call
each, the BLAS single-threaded once around the whole loop; a body with more work keeps its parallel loops. The same dot outside the loop (split over the pool) and
inside it (one call) are two kernels, not one replayed (kernel_replay.py keys the region). Every program is
checked against the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import loop_state, loops, threadpool
from xlapy.testing import assert_same
from xlapy.tools import npz

STEPS = 3
# h @ W: 32 x 384 x 128 multiply-adds, a GEMM that two threads split (dot_blas.gemm_tasks); the same dot in the
# entry, before the loop, is a kernel of the same structure
ST = "(s32[], f32[32,128], f32[128,384])"
TEXT = f"""HloModule loop_threads
cond {{
  s = {ST} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({STEPS})
  ROOT lt = pred[] compare(i, n), direction=LT
}}
body {{
  s = {ST} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[32,128] get-tuple-element(s), index=1
  w = f32[128,384] get-tuple-element(s), index=2
  one = s32[] constant(1)
  d = f32[32,384] dot(h, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  g = f32[32,128] slice(d), slice={{[0:32], [0:128]}}
  t = f32[32,128] tanh(g)
  ROOT r = {ST} tuple(s32[] add(i, one), t, w)
}}
ENTRY e {{
  x = f32[32,128] parameter(0)
  w = f32[128,384] parameter(1)
  d = f32[32,384] dot(x, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  g = f32[32,128] slice(d), slice={{[0:32], [0:128]}}
  h = f32[32,128] tanh(g)
  z = s32[] constant(0)
  ROOT l = {ST} while({ST} tuple(z, h, w)), condition=cond, body=body
}}
"""


@pytest.fixture(scope="module")
def args():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((32, 128)).astype(np.float32) * 0.1,
            rng.standard_normal((128, 384)).astype(np.float32) * 0.1)


def _jobs_per_call(exe, args) -> int:
    """Pool jobs one call publishes, with every job shared (no adapting to the machine's load)."""
    threadpool.set_adapt(False)
    try:
        exe(*args)
        before = threadpool.jobs_published()
        exe(*args)
        return threadpool.jobs_published() - before
    finally:
        threadpool.set_adapt(threadpool.ADAPT)


def _check(exe, args) -> None:
    want = npz.flatten(xlapy.compile(xlapy.hlo.parse(TEXT), backend="interpreter")(*args))
    for k, (g, w) in enumerate(zip(npz.flatten(exe(*args)), want, strict=True)):
        assert_same(g, w, where=f"output {k}", rtol=1e-5, atol=1e-5)


def _serial_blas_calls(exe) -> int:
    """xlapy_blas_serial calls in the entry function itself (the dots' own brackets are in their kernels)."""
    entry = exe.llvm_ir.split('define void @"xlapy_entry"', 1)[1].split("\n}", 1)[0]
    return entry.count(f'call void @"{threadpool.SERIAL_BLAS_SYMBOL}"(')


@pytest.fixture(scope="module")
def small(args):
    exe = xlapy.compile(xlapy.hlo.parse(TEXT), backend="cpu", num_threads=2)
    _check(exe, args)
    return exe


def test_small_body_runs_on_its_caller(small, args):
    assert _jobs_per_call(small, args) == 1          # the entry's dot only: no job per iteration


def test_larger_body_keeps_its_pool_jobs(small, args, monkeypatch):
    monkeypatch.setattr(loop_state, "CALLER_MAX_FLOPS", 1e6)       # below the body's 2 * 32 * 384 * 128
    monkeypatch.setenv("XLAPY_CACHE_DIR", "off")                   # the cache key does not hold the setting
    exe = xlapy.compile(xlapy.hlo.parse(TEXT), backend="cpu", num_threads=2)
    _check(exe, args)
    assert _jobs_per_call(exe, args) == 1 + STEPS
    # the loop on its caller brackets the BLAS once around all its iterations, in the entry
    assert (_serial_blas_calls(small), _serial_blas_calls(exe)) == (2, 0)


def test_one_thread_has_nothing_to_decide():
    module = xlapy.hlo.parse(TEXT)
    loop = module.entry.root
    assert loop.opcode == "while"
    assert loop_state.runs_on_caller(loop, 2)
    assert not loop_state.runs_on_caller(loop, 1)


def test_caller_loops_compute_row_halves_together(small, args, monkeypatch):
    """A loop on the caller runs each row's two halves in one iteration (loops.HALF_ROW_QUANTUM): the same
    element code, so the same bits as one element at a time."""
    monkeypatch.setattr(loops, "HALF_ROW_QUANTUM", 1 << 30)          # no row splits in two
    monkeypatch.setenv("XLAPY_CACHE_DIR", "off")
    whole = xlapy.compile(xlapy.hlo.parse(TEXT), backend="cpu", num_threads=2)
    assert whole.llvm_ir != small.llvm_ir
    for g, w in zip(npz.flatten(small(*args)), npz.flatten(whole(*args)), strict=True):
        np.testing.assert_array_equal(g, w)
