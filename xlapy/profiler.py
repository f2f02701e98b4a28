"""xlapy.profiler: JAX's profiler API over xlapy's own instrumented kernels.

    with xlapy.profiler.trace("/tmp/prof"):          # or start_trace(dir) ... stop_trace()
        step(params, batch)
    # /tmp/prof/plugins/profile/<run>/<host>.trace.json.gz  opens in https://ui.perfetto.dev or chrome://tracing
    # /tmp/prof/plugins/profile/<run>/profile.txt          the kernel table, slowest first

What a trace holds (all on one CLOCK_MONOTONIC time line, see trace_events.py):
  * host spans: tracing a jitted function, each compiler pass, LLVM's optimizer and code generation;
  * every call of a compiled module, and inside it every kernel (fusion, dot, convolution, sort, ...), every
    while-loop iteration, and the thread-pool tasks a kernel was split into, on the native thread that ran them.
Kernel times come from timestamps the generated code takes itself; a module carries that code only when it
was compiled while a trace was running (or with XLA_FLAGS=--xla_hlo_profile), so a program that is not being
profiled runs exactly the code it would otherwise run.

`Profile.table()` is XLA's --xla_hlo_profile table: per kernel its calls, total time, share, bytes moved,
achieved GB/s and GFLOP/s (from the static cost model), and the share of this machine's measured peak.
"""
from __future__ import annotations

import atexit
import datetime
import gzip
import json
import os
import socket
import sys
import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from . import debug, trace_events
from .errors import XlapyError
from .trace_events import Event

KERNEL_CATEGORIES = ("kernel", "iteration", "task")


# -- starting and stopping -----------------------------------------------------------------------------
_LOG_DIR: Path | None = None
_LAST: "Profile | None" = None


def start_trace(log_dir: str | os.PathLike | None, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False) -> None:
    """Start recording (jax.profiler.start_trace). What runs from now on is compiled instrumented (a function
    jitted before is compiled again, once, the first time it runs inside the trace). log_dir None: keep the
    profile in memory only (`stop_trace()` returns it)."""
    global _LOG_DIR
    trace_events.start()
    _LOG_DIR = Path(log_dir) if log_dir is not None else None


def stop_trace() -> "Profile":
    """Stop recording and write the trace and the kernel table under the log_dir given to start_trace."""
    global _LOG_DIR, _LAST
    session = trace_events.stop()
    if session is None:
        raise XlapyError("no profiler trace is running (start it with xlapy.profiler.start_trace(log_dir))")
    profile = Profile(session.events, session.dropped)
    profile.write(_LOG_DIR)
    _LOG_DIR, _LAST = None, profile
    return profile


@contextmanager
def trace(log_dir: str | os.PathLike, create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False) -> Iterator[None]:
    """`with xlapy.profiler.trace(dir):` records what runs inside (jax.profiler.trace)."""
    start_trace(log_dir)
    try:
        yield
    finally:
        stop_trace()


def last_profile() -> "Profile | None":
    """The Profile the last stop_trace() produced."""
    return _LAST


class TraceAnnotation:
    """A named host span in the trace (jax.profiler.TraceAnnotation): `with TraceAnnotation("data"): ...`."""

    def __init__(self, name: str, **kwargs: Any):
        self.name, self.kwargs = name, kwargs

    def __enter__(self):
        self._cm = trace_events.span(self.name, "annotation", **self.kwargs)
        self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


def annotate_function(fn: Callable | None = None, name: str | None = None, **kwargs: Any):
    """Decorator recording each call of `fn` as a host span (jax.profiler.annotate_function)."""
    def wrap(f: Callable) -> Callable:
        label = name or getattr(f, "__qualname__", "function")

        def wrapped(*a, **k):
            with trace_events.span(label, "annotation", **kwargs):
                return f(*a, **k)
        wrapped.__name__, wrapped.__doc__ = getattr(f, "__name__", label), f.__doc__
        return wrapped
    return wrap if fn is None else wrap(fn)


def start_from_flags() -> None:
    """XLA_FLAGS=--xla_hlo_profile at import: one trace for the whole process; at exit the kernel table goes to
    stderr and, with --xla_dump_to=DIR, the trace and the table to DIR/plugins/profile/<run>/."""
    options = debug.options()
    if options.hlo_profile and trace_events.session() is None:
        start_trace(options.dump_to or None)
        atexit.register(_report_at_exit)


def _report_at_exit() -> None:
    if trace_events.session() is not None:
        profile = stop_trace()
        print(f"xlapy --xla_hlo_profile\n{profile.table()}", file=sys.stderr)


