"""LLVM on two cores, overlapped with emission, each kernel at its tier's optimization level (opt_levels.py).

The module's kernels (kernels.py's `xlapy_kernel*` functions, each with the parallel-loop workers it calls) and
the workers the entry calls directly are compiled in *parts*: LLVM modules of their own, each in its own LLVM
context, with the pipeline of their tier (hot: O3; light: O1 without vectorizers; launch: a pool kernel's optnone
launch code and workers, O0 code generation, apart from the loop bodies they call: _split_launch). A second thread
compiles the parts as they come; the calling thread compiles the entry part (the entry and whatever could not move), then
takes the parts nobody started; the objects are loaded into one MCJIT engine, which links the entry's calls.

    emission ── kernel final ──> add_kernel ── a tier's units reach PART_WEIGHT ──> part ──> thread 2 ──────┐
                                               (IDLE_PART_WEIGHT while thread 2 waits)                     │
    end: the rest of the text + the parts not started ── cut, heaviest first ──> entry part (this thread)  │
                                                                            + parts (either thread) ───────┴─> engine

Balance (both threads should end together; a part costs ~5 ms of setup, so parts are not made tiny): thread 2
gets a part as soon as it has nothing to do, and at the end the parts nobody started are taken apart again and
cut with the units left into parts that shrink (each about 1/END_SHARE of the weight left, the heaviest first,
so the last ones are small), queued heaviest first. The entry part holding the entry function alone is compiled
at opt_levels.ENTRY (O0 code generation: it is calls), or STRAIGHT (O0 throughout) when it has no branch; when kernels that cannot move keep it hot
anyway, a tier's last units weighing less than MIN_PART_WEIGHT stay in it (O3 costs them less than a part's
setup). On vit/fwd the old cut left thread 2 idle (~170 ms simulated) while the calling thread compiled one
2000-line part alone.

Overlap: kernels are final once KernelCache keeps them (compiler.emit_module reports each), so a part of finished
kernels is optimized by thread 2 while Python emits the rest; Python only holds the GIL, LLVM runs through the
raw ctypes functions, which release it and take no lock. That is safe because nothing is shared: each part lives
in its own context, with its own target machine and pass builder, and only one thread ever touches it.

A function moves with everything it calls that the module defines, and only when nothing else calls those (a
kernel calling a runtime function every kernel shares, as the profiler's, stays in the entry part). Only the
unit's root (the function the entry calls) becomes external; what it calls keeps internal linkage in its part.
That matters for speed: LLVM inlines an internal function with one caller whatever its size, and an external one
only when small, so a worker's outlined loop body (parallel.py's `.body`) made external stayed a call in the
worker's loop, and ResNet-50's training step ran 2x slower. Each part carries the declarations and private
globals (constant tables) its functions name; moved functions get names unique to the process, so objects of
different executables can never bind to each other's symbols. A unit whose members something outside it calls
(which a kernel finished early cannot know) is caught at the end: the session is abandoned and the module
compiled from its whole text (`Restart`). `split` returns None when there is too little to share.
"""
from __future__ import annotations

import collections
import itertools
import re
import threading
from ctypes import PyDLL, byref, c_char_p, string_at
from dataclasses import dataclass, field

import llvmlite.binding as llvm
from llvmlite import ir
from llvmlite.binding import ffi

from . import gil_handoff, opt_levels
from .ir_text import function_text, prototype_text
from .kernels import GENERIC_PREFIX
from .llvm_jit import borrowed_target_machine, load_objects

