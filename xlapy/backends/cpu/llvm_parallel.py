"""Optimize and generate code on two cores: about half of the kernels (kernels.py's `xlapy_kernel*` functions,
each with the parallel-loop workers it calls) and of the workers the entry calls directly go into a second LLVM
module, in its own LLVM context, which a second thread optimizes and turns into object code while the calling
thread does the same for the entry function and the rest; both objects are then loaded into one MCJIT engine,
which links the entry's calls to the moved functions.

    text ──split──> A: entry + the rest + `declare` of each moved function ── O3 + codegen (this thread) ──┐
                    B: moved functions (made external) + globals/declares ── O3 + codegen (thread 2) ────┴─> engine

llvmlite serialises every call into LLVM behind one lock; thread 2 calls the two expensive entry points (run
the pass pipeline, emit an object) through their raw ctypes functions, which release the GIL and take no lock.
That is safe because nothing is shared: module B lives in its own context and has its own target machine
and pass builder, and the calling thread never touches them until thread 2 has finished.

A function moves with everything it calls that the module defines, and only when nothing else calls those (a
kernel calling a runtime function every kernel shares, as the profiler's, stays in A). Only the unit's root (the
function A calls) becomes external; what it calls keeps internal linkage in B. That matters for speed: LLVM
inlines an internal function with one caller whatever its size, and an external one only when small, so a
worker's outlined loop body (parallel.py's `.body`) made external stayed a call in the worker's loop, and
ResNet-50's training step ran 2x slower (thread CPU time 122 ms against 60 ms, every function made external in
one module: 134 ms). Each module keeps its
private globals (constant tables) as copies; moved functions get names unique to the process, so objects of
different executables can never bind to each other's symbols. `split` returns None when there is too little
to share.
"""
from __future__ import annotations

import itertools
import re
import threading
from ctypes import string_at

import llvmlite.binding as llvm
from llvmlite.binding import ffi

from .llvm_jit import load_objects

MIN_MOVED_LINES = 300          # below this, a second thread costs more than it saves
WORKER_WEIGHT = 1.6            # LLVM time per line of a worker (vectorized loops) relative to the entry's
_MOVABLE = re.compile(r"xlapy_(task|kernel)")        # pool workers (parallel.py) and kernels (kernels.py)
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
    """(module A text, module B text, moved function names), or None when not worth splitting."""
    items = _items(text)
    defs = {m.group(1): t for kind, t in items if kind == "define" for m in [_REF.search(t)] if m}
    units, total = _units(defs), sum(_weight(name, t) for name, t in defs.items())
    moved, roots, moved_weight = [], set(), 0.0
    for weight, root, members in sorted(units, key=lambda u: -u[0]):   # biggest first, until B holds about half
        if moved_weight + weight / 2 > total / 2:
            continue
        moved.extend(members)
        roots.add(root)
        moved_weight += weight
    if not moved or moved_weight < MIN_MOVED_LINES:
        return None
    tag = f"xlapy_p{next(_serial)}_"
    rename = {n: tag + n for n in moved}

    def renamed(t: str) -> str:
        return _REF.sub(lambda m: f'@"{rename.get(m.group(1), m.group(1))}"', t)
    a, b = [], []
    for kind, t in items:
        m = _REF.search(t) if kind == "define" else None
        if m is not None and m.group(1) in roots:
            definition = renamed(t).replace("define internal ", "define ", 1)
            b.append(definition)
            a.append(_declaration(definition))
        elif m is not None and m.group(1) in rename:
            b.append(renamed(t))          # called only from its unit: stays internal (see the module docstring)
        elif kind == "define":
            a.append(renamed(t))
        else:
            a.append(t)
            if kind != "header" or t.startswith(("target ", "; ModuleID")):
                b.append(t)
    return "\n".join(a) + "\n", "\n".join(b) + "\n", moved


def _weight(name: str, text: str) -> float:
    return text.count("\n") * (WORKER_WEIGHT if _MOVABLE.match(name) else 1.0)


def _units(defs: dict[str, str]) -> list[tuple[float, str, list[str]]]:
    """What can move to module B: a kernel (kernels.py) with the pool workers it calls, or a worker that the
    entry calls directly. A unit moves whole and only when nothing outside it refers to its members (a function
    every kernel calls, as the profiler's, keeps the kernels that call it in A)."""
    refs = {name: (set(_REF.findall(t)) - {name}) & defs.keys() for name, t in defs.items()}
    users: dict[str, set[str]] = {name: set() for name in defs}
    for name, targets in refs.items():
        for target in targets:
            users[target].add(name)
    units = []
    for name in defs:
        if not _MOVABLE.match(name) or any(_MOVABLE.match(u) for u in users[name]):
            continue                         # not movable, or moves with the kernel that calls it
        members, stack = {name}, [name]
        while stack:
            for target in refs[stack.pop()]:
                if target not in members:
                    members.add(target)
                    stack.append(target)
        if all(_MOVABLE.match(m) for m in members) and all(users[m] <= members for m in members - {name}):
            units.append((sum(_weight(m, defs[m]) for m in members), name, sorted(members)))
    return units


def _declaration(definition: str) -> str:
    """`declare` for a moved function, from the first line of its definition (the signature, no attributes)."""
    header = definition.split("\n", 1)[0]
    return "declare " + header[len("define "):header.index(")") + 1]


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
    """Compile the two halves concurrently; (llvm_jit.OwnCode, entry address, [optimized module A, B], [object
    files A, B]).
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
        # module B (kept as bitcode, for whoever asks for the optimized IR) is disposed here, before its context:
        # left to the garbage collector, the two could be freed in either order, and a module outliving its
        # context crashes the process
        bitcode_b = mod_b.as_bitcode() if "buffer" in out else b""
        mod_b.close()
        ctx_b.close()
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
    code, address = load_objects([obj_a, obj_b], entry, mod_a.triple, mod_a.data_layout)
    if not address:
        raise RuntimeError(f"the linked objects have no {entry}")
    # the optimized modules (printed when someone asks) and the objects (for the persistent cache)
    return code, address, [mod_a, bitcode_b], [obj_a, obj_b]
