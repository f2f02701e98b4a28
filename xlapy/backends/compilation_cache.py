"""The persistent compilation cache: compiled executables kept on disk, so a fresh process skips the HLO passes
and LLVM for a module some process compiled before (JAX's persistent cache, but on by default and for every
program, however quick it was to compile).

This file is the store: bytes in and out by key, with no idea what the bytes are (the CPU backend's entry format
is `backends/cpu/cache_entry.py`; the key is made there, from everything the compile reads).

Where it lives, and how to move or stop it:

| setting | how | default |
|---|---|---|
| directory | `XLAPY_CACHE_DIR=PATH`, or `xlapy.config.update("jax_compilation_cache_dir", PATH)` | `$XDG_CACHE_HOME/xlapy`, else `~/.cache/xlapy` |
| on / off | `XLAPY_CACHE_DIR=off` (or `0`, `false`, `none`), or `config.update("jax_enable_compilation_cache", False)` | on |
| size bound | `XLAPY_CACHE_MAX_BYTES=N`, or `config.update("jax_compilation_cache_max_size", N)` | 1 GiB |

`xlapy cache info` and `xlapy cache clear` show and empty it from the command line.

The rules, each for a failure someone will meet:

| situation | what happens |
|---|---|
| two processes write one entry at once | each writes a private temporary file and renames it into place (atomic on POSIX): a reader sees the old entry, the new one or none, never a mix |
| an entry is truncated or its bytes changed | its SHA-256 (stored in the entry) does not match: a miss; the entry is deleted and the compile rewrites it |
| the directory cannot be created or written (read-only, disk full) | one `CompilationCacheWarning` naming the directory and the error; then this process compiles without writing |
| the cache outgrows its bound | least recently used entries go first (a hit touches the entry's mtime), down to 3/4 of the bound |
| an entry a reader wants is evicted by another process | a miss |

A file is `MAGIC` (8 bytes), the SHA-256 of the payload (32 bytes), then the payload.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b"XLAPYCC1"
SUFFIX = ".xlc"
DEFAULT_MAX_BYTES = 1 << 30
STALE_TEMP_SECONDS = 3600           # a temporary file this old was left by a process that died mid-write
_OFF = ("off", "0", "false", "none", "no")


class CompilationCacheWarning(UserWarning):
    """The persistent cache cannot be used (its directory is not writable); the process compiles without it."""


@dataclass
class Settings:
    """Overrides of the environment, set through xlapy.config (None: the environment or the default decides)."""
    enabled: bool | None = None
    directory: str | None = None
    max_bytes: int | None = None


SETTINGS = Settings()


@dataclass
class Stats:
    """What this process's cache did: the counters tests and the demo read."""
    hits: int = 0
    misses: int = 0
    writes: int = 0
    corrupt: int = 0
    evictions: int = 0
    write_errors: int = 0

    def as_dict(self) -> dict:
        return dict(vars(self))


STATS = Stats()


def default_directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "xlapy"


def directory() -> Path | None:
    """The cache directory in force now, or None when the cache is off."""
    env = os.environ.get("XLAPY_CACHE_DIR", "").strip()
    if SETTINGS.enabled is False or (SETTINGS.enabled is None and env.lower() in _OFF):
        return None
    if SETTINGS.directory:
        return Path(SETTINGS.directory).expanduser()
    if env and env.lower() not in _OFF:
        return Path(env).expanduser()
    return default_directory()


def max_bytes() -> int:
    """The size bound in bytes (-1, as in JAX: none)."""
    value = SETTINGS.max_bytes
    if value is None:
        env = os.environ.get("XLAPY_CACHE_MAX_BYTES", "").strip()
        try:
            value = int(env) if env else DEFAULT_MAX_BYTES
        except ValueError:
            value = DEFAULT_MAX_BYTES
    return (1 << 62) if value == -1 else value


