"""Shared fixtures of the PyTorch front end's tests (each test file skips itself when torch is absent)."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test starts with dynamo's caches and xlapy's fallback report empty."""
    torch = pytest.importorskip("torch")
    import xlapy.torch as xt
    torch._dynamo.reset()
    xt.clear_report()
    yield
    torch._dynamo.reset()


@pytest.fixture
def x64():
    """xlapy's x64 mode for one test (float64 models compare with eager PyTorch to 1e-9)."""
    from xlapy.frontend import dtypes
    old = dtypes.config.enable_x64
    dtypes.config.update("jax_enable_x64", True)
    yield
    dtypes.config.update("jax_enable_x64", old)
