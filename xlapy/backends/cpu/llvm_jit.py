"""The LLVM back half of the JIT: optimize a parsed LLVM module at the level the compile plan chose
(compile_plan.py), turn it into machine code, and give that memory back when the executables using it are gone.

Two ways to machine code:
  * "optimized" modules (O3, the default for real work) get their own MCJIT engine (OwnCode): the machine code is
    freed with the Executable that holds it.
  * "quick" modules (small ones: an eager op on a few arrays) skip LLVM's IR optimization and are code-generated
    at O0 (FastISel) in a SHARED engine. Building an O3 pass pipeline and a code generator costs ~10 ms each even
    for a ten-line function; a shared O0 engine turns a tiny module into machine code in about a millisecond.
    Each module's entry is renamed `xlapy_entry.q<n>` and every other definition is made internal, so modules do
    not see each other's symbols. A shared engine holds at most QUICK_MODULES_PER_ENGINE modules, then a new one
    starts. Each executable holds a QuickCode, its share of the engine; an engine is freed once every share of
    it is gone, the current engine too (the next quick module starts a fresh one).

Contexts: LLVM keeps every type and constant it has seen in the module's LLVMContext until the context dies, so
modules parsed into LLVM's global context leak a few KB each, for good. Each optimized module gets a context of
its own and each quick engine one for all its modules (`context_for`); a context is disposed after the last
engine holding its modules, and its stray modules (parsed but never handed to an engine) first.

Shared state never changes inside `__del__`: a quick share that dies (possibly in the garbage collector, on any
thread, while another thread holds a lock) only queues its release, and `collect_released()` (run before every JIT
step, and by xlapy.clear_caches) frees what the queue lets go, under _lock. Until then contexts stay reachable
from _CONTEXTS, so the collector never disposes one before the engine using it. A module that fails to parse or
verify keeps its context alive (a compiler bug: rare, and small).

Neither path adds fast-math flags, so IEEE-strict IR gives the same bits at any level. Where the emitter grants
freedom — `contract` (dot loops: O3 forms FMAs, O0 does not) and `reassoc` accumulations (O3 may reorder) — the
two paths may round differently, as the IR allows.

Loop strength reduction is off (`-disable-lsr`; XLAPY_LLVM_LSR=1 turns it back on, read once at start): on the
models' kernels (loops over many arrays with div/mod index arithmetic) it was ~45% of code generation and ~24%
of all LLVM time (vit/train: 11.2 -> 8.5 s of CPU over its kernels), and the code ran no slower without it
(thread CPU time, one xlapy thread, the same optimized HLO compiled both ways in one process: vit/train 0.97x,
gpt2/train 0.94x, resnet50/train 0.99x, vit/fwd 1.02x, resnet50/fwd 0.99x, gpt2/sample 1.03x): x86's addressing
modes already fold the index arithmetic LSR would rewrite.

Threads: llvmlite serializes each call into LLVM, but a sequence of them (add a module, finalize, look up its
entry) is one step here under _lock, and so is the one-time setup; nothing relies on the GIL.
"""
from __future__ import annotations

import collections
import ctypes.util
import itertools
import os
import contextlib
import threading

import llvmlite.binding as llvm

from . import compile_plan

QUICK_MODULES_PER_ENGINE = 512
LSR = os.environ.get("XLAPY_LLVM_LSR", "0") == "1"      # loop strength reduction in code generation (docstring)

_lock = threading.RLock()
_shared_tm = None
_host: tuple | None = None          # host_target()
_quick: "QuickEngine | None" = None      # the engine quick modules go to now
_names = itertools.count()
_initialized = False
_released: collections.deque = collections.deque()     # what dead shares let go: QuickEngines, Contexts


def init_llvm() -> None:
    """Initialize LLVM's native target and asm printer and make libm's symbols visible to MCJIT, once per
    process; everything in this backend that builds a target machine or an engine calls it first."""
    global _initialized
    if _initialized:
        return
    with _lock:
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            llvm.set_option("", f"-disable-lsr={'false' if LSR else 'true'}")
            libm = ctypes.util.find_library("m")
            if libm:
                llvm.load_library_permanently(libm)
            _initialized = True


