"""The CPU backend's entries in the persistent compilation cache (backends/compilation_cache.py): the key of a
compile, and what an entry holds so that a later process runs the module without the HLO passes or LLVM.

The key is a SHA-256 over everything the compile reads; any change is a miss, never a stale hit:

| part | why |
|---|---|
| the module's HLO text, as the compile was given it (before the pipeline) | the program; jit keys on the traced module, so a hit still traces but skips every pass and LLVM |
| compile options: pipeline, verify, fast_math, threads, LLVM level; XLA_FLAGS' disabled passes; XLAPY_OUTLINE_KERNELS, XLAPY_LLVM_LEVEL | they change the code |
| target triple, host CPU name and features | the machine code is for this CPU |
| LLVM's and llvmlite's versions | the code generator |
| the BLAS provider (runtime.py) | compiled code calls its routines by name |
| xlapy's own source files (path, size, modification time of each) | any change to the compiler, even one without a new version number |

What is not cached: profiled compiles (their kernel tables live in the process) and compiles of a module the
dump flags select (a user asking for dumps wants to see the compile happen).

An entry (`encode`/`decode`) is a JSON header and byte blobs:

| header field | what |
|---|---|
| name, params, result | the module's name and entry signature (shape text), enough to call it |
| entry | the entry function's symbol in the objects |
| scratch | the scratch buffer size |
| level, threads | the LLVM level used; the thread count its parallel loops were split for |
| symbols | the external functions the code calls (BLAS, LAPACK, the thread pool, libm), made resolvable before loading |
| blobs | the sizes of the blobs that follow: the object files (one, or two from llvm_parallel.py), then the optimized HLO text (zlib) |

On a hit, `Executable.module` parses the stored optimized HLO on first use, and the LLVM IR and assembly texts
(`llvm_ir`, `llvm_ir_optimized`, `assembly`) are made by compiling the module again, without the cache, on first use.
"""
from __future__ import annotations

import functools
import json
import os
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

FORMAT = "xlapy-cpu-entry-1"
_KEYED_ENV = ("XLAPY_OUTLINE_KERNELS", "XLAPY_LLVM_LEVEL", "XLAPY_TILED_TRANSPOSE", "XLAPY_KERNEL_REPLAY",
              "XLAPY_LLVM_LSR", "XLAPY_PARALLEL_LLVM", "XLAPY_FP_CONTRACT", "XLAPY_KERNEL_GENERIC",
              "XLAPY_CONCURRENT_LOOPS")
_DECLARE = re.compile(r'^declare [^@]*@"?([A-Za-z_.$][\w.$]*)"?\(', re.M)


@functools.lru_cache(maxsize=1)
def source_fingerprint() -> str:
    """SHA-256 over the path, size and modification time of every Python file of the xlapy package, as Python
    validates its .pyc files (computed once per process; a file's bytes would cost 20 ms more)."""
    from ..compilation_cache import key_of
    root = Path(__file__).resolve().parents[2]
    parts = []
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        parts.append(f"{path.relative_to(root).as_posix()} {st.st_size} {st.st_mtime_ns}")
    return key_of(*parts)


@functools.lru_cache(maxsize=1)
def machine_fingerprint() -> tuple[str, ...]:
    from .llvm_jit import init_llvm
    init_llvm()
    return (llvm.get_process_triple(), llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten(),
            ".".join(map(str, llvm.llvm_version_info)), llvmlite.__version__)


def compile_key(module_text: str, options: dict) -> str:
    """The cache key of compiling `module_text` with `options` (a JSON-able dict) on this machine."""
    from ..compilation_cache import key_of
    from . import runtime
    provider = runtime.provider()
    env = {name: os.environ.get(name, "") for name in _KEYED_ENV}
    return key_of(FORMAT, source_fingerprint(), *machine_fingerprint(), provider.name if provider else "none",
                  json.dumps(options, sort_keys=True), json.dumps(env, sort_keys=True), module_text)