MIN_MOVED_LINES = 300          # below this, a second thread costs more than it saves
PART_WEIGHT = 1500             # weighted lines: a tier's finished kernels ship once they weigh this much, or
IDLE_PART_WEIGHT = 150         # this much while thread 2 has nothing to do (a part costs ~3 ms of setup)
END_SHARE = 3                  # at the end a part takes about 1/END_SHARE of the weight left: parts shrink
END_PART_WEIGHT = 400          # the end's parts weigh at least this,
MIN_PART_WEIGHT = 150          # and a tier's units left that weigh less stay in the entry part
LIGHT_COST = 0.6               # LLVM time per weighted line of a light part relative to a hot one (queue order)
WORKER_WEIGHT = 1.6            # LLVM time per line of a worker (vectorized loops) relative to the entry's
OPTNONE_WEIGHT = 0.2           # and of an optnone function (pool launches, kernels.py): no pipeline, fast isel
# pool workers (parallel.py), kernels (kernels.py) and generic kernels (kernel_generic.py), which kernels call
_MOVABLE = re.compile(r"xlapy_(task|kernel|shared)")
_REF = re.compile(r'@"([^"]+)"')
_DEFINED = re.compile(r'^define [^@]*@"([^"]+)"', re.M)
_BRANCH = re.compile(r"^\s+(br|switch|indirectbr|callbr|invoke) ", re.M)
_serial = itertools.count()


@dataclass
class Part:
    text: str
    tier: str
    units: list = field(default_factory=list)      # [(weight, [its functions' text as the part holds it])]

    @property
    def cost(self) -> float:
        return sum(w for w, _ in self.units) * (LIGHT_COST if self.tier == opt_levels.LIGHT else 1.0)


class InvalidIR(Exception):
    """A part does not parse or verify (an emitter bug)."""


class Restart(Exception):
    """Something outside a unit shipped early calls one of its internal members: compile the whole text."""


def _items(text: str) -> list[tuple[str, str]]:
    """The top-level items of printed IR, in order: (kind, text) with kind header/define/declare/global/meta."""
    items, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("define "):
            j = lines.index("}", i)              # the function's last line
            items.append(("define", "\n".join(lines[i:j + 1])))
            i = j + 1
            continue
        kind = ("declare" if line.startswith("declare ") else "global" if line.startswith("@")
                else "meta" if line.startswith("!") else "header")
        items.append((kind, line))
        i += 1
    return items


def _weight(name: str, text: str) -> float:
    if " optnone" in text[:text.find("\n")]:
        return text.count("\n") * OPTNONE_WEIGHT
    return text.count("\n") * (WORKER_WEIGHT if _MOVABLE.match(name) else 1.0)


def _declaration(definition: str) -> str:
    """`declare` for a moved function, from the first line of its definition (the signature, no attributes)."""
    header = definition.split("\n", 1)[0]
    return "declare " + header[len("define "):header.index(")") + 1]


def _units(defs: dict[str, str], pinned=frozenset()) -> list[tuple[float, str, list[str]]]:
    """What can move to a part: a kernel (kernels.py) with the pool workers it calls, a worker that the
    entry calls directly, or a generic kernel (kernel_generic.py), a unit of its own that several kernels call (it
    is external in its part, as roots are). A unit moves whole and only when nothing outside it refers to its
    members (a function every kernel calls, as the profiler's, keeps the kernels that call it in the entry part).
    A member that is neither (a scatter's combiner) moves when it is internal and no global names it (`pinned`)."""
    refs = {name: (set(_REF.findall(t)) - {name}) & defs.keys() for name, t in defs.items()}
    users: dict[str, set[str]] = {name: set() for name in defs}
    for name, targets in refs.items():
        for target in targets:
            users[target].add(name)
    units = []
    for name in defs:
        generic = name.startswith(GENERIC_PREFIX)
        if not _MOVABLE.match(name) or not generic and any(_MOVABLE.match(u) for u in users[name]):
            continue                         # not movable, or moves with the kernel that calls it
        members, stack = {name}, [name]
        while stack:
            for target in refs[stack.pop()]:
                if target not in members and not target.startswith(GENERIC_PREFIX):   # a unit of its own
                    members.add(target)
                    stack.append(target)
        if all(_MOVABLE.match(m) or (m not in pinned and defs[m].startswith("define internal ")) for m in members) \
                and all(users[m] <= members for m in members - {name}):
            units.append((sum(_weight(m, defs[m]) for m in members), name, sorted(members)))
    return units


