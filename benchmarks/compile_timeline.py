"""Where one xlapy compile's wall time goes: the main thread's phases and every LLVM part, on which thread, when.

    .venv/bin/python benchmarks/compile_timeline.py vit/fwd            # a module of benchmarks/models
    .venv/bin/python benchmarks/compile_timeline.py path/to/file.hlo --parts 5

The compile runs once in a warm process (a 2-instruction module compiled first and the thread pool's runtime
built, as run_models.py's warm-up does: without the latter the first kernel that asks for the pool paid ~80 ms of
LLVM inside the emission), with the persistent cache off. Printed, in milliseconds from the compile's start: the
HLO passes and the emission on the calling thread, then each LLVM part (llvm_parallel.compile_part) with its
thread, tier, lines and biggest functions. The LLVM thread busy until the end means LLVM's CPU time sets the wall
(session 31: vit/fwd's second thread ran from 181 ms to the end, 320 of a ~500 ms compile); parts that end early
and an idle calling thread mean the split is uneven. Each phase and part also shows its thread's CPU time: wall
time well above it is the machine's load (or, during the emission, the GIL), not the compile's work. A part's time
includes its fixed cost (~1-3 ms: context, pipeline, target machine), so compare parts by ms per line only roughly.
"""
from __future__ import annotations

import argparse
import re
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_harness  # noqa: E402

_NAME = re.compile(r'define [^@]*@"?([^"(]+)')


def _events(text: str) -> tuple[float, list[tuple]]:
    """Compile `text`; (wall seconds, events): (thread, start, end, what, lines, [(lines, function)...], thread
    CPU seconds)."""
    import xlapy
    import xlapy.passes.optimize as po
    from xlapy.backends.cpu import compiler, llvm_parallel as lp
    model_harness.warm_up_xlapy()           # as run_models does: the pool's own LLVM module is built once per process
    t0, events = [0.0], []

    def timed(owner, name, label=None):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                what, lines, funcs = label, 0, []
                if label is None:            # an LLVM part
                    part = args[0]
                    what, lines = part.tier, part.text.count("\n")
                    funcs = sorted(((f.count("\n"), (_NAME.match(f) or [None, "?"])[1])
                                    for _, fs in part.units for f in fs), reverse=True)
                events.append((threading.current_thread().name, start - t0[0], time.perf_counter() - t0[0],
                               what, lines, funcs, time.thread_time() - cpu))
        setattr(owner, name, wrapper)
        return original

    saved = [(po, "optimize", timed(po, "optimize", "HLO passes")),
             (compiler, "emit_module", timed(compiler, "emit_module", "emission")),
             (lp, "compile_part", timed(lp, "compile_part"))]
    try:
        module = xlapy.hlo.parse(text)
        t0[0] = time.perf_counter()
        xlapy.compile(module, backend="cpu")
        wall = time.perf_counter() - t0[0]
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)
    return wall, sorted(events, key=lambda e: e[1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("module", help="a benchmarks/models id (vit/fwd) or an .hlo file")
    p.add_argument("--parts", type=int, default=3, help="the biggest functions to name per LLVM part")
    a = p.parse_args(argv)
    path = model_harness.module_path(a.module)
    if not path.is_file():
        print(f"compile_timeline: no module {a.module!r} ({path} does not exist)", file=sys.stderr)
        return 2
    with model_harness.cold_compiles():
        wall, events = _events(path.read_text())
    print(f"{a.module}: wall {wall * 1e3:.0f} ms")
    llvm = 0.0
    llvm_cpu = 0.0
    for thread, start, end, what, lines, funcs, cpu in events:
        where = "calling thread" if thread == "MainThread" else thread.split(" ")[0]
        size = f" {lines} lines" if lines else ""
        print(f"  {start * 1e3:7.1f} -> {end * 1e3:7.1f} ms  ({(end - start) * 1e3:6.1f}, cpu {cpu * 1e3:6.1f})  "
              f"{where:14s} {what}{size}")
        for n, name in funcs[:a.parts]:
            print(f"{'':56s}{n:6d}  {name}")
        if funcs or lines:
            llvm, llvm_cpu = llvm + end - start, llvm_cpu + cpu
    print(f"LLVM parts: {llvm * 1e3:.0f} ms in all, {llvm_cpu * 1e3:.0f} ms of thread CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
