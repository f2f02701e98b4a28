"""Derivatives through complex LU solves, Cholesky and triangular solves (the getrf, cholesky and
triangular-solve rules on complex values, JAX's convention) against JAX 0.10.2's (complex_grad_data/, from
tools/gen_complex_grad_data.py, whose FUNCTIONS this test runs with xlapy's modules)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import xlapy
from xlapy import lax
from xlapy import numpy as xnp
from xlapy.scipy import linalg as xsl

ROOT = Path(__file__).resolve().parents[2]
DATA = np.load(Path(__file__).parent / "complex_grad_data" / "complex_grads.npz")
_spec = importlib.util.spec_from_file_location("gen_complex_grad_data", ROOT / "tools" / "gen_complex_grad_data.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)
FUNCTIONS = gen.functions(xnp, lax, xsl)


@pytest.fixture
def x64():
    old = xlapy.config.enable_x64
    xlapy.config.update("jax_enable_x64", True)
    yield
    xlapy.config.update("jax_enable_x64", old)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_matches_jax(name, x64):
    f = FUNCTIONS[name]
    args = tuple(DATA[k] for k in ("x", "y", "bx", "by"))
    tangents = (args[1], args[0], args[3], args[2])
    value, tangent = xlapy.jit(lambda *a: xlapy.jvp(f, a[:4], a[4:]))(*args, *tangents)
    grads = xlapy.jit(xlapy.grad(f, argnums=(0, 1, 2, 3)))(*args)
    got = {"value": value, "jvp": tangent, **{f"g{k}": g for k, g in enumerate(grads)}}
    for key, g in got.items():
        np.testing.assert_allclose(np.asarray(g), DATA[f"{name}.{key}"], rtol=1e-9, atol=1e-9, err_msg=key)