def _optnone(definition: str) -> bool:
    return " optnone" in definition[:definition.find("\n")]


def _split_launch(root: str, members: dict[str, str]) -> list[tuple[bool, str, dict[str, str]]]:
    """A unit as pieces for parts of their own: [(launch?, root, {name: text})]. A pool kernel whose launch code
    and workers are `optnone` (kernels._launch_only, parallel.py) gives a launch piece (those, for the launch tier's
    O0 code generation: opt_levels.py) and a piece per loop body they call (with what only that body calls), each
    body a root of its own (external: the worker calls it from another part; optnone code inlines nothing). Any
    other unit, or one whose bodies share a helper or call back into launch code, is one piece."""
    launch = {n: t for n, t in members.items() if _optnone(t)}
    if root not in launch or len(launch) == len(members):
        return [(root in launch, root, members)]
    refs = {n: (set(_REF.findall(t)) - {n}) & members.keys() for n, t in members.items()}
    bodies = sorted({r for n in launch for r in refs[n]} - launch.keys())
    owner: dict[str, str] = {}
    for body in bodies:
        stack = [body]
        owner[body] = body
        while stack:
            for target in refs[stack.pop()]:
                if target in launch or owner.get(target, body) != body:
                    return [(False, root, members)]            # calls launch code, or a helper two bodies share
                if target not in owner:
                    owner[target] = body
                    stack.append(target)
    if len(owner) + len(launch) != len(members) \
            or any(owner.get(u, u) != owner[n] for n in owner if n not in bodies for u in members if n in refs[u]):
        return [(False, root, members)]
    return [(True, root, launch)] + [(False, b, {n: members[n] for n in members if owner.get(n) == b})
                                     for b in bodies]


