"""The persistent compilation cache (backends/compilation_cache.py, backends/cpu/cache_entry.py): hits across
processes with no LLVM compile (counted, never timed), corrupt and truncated entries, concurrent writers, LRU
eviction, unwritable directories, what goes into the key, and `xlapy cache`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import xlapy
from xlapy.backends import compilation_cache as cc
from xlapy.backends.cpu import cache_entry, compiler

HLO = """
HloModule cached_axpy
ENTRY %main (a: f32[64,64], x: f32[64,64], y: f32[64,64]) -> f32[64,64] {
  %a = f32[64,64] parameter(0)
  %x = f32[64,64] parameter(1)
  %y = f32[64,64] parameter(2)
  %m = f32[64,64] multiply(%a, %x)
  ROOT %r = f32[64,64] add(%m, %y)
}
"""
ARGS = [np.full((64, 64), v, np.float32) for v in (2.0, 3.0, 1.0)]


def _other(n: int) -> str:
    """The same program under another module name: another key."""
    return HLO.replace("cached_axpy", f"cached_axpy_{n}")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    # the runtime's own objects (the fastcall trampoline, the thread pool) are made once per process, and cached
    # too: made before the test's cache exists, so it holds module entries only
    from xlapy.backends.cpu import fastcall, threadpool
    fastcall._init()
    threadpool.ensure_workers(0)
    d = tmp_path / "cache"
    monkeypatch.setenv("XLAPY_CACHE_DIR", str(d))
    monkeypatch.setattr(cc, "SETTINGS", cc.Settings())
    monkeypatch.setattr(cc, "STATS", cc.Stats())
    monkeypatch.setattr(cc, "_STORES", {})
    return d


def _compile(text: str = HLO, **options):
    return xlapy.compile(text, backend="cpu", **options)


def _entries(d) -> list:
    return sorted(p for p in d.glob("*" + cc.SUFFIX)) if d.exists() else []


def test_second_compile_in_process_is_a_hit(cache_dir):
    before = dict(compiler.LLVM_COMPILES)
    cold = _compile()
    assert not cold.from_cache and len(_entries(cache_dir)) == 1
    warm = _compile()
    assert warm.from_cache
    assert compiler.LLVM_COMPILES == {k: v + (1 if k == cold.llvm_level else 0) for k, v in before.items()}
    np.testing.assert_array_equal(warm(*ARGS), cold(*ARGS))
    assert (cc.STATS.hits, cc.STATS.writes) == (1, 1)


def test_hit_executable_has_module_texts_and_signature(cache_dir):
    cold = _compile()
    warm = _compile()
    assert warm.from_cache
    assert warm.as_text() == cold.as_text()                 # the stored optimized module
    assert warm.module.entry.root.shape == cold.module.entry.root.shape
    assert "xlapy_entry" in warm.llvm_ir                     # made by compiling once more, on demand
    assert "define" in warm.llvm_ir_optimized
    with pytest.raises(xlapy.XlapyError, match="takes 3 arguments"):
        warm(ARGS[0])


# -- across processes --------------------------------------------------------------------------------------
_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import xlapy, xlapy.numpy as xnp
    from xlapy.backends import compilation_cache as cc
    from xlapy.backends.cpu import compiler

    def loss(params, x, y):
        h = x
        for i, (w, b) in enumerate(params):
            h = h @ w + b
            if i < len(params) - 1:
                h = xlapy.nn.relu(h)
        return -xnp.mean(xnp.sum(xlapy.nn.log_softmax(h) * y, axis=1))

    @xlapy.jit
    def step(params, x, y):
        grads = xlapy.grad(loss)(params, x, y)
        return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]

    rng = np.random.default_rng(0)
    sizes = (784, 512, 512, 10)      # B5: big enough for BLAS GEMMs and the thread pool
    params = [(rng.standard_normal((i, o), np.float32) * np.float32(0.05), np.zeros(o, np.float32))
              for i, o in zip(sizes, sizes[1:])]
    x = rng.standard_normal((128, 784), np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
    out = step(params, x, y)
    e = xnp.tanh(xnp.asarray(x[:4, :4])) * 2.0           # eager ops (quick LLVM level) are cached too
    print(json.dumps({"llvm": compiler.LLVM_COMPILES, "stats": cc.STATS.as_dict(),
                      "w0": float(np.asarray(out[0][0]).astype(np.float64).sum()),
                      "eager": np.asarray(e).tolist()}))
""")


