"""A top-level dot goes through dot_emitter: GEMM from the BLAS runtime for large f32/f64 (regression: the
backend materialized dots with its per-element generator, 200x slower than BLAS on 1024^3)."""
import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import runtime

DOT = """HloModule m

ENTRY e {
  a = f32[256,128] parameter(0)
  b = f32[128,192] parameter(1)
  ROOT d = f32[256,192] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_large_dot_calls_gemm():
    if runtime.blas_symbol("gemm", "f32") is None:
        pytest.skip("no BLAS in this process: dots are emitted as loops")
    exe = xlapy.compile(xlapy.hlo.parse(DOT), backend="cpu")
    assert runtime.blas_symbol("gemm", "f32") in exe.llvm_ir
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((256, 128), np.float32), rng.standard_normal((128, 192), np.float32)
    np.testing.assert_allclose(exe(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_integer_dot_is_exact():
    text = DOT.replace("f32", "s32")
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu")
    rng = np.random.default_rng(1)
    a, b = rng.integers(-9, 9, (256, 128), np.int32), rng.integers(-9, 9, (128, 192), np.int32)
    np.testing.assert_array_equal(exe(a, b), a @ b)
