"""Structural checks of the warm-call paths (no timings): a jitted function called again with xlapy.Arrays of
the same signature skips the full signature; an eager op hitting its cache builds and prints no module."""
import numpy as np
import pytest

import xlapy
import xlapy.numpy as jnp
from xlapy.errors import XlapyError
from xlapy.frontend import eager
from xlapy.frontend.jit import Jitted
from xlapy.hlo import Module

BACKENDS = ["interpreter", "cpu"]


def _forbid(monkeypatch, cls, name):
    def refuse(*args, **kwargs):
        raise AssertionError(f"{cls.__name__}.{name} called on a warm call")
    monkeypatch.setattr(cls, name, refuse)


@pytest.mark.parametrize("backend", BACKENDS)
def test_warm_jit_call_skips_the_signature(backend, monkeypatch):
    f = xlapy.jit(lambda a: a * 2 + 1, backend=backend)
    x = xlapy.device_put(np.arange(4, dtype=np.float32))
    f(x)
    _forbid(monkeypatch, Jitted, "_signature")
    out = f(x)
    assert xlapy.numpy.ndarray is xlapy.Array and type(out) is xlapy.Array
    np.testing.assert_array_equal(np.asarray(out), np.arange(4) * 2 + 1)
    assert out.dtype == np.float32 and out.shape == (4,) and not out.weak_type
    assert f.trace_count == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_fast_path_keeps_results_structure_and_weak_types(backend):
    f = xlapy.jit(lambda a, b: {"s": a + b, "t": (a * b, a)}, backend=backend)
    x, y = xlapy.device_put(np.ones(3, np.float32)), xlapy.numpy.asarray(2.0)
    for _ in range(2):
        out = f(x, y)
    assert set(out) == {"s", "t"} and isinstance(out["t"], tuple)
    np.testing.assert_array_equal(np.asarray(out["t"][0]), [2, 2, 2])
    g = xlapy.jit(lambda a: a, backend=backend)
    w = g(xlapy.numpy.asarray(1.0) * 1.0)
    assert g(w).weak_type == w.weak_type


def test_a_new_signature_or_backend_still_retraces():
    f = xlapy.jit(lambda a: a + 1)
    f(jnp.zeros(3))
    f(jnp.zeros(3))
    assert f.trace_count == 1
    f(jnp.zeros(4))
    assert f.trace_count == 2
    f(jnp.zeros(4, dtype=np.int32))
    assert f.trace_count == 3
    before = xlapy.config.default_backend
    try:
        xlapy.config.update("default_backend", "cpu" if before != "cpu" else "interpreter")
        f(jnp.zeros(3))
        assert f.trace_count == 4
    finally:
        xlapy.config.update("default_backend", before)


def test_donated_and_static_arguments_take_the_full_path():
    f = xlapy.jit(lambda a: a + 1, donate_argnums=0)
    x = jnp.zeros(3)
    f(x)
    assert x.is_deleted()
    with pytest.raises(XlapyError, match="deleted"):
        f(x)
    g = xlapy.jit(lambda a, n: a * n, static_argnums=1)
    assert float(g(jnp.ones(()), 3)[()]) == 3 and float(g(jnp.ones(()), 4)[()]) == 4


def test_jit_inside_jit_still_inlines():
    inner = xlapy.jit(lambda a: a * 3)
    x = jnp.ones(2)
    inner(x)
    outer = xlapy.jit(lambda a: inner(a) + 1)
    np.testing.assert_array_equal(np.asarray(outer(x)), [4, 4])
    assert outer.lower(x).as_text().count("multiply") == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_eager_cache_hit_prints_no_module(backend, monkeypatch):
    monkeypatch.setattr(xlapy.config, "default_backend", backend)
    eager.clear_eager_cache()
    x = xlapy.device_put(np.arange(4, dtype=np.float32))
    x + x
    x + 2.0
    _forbid(monkeypatch, Module, "to_text")
    stats = eager.eager_stats()
    np.testing.assert_array_equal(np.asarray(x + x), np.arange(4) * 2)
    np.testing.assert_array_equal(np.asarray(x + 3.0), np.arange(4) + 3)     # scalars are parameters
    after = eager.eager_stats()
    assert after["compiles"] == stats["compiles"] and after["hits"] >= stats["hits"] + 2


def test_eager_keys_tell_attributes_apart():
    eager.clear_eager_cache()
    x = jnp.arange(6.0).reshape(2, 3)
    assert x.sum(axis=0).shape == (3,) and x.sum(axis=1).shape == (2,)
    assert jnp.transpose(x, (1, 0)).shape == (3, 2)
    np.testing.assert_array_equal(np.asarray(x.sum(axis=0)), [3, 5, 7])
    assert eager._freeze(1) != eager._freeze(True) != eager._freeze(1.0)
    assert eager._freeze(float("nan")) == eager._freeze(float("nan"))
