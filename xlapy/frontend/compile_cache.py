"""A bounded, thread-safe cache of compiled executables: jit keeps one per jitted function, eager one per process.

Why a class of its own, rather than a dict in each:
  * bounded: an executable holds machine code, an LLVM engine (or a share of one) and scratch buffers, so a
    program that calls a function on ever new shapes must not grow without limit. Past `capacity()` entries the
    least recently used one is dropped (the CPU backend frees its code when the last reference goes, llvm_jit.py).
    Entries `keep(key)` says are in use elsewhere (jit's warm-call functions) go last.
  * one compile per key: when several threads miss the same key at once, the first compiles it (outside the lock,
    so different keys compile side by side) and the others wait for its result. A failed compile caches nothing;
    a waiter then tries again itself, so each thread sees its own error.
  * explicit locks: nothing here relies on the GIL (free-threaded Python 3.13).
"""
from __future__ import annotations

import ctypes
import gc
import sys
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterator

from ..errors import XlapyError


class _Pending:
    """A compile in progress: the thread doing it, and an event set when it ends (the result is then cached)."""
    __slots__ = ("owner", "done")

    def __init__(self):
        self.owner = threading.get_ident()
        self.done = threading.Event()


class CompileCache:
    """key -> compiled value, least recently used first out, at most `capacity()` entries (read at each insert,
    so it follows a config option). `on_evict(key, value)` runs, outside the lock, for each entry dropped by the
    bound (not by `clear`)."""

    def __init__(self, capacity: Callable[[], int], on_evict: Callable[[Hashable, Any], None] | None = None,
                 keep: Callable[[Hashable], bool] | None = None):
        self._capacity = capacity
        self._on_evict = on_evict
        self._keep = keep
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._pending: dict[Hashable, _Pending] = {}
        self.stats = {"compiles": 0, "hits": 0, "evictions": 0}

    def _hit_locked(self, key: Hashable) -> Any | None:
        """The cached value, now the most recently used and counted as a hit, or None (with self._lock held)."""
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
            self.stats["hits"] += 1
        return value

    def get(self, key: Hashable) -> Any | None:
        """The cached value (now the most recently used), or None."""
        with self._lock:
            return self._hit_locked(key)

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The cached value of `key`, or `make()` cached under it (made once however many threads ask)."""
        while True:
            with self._lock:
                value = self._hit_locked(key)
                if value is not None:
                    return value
                pending = self._pending.get(key)
                if pending is None:
                    pending = self._pending[key] = _Pending()
                    break
            if pending.owner == threading.get_ident():
                raise XlapyError(f"recursive compile of the key it is compiling: {key!r}")
            pending.done.wait()          # then look again: the value, or (it failed) our turn to make it
        try:
            value = make()
        except BaseException:
            with self._lock:
                del self._pending[key]
            pending.done.set()
            raise
        self._insert(key, value, pending)
        return value

    def _insert(self, key: Hashable, value: Any, pending: _Pending) -> None:
        with self._lock:
            del self._pending[key]
            self._entries[key] = value
            self.stats["compiles"] += 1
            evicted = self._evict_locked(key)
        pending.done.set()
        if self._on_evict is not None:
            for old in evicted:
                self._on_evict(*old)

    def _evict_locked(self, newest: Hashable) -> list[tuple[Hashable, Any]]:
        """Drop entries past the capacity: the least recently used that `keep` does not hold on to, else the least
        recently used; never `newest` (just made, and not yet known to `keep`)."""
        capacity = max(int(self._capacity()), 1)
        evicted = []
        while len(self._entries) > capacity:
            candidates = [k for k in self._entries if k != newest]
            victim = next((k for k in candidates if self._keep is None or not self._keep(k)), candidates[0])
            evicted.append((victim, self._entries.pop(victim)))
        self.stats["evictions"] += len(evicted)
        return evicted

    def clear(self) -> None:
        """Drop every entry (compiles in progress still finish and are cached) and reset the counts."""
        with self._lock:
            self._entries.clear()
            self.stats.update(compiles=0, hits=0, evictions=0)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def keys(self) -> list[Hashable]:
        """The keys, least recently used first (a snapshot)."""
        with self._lock:
            return list(self._entries)

    def values(self) -> list[Any]:
        with self._lock:
            return list(self._entries.values())

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.keys())


def release_freed_memory() -> None:
    """After dropping executables: collect them (each is in a reference cycle with its native caller), let the CPU
    backend free the engines and contexts nobody holds any more, and hand freed heap pages back to the operating
    system (glibc's malloc_trim; elsewhere the allocator decides)."""
    gc.collect()
    llvm_jit = sys.modules.get("xlapy.backends.cpu.llvm_jit")      # loaded only if the CPU backend was used
    if llvm_jit is not None:
        llvm_jit.collect_released()
        gc.collect()        # llvmlite's handles of the modules just freed are reference cycles of their own
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).malloc_trim(0)
        except (AttributeError, OSError):       # not glibc
            pass


__all__ = ["CompileCache", "release_freed_memory"]