def new_target_machine(opt: int = 3):
    """A fresh target machine for this host (an MCJIT engine takes ownership of the one it is given)."""
    target, cpu, features = host_target()
    return target.create_target_machine(cpu=cpu, features=features, opt=opt)


def host_target() -> tuple:
    """(llvm.Target, CPU name, feature string) of this host, looked up once per process. llvm_parallel's second
    thread makes a target machine per part, and each call into LLVM waits for the GIL when it returns: the
    lookups were 8 of a part's 32 calls (llvm_parallel.py, gil_handoff.py). The Target is LLVM's static
    registry entry, never freed: any thread may use it."""
    global _host
    if _host is None:
        init_llvm()
        with _lock:
            if _host is None:
                features = llvm.get_host_cpu_features()
                if features.get("avx512f", False):
                    features["prefer-256-bit"] = False      # 512-bit vectors where the host has them
                _host = (llvm.Target.from_default_triple(), llvm.get_host_cpu_name(), features.flatten())
    return _host


def shared_target_machine():
    """One host target machine for the process, for data layouts and pass builders (never handed to an engine)."""
    global _shared_tm
    if _shared_tm is None:
        with _lock:
            if _shared_tm is None:
                _shared_tm = new_target_machine(3)
    return _shared_tm


_IDLE_TMS: dict[int, list] = {}        # code generation level -> target machines no thread is using


@contextlib.contextmanager
def borrowed_target_machine(opt: int):
    """A host target machine at code generation level `opt` for one thread's use until the block ends (an object
    emitted from a part: llvm_parallel.compile_part), kept for the next borrower after. A fresh one per part cost
    ~1 ms of the part's ~3.5 ms of fixed cost: the machine's subtarget is made when its first function is compiled
    (1.1 vs 2.5 ms for a one-function part at O0). Never handed to an engine, which would take ownership; a
    machine holds no state of the module it emitted, and one thread at a time uses it."""
    with _lock:
        idle = _IDLE_TMS.setdefault(opt, [])
        tm = idle.pop() if idle else None
    if tm is None:
        tm = new_target_machine(opt)
    try:
        yield tm
    finally:
        with _lock:
            _IDLE_TMS[opt].append(tm)


# -- contexts ------------------------------------------------------------------------------------------------
_CONTEXTS: set["Context"] = set()      # every live Context: reachable, so never disposed by the collector


class Context:
    """An LLVMContext, the modules parsed into it, and how many holders (engines, the parse waiting for one) keep it."""

    def __init__(self):
        self.ref = llvm.create_context()
        self.modules: list = []
        self.holders = 1            # its creator
        _CONTEXTS.add(self)

    def parse(self, text: str):
        """`text` as a module of this context (what compiler.parse_llvm calls)."""
        with _lock:
            mod = llvm.parse_assembly(text, context=self.ref)
            mod.xlapy_context = self
            self.modules.append(mod)
            return mod

    def release(self) -> None:
        """One holder less (under _lock); the last one disposes the strays, then the context."""
        self.holders -= 1
        if self.holders == 0:
            for mod in self.modules:
                mod.close()         # a stray is disposed; one an engine owned is only detached
            self.modules.clear()
            self.ref.close()
            _CONTEXTS.discard(self)


def context_for(level: str) -> Context:
    """The context a module compiled at `level` is parsed into: a new one (optimized), the current quick engine's."""
    with _lock:
        collect_released()
        if level == compile_plan.QUICK:
            host = _quick_host()
            host.context.holders += 1          # for the parse until jit_quick takes the module
            return host.context
        return Context()


# -- optimized: one engine per module -------------------------------------------------------------------------
class OwnCode:
    """An optimized executable's engine (its machine code) and the context of its module. The engine is freed as
    soon as this dies (as llvmlite's own finalizer would); the context, which has no other holder, when collected."""

    def __init__(self, engine, context: Context | None):
        self.engine, self.context = engine, context

    def __del__(self, _released=_released):      # bound now: at interpreter exit the module global may be gone
        self.engine.close()
        if self.context is not None:
            _released.append(self.context)


