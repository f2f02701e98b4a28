"""The persistent thread pool (threadpool.py) behind parallel loops and split GEMMs (dot_blas.py): results
do not depend on which thread runs which chunk (bitwise equal across calls, equal to 1 thread for elementwise
work), repeated and concurrent calls (several Python threads, one or several executables) are right, a forked
child still computes, and the BLAS thread count is restored after a split GEMM."""
import os
import threading

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import dot_blas, runtime, threadpool

N = 300_007           # elements: split over 2 and 4 threads (>= 256 KiB of traffic per task)

ELEMENTWISE = f"""HloModule m
ENTRY e {{
  x = f32[{N}] parameter(0)
  y = f32[{N}] parameter(1)
  m = f32[{N}] multiply(x, y)
  ROOT r = f32[{N}] add(m, x)
}}
"""


def dot_module(m, k, n, transpose_rhs=False):
    rhs, rc = (f"f32[{n},{k}]", "1") if transpose_rhs else (f"f32[{k},{n}]", "0")
    return f"""HloModule d
ENTRY e {{
  x = f32[{m},{k}] parameter(0)
  w = {rhs} parameter(1)
  ROOT r = f32[{m},{n}] dot(x, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{{rc}}}
}}
"""


def compile_threads(text, threads):
    module = xlapy.hlo.parse(text)
    return {t: xlapy.compile(module, backend="cpu", num_threads=t) for t in threads}


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_elementwise_results_equal_for_1_2_4_threads_and_repeated_calls():
    exes = compile_threads(ELEMENTWISE, (1, 2, 4))
    assert threadpool.RUN_SYMBOL not in exes[1].llvm_ir
    assert threadpool.RUN_SYMBOL in exes[2].llvm_ir and threadpool.RUN_SYMBOL in exes[4].llvm_ir
    x, y = rand(N), rand(N, seed=1)
    want = exes[1](x, y).tobytes()
    for t in (2, 4):
        for _ in range(20):
            assert exes[t](x, y).tobytes() == want


def gemm_available():
    return runtime.blas_function("gemm", "f32") is not None


@pytest.mark.skipif(not gemm_available(), reason="no BLAS in this process")
@pytest.mark.parametrize("m,k,n,transpose_rhs", [(128, 784, 512, False), (512, 128, 784, True), (200, 96, 72, False)])
def test_split_gemm_matches_numpy_and_is_deterministic(m, k, n, transpose_rhs):
    exes = compile_threads(dot_module(m, k, n, transpose_rhs), (1, 2, 4))
    split = dot_blas.gemm_tasks(m, n, k, 2) > 1
    assert (threadpool.RUN_SYMBOL in exes[2].llvm_ir) == split
    x = rand(m, k)
    w = rand(n, k, seed=1) if transpose_rhs else rand(k, n, seed=1)
    want = x @ (w.T if transpose_rhs else w)
    for t, exe in exes.items():
        first = exe(x, w)
        np.testing.assert_allclose(first, want, rtol=1e-4, atol=1e-4)
        for _ in range(5):
            assert exe(x, w).tobytes() == first.tobytes()


@pytest.mark.skipif(not gemm_available(), reason="no BLAS in this process")
def test_split_gemm_restores_the_blas_thread_count():
    before = runtime.get_num_threads()
    exe = compile_threads(dot_module(128, 784, 512), (2,))[2]
    exe(rand(128, 784), rand(784, 512))
    assert runtime.get_num_threads() == before


@pytest.mark.skipif(not gemm_available(), reason="no BLAS in this process")
def test_concurrent_calls_from_python_threads():
    """Several Python threads call the same executable and two others at once; every result is right."""
    elementwise = compile_threads(ELEMENTWISE, (2,))[2]
    dot = compile_threads(dot_module(128, 784, 512), (2,))[2]
    x, y = rand(N), rand(N, seed=1)
    a, w = rand(128, 784, seed=2), rand(784, 512, seed=3)
    # x * y + x rounded once (the CPU backend contracts it into an FMA, elemental_contract.py)
    from xlapy.backends.cpu.elemental_contract import fused_on_host
    want_e = (x.astype(np.float64) * y + x).astype(np.float32) if fused_on_host() else x * y + x
    want_d = a @ w
    errors = []

    def work(k):
        try:
            for _ in range(15):
                if k % 2:
                    np.testing.assert_array_equal(elementwise(x, y), want_e)
                else:
                    np.testing.assert_allclose(dot(a, w), want_d, rtol=1e-4, atol=1e-4)
        except Exception as e:       # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_forked_child_computes():
    exe = compile_threads(ELEMENTWISE, (2,))[2]
    x, y = rand(N), rand(N, seed=1)
    want = exe(x, y)                   # the workers exist in the parent now
    pid = os.fork()
    if pid == 0:                       # the child: no workers until it makes new ones
        ok = False
        try:
            ok = all(exe(x, y).tobytes() == want.tobytes() for _ in range(3))
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_pool_workers_follow_the_largest_request():
    compile_threads(ELEMENTWISE, (3,))
    assert threadpool.workers_wanted() >= 2


@pytest.mark.parametrize("triple", ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"])
def test_pool_module_is_valid_for_both_timing_variants(triple):
    """The pool's IR (threadpool_ir.py) with the cycle counter (x86) and with iteration counts (elsewhere, never
    run on an x86 test machine) verifies and exports exactly the routines compiled code and threadpool.py call."""
    import llvmlite.binding as llvm
    from xlapy.backends.cpu.threadpool_ir import build_pool_module
    mod = llvm.parse_assembly(str(build_pool_module(triple)))
    mod.verify()
    exported = {f.name for f in mod.functions if not f.is_declaration and f.linkage == llvm.Linkage.external}
    assert exported == {threadpool.RUN_SYMBOL, threadpool.SERIAL_BLAS_SYMBOL, "xlapy_pool_init", "xlapy_pool_reset",
                        "xlapy_pool_blas_control", "xlapy_pool_set_target", "xlapy_pool_ticks", "xlapy_pool_help",
                        "xlapy_pool_set_help", "xlapy_pool_set_judge", "xlapy_pool_published"}
