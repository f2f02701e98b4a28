"""One convolution case of benchmarks/conv.py, xlapy with a backend rule on and switched off, and PyTorch, in one
process: rounds alternate between the three, each timing ~20 ms of the calling thread's CPU time; min and median
per implementation. On a loaded machine this is the comparison that holds (the slow phases hit all three).
`--wall`: wall time instead, for several threads.

    OMP_NUM_THREADS=1 XLAPY_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/conv_ab.py \\
        "256->512" "input grad" --off dot_plan.panels

`--off MODULE.FUNCTION`: a predicate of xlapy.backends.cpu (a plan's rule) replaced by one returning False while the
"off" variant compiles.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conv  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("shape", help="a substring of a conv.SHAPES name")
    p.add_argument("kind", choices=conv.KINDS)
    p.add_argument("--off", default="dot_plan.panels", help="MODULE.FUNCTION of xlapy.backends.cpu to switch off")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--wall", action="store_true", help="wall time (several threads) instead of thread time")
    args = p.parse_args(argv)
    shape = next(s for s in conv.SHAPES if args.shape in s[0])
    arrays = conv._data(*shape[1:])
    module_name, attr = args.off.rsplit(".", 1)
    module = importlib.import_module(f"xlapy.backends.cpu.{module_name}")
    rule = getattr(module, attr)
    fns = {"on": conv.xlapy_fns(shape, arrays)[args.kind]}
    fns["on"]()                                  # compiles with the rule
    setattr(module, attr, lambda *a, **k: False)
    try:
        fns["off"] = conv.xlapy_fns(shape, [a.copy() for a in arrays])[args.kind]
        fns["off"]()
    finally:
        setattr(module, attr, rule)
    fns["PyTorch"] = conv.torch_fns(shape, arrays)[args.kind]
    fns["PyTorch"]()
    clock = time.perf_counter if args.wall else time.thread_time
    times = {name: [] for name in fns}
    for _ in range(args.rounds):
        for name, fn in fns.items():
            count, t0 = 0, clock()
            while clock() - t0 < 0.02:
                fn()
                count += 1
            times[name].append((clock() - t0) / count * 1e6)
    cells = [f"{name} min {min(v):.0f} us, median {sorted(v)[len(v) // 2]:.0f} us" for name, v in times.items()]
    print(f"{shape[0]} {args.kind} ({args.off} on/off): " + "; ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