class Session:
    """One module's LLVM parts: `add_kernel` during emission (parts of finished kernels go to thread 2 as they
    fill), `finish` with the whole text at the end. `tier_of(function name)` is opt_levels.Tiers.of."""

    def __init__(self, tier_of=None, stream: bool = True, run: bool = True):
        self.tier_of = tier_of or (lambda name: opt_levels.HOT)
        self.stream, self.run = stream, run
        self.tag = f"xlapy_p{next(_serial)}_"
        self.rename: dict[str, str] = {}       # every moved function: original name -> its name in the parts
        self.roots: set[str] = set()           # the moved functions other parts call (external)
        self.printed: dict[str, str] = {}      # the text of each moved function and global used, as printed
        self.declarations: dict[str, str] = {} # moved root's new name -> its `declare`
        self._final: dict[str, str] = {}        # add_kernel's `printed`: texts of final functions not moved yet
        self._buckets = {tier: [] for tier in opt_levels.TIERS}    # units waiting: (weight, root, {name: text})
        self._weights = dict.fromkeys(opt_levels.TIERS, 0.0)
        self._launch_roots: set[str] = set()   # roots of launch pieces waiting in a bucket with their bodies
        self._launch_moved: list = []          # launch pieces moved with their bodies, in no part yet
        self._parts: list[Part] = []           # every part, in order; results by index
        self._queue: collections.deque[int] = collections.deque()
        self._results: dict[int, tuple[bytes, bytes]] = {}
        self._error: BaseException | None = None
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._busy = False                     # thread 2 is compiling a part
        self._handoff = False                  # this session holds gil_handoff's short interval
        self._closed = False                   # no more parts will come: thread 2 ends once the queue is empty

    # -- during emission -----------------------------------------------------------------------------
    def add_kernel(self, module, kernel, printed: dict[str, str] | None = None) -> None:
        """`kernel` (an llvmlite ir.Function of `module`) is final: queue it, with the workers it calls, for a part.
        `printed`: texts of functions printed since they were final (kernels.KernelCache printed each one to key
        it, just before this call), so they are not printed again."""
        if not self.stream:
            return
        printed = printed or {}
        self._final = printed
        members = {kernel.name: printed.get(kernel.name) or function_text(kernel)}
        stack = [kernel.name]
        while stack:
            for ref in _REF.findall(members[stack.pop()]):
                if ref in members:
                    continue
                g = module.globals.get(ref)
                if getattr(g, "blocks", None):                  # a defined function
                    if ref in self.rename or not _MOVABLE.match(ref):
                        return                                   # left for the end (see the docstring)
                    members[ref] = printed.get(ref) or function_text(g)
                    stack.append(ref)
        tier = self.tier_of(kernel.name)
        for launch, root, piece in _split_launch(kernel.name, members):
            weight = sum(_weight(n, t) for n, t in piece.items())
            if launch:
                self._launch_roots.add(root)       # moved with its bodies (or alone, when it has none)
            self._buckets[tier].append((weight, root, piece))
            self._weights[tier] += weight
        idle = self.run and not self._busy and not self._queue
        if self._weights[tier] >= (IDLE_PART_WEIGHT if idle else PART_WEIGHT):
            self._ship(tier, self._header(module), module.globals)

    def _header(self, module) -> list[str]:
        return [f'target triple = "{module.triple}"', f'target datalayout = "{module.data_layout}"',
                *[t.get_declaration() for t in module.get_identified_types().values()]]

    def _ship(self, tier: str, header: list[str], globals_: dict) -> None:
        """A part of the tier's waiting units; their launch pieces, moved along, wait for a launch part."""
        units, self._buckets[tier], self._weights[tier] = self._buckets[tier], [], 0.0
        is_launch = [root in self._launch_roots for _, root, _ in units]
        self._launch_roots.difference_update(root for _, root, _ in units)
        moved = self._move(units)
        self._launch_moved += [m for m, launch in zip(moved, is_launch) if launch]
        rest = [m for m, launch in zip(moved, is_launch) if not launch]
        if rest:
            self._submit(self._part(tier, rest, header, globals_))
        if sum(w for w, _ in self._launch_moved) >= PART_WEIGHT:
            launch, self._launch_moved = self._launch_moved, []
            self._submit(self._part(opt_levels.LAUNCH, launch, header, globals_))

    def _move(self, units: list) -> list[tuple[float, list[str]]]:
        """Units (weight, root, {name: text}) renamed for their parts: [(weight, [function texts])]."""
        for _, root, members in units:
            self.roots.add(root)
            for name in members:
                self.rename[name] = self.tag + name
            self.printed.update(members)
            self.declarations[self.tag + root] = _declaration(self._external(members[root]))
        return [(weight, [self._external(text) if name == root else self._renamed(text)
                          for name, text in members.items()]) for weight, root, members in units]

    def _part(self, tier: str, moved: list, header: list[str], globals_: dict) -> Part:
        bodies = [body for _, texts in moved for body in texts]
        return Part(self._with_context(header, bodies, globals_), tier, moved)

    def _renamed(self, text: str) -> str:
        return _REF.sub(lambda m: f'@"{self.rename.get(m.group(1), m.group(1))}"', text)

    def _external(self, definition: str) -> str:
        """A moved root's definition as its part holds it: renamed, external."""
        return self._renamed(definition).replace("define internal ", "define ", 1)

    def _with_context(self, header: list[str], bodies: list[str], globals_: dict) -> str:
        """A part's text: the header, then the declarations and globals its bodies name, then the bodies."""
        defined = {_REF.search(b).group(1) for b in bodies}
        context, seen = [], set(defined)
        for body in bodies:
            for ref in _REF.findall(body):
                if ref in seen:
                    continue
                seen.add(ref)
                g = globals_.get(ref)
                if isinstance(g, str):                       # printed text (the end's split)
                    context.append(g)
                elif getattr(g, "blocks", None):             # a function defined in the module (not a kernel's)
                    context.append(_declaration(prototype_text(g)))
                elif g is not None:                          # a declaration, a global variable (printed once)
                    context.append(self._print_global(g))
                elif ref in self.declarations:               # a moved root of another part
                    context.append(self.declarations[ref])
        return "\n".join(header + context + bodies) + "\n"

    def _print_global(self, g) -> str:
        if not hasattr(g, "args"):               # a variable: final once made (constants); functions may gain bodies
            return self.printed.setdefault(g.name, str(g))
        return function_text(g)

    def module_text(self, module) -> str:
        """str(module) (llvmlite's printing), reusing the text of the functions printed when they moved or were
        final (add_kernel's `printed`); the rest is printed by ir_text.function_text, llvmlite's text faster."""
        lines = [f'; ModuleID = "{module.name}"', *self._header(module)[:2], "",
                 *[t.get_declaration() for t in module.get_identified_types().values()]]
        printed, final = self.printed, self._final
        lines += [printed.get(name) or final.get(name) or (function_text(g) if isinstance(g, ir.Function) else str(g))
                  for name, g in module.globals.items()]
        lines += module._get_metadata_lines()
        return "\n".join(lines)

    # -- threads -------------------------------------------------------------------------------------
    def _submit(self, part: Part) -> None:
        with self._lock:
            self._parts.append(part)
            if not self.run:
                return
            self._queue.append(len(self._parts) - 1)
            self._lock.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._drain, daemon=True)
                gil_handoff.acquire()            # released by close(), once the thread has ended
                self._handoff = True
                self._thread.start()

    def _next(self, wait: bool = False) -> int | None:
        """The next part nobody started; None when there is none (`wait`: none will come any more)."""
        with self._lock:
            while wait and not self._queue and not self._closed and self._error is None:
                self._lock.wait()
            return self._queue.popleft() if self._queue and self._error is None else None

    def _drain(self) -> None:
        while (k := self._next(wait=True)) is not None:
            self._busy = True
            try:
                self._results[k] = compile_part(self._parts[k])
            except BaseException as e:            # reported by the calling thread
                self._error = e
            finally:
                self._busy = False

    # -- the end -------------------------------------------------------------------------------------
    def finish(self, text: str, entry: str):
        """Compile the rest of the module (`text`, the whole module as printed) and link every part:
        (llvm_jit.OwnCode, entry address, [the parts' OptimizedIR], [object files]). Raises Restart when
        the text calls a function shipped as internal; nothing of the session is then used."""
        try:
            entry_text = self.split_rest(text)
            with self._lock:
                self._closed = True                              # every part is queued
                self._lock.notify_all()
            results = {-1: compile_part(Part(entry_text, _entry_tier(entry_text, entry)))}
            while (k := self._next()) is not None:            # parts thread 2 has not started
                results[k] = compile_part(self._parts[k])
        except BaseException as e:
            self.close(abandon=e)
            raise
        self.close()
        if self._error is not None:
            raise self._error
        results.update(self._results)
        objects = [results[k][0] for k in sorted(results)]
        code, address = load_objects(objects, entry, *_target(entry_text))
        if not address:
            raise RuntimeError(f"the linked objects have no {entry}")
        return code, address, [results[k][1] for k in sorted(results)], objects

    def close(self, abandon: BaseException | None = None) -> None:
        """Wait for thread 2 (after an error too: it must not outlive what it compiles); `abandon` (the error
        that ends the compile) drops the parts not started."""
        with self._lock:
            if abandon is not None and self._error is None:
                self._error = abandon
            if self._error is not None:
                self._queue.clear()
            self._closed = True
            self._lock.notify_all()
            thread = self._thread
            handoff, self._handoff = self._handoff, False
        if thread is not None:
            thread.join()
        if handoff:
            gil_handoff.release()

    def split_rest(self, text: str) -> str:
        """Ship the movable units not moved yet in parts of their tiers; returns the entry part's text (what is
        not moved, calling the moved roots by their new names)."""
        items = _items(text)
        defs = {m.group(1): t for kind, t in items if kind == "define" for m in [_REF.search(t)] if m}
        rest = {n: t for n, t in defs.items() if n not in self.rename}
        for n, t in rest.items():
            if any(r in self.rename and r not in self.roots for r in _REF.findall(t)):
                raise Restart(f"{n} calls a function moved as internal")
        for n in self.rename:
            for r in _REF.findall(self.printed[n]):
                if r in rest:
                    raise Restart(f"the moved {n} calls {r}, defined later")
        globals_ = {}
        for kind, t in items:
            if kind in ("declare", "global"):
                m = _REF.search(t)
                if m:
                    globals_[m.group(1)] = t
        header = [t for kind, t in items if kind == "header" and t.startswith(("target ", "%"))]
        fresh = {tier: [] for tier in opt_levels.TIERS}            # units not moved yet: (weight, root, members)
        bodies: dict[str, list[str]] = {}                          # a fresh launch piece's root -> its bodies
        pinned = {r for kind, t in items if kind == "global" for r in _REF.findall(t)}
        for _, root, members in _units(rest, pinned):
            pieces = _split_launch(root, {m: rest[m] for m in members})
            for launch, piece_root, piece in pieces:
                fresh[opt_levels.LAUNCH if launch else self.tier_of(root)].append(
                    (sum(_weight(n, t) for n, t in piece.items()), piece_root, piece))
                if launch:
                    bodies[piece_root] = [r for _, r, _ in pieces[1:]]
        shipped = {tier: [] for tier in opt_levels.TIERS}          # parts nobody started: cut again below
        shipped[opt_levels.LAUNCH], self._launch_moved = self._launch_moved, []
        with self._lock:
            while self._queue:
                part = self._parts[self._queue.pop()]
                shipped[part.tier] += part.units
        left = sum(w for units in (*fresh.values(), *shipped.values()) for w, *_ in units)
        staying = {n for n in rest if _MOVABLE.match(n)} \
            - {m for units in fresh.values() for _, _, members in units for m in members}
        if left >= MIN_MOVED_LINES or self._parts:
            parts = []
            for tier in opt_levels.TIERS:
                if tier == opt_levels.LAUNCH:                      # (last) a launch piece moves with its bodies
                    fresh[tier] = [u for u in fresh[tier] if all(b in self.rename for b in bodies[u[1]])]
                if sum(w for w, *_ in fresh[tier]) + sum(w for w, _ in shipped[tier]) < MIN_PART_WEIGHT \
                        and staying:                               # the entry part is hot anyway: stays there
                    fresh[tier] = []
                units = sorted(self._move(fresh[tier]) + shipped[tier], key=lambda u: -u[0])
                for group in _cut(units, left):
                    parts.append(self._part(tier, group, header, globals_))
                    left -= sum(w for w, _ in group)
            for part in sorted(parts, key=lambda p: -p.cost):     # the longest first: both threads end together
                self._submit(part)
        entry_items = []
        for kind, t in items:
            m = _REF.search(t) if kind == "define" else None
            if m is not None and m.group(1) in self.rename:
                continue
            entry_items.append(self._renamed(t))
        used = set(_REF.findall("\n".join(entry_items)))
        entry_items += [d for name, d in self.declarations.items() if name in used]
        return "\n".join(entry_items) + "\n"