def key_of(*parts: str | bytes) -> str:
    """A hex SHA-256 over the parts, each length-prefixed (so ("ab", "c") and ("a", "bc") differ)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


@dataclass
class Store:
    """One cache directory. Thread-safe; processes coordinate through the file system only."""
    root: Path
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _total: int | None = None          # bytes of entries, counted on the first write, then kept up to date
    _unwritable: bool = False

    def path(self, key: str) -> Path:
        return self.root / (key + SUFFIX)

    def get(self, key: str) -> bytes | None:
        """The payload stored under key, or None (absent, unreadable or corrupt: a corrupt entry is removed)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            STATS.misses += 1
            return None
        payload = data[len(MAGIC) + 32:]
        if data[:len(MAGIC)] != MAGIC or hashlib.sha256(payload).digest() != data[len(MAGIC):len(MAGIC) + 32]:
            STATS.corrupt += 1
            STATS.misses += 1
            self._remove(path)
            return None
        try:
            os.utime(path)          # least recently used goes first
        except OSError:
            pass
        STATS.hits += 1
        return payload

    def put(self, key: str, payload: bytes) -> bool:
        """Store payload under key (atomically); False when the directory is not writable (warned once)."""
        if self._unwritable:
            return False
        data = MAGIC + hashlib.sha256(payload).digest() + payload
        path = self.path(key)
        tmp = self.root / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError as e:
            self._remove(tmp)
            STATS.write_errors += 1
            self._unwritable = True
            warnings.warn(f"the compilation cache at {self.root} cannot be written ({e.strerror or e}); this "
                          "process compiles without it (XLAPY_CACHE_DIR moves it, XLAPY_CACHE_DIR=off turns it "
                          "off)", CompilationCacheWarning, stacklevel=2)
            return False
        STATS.writes += 1
        with self._lock:
            if self._total is None:
                self._total = sum(size for _, size, _ in self.entries())
            else:
                self._total += len(data)
            if self._total > max_bytes():
                self._evict()
        return True

    def remove(self, key: str) -> bool:
        """Remove the entry under key (one this process cannot use)."""
        return self._remove(self.path(key))

    def entries(self) -> list[tuple[Path, int, float]]:
        """(path, size, mtime) of every entry; also removes temporary files left by dead writers."""
        out = []
        try:
            scan = list(os.scandir(self.root))
        except OSError:
            return out
        now = time.time()
        for e in scan:
            try:
                st = e.stat()
            except OSError:
                continue
            if e.name.endswith(SUFFIX):
                out.append((Path(e.path), st.st_size, st.st_mtime))
            elif e.name.endswith(".tmp") and now - st.st_mtime > STALE_TEMP_SECONDS:
                self._remove(Path(e.path))
        return out

    def _evict(self) -> None:
        """Remove least recently used entries until the cache holds at most 3/4 of its bound (under _lock)."""
        limit = max_bytes()
        entries = sorted(self.entries(), key=lambda e: e[2])
        total = sum(size for _, size, _ in entries)
        for path, size, _ in entries:
            if total <= limit * 3 // 4:
                break
            if self._remove(path):
                STATS.evictions += 1
            total -= size
        self._total = total

    def info(self) -> dict:
        entries = self.entries()
        return {"directory": str(self.root), "entries": len(entries), "bytes": sum(s for _, s, _ in entries),
                "max_bytes": max_bytes()}

    def clear(self) -> int:
        """Remove every entry; returns how many."""
        n = 0
        for path, _, _ in self.entries():
            n += self._remove(path)
        with self._lock:
            self._total = None
        return n

    @staticmethod
    def _remove(path: Path) -> bool:
        try:
            path.unlink()
            return True
        except OSError:
            return False


_STORES: dict[Path, Store] = {}
_stores_lock = threading.Lock()


def store() -> Store | None:
    """The store for the directory in force now, or None when the cache is off."""
    root = directory()
    if root is None:
        return None
    with _stores_lock:
        s = _STORES.get(root)
        if s is None:
            s = _STORES[root] = Store(root)
        return s


__all__ = ["CompilationCacheWarning", "Settings", "SETTINGS", "Stats", "STATS", "Store", "store", "directory",
           "default_directory", "max_bytes", "key_of", "MAGIC", "DEFAULT_MAX_BYTES"]