def _child(env_dir, extra_env=None) -> dict:
    env = {**os.environ, "XLAPY_CACHE_DIR": str(env_dir), **(extra_env or {})}
    r = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_second_process_compiles_nothing(tmp_path):
    first = _child(tmp_path / "c")
    assert sum(first["llvm"].values()) >= 2 and first["stats"]["hits"] == 0
    second = _child(tmp_path / "c")
    assert second["llvm"] == {"optimized": 0, "quick": 0}, second
    assert second["stats"]["hits"] == first["stats"]["writes"] and second["stats"]["writes"] == 0
    assert second["w0"] == first["w0"] and second["eager"] == first["eager"]


def test_cache_off_writes_nothing(tmp_path):
    out = _child("off")
    assert out["stats"]["writes"] == 0 and sum(out["llvm"].values()) >= 2


def test_concurrent_processes_write_one_entry(tmp_path):
    d = tmp_path / "c"
    env = {**os.environ, "XLAPY_CACHE_DIR": str(d)}
    code = textwrap.dedent(f"""
        import numpy as np, xlapy
        exe = xlapy.compile({HLO!r}, backend="cpu")
        a = [np.full((64, 64), v, np.float32) for v in (2.0, 3.0, 1.0)]
        print(float(exe(*a)[0, 0]), exe.from_cache)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    assert {o.split()[0] for o, _ in outs} == {"7.0"}
    assert not list(d.glob(".*tmp"))
    store = cc.Store(d)
    assert all(store.get(p.stem) is not None for p in _entries(d))      # every entry whole
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.stdout.split() == ["7.0", "True"], r.stderr


def test_threads_share_the_cache(cache_dir):
    import threading
    results, errors = [], []

    def work():
        try:
            results.append(_compile()(*ARGS))
        except Exception as e:          # reported below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for r in results:
        np.testing.assert_array_equal(r, np.full((64, 64), 7.0, np.float32))
    assert len(_entries(cache_dir)) == 1


# -- damaged entries ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "header"])
def test_damaged_entry_is_a_miss_and_is_rewritten(cache_dir, damage):
    _compile()
    (path,) = _entries(cache_dir)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        for i in range(len(data) // 2, len(data), 97):
            data[i] ^= 0xFF
    elif damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "empty":
        data = bytearray()
    else:       # a valid checksum over a payload that is not an entry
        payload = b"\x05\x00\x00\x00{}xyz"
        import hashlib
        data = bytearray(cc.MAGIC + hashlib.sha256(payload).digest() + payload)
    path.write_bytes(bytes(data))
    exe = _compile()
    assert not exe.from_cache
    np.testing.assert_array_equal(exe(*ARGS), np.full((64, 64), 7.0, np.float32))
    assert _compile().from_cache                 # rewritten whole
    assert path.read_bytes()[:len(cc.MAGIC)] == cc.MAGIC


def test_entry_needing_unknown_runtime_symbol_is_a_miss(cache_dir):
    _compile()
    (path,) = _entries(cache_dir)
    payload = cc.Store(cache_dir).get(path.stem)
    entry = cache_entry.Entry.decode(payload)
    entry.symbols = entry.symbols + ["xlapy_no_such_runtime_function"]
    cc.Store(cache_dir).put(path.stem, entry.encode())
    exe = _compile()                             # never handed to MCJIT, which would abort the process
    assert not exe.from_cache
    np.testing.assert_array_equal(exe(*ARGS), np.full((64, 64), 7.0, np.float32))


# -- bounds and unwritable directories ------------------------------------------------------------------------
def test_least_recently_used_entries_are_evicted(cache_dir):
    paths = []
    for n in range(3):
        before = set(_entries(cache_dir))
        _compile(_other(n))
        (new,) = set(_entries(cache_dir)) - before
        paths.append(new)
        os.utime(new, (100 * (n + 1), 100 * (n + 1)))      # distinct, old times: the order is 0, 1, 2
    cc.SETTINGS.max_bytes = int(paths[0].stat().st_size * 3.5)    # room for three; eviction goes down to 3/4
    assert _compile(_other(0)).from_cache        # a hit makes module 0 the most recently used
    _compile(_other(3))                          # over the bound: the least recently used go (1, then 2)
    assert cc.STATS.evictions == 2
    assert not paths[1].exists() and not paths[2].exists() and paths[0].exists()
    assert sum(p.stat().st_size for p in _entries(cache_dir)) <= cc.SETTINGS.max_bytes
    assert _compile(_other(0)).from_cache and _compile(_other(3)).from_cache
    assert not _compile(_other(1)).from_cache


def test_unwritable_directory_warns_once_and_compiles(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XLAPY_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(cc, "_STORES", {})
    with pytest.warns(cc.CompilationCacheWarning, match="cannot be written"):
        exe = _compile()
    np.testing.assert_array_equal(exe(*ARGS), np.full((64, 64), 7.0, np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _compile(_other(1))                      # no second warning


def test_full_disk_degrades_to_no_cache(cache_dir, monkeypatch):
    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(cc, "open", no_space, raising=False)
    with pytest.warns(cc.CompilationCacheWarning, match="No space left"):
        exe = _compile()
    np.testing.assert_array_equal(exe(*ARGS), np.full((64, 64), 7.0, np.float32))
    assert not _entries(cache_dir) and not list(cache_dir.glob(".*tmp"))


# -- the key -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("change", [
    {"fast_math": True}, {"num_threads": 1}, {"llvm_level": "quick"}, {"verify": False}])
def test_compile_options_are_in_the_key(cache_dir, change):
    _compile()
    assert not _compile(**change).from_cache
    assert _compile(**change).from_cache


def test_flags_and_sources_are_in_the_key(cache_dir, monkeypatch):
    _compile()
    monkeypatch.setenv("XLA_FLAGS", "--xla_disable_hlo_passes=algsimp")
    assert not _compile().from_cache
    monkeypatch.delenv("XLA_FLAGS")
    assert _compile().from_cache
    monkeypatch.setattr(cache_entry, "source_fingerprint", lambda: "an edited xlapy")
    assert not _compile().from_cache             # any change to the compiler's sources is a miss


def test_profiled_and_dumped_compiles_bypass_the_cache(cache_dir, tmp_path, monkeypatch):
    _compile()
    assert not _compile(profile=True).from_cache
    monkeypatch.setenv("XLA_FLAGS", f"--xla_dump_to={tmp_path / 'dump'}")
    assert not _compile().from_cache
    assert list((tmp_path / "dump").glob("*ir-no-opt.ll"))


def test_config_moves_and_disables_the_cache(cache_dir, tmp_path):
    other = tmp_path / "elsewhere"
    xlapy.config.update("jax_compilation_cache_dir", str(other))
    _compile()
    assert len(_entries(other)) == 1 and not _entries(cache_dir)
    xlapy.config.update("jax_enable_compilation_cache", False)
    assert not _compile().from_cache and cc.store() is None
    with pytest.raises(ValueError, match="positive int"):
        xlapy.config.update("jax_compilation_cache_max_size", 0)


# -- the command line ----------------------------------------------------------------------------------------
def _cli(*args, env_dir):
    env = {**os.environ, "XLAPY_CACHE_DIR": str(env_dir)}
    return subprocess.run([sys.executable, "-m", "xlapy.tools.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_cli_cache_info_and_clear(cache_dir):
    _compile()
    _compile(_other(1))
    r = _cli("cache", "info", env_dir=cache_dir)
    assert r.returncode == 0 and f"directory  {cache_dir}" in r.stdout and "entries    2" in r.stdout
    r = _cli("cache", "clear", env_dir=cache_dir)
    assert r.returncode == 0 and "removed 2 entries" in r.stdout
    assert not _entries(cache_dir)
    r = _cli("cache", "bogus", env_dir=cache_dir)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "invalid choice" in r.stderr
    assert "is off" in _cli("cache", "info", env_dir="off").stdout