def _entry_tier(text: str, entry: str) -> str:
    """The entry part's tier: opt_levels.ENTRY when it defines no kernel or pool worker (the entry function, maybe
    a helper nothing moved calls), STRAIGHT when that code has no branch either, else hot (kernels that could not
    move, light rests kept there)."""
    defined = _DEFINED.findall(text)
    if entry not in defined or any(_MOVABLE.match(n) for n in defined):
        return opt_levels.HOT
    return opt_levels.ENTRY if _BRANCH.search(text) else opt_levels.STRAIGHT


def _cut(units: list, left: float) -> list[list]:
    """Units (heaviest first) in groups of about left/END_SHARE each, `left` the weight left of every tier (it
    shrinks as groups are cut), at least END_PART_WEIGHT; a rest lighter than MIN_PART_WEIGHT joins the last."""
    groups, group, weight = [], [], 0.0
    total = sum(w for w, _ in units)
    for unit in units:
        group.append(unit)
        weight += unit[0]
        total -= unit[0]
        if weight >= max(END_PART_WEIGHT, left / END_SHARE) and total >= MIN_PART_WEIGHT:
            groups.append(group)
            left -= weight
            group, weight = [], 0.0
    if group:
        groups.append(group)
    return groups


def split(text: str, tier_of=None) -> tuple[str, list[Part], list[str]] | None:
    """The whole-text split (no streaming): (entry part text, parts, moved function names), or None when there
    is too little to move."""
    session = Session(tier_of, stream=False, run=False)
    entry_text = session.split_rest(text)
    if not session._parts:
        return None
    return entry_text, session._parts, sorted(session.rename)