# -- the machine's peaks --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Peaks:
    bytes_per_s: float       # memory: a 32 MiB array copy through numpy (read + write), beyond the caches
    cache_bytes_per_s: float  # the same for a 256 KiB copy, which stays in the L2 cache
    flops_per_s: float       # a 1024^3 f32 matrix product through numpy's BLAS on every core

    def bandwidth_for(self, nbytes: float) -> float:
        """The peak a kernel moving `nbytes` per call can reach: the cache's when its data fits in it."""
        return self.cache_bytes_per_s if nbytes <= CACHE_RESIDENT_BYTES else self.bytes_per_s


CACHE_RESIDENT_BYTES = 1 << 20
_PEAKS: Peaks | None = None


def machine_peaks() -> Peaks:
    """This machine's measured memory and cache bandwidth and f32 matmul rate: the best of several runs, measured
    once per process (about half a second). Other processes busy on the cores lower them."""
    global _PEAKS
    if _PEAKS is None:
        def best(fn, reps):
            fn()
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            return min(times)

        def copy_rate(nbytes: int, reps: int) -> float:
            a = np.ones(nbytes // 4, np.float32)
            b = np.empty_like(a)
            inner = max(1, (1 << 24) // nbytes)
            return 2 * nbytes * inner / best(lambda: [np.copyto(b, a) for _ in range(inner)], reps)
        n = 1024
        x = np.ones((n, n), np.float32)
        _PEAKS = Peaks(copy_rate(1 << 25, 5), copy_rate(1 << 18, 5), 2.0 * n ** 3 / best(lambda: x @ x, 5))
    return _PEAKS


# -- the profile ----------------------------------------------------------------------------------------
@dataclass
class KernelRow:
    module: str
    name: str            # the HLO instruction
    kind: str            # opcode, or fusion kind
    category: str
    calls: int = 0
    total_ns: int = 0
    flops: float = 0.0   # per call, from the cost model
    bytes: float = 0.0   # per call
    top: bool = True     # an instruction of the entry computation (not inside a loop body or a task)

    @property
    def seconds(self) -> float:
        return self.total_ns * 1e-9


class Profile:
    """The events of one trace, with the kernel table and the Chrome trace written from them."""

    def __init__(self, events: list[Event], dropped: int = 0):
        self.events = sorted(events, key=lambda e: e.start_ns)
        self.dropped = dropped
        self.trace_path: Path | None = None
        self.table_path: Path | None = None

    # ---- queries
    def of(self, *categories: str) -> list[Event]:
        return [e for e in self.events if e.category in categories]

    def kernels(self) -> list[KernelRow]:
        """One row per (module, instruction), slowest first; tasks and loop iterations included."""
        rows: dict[tuple, KernelRow] = {}
        for e in self.of(*KERNEL_CATEGORIES):
            key = (e.args.get("module", ""), e.name, e.category)
            row = rows.get(key)
            if row is None:
                row = rows[key] = KernelRow(key[0], e.name, e.args.get("kind", ""), e.category,
                                            flops=float(e.args.get("flops", 0.0)), bytes=float(e.args.get("bytes", 0.0)),
                                            top=bool(e.args.get("top", False)))
            row.calls += 1
            row.total_ns += e.duration_ns
        return sorted(rows.values(), key=lambda r: -r.total_ns)

    def kernel_times(self, module: str | None = None) -> dict[str, float]:
        """Seconds per HLO instruction name (top-level kernels and loop-body kernels): colours the graph view."""
        out: dict[str, float] = defaultdict(float)
        for r in self.kernels():
            if r.category == "kernel" and (module is None or r.module == module):
                out[r.name] += r.seconds
        return dict(out)

    def table(self, limit: int = 40) -> str:
        """The kernel table, slowest first: XLA's --xla_hlo_profile output with achieved rates."""
        return format_table(self.kernels(), self.of("call"), limit)

    # ---- output
    def write(self, log_dir: Path | None) -> None:
        if log_dir is None:
            return
        run = datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S")
        out = Path(log_dir) / "plugins" / "profile" / run
        out.mkdir(parents=True, exist_ok=True)
        self.trace_path = out / f"{socket.gethostname() or 'host'}.trace.json.gz"
        with gzip.open(self.trace_path, "wt", encoding="utf-8") as f:
            json.dump(chrome_trace(self.events), f)
        self.table_path = out / "profile.txt"
        self.table_path.write_text(self.table(limit=200) + "\n")


def _kind_of(row: KernelRow) -> str:
    return {"iteration": "loop iteration", "task": "pool task"}.get(row.category, row.kind)


def format_table(rows: list[KernelRow], calls: list[Event], limit: int = 40) -> str:
    """Rows slowest first. % is the share of the time spent in entry-level kernels (loop-body kernels, loop
    iterations and pool tasks run inside those, so they get no share); bytes and rates are per call of a
    kernel, from the static cost model (hlo/cost.py), against this machine's measured peaks."""
    top = sum(r.total_ns for r in rows if r.category == "kernel" and r.top) or 1
    call_ns = sum(e.duration_ns for e in calls)
    peaks = machine_peaks() if rows else None
    head = (f"{'module':<20} {'kernel':<14} {'HLO instruction':<30} {'calls':>6} {'total':>10} {'%':>5} "
            f"{'bytes/call':>10} {'GB/s':>7} {'GFLOP/s':>8} {'%peak':>5}")
    lines = [f"{len(calls)} compiled calls, {call_ns / 1e6:.3f} ms in them; machine peak "
             + (f"{peaks.bytes_per_s / 1e9:.1f} GB/s memory, {peaks.cache_bytes_per_s / 1e9:.1f} GB/s in cache (for "
                f"kernels moving <= {CACHE_RESIDENT_BYTES >> 20} MiB), {peaks.flops_per_s / 1e9:.1f} GFLOP/s (measured)"
                if peaks else "not measured"),
             head, "-" * len(head)]
    for r in rows[:limit]:
        line = (f"{r.module[:20]:<20} {_kind_of(r)[:14]:<14} {r.name[:30]:<30} {r.calls:>6} "
                f"{_ms(r.total_ns):>10} ")
        if r.category == "kernel":
            per_call = r.total_ns / max(r.calls, 1) * 1e-9
            gbs = r.bytes / per_call / 1e9 if per_call > 0 else 0.0
            gflops = r.flops / per_call / 1e9 if per_call > 0 else 0.0
            peak = max(gbs * 1e9 / peaks.bandwidth_for(r.bytes), gflops * 1e9 / peaks.flops_per_s) * 100
            share = f"{100.0 * r.total_ns / top:.1f}" if r.top else ""
            line += f"{share:>5} {_size(r.bytes):>10} {gbs:>7.2f} {gflops:>8.2f} {peak:>5.1f}"
        lines.append(line.rstrip())
    if len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more kernels")
    return "\n".join(lines)


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def _size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


# -- Chrome trace / Perfetto JSON -----------------------------------------------------------------------
_PIDS = {"host": 1, "cpu": 2}
_PROCESS_NAMES = {"host": "xlapy host (Python)", "cpu": "xlapy CPU device"}


def chrome_trace(events: list[Event]) -> dict:
    """The Trace Event Format (ph "X" complete events, microseconds) that Perfetto and chrome://tracing open."""
    tids: dict[tuple[str, int], int] = {}
    main = threading.main_thread().ident
    out: list[dict] = []
    for kind, pid in _PIDS.items():
        out.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": _PROCESS_NAMES[kind]}})
    t0 = min((e.start_ns for e in events), default=0)
    for e in events:
        lane = e.lane
        if lane not in tids:
            tids[lane] = tid = sum(1 for k in tids if k[0] == lane[0]) + 1
            label = ("main thread" if lane[1] == main else f"thread {tid}") if lane[0] == "host" else \
                    ("calling thread" if lane[1] == main else f"native thread {tid}")
            out.append({"ph": "M", "pid": _PIDS[lane[0]], "tid": tid, "name": "thread_name",
                        "args": {"name": label}})
        out.append({"ph": "X", "name": e.name, "cat": e.category, "pid": _PIDS[lane[0]], "tid": tids[lane],
                    "ts": (e.start_ns - t0) / 1000.0, "dur": max(e.duration_ns, 0) / 1000.0,
                    "args": {k: _jsonable(v) for k, v in e.args.items()}})
    return {"traceEvents": out, "displayTimeUnit": "ns",
            "otherData": {"producer": "xlapy.profiler", "clock": "CLOCK_MONOTONIC"}}


def _jsonable(v: Any) -> Any:
    return v if isinstance(v, (str, int, float, bool)) or v is None else str(v)


start_from_flags()

__all__ = ["start_trace", "stop_trace", "trace", "last_profile", "TraceAnnotation", "annotate_function",
           "Profile", "KernelRow", "machine_peaks", "chrome_trace", "format_table"]