def cached_object(what: str, variant: str, make) -> bytes:
    """The object file of a runtime module this backend builds in every process (the thread pool), from the
    persistent cache when an earlier process made it; else `make()`, stored for the next process. The key is
    what + variant, xlapy's sources and the machine: the module must be a function of those alone."""
    from .. import compilation_cache
    store = compilation_cache.store()
    key = compilation_cache.key_of(FORMAT, "object", what, variant, source_fingerprint(), *machine_fingerprint())
    obj = store.get(key) if store is not None else None
    if obj is None:
        obj = make()
        if store is not None:
            store.put(key, obj)
    return obj


def external_symbols(llvm_ir: str) -> list[str]:
    """The functions the IR declares (calls but does not define)."""
    return sorted(set(_DECLARE.findall(llvm_ir)))


@dataclass
class Entry:
    name: str
    params: list[str]
    result: str
    entry: str
    scratch: int
    level: str
    threads: int
    symbols: list[str]
    objects: list[bytes]
    hlo: str

    def encode(self) -> bytes:
        blobs = [*self.objects, zlib.compress(self.hlo.encode(), 1)]
        header = {"format": FORMAT, "name": self.name, "params": self.params, "result": self.result,
                  "entry": self.entry, "scratch": self.scratch, "level": self.level, "threads": self.threads,
                  "symbols": self.symbols, "objects": len(self.objects), "blobs": [len(b) for b in blobs]}
        head = json.dumps(header).encode()
        return struct.pack("<I", len(head)) + head + b"".join(blobs)

    @staticmethod
    def decode(payload: bytes) -> "Entry":
        """The entry in payload; ValueError when it is not one of this format (a miss)."""
        try:
            (n,) = struct.unpack_from("<I", payload)
            header = json.loads(payload[4:4 + n])
            if header.get("format") != FORMAT:
                raise ValueError(f"entry format {header.get('format')!r}")
            blobs, pos = [], 4 + n
            for size in header["blobs"]:
                blobs.append(payload[pos:pos + size])
                pos += size
            if pos != len(payload) or len(blobs) != header["objects"] + 1:
                raise ValueError("entry blobs do not add up")
            hlo = zlib.decompress(blobs[-1]).decode()
            return Entry(header["name"], header["params"], header["result"], header["entry"],
                         int(header["scratch"]), header["level"], int(header["threads"]), header["symbols"],
                         blobs[:-1], hlo)
        except (struct.error, KeyError, TypeError, UnicodeDecodeError, zlib.error, json.JSONDecodeError) as e:
            raise ValueError(f"not a cache entry: {e}") from e


def _lapack_symbols() -> None:
    from . import lapack
    for routine in lapack.ROUTINES:
        for dtype in lapack.LETTERS:
            lapack.lapack_function(routine, dtype)


def _pool(threads: int) -> None:
    from . import threadpool
    threadpool.ensure_workers(max(threads - 1, 0))
    threadpool.serial_blas_available()


def make_resolvable(entry: Entry) -> bool:
    """Register the runtime functions the entry's code calls (as emitting it would have); False when a symbol
    stays unresolved (then the entry cannot be used here: a miss)."""
    from . import runtime
    from .llvm_jit import init_llvm
    from .threadpool_ir import RUN_SYMBOL, SERIAL_BLAS_SYMBOL
    init_llvm()
    runtime.provider()
    if any(s in (RUN_SYMBOL, SERIAL_BLAS_SYMBOL) for s in entry.symbols):
        _pool(entry.threads)
    if any(s.startswith("xlapy_f77_") and llvm.address_of_symbol(s) is None for s in entry.symbols):
        _lapack_symbols()
    # xlapy's own runtime symbols must be there (MCJIT aborts the process on an unresolved one); libc and libm
    # resolve as they did when the entry was compiled
    return all(llvm.address_of_symbol(s) is not None for s in entry.symbols if s.startswith("xlapy_"))


__all__ = ["FORMAT", "Entry", "compile_key", "cached_object", "external_symbols", "make_resolvable", "source_fingerprint",
           "machine_fingerprint"]