def _target(text: str) -> tuple[str, str]:
    triple = re.search(r'^target triple = "([^"]*)"', text, re.M)
    layout = re.search(r'^target datalayout = "([^"]*)"', text, re.M)
    return (triple.group(1) if triple else llvm.get_process_triple(), layout.group(1) if layout else "")


# Parsing goes through the raw ctypes function too, as the pipeline and the object emission do, and the
# short calls through _held: llvmlite's wrappers hold one process-wide lock for the whole call, so while thread 2 parsed a part
# (about 5 ms for 2000 lines) the calling thread waited at its own next call into llvmlite (the thread pool's
# function addresses during emission: 13-22 ms of vit/fwd's calling thread). Each part has its own context, so
# nothing these calls touch is shared.
def _raw(function: str, *args):
    """ffi.lib.<function>(*args, char** message) without llvmlite's lock: (result, message or "")."""
    message = c_char_p(None)
    result = getattr(ffi.lib, function)._cfn(*args, byref(message))
    if not message.value:
        return result, ""
    try:
        return result, message.value.decode("utf8", "replace")
    finally:
        ffi.lib.LLVMPY_DisposeString._cfn(message)


# The short calls of a part (making and disposing its context, pass builder and pipeline, reading and freeing the
# object's buffer, verifying and disposing the module) keep the GIL and skip llvmlite's lock and wrappers: a part
# releases the GIL three times (parse, pipeline, object emission) instead of 15. A one-function part, 60 in a row,
# medians of 5 interleaved rounds on the loaded machine: 1.30 -> 1.05 ms alone, 2.61 -> 2.37 ms beside a thread
# running Python (a short call rarely lost the GIL: it returned before the other thread woke to take it).
_HELD: dict = {}                # function name -> its PyDLL function (llvmlite's argument and result types)


