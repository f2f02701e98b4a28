"""Transcendentals are emitted as branch-free polynomials (math_approx), not C library calls, so the loop
around them vectorizes; results stay within a few ulp of numpy."""
import numpy as np
import pytest

import xlapy

OPS = ["exponential", "log", "tanh", "exponential-minus-one", "log-plus-one", "sine", "cosine", "erf"]


@pytest.mark.parametrize("op", OPS)
def test_transcendental_is_inlined_and_vectorized(op):
    text = f"HloModule m\n\nENTRY e {{\n  p = f32[32768] parameter(0)\n  ROOT r = f32[32768] {op}(p)\n}}\n"
    # optimized level, and enough work per run for the hot tier (opt_levels.py: small kernels are not vectorized)
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", llvm_level="optimized")
    import re
    callees = set(re.findall(r"call [^@]*@([\w.]+)\(", exe.llvm_ir_optimized))
    math_calls = {c for c in callees
                  if re.search(r"(^|\.)(exp|expm1|log|log1p|tanh|sin|cos|erf)(f|\.f32|\.v\d+f32)?$", c)}
    assert not math_calls, f"{op} still calls {math_calls}"
    assert "x float>" in exe.llvm_ir_optimized          # a vector type: the loop was vectorized
    x = np.linspace(0.01, 5, 32768, dtype=np.float32)
    np.testing.assert_allclose(exe(x), xlapy.compile(xlapy.hlo.parse(text))(x), rtol=2e-6, atol=1e-7)
