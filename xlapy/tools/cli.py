"""The `xlapy` command line. A bad input prints one line to stderr and exits 2; no traceback.

  xlapy run MODULE.hlo [--inputs IN.npz] [--out OUT.npz] [--backend interpreter]
  xlapy opt MODULE.hlo [--passes a,b,... | --pipeline cpu]     (XLA's hlo-opt)
  xlapy verify MODULE.hlo
  xlapy fmt MODULE.hlo [--short]
  xlapy aot MODULE.hlo --name NAME --out-dir DIR [--target-triple T] [--cpu C] [--features F] [--blas] [--shared]
  xlapy ops [OPCODE]          (each layer's rule for OPCODE as file:line, or why it has none; no OPCODE: the matrix)

Set XLAPY_TRACEBACK=1 to see the Python traceback of an unexpected internal error.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from ..errors import XlapyError
from . import npz


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        raise _UsageError(f"{self.prog}: {message}")


def _read_module(path: str):
    from ..hlo import parse
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise XlapyError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise XlapyError(f"{path}: cannot read HLO text ({e})") from None
    try:
        return parse(text)
    except XlapyError as e:  # prefix the file name: FILE:LINE:COL: message
        raise XlapyError(f"{path}:{e}") from None


def _summary(name: str, arr: np.ndarray) -> str:
    arr = np.asarray(arr)
    head = f"{name}: {arr.dtype}{list(arr.shape)}"
    if arr.size == 0:
        return head + " (empty)"
    flat = arr.reshape(-1)
    shown = np.array2string(flat[:6], separator=", ", threshold=6, precision=6)
    more = " ..." if flat.size > 6 else ""
    if arr.dtype.kind in "fc" or arr.dtype.kind in "iu":
        f = flat.astype(np.complex128 if arr.dtype.kind == "c" else np.float64)
        stats = "" if arr.dtype.kind == "c" else f"  min={np.nanmin(f):.6g} max={np.nanmax(f):.6g}"
        return f"{head} {shown}{more}{stats}"
    return f"{head} {shown}{more}"


def _inputs(args, n_params: int) -> list:
    """The arguments from --inputs (arg0, arg1, ...), exactly as many as the entry takes."""
    arrays = npz.load(args.inputs) if args.inputs else {}
    inputs = npz.numbered(arrays, "arg")
    if len(inputs) != n_params:
        expected = ", ".join(f"arg{i}" for i in range(n_params)) or "no arrays"
        found = f"keys {', '.join(sorted(arrays))}" if arrays else "no arrays"
        raise XlapyError(f"{args.module}: the entry computation takes {n_params} arguments ({expected}); "
                         f"{args.inputs or 'no --inputs'} gives {len(inputs)} ({found})")
    return inputs


def cmd_run(args) -> int:
    from ..backends import compile as compile_module
    from ..hlo import verify
    module = _read_module(args.module)
    verify(module)              # before any pass or backend meets a malformed module
    inputs = _inputs(args, len(module.entry.parameters))
    exe = compile_module(module, backend=args.backend)
    result = exe(*inputs)
    leaves = npz.flatten(result)
    for i, leaf in enumerate(leaves):
        print(_summary(f"out{i}", leaf))
    if args.out:
        npz.save(args.out, {f"out{i}": leaf for i, leaf in enumerate(leaves)})
        print(f"wrote {len(leaves)} output(s) to {args.out}")
    return 0


def cmd_opt(args) -> int:
    from ..passes.optimize import optimize
    from ..passes.pipelines import cpu_pipeline, passes_pipeline
    module = _read_module(args.module)
    if args.passes is not None:
        names = [p.strip() for p in args.passes.split(",")]
        if not any(names):
            raise XlapyError("--passes needs at least one pass name (e.g. algsimp,cse,dce)")
        if not all(names):
            raise XlapyError(f"--passes {args.passes!r}: an empty pass name (two commas, or one at an end)")
        pipeline = passes_pipeline(names)
    else:
        pipeline = cpu_pipeline(fast_math=args.fast_math, check_invariants=True)
    optimize(module, pipeline)
    sys.stdout.write(module.to_text())
    return 0


def cmd_verify(args) -> int:
    from ..hlo import verify
    module = _read_module(args.module)
    verify(module)
    n = sum(len(c.instructions) for c in module.computations)
    print(f"{args.module}: ok ({len(module.computations)} computations, {n} instructions)")
    return 0


def cmd_fmt(args) -> int:
    module = _read_module(args.module)
    text = module.to_text(print_operand_shape=False) if args.short else module.to_text()
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def cmd_aot(args) -> int:
    from ..backends.cpu.aot import check_name, compile_aot
    check_name(args.name)                 # before the (slow) compile
    module = _read_module(args.module)
    art = compile_aot(module, args.name, target_triple=args.target_triple, cpu=args.cpu, features=args.features,
                      blas=args.blas)
    files = art.write(args.out_dir, shared=args.shared)
    for path in files.values():
        print(f"wrote {path}")
    return 0


def cmd_ops(args) -> int:
    from . import ops
    print(ops.describe(args.opcode) if args.opcode else ops.matrix())
    return 0


def cmd_cache(args) -> int:
    from ..backends import compilation_cache
    store = compilation_cache.store()
    if store is None:
        print("the compilation cache is off (XLAPY_CACHE_DIR=off)")
        return 0
    if args.action == "clear":
        print(f"removed {store.clear()} entries from {store.root}")
        return 0
    info = store.info()
    bound = "none" if info["max_bytes"] >= 1 << 62 else _size(info["max_bytes"])
    print(f"directory  {info['directory']}\nentries    {info['entries']}\nsize       {_size(info['bytes'])}\n"
          f"bound      {bound}")
    return 0


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB"):
        if n < 1024:
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _build_parser() -> argparse.ArgumentParser:
    from ..backends import BACKENDS
    p = _Parser(prog="xlapy", description="XLA rebuilt in Python: run, check and print HLO modules.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="execute an HLO module on inputs from an .npz file")
    run.add_argument("module")
    run.add_argument("--inputs", help=".npz with arg0, arg1, ... (ml_dtypes types as KEY + KEY__dtype)")
    run.add_argument("--out", help="write outputs out0, out1, ... (tuple leaves flattened) to this .npz")
    run.add_argument("--backend", default="interpreter", choices=sorted(BACKENDS))
    run.set_defaults(fn=cmd_run)
    opt = sub.add_parser("opt", help="optimize an HLO module and print it (XLA's hlo-opt)")
    opt.add_argument("module")
    how = opt.add_mutually_exclusive_group()
    how.add_argument("--passes", help="comma-separated pass names to run in order (e.g. algsimp,cse,dce)")
    how.add_argument("--pipeline", choices=["cpu"], default="cpu", help="a whole pipeline (default: cpu)")
    opt.add_argument("--fast-math", action="store_true", help="allow float rewrites that are not IEEE-exact")
    opt.set_defaults(fn=cmd_opt)
    ver = sub.add_parser("verify", help="parse and verify an HLO module")
    ver.add_argument("module")
    ver.set_defaults(fn=cmd_verify)
    fmt = sub.add_parser("fmt", help="parse an HLO module and print it back in canonical form")
    fmt.add_argument("module")
    fmt.add_argument("--short", action="store_true", help="operands without shapes (short parsable)")
    fmt.set_defaults(fn=cmd_fmt)
    aot = sub.add_parser("aot", help="compile an HLO module ahead of time to an object file and a C header")
    aot.add_argument("module")
    aot.add_argument("--name", required=True, help="the C function's name (also NAME.o, NAME.h, NAME.hlo)")
    aot.add_argument("--out-dir", required=True, help="directory to write the files into (created if missing)")
    aot.add_argument("--target-triple", help="LLVM target triple (default: this machine's), e.g. aarch64-linux-gnu")
    aot.add_argument("--cpu", help="target CPU (default: generic; 'host' tunes for this machine)")
    aot.add_argument("--features", help="LLVM target features, e.g. +avx2,+fma (default: none)")
    blas = aot.add_mutually_exclusive_group()
    blas.add_argument("--no-blas", dest="blas", action="store_false",
                      help="compile dots to loops; link only libc and libm (the default)")
    blas.add_argument("--blas", dest="blas", action="store_true", help="call the Fortran BLAS (sgemm_, ...)")
    aot.add_argument("--shared", action="store_true", help="also link NAME.so with gcc -shared")
    aot.set_defaults(fn=cmd_aot, blas=False)
    ops = sub.add_parser("ops", help="where each layer's rule for an opcode is, or why it has none")
    ops.add_argument("opcode", nargs="?", help="an HLO opcode (default: the coverage matrix of every opcode)")
    ops.set_defaults(fn=cmd_ops)
    cache = sub.add_parser("cache", help="the persistent compilation cache: where it is and how big, or empty it")
    cache.add_argument("action", choices=("info", "clear"))
    cache.set_defaults(fn=cmd_cache)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = _build_parser().parse_args(argv)
        return args.fn(args)
    except _UsageError as e:
        print(e, file=sys.stderr)
    except XlapyError as e:
        print(f"xlapy: error: {e}", file=sys.stderr)
    except MemoryError as e:        # a result or buffer bigger than this machine can allocate: the input's doing
        print(f"xlapy: error: out of memory: {e or 'an allocation failed'}", file=sys.stderr)
    except KeyboardInterrupt:
        print("xlapy: interrupted", file=sys.stderr)
    except Exception as e:  # an internal bug: still one line, no traceback unless asked for
        if os.environ.get("XLAPY_TRACEBACK"):
            raise
        print(f"xlapy: internal error: {type(e).__name__}: {e} (set XLAPY_TRACEBACK=1 for details)",
              file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
