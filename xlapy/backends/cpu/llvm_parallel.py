"""Optimize and generate code on two cores: the outlined parallel-loop workers (parallel.py's `xlapy_task*`
functions) go into a second LLVM module, in its own LLVM context, which a second thread optimizes and turns
into object code while the calling thread does the same for the entry function and the rest; both objects
are then loaded into one MCJIT engine, which links the entry's calls to the workers.

    text ──split──> A: entry + helpers + `declare` of each moved worker ── O3 + codegen (this thread) ──┐
                    B: moved workers (made external) + globals/declares ── O3 + codegen (thread 2) ────┴─> engine

llvmlite serialises every call into LLVM behind one lock; thread 2 calls the two expensive entry points (run
the pass pipeline, emit an object) through their raw ctypes functions, which release the GIL and take no lock.
That is safe because nothing is shared: module B lives in its own context and has its own target machine
and pass builder, and the calling thread never touches them until thread 2 has finished.

A worker that refers to another function defined in the module stays in A. Each module keeps its private
globals (constant tables) as copies; moved workers get names unique to the process, so objects of different
executables can never bind to each other's symbols. `split` returns None when there is too little to share.
"""
from __future__ import annotations

import itertools
import re
import threading
from ctypes import string_at

import llvmlite.binding as llvm
from llvmlite.binding import ffi

MIN_MOVED_LINES = 300          # below this, a second thread costs more than it saves
WORKER_WEIGHT = 1.6            # LLVM time per line of a worker (vectorized loops) relative to the entry's
_WORKER = re.compile(r'^define internal i8\* @"(xlapy_task[\w.]*)"\(i8\* %"\.1"\)')
_REF = re.compile(r'@"([^"]+)"')
_serial = itertools.count()


def _items(text: str) -> list[tuple[str, str]]:
    """The top-level items of printed IR, in order: (kind, text) with kind header/define/declare/global/meta."""
    items, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("define "):
            j = i
            while lines[j] != "}":
                j += 1
            items.append(("define", "\n".join(lines[i:j + 1])))
            i = j + 1
            continue
        kind = ("declare" if line.startswith("declare ") else "global" if line.startswith("@")
                else "meta" if line.startswith("!") else "header")
        items.append((kind, line))
        i += 1
    return items


def split(text: str) -> tuple[str, str, list[str]] | None:
    """(module A text, module B text, moved worker names), or None when not worth splitting."""
    items = _items(text)
    defined = {m.group(1) for kind, t in items if kind == "define" for m in [_REF.search(t)] if m}
    candidates, total = [], 0.0
    for kind, t in items:
        if kind != "define":
            continue
        m = _WORKER.match(t)
        lines = t.count("\n")
        total += lines * (WORKER_WEIGHT if m else 1.0)
        if m is None:
            continue
        name = m.group(1)
        if (set(_REF.findall(t)) - {name}) & defined:     # calls another function of the module: stays in A
            continue
        candidates.append((lines, name))
    moved, moved_weight = [], 0.0
    for lines, name in sorted(candidates, reverse=True):  # biggest first, until B holds about half the work
        if moved_weight + lines * WORKER_WEIGHT / 2 > total / 2:
            continue
        moved.append(name)
        moved_weight += lines * WORKER_WEIGHT
    if not moved or moved_weight < MIN_MOVED_LINES:
        return None
    tag = f"xlapy_p{next(_serial)}_"
    rename = {n: tag + n for n in moved}

    def renamed(t: str) -> str:
        return _REF.sub(lambda m: f'@"{rename.get(m.group(1), m.group(1))}"', t)
    a, b = [], []
    for kind, t in items:
        m = _WORKER.match(t) if kind == "define" else None
        if m is not None and m.group(1) in rename:
            b.append(renamed(t).replace("define internal ", "define ", 1))
            a.append(f'declare i8* @"{rename[m.group(1)]}"(i8* %".1")')
        elif kind == "define":
            a.append(renamed(t))
        else:
            a.append(t)
            if kind != "header" or t.startswith(("target ", "; ModuleID")):
                b.append(t)
    return "\n".join(a) + "\n", "\n".join(b) + "\n", moved


class InvalidIR(Exception):
    """One of the halves does not parse or verify (an emitter bug)."""


def _parse(text: str, context=None):
    try:
        mod = llvm.parse_assembly(text, context=context) if context is not None else llvm.parse_assembly(text)
        mod.verify()
    except RuntimeError as e:
        raise InvalidIR(str(e)) from e
    return mod


def _optimize_and_emit_raw(mpm, mod, pb, tm, out: dict) -> None:
    """Thread 2: the pass pipeline and object emission through the raw (lock-free) ctypes functions."""
    try:
        ffi.lib.LLVMPY_RunNewModulePassManager._cfn(mpm, mod, pb)
        err = ffi.OutputString()
        out["buffer"] = ffi.lib.LLVMPY_TargetMachineEmitToMemory._cfn(tm, mod, 1, err)
        out["error"] = err
    except BaseException as e:             # reported by the calling thread
        out["exception"] = e


def compile_split(text_a: str, text_b: str, optimize, new_tm, entry: str):
    """Compile the two halves concurrently; (engine, entry address, [optimized module A, B]).
    `optimize(mod, tm)` is compiler.optimize_llvm; `new_tm()` makes a target machine."""
    from .compiler import pipeline_tuning
    ctx_b = llvm.create_context()
    mod_b = _parse(text_b, ctx_b)
    tm_b = new_tm()
    pb_b = llvm.create_pass_builder(tm_b, pipeline_tuning())
    mpm_b = pb_b.getModulePassManager()
    out: dict = {}
    worker = threading.Thread(target=_optimize_and_emit_raw, args=(mpm_b, mod_b, pb_b, tm_b, out), daemon=True)
    worker.start()
    try:
        mod_a = _parse(text_a)
        tm_a = new_tm()
        optimize(mod_a, tm_a)
        obj_a = tm_a.emit_object(mod_a)
    finally:
        worker.join()
        mpm_b.close()           # the pass manager before the builder whose analyses it used
        pb_b.close()
    if "exception" in out:
        raise out["exception"]
    buffer = out.get("buffer")
    if not buffer:
        raise RuntimeError(f"LLVM could not emit the worker object: {out.get('error')}")
    try:
        obj_b = string_at(ffi.lib.LLVMPY_GetBufferStart(buffer), ffi.lib.LLVMPY_GetBufferSize(buffer))
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)
        out["error"].close()
    header = "\n".join(line for line in text_a.splitlines()[:3] if line.startswith(("target ", "; ModuleID")))
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(header + "\n"), new_tm())
    for obj in (obj_a, obj_b):
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    address = engine.get_function_address(entry)
    if not address:
        raise RuntimeError(f"the linked objects have no {entry}")
    return engine, address, [mod_a, mod_b]      # the optimized modules (printed when someone asks)