def jit_optimized(mod, entry: str, objects: list | None = None):
    """A private engine for `mod` (already optimized): (OwnCode, entry address). With `objects`, the object file
    code generation made is appended to it (for the persistent cache)."""
    engine = llvm.create_mcjit_compiler(mod, new_target_machine(3))
    if objects is not None:
        engine.set_object_cache(lambda _mod, buf: objects.append(buf))
    engine.finalize_object()
    with _lock:
        collect_released()
        return OwnCode(engine, getattr(mod, "xlapy_context", None)), engine.get_function_address(entry)


def load_objects(objects: list[bytes], entry: str, triple: str, data_layout: str):
    """A private engine linking object files made earlier (llvm_parallel.py's halves, or the persistent cache's):
    (OwnCode, entry address); the address is 0 when the objects define no `entry`."""
    init_llvm()
    context = Context()
    header = context.parse(f'target triple = "{triple}"\ntarget datalayout = "{data_layout}"\n')
    engine = llvm.create_mcjit_compiler(header, new_target_machine(3))
    for obj in objects:
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    with _lock:
        collect_released()
        return OwnCode(engine, context), engine.get_function_address(entry)


# -- quick: modules share an engine ---------------------------------------------------------------------------
class QuickEngine:
    """One shared O0 engine, its context, the other contexts of modules it took, and its live shares."""

    def __init__(self):
        self.context = Context()
        self.engine = llvm.create_mcjit_compiler(self.context.parse(""), new_target_machine(0))
        self.last_object = b""          # the object file of the module code generation made last
        self.engine.set_object_cache(self._made)
        self.others: set[Context] = set()
        self.modules = 0
        self.live = 0

    def _made(self, _mod, buf: bytes) -> None:
        self.last_object = buf

    def close(self) -> None:
        self.engine.close()
        for context in (self.context, *self.others):
            context.release()


class QuickCode:
    """What a quick executable holds to keep its machine code alive: its share of a QuickEngine."""

    def __init__(self, host: QuickEngine):
        self.host = host

    def __del__(self, _released=_released):
        _released.append(self.host)


def _quick_host() -> QuickEngine:
    global _quick
    if _quick is None or _quick.modules >= QUICK_MODULES_PER_ENGINE:
        _quick = QuickEngine()
    return _quick


def collect_released() -> None:
    """Free what dead shares let go: a quick engine with no share left (the current one too: the next quick
    module starts a new one), a context with no holder left."""
    global _quick
    with _lock:
        while _released:
            item = _released.popleft()
            if isinstance(item, Context):
                item.release()
                continue
            item.live -= 1
            if item.live == 0:
                if item is _quick:
                    _quick = None
                item.close()


def jit_quick(mod, entry: str, objects: list | None = None):
    """Code-generate `mod` at O0 in the shared quick engine: (QuickCode, entry address, the entry's symbol name).
    `mod` is consumed. With `objects`, its object file is appended to it (for the persistent cache)."""
    with _lock:
        name = f"{entry}.q{next(_names)}"
    for g in itertools.chain(mod.functions, mod.global_variables):
        if g.is_declaration:
            continue
        if g.name == entry:
            g.name = name
        else:
            g.linkage = llvm.Linkage.internal if g.is_function else llvm.Linkage.private
    with _lock:
        collect_released()
        host = _quick_host()
        context = getattr(mod, "xlapy_context", None)
        if context is not None and context is not host.context and context not in host.others:
            host.others.add(context)            # parsed for an engine since retired: this one keeps it now
            context.holders += 1
        host.live += 1
        code = QuickCode(host)
        host.engine.add_module(mod)
        host.modules += 1
        host.engine.finalize_object()
        address = host.engine.get_function_address(name)
        if objects is not None:
            objects.append(host.last_object)
        if context is not None:
            context.release()                   # the parse's hold: the engine holds it now
    return code, address, name


__all__ = ["QUICK_MODULES_PER_ENGINE", "init_llvm", "new_target_machine", "shared_target_machine", "Context",
           "context_for", "jit_optimized", "jit_quick", "load_objects", "collect_released", "OwnCode", "QuickCode"]