def _held(function: str, *args):
    """ffi.lib.<function>(*args) keeping the GIL (ctypes' PyDLL convention) and without llvmlite's lock."""
    fn = _HELD.get(function)
    if fn is None:
        library = _HELD.get(None) or _HELD.setdefault(None, PyDLL(ffi.lib._name, handle=ffi.lib._lib._handle))
        cfn = getattr(ffi.lib, function)._cfn
        fn = library[function]
        fn.argtypes, fn.restype = cfn.argtypes, cfn.restype
        _HELD[function] = fn
    return fn(*args)


def _parse(text: str, context):
    pointer, error = _raw("LLVMPY_ParseAssembly", context, c_char_p(text.encode("utf8")))
    mod = llvm.ModuleRef(pointer, context)
    if error:
        _close(mod)
        raise InvalidIR(f"LLVM IR parsing error\n{error}")
    message = c_char_p(None)
    if _held("LLVMPY_VerifyModule", mod, byref(message)):     # ~0.25 ms a part: cheaper held than handed over
        try:
            raise InvalidIR(message.value.decode("utf8", "replace") if message.value else "invalid module")
        finally:
            if message.value:
                _held("LLVMPY_DisposeString", message)
            _close(mod)
    return mod


def _close(mod) -> None:
    if not mod.closed:
        _held("LLVMPY_DisposeModule", mod)
        mod.detach()


