"""What each function of one compile costs LLVM: every function of the module's LLVM parts compiled alone.

    .venv/bin/python benchmarks/llvm_functions.py vit/fwd                 # a module of benchmarks/models
    .venv/bin/python benchmarks/llvm_functions.py path/to/file.hlo --top 40 --rounds 3

The module is compiled once (persistent cache off) with llvm_parallel's parts recorded; then each function
defined in a part is compiled as a part of its own (its part's header and declarations, every other function
declared) at its part's tier, `rounds` times, and the least thread CPU time is kept. Printed, most expensive first:
milliseconds, lines, tier, optnone, name. A function alone pays a part's fixed cost (~1-3 ms: context, pipeline,
target machine), so the sum is above the parts' own time; what it ranks is the IR the emitters hand to LLVM
(session 32: vit/fwd's attention task bodies were the top two at 29-32 ms, a third of it their remainder code).
Thread CPU, not wall time: it is what a loaded machine distorts least.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_harness  # noqa: E402

_NAME = re.compile(r'@"([^"]+)"')


def recorded_parts(text: str) -> list[tuple[str, str]]:
    """(text, tier) of every LLVM part one compile of HLO `text` makes."""
    import xlapy
    from xlapy.backends.cpu import llvm_parallel as lp
    parts, original = [], lp.compile_part

    def record(part):
        parts.append((part.text, part.tier))
        return original(part)
    lp.compile_part = record
    try:
        xlapy.compile(xlapy.hlo.parse(text), backend="cpu")
    finally:
        lp.compile_part = original
    return parts


def alone(parts: list[tuple[str, str]], rounds: int) -> list[tuple[float, int, str, bool, str]]:
    """(least thread CPU seconds, lines, tier, optnone, name) of every function compiled as a part of its own."""
    from xlapy.backends.cpu import llvm_parallel as lp
    rows = []
    for text, tier in parts:
        items = lp._items(text)
        for i, (kind, body) in enumerate(items):
            if kind != "define":
                continue
            others = [body if j == i else lp._declaration(t).replace("declare internal ", "declare ")
                      if k == "define" else t for j, (k, t) in enumerate(items)]
            part = lp.Part("\n".join(others) + "\n", tier)
            best = float("inf")
            for _ in range(rounds):
                start = time.thread_time()
                lp.compile_part(part)
                best = min(best, time.thread_time() - start)
            header = body.split("\n", 1)[0]
            rows.append((best, body.count("\n"), tier, " optnone" in header, _NAME.search(header).group(1)))
    return sorted(rows, reverse=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("module", help="a benchmarks/models id (vit/fwd) or an .hlo file")
    p.add_argument("--rounds", type=int, default=2, help="compiles of each function (the least time is kept)")
    p.add_argument("--top", type=int, default=30, help="functions to print")
    a = p.parse_args(argv)
    path = model_harness.module_path(a.module)
    if not path.is_file():
        print(f"llvm_functions: no module {a.module!r} ({path} does not exist)", file=sys.stderr)
        return 2
    with model_harness.cold_compiles():
        parts = recorded_parts(path.read_text())
    rows = alone(parts, a.rounds)
    print(f"{a.module}: {len(parts)} parts, {sum(t.count(chr(10)) for t, _ in parts)} lines; {len(rows)} functions "
          f"alone: {sum(r[0] for r in rows) * 1e3:.0f} ms of thread CPU")
    for seconds, lines, tier, optnone, name in rows[:a.top]:
        print(f"{seconds * 1e3:7.1f} ms {lines:6d} lines  {tier:8s} {'optnone' if optnone else '':7s} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
