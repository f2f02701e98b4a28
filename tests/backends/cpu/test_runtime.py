"""The CPU runtime's BLAS lookup: providers, symbols registered with LLVM, thread control, forced choices."""
from __future__ import annotations

import ctypes
import importlib.util
import sys
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest

from xlapy.backends.cpu import runtime

sys.path.insert(0, str(Path(__file__).parent))
from test_dot_emitter import MATMUL, check, jit_dot  # noqa: E402

HAVE_SCIPY = importlib.util.find_spec("scipy") is not None


@pytest.fixture
def restore_provider():
    before = runtime.provider()
    yield
    runtime.use_provider(None if before is None else before.name)


def test_default_provider_has_gemm_and_gemv():
    p = runtime.provider()
    assert p is not None, "numpy ships OpenBLAS; a BLAS should be found"
    for routine in ("gemm", "gemv"):
        for dtype in ("f32", "f64"):
            name = runtime.blas_symbol(routine, dtype)
            assert name is not None and name.startswith("xlapy_")
            fn = runtime.blas_function(routine, dtype)
            assert fn.address and llvm.address_of_symbol(name) == fn.address   # MCJIT resolves it by name
    assert runtime.blas_symbol("gemm", "s32") is None and runtime.blas_symbol("conv", "f32") is None
    assert runtime.describe() == p.description


def test_cblas_gemm_pointer_is_callable_from_ctypes():
    fn = runtime.blas_function("gemm", "f64")
    if fn.abi != "cblas":
        pytest.skip("provider is not CBLAS")
    it = ctypes.c_int64 if fn.int_bits == 64 else ctypes.c_int32
    ptr = ctypes.POINTER(ctypes.c_double)
    gemm = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, it, it, it, ctypes.c_double, ptr, it,
                            ptr, it, ctypes.c_double, ptr, it)(fn.address)
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    c = np.zeros((2, 4))
    p = lambda x: x.ctypes.data_as(ptr)
    gemm(runtime.CBLAS_ROW_MAJOR, runtime.CBLAS_NO_TRANS, runtime.CBLAS_NO_TRANS, 2, 4, 3, 1.0, p(a), 3, p(b), 4,
         0.0, p(c), 4)
    np.testing.assert_array_equal(c, a @ b)


def test_thread_control_round_trips():
    before = runtime.get_num_threads()
    if before is None:
        pytest.skip("provider has no thread control")
    try:
        assert runtime.set_num_threads(1)
        assert runtime.get_num_threads() == 1
    finally:
        runtime.set_num_threads(before)


def test_no_blas_falls_back_to_loops(restore_provider):
    assert runtime.use_provider("none") is None
    assert runtime.blas_symbol("gemm", "f32") is None and "no BLAS" in runtime.describe()
    plan = check((70, 80), (80, 90), (70, 90), MATMUL, "f32")
    assert plan.strategy == "loops" and "no BLAS" in plan.reason


def test_unknown_provider_is_an_error(restore_provider):
    with pytest.raises(ValueError, match="unknown BLAS provider"):
        runtime.use_provider("mkl")


@pytest.mark.skipif(not HAVE_SCIPY, reason="scipy not installed")
@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_scipy_fortran_abi(restore_provider, ty):
    p = runtime.use_provider("scipy")
    assert p is not None and runtime.blas_function("gemm", ty).abi == "fortran"
    trans = dict(lhs_contracting_dims=(0,), rhs_contracting_dims=(1,))
    for lhs, rhs, out, dn in [((100, 64), (64, 80), (100, 80), MATMUL), ((100, 64), (80, 100), (64, 80), trans),
                              ((300, 200), (200,), (300,), MATMUL), ((200,), (200, 300), (300,),
                                                                     dict(lhs_contracting_dims=(0,),
                                                                          rhs_contracting_dims=(0,)))]:
        plan = check(lhs, rhs, out, dn, ty)
        assert plan.symbol is not None and plan.symbol.startswith("xlapy_f77_")


def test_env_knobs(monkeypatch, restore_provider):
    monkeypatch.setenv("XLAPY_BLAS", "none")
    assert runtime.use_provider() is None
    monkeypatch.setenv("XLAPY_BLAS", "numpy")
    monkeypatch.setenv("XLAPY_NUM_THREADS", "1")
    threads = runtime.get_num_threads()
    p = runtime.use_provider()
    try:
        if p is not None and p.get_threads is not None:
            assert runtime.get_num_threads() == 1
        call, plan = jit_dot((128, 128), (128, 128), (128, 128), MATMUL, "f32")
        a = np.ones((128, 128), np.float32)
        np.testing.assert_array_equal(call(a, a), np.full((128, 128), 128, np.float32))
    finally:
        if threads is not None:
            runtime.set_num_threads(threads)