def compile_part(part: Part) -> tuple[bytes, "OptimizedIR"]:
    """Optimize and code-generate one part in a context of its own: (object file, its optimized IR, printed on
    first use). The parse, the pass pipeline and the object emission go through the raw ctypes functions (no
    llvmlite lock, GIL released)."""
    context = llvm.context.ContextRef(_held("LLVMPY_ContextCreate"))
    try:
        mod = _parse(part.text, context)
        try:
            with borrowed_target_machine(opt_levels.codegen_level(part.tier)) as tm:
                _optimize(mod, tm, part.tier)
                obj = _emit(mod, tm)
        finally:
            # the module is disposed here, before its context: left to the garbage collector, the two could be
            # freed in either order, and a module outliving its context crashes the process
            _close(mod)
    finally:
        _held("LLVMPY_ContextDispose", context)
        context.detach()
    return obj, OptimizedIR(part.text, part.tier)


class OptimizedIR:
    """A part's optimized IR (Executable.llvm_ir_optimized), made when first printed: its tier's pipeline is run on
    its text again, which gives the same IR (the IR before code generation, as the serial path's). Writing every
    part's bitcode during the compile for the few who read it cost ~0.5 ms a part (3.7 ms of vit/fwd's LLVM)."""
    __slots__ = ("text", "tier", "_printed")

    def __init__(self, text: str, tier: str):
        self.text, self.tier, self._printed = text, tier, None

    def __str__(self) -> str:
        if self._printed is None:
            context = llvm.create_context()
            try:
                mod = _parse(self.text, context)
                try:
                    with borrowed_target_machine(opt_levels.codegen_level(self.tier)) as tm:
                        _optimize(mod, tm, self.tier)
                    self._printed = str(mod)
                finally:
                    mod.close()
            finally:
                context.close()
        return self._printed


def _optimize(mod, tm, tier: str) -> None:
    """`mod` through its tier's pipeline (the pass builder reads `tm`'s cost model)."""
    pto = opt_levels.tuning(tier)
    pb = _held("LLVMPY_CreatePassBuilder", tm, pto)
    mpm = _held("LLVMPY_buildPerModuleDefaultPipeline", pb, pto.speed_level)
    try:
        ffi.lib.LLVMPY_RunNewModulePassManager._cfn(mpm, mod, pb)
    finally:
        _held("LLVMPY_DisposeNewModulePassManger", mpm)   # the pass manager before the builder whose analyses it used
        _held("LLVMPY_DisposePassBuilder", pb)


def _emit(mod, tm) -> bytes:
    """The object file `tm` makes of `mod`."""
    err = c_char_p(None)
    buffer = ffi.lib.LLVMPY_TargetMachineEmitToMemory._cfn(tm, mod, 1, byref(err))
    try:
        if not buffer:
            raise RuntimeError(f"LLVM could not emit an object: {(err.value or b'').decode('utf8', 'replace')}")
        return string_at(_held("LLVMPY_GetBufferStart", buffer), _held("LLVMPY_GetBufferSize", buffer))
    finally:
        if buffer:
            _held("LLVMPY_DisposeMemoryBuffer", buffer)
        if err.value:
            _held("LLVMPY_DisposeString", err)
