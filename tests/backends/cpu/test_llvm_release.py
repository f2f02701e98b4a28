"""Machine code is given back (issue 12): an executable that is dropped (evicted from a cache, cleared, or simply
garbage) frees its LLVM engine, the shared quick engine once none of its modules is used, and the LLVM contexts
those modules were parsed into; RSS after xlapy.clear_caches() is back near where it started."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import compile_module, llvm_jit
from xlapy.frontend import eager


def _module(k: int, n: int = 3) -> xlapy.hlo.Module:
    return xlapy.hlo.parse(f"""HloModule m{k}
ENTRY main {{
  x = f32[{n}] parameter(0)
  c = f32[{n}] constant({{{', '.join(str(k + i) for i in range(n))}}})
  ROOT y = f32[{n}] add(x, c)
}}""")


def _collect() -> None:
    gc.collect()
    llvm_jit.collect_released()
    gc.collect()


def test_quick_engines_are_freed_with_their_last_executable(monkeypatch):
    monkeypatch.setattr(llvm_jit, "QUICK_MODULES_PER_ENGINE", 3)
    # the process's own runtime code (the thread pool, call trampolines: one context each, for good) is made on a
    # first compile, which must not fall inside the count below
    compile_module(_module(99), llvm_level="quick")(np.zeros(3, np.float32))
    _collect()
    contexts_before = len(llvm_jit._CONTEXTS)
    exes = [compile_module(_module(k), llvm_level="quick") for k in range(7)]
    hosts = {id(e._engine.host): weakref.ref(e._engine.host) for e in exes}
    assert len(hosts) == 3                       # 3 + 3 + 1 modules: two retired engines and the current one
    x = np.zeros(3, np.float32)
    for k, exe in enumerate(exes):
        np.testing.assert_array_equal(exe(x), np.arange(k, k + 3, dtype=np.float32))
    retired = exes[0]._engine.host
    del exes[:3]                                 # every executable of the first engine
    _collect()
    assert retired.engine.closed
    del retired
    for k, exe in enumerate(exes, 3):            # the others still run
        np.testing.assert_array_equal(exe(x), np.arange(k, k + 3, dtype=np.float32))
    del exes, exe
    _collect()
    assert llvm_jit._quick is None               # the current engine too, once nothing uses it
    assert all(ref() is None or ref().engine.closed for ref in hosts.values())
    assert len(llvm_jit._CONTEXTS) == contexts_before
    exe = compile_module(_module(9), llvm_level="quick")      # and a fresh one starts
    np.testing.assert_array_equal(exe(x), np.arange(9, 12, dtype=np.float32))


def test_optimized_engine_and_context_are_freed_with_the_executable():
    _collect()
    contexts_before = len(llvm_jit._CONTEXTS)
    exe = compile_module(_module(5), llvm_level="optimized")
    np.testing.assert_array_equal(exe(np.ones(3, np.float32)), [6, 7, 8])
    engine = exe._engine.engine
    assert len(llvm_jit._CONTEXTS) == contexts_before + 1
    del exe
    _collect()
    assert engine.closed and len(llvm_jit._CONTEXTS) == contexts_before


@pytest.mark.parametrize("level", ["quick", "optimized"])
def test_clear_caches_frees_the_engines_of_jit_and_eager(monkeypatch, level):
    monkeypatch.setenv("XLAPY_LLVM_LEVEL", level)
    monkeypatch.setattr(xlapy.config, "default_backend", "cpu")
    xlapy.clear_caches()         # what earlier tests in this process left (interpreter executables among them)
    f = xlapy.jit(lambda a: a * 3 + 1)
    for n in range(1, 6):
        f(np.ones(n, np.float32))
        -xlapy.numpy.asarray(np.ones(n, np.float32))
    executables = [exe for _, exe in f._cache.values()] + list(eager._CACHE.values())
    shares = [exe._engine for exe in executables if hasattr(exe, "_engine")]
    engines = [s.engine if isinstance(s, llvm_jit.OwnCode) else s.host.engine for s in shares]
    assert len(shares) >= 10 and not any(e.closed for e in engines)
    del shares, executables
    xlapy.clear_caches()
    assert all(e.closed for e in engines) and llvm_jit._quick is None and not llvm_jit._released


RSS_SCRIPT = textwrap.dedent("""
    import gc, os, sys, time
    import numpy as np
    import xlapy, xlapy.numpy as xnp

    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    xlapy.config.default_backend = "cpu"
    op = lambda a: xnp.tanh(a)          # one eager op: ~70 KB of compiled state each, compiled in ~5 ms
    for n in range(1, 20):              # warm up: LLVM, the fast-call trampoline, the op's Python paths
        op(xnp.asarray(np.ones(n, np.float32)))
    xlapy.clear_caches()
    before = rss_mb()
    for n in range(20, 520):            # 500 fresh shapes: 500 executables
        op(xnp.asarray(np.ones(n, np.float32)))
    gc.collect()
    after = rss_mb()
    xlapy.clear_caches()
    print(before, after, rss_mb())
""")


def test_rss_returns_after_clear_caches():
    """500 fresh shapes grow RSS by tens of MB; xlapy.clear_caches() gives it back to within 10% of the level
    before (a fresh process, so the numbers are its own). Without the engine release the memory stayed."""
    env = {k: v for k, v in os.environ.items() if k != "XLAPY_LLVM_LEVEL"}    # the compile plan's own choice
    proc = subprocess.run([sys.executable, "-c", RSS_SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    before, after, cleared = map(float, proc.stdout.split())
    assert after - before > 20, f"too little growth to measure: {before:.0f} -> {after:.0f} MB"
    assert cleared <= before * 1.10, f"RSS {before:.0f} MB -> {after:.0f} MB -> after clear_caches {cleared:.0f} MB"
