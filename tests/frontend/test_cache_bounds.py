"""Bounded caches (issue 12): jit keeps at most config.jit_cache_size signatures per function and the eager-op cache
at most config.eager_cache_size executables, least recently used dropped first; xlapy.clear_caches() drops
every executable. Evicted entries give results as before (they are compiled again when needed)."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.frontend import eager


@pytest.fixture
def cache_sizes():
    """Set config.jit_cache_size / eager_cache_size for the test; restored afterwards."""
    old = (xlapy.config.jit_cache_size, xlapy.config.eager_cache_size)

    def set_sizes(jit: int, eager_ops: int) -> None:
        xlapy.config.update("jit_cache_size", jit)
        xlapy.config.update("eager_cache_size", eager_ops)
    yield set_sizes
    set_sizes(*old)


def test_defaults_are_documented_and_positive():
    assert xlapy.config.jit_cache_size >= 64 and xlapy.config.eager_cache_size >= 256
    doc = type(xlapy.config).__doc__
    assert "jit_cache_size" in doc and "eager_cache_size" in doc


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "8"])
def test_cache_sizes_must_be_positive_ints(value):
    with pytest.raises(ValueError, match="positive int"):
        xlapy.config.update("jit_cache_size", value)


def test_jit_cache_keeps_the_most_recently_used_signatures(cache_sizes):
    cache_sizes(jit=4, eager_ops=1024)
    f = xlapy.jit(lambda x: x * 2 + 1)
    arrays = [np.arange(n, dtype=np.float32) for n in range(1, 11)]
    for a in arrays:
        np.testing.assert_array_equal(np.asarray(f(a)), a * 2 + 1)
    assert f._cache_size() == 4 and f.trace_count == 10
    for a in arrays[-4:]:                       # the last four are cached: no retrace
        np.testing.assert_array_equal(np.asarray(f(a)), a * 2 + 1)
    assert f.trace_count == 10
    np.testing.assert_array_equal(np.asarray(f(arrays[0])), arrays[0] * 2 + 1)     # evicted: traced again
    assert f.trace_count == 11 and f._cache_size() == 4


def test_an_evicted_signature_loses_its_warm_call_function(cache_sizes):
    cache_sizes(jit=2, eager_ops=1024)
    f = xlapy.jit(lambda x: x + 1)
    a, b, c = (xnp.ones(n) for n in (1, 2, 3))
    f(a), f(b), f(c)                            # a is evicted: its executable must not live on in the warm path
    assert f._cache_size() == 2
    assert all(sig in f._cache for sig in f._fast)
    assert float(f(a)[0]) == 2 and f.trace_count == 4


def test_recently_used_entries_survive_eviction(cache_sizes):
    """The signatures with a warm-call function (the first _MAX_FAST) stay; the others go least recently used
    first, where a use is a call (those calls take the full path, which keeps the order)."""
    from xlapy.frontend.jit import _MAX_FAST
    cache_sizes(jit=_MAX_FAST + 4, eager_ops=1024)
    f = xlapy.jit(lambda x, k: x.sum() + k, static_argnums=1)
    x = np.ones(3, np.float32)
    for k in range(_MAX_FAST + 6):             # the last 4 non-warm ones fit: k = 18..21 (with _MAX_FAST 16)
        f(x, k)
    first_lru = _MAX_FAST + 2
    assert float(f(x, first_lru)) == 3 + first_lru          # a hit: now the most recently used
    f(x, 100)                                  # evicts the least recently used non-warm one: first_lru + 1
    kept = {dict(sig.static)[1] for sig in f._cache.keys()}
    assert kept == set(range(_MAX_FAST)) | {first_lru, first_lru + 2, first_lru + 3, 100}
    assert f.trace_count == _MAX_FAST + 7


def test_eager_cache_is_bounded(cache_sizes, xlapy_backend):
    cache_sizes(jit=256, eager_ops=8)
    eager.clear_eager_cache()
    for n in range(1, 21):
        x = xnp.asarray(np.arange(n, dtype=np.float32))
        np.testing.assert_array_equal(np.asarray(-x), -np.arange(n, dtype=np.float32))
    stats = eager.eager_stats()
    assert stats["entries"] == 8 and stats["evictions"] >= 12
    eager.clear_eager_cache()


def test_clear_caches_drops_every_executable():
    f, g = xlapy.jit(lambda x: x + 1), xlapy.jit(lambda x: x * 3)
    x = np.ones(4, np.float32)
    f(x), g(x), -xnp.asarray(x)
    assert f._cache_size() == 1 and g._cache_size() == 1 and eager.eager_stats()["entries"] >= 1
    xlapy.clear_caches()
    assert f._cache_size() == 0 and g._cache_size() == 0 and eager.eager_stats()["entries"] == 0
    np.testing.assert_array_equal(np.asarray(f(x)), x + 1)     # and everything still works afterwards
    assert f.trace_count == 2
