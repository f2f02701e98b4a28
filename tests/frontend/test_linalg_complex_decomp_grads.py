"""Derivatives of complex QR (Q and R) and complex singular vectors against JAX's
(tests/frontend/complex_grad_data/complex_decomp_grads.npz, from tools/gen_complex_decomp_grad_data.py): jvp
along a fixed tangent and grad in both real inputs (the matrix is x + i y), square, tall and wide."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax

import importlib.util

_TOOL = Path(__file__).resolve().parents[2] / "tools" / "gen_complex_decomp_grad_data.py"
_spec = importlib.util.spec_from_file_location("gen_complex_decomp_grad_data", _TOOL)
GEN = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(GEN)

DATA = np.load(Path(__file__).parent / "complex_grad_data" / "complex_decomp_grads.npz")
FUNCTIONS = GEN.functions(xnp, lax)
CASES = [(name, key) for name, keys in GEN.CASES for key in keys]


@pytest.mark.parametrize("name,key", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_matches_jax(name, key, x64):
    f = FUNCTIONS[name]
    x, y = DATA[f"{key}.x"], DATA[f"{key}.y"]
    tag = f"{name}.{key}"
    value, tangent = xlapy.jvp(f, (x, y), (y, x))
    np.testing.assert_allclose(float(value), DATA[f"{tag}.value"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(float(tangent), DATA[f"{tag}.jvp"], rtol=1e-8, atol=1e-10)
    g0, g1 = xlapy.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(np.asarray(g0), DATA[f"{tag}.g0"], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.asarray(g1), DATA[f"{tag}.g1"], rtol=1e-8, atol=1e-10)


def test_under_jit(x64):
    f = FUNCTIONS["qr_both"]
    x, y = DATA["tall.x"], DATA["tall.y"]
    g = xlapy.jit(xlapy.grad(f, argnums=(0, 1)))(x, y)
    np.testing.assert_allclose(np.asarray(g[0]), DATA["qr_both.tall.g0"], rtol=1e-8, atol=1e-10)
