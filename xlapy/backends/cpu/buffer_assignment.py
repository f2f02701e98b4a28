"""Liveness-based buffer assignment for the emitter's scratch block, and its report.

The emitter emits a computation in post order, which is the order the code runs. Every scratch slice handed out
while one instruction is emitted is either part of that instruction's value (its result buffers) or internal to
it (staging copies, im2col patches, the temporaries of a called computation that did not reach its root). The
internal ones are released as soon as the instruction is emitted; a result slice is released after the last
instruction that reads the value or an alias of it (a bitcast, a get-tuple-element, an in-place update) has been
emitted. Root values are never released by their computation: they belong to the caller (a while copies them
into its state, a call returns them). Parameters, constants and entry results are not in scratch at all.

A released slice goes back to ScratchAllocator's free list and serves later values of any computation: a while
body runs between its condition and the next condition, so its temporaries never overlap a live outer value.
The emitter is one pass, so the slices are decided as it goes; the record below is what the
`module_NNNN.NAME.cpu-buffer-assignment.txt` dump prints.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...hlo import Instruction
from .aliasing import ComputationAliasing
from .buffers import ScratchAllocator

# Switches for comparisons and tests (the optimizations they disable are always correct to run).
REUSE_TEMPORARIES = True
IN_PLACE_UPDATES = True


@dataclass
class Allocation:
    index: int
    kind: str                  # parameter / constant / temp / output
    size: int
    offset: int | None = None  # in the scratch block, for temps
    values: list[str] = field(default_factory=list)
    released_at: str = ""


class _Frame:
    """One computation being emitted: its alias analysis and the live slices its values hold."""

    def __init__(self, aliasing: ComputationAliasing):
        self.aliasing = aliasing
        self.position = -1
        self.release_at: dict[int, int] = {}     # offset -> position after which the slice is dead


class BufferAssignment:
    def __init__(self, allocator: ScratchAllocator):
        self.allocator = allocator
        allocator.on_allocate = self._allocated
        self.frames: list[_Frame] = []
        self.pending: list[list[int]] = [[]]      # offsets allocated while the current instruction is emitted
        self.allocations: list[Allocation] = []
        self._by_offset: dict[int, Allocation] = {}   # live temp slices
        self.pointers: dict[int, tuple[object, int]] = {}   # id(pointer) -> (pointer, offset), live slices only
        self._pointers_at: dict[int, list[int]] = {}          # offset -> ids of the pointers into that slice
        self._analyses: dict[tuple[int, bool], ComputationAliasing] = {}

    # -- recording ---------------------------------------------------------------------------------------
    def _allocated(self, offset: int, size: int) -> None:
        self.pending[-1].append(offset)
        alloc = Allocation(len(self.allocations), "temp", size, offset)
        self.allocations.append(alloc)
        self._by_offset[offset] = alloc

    def record(self, kind: str, size: int, value: str) -> None:
        self.allocations.append(Allocation(len(self.allocations), kind, size, None, [value]))

    def name_pointer(self, pointer, offset: int, what: str) -> None:
        self.pointers[id(pointer)] = (pointer, offset)
        self._pointers_at.setdefault(offset, []).append(id(pointer))
        self._by_offset[offset].values.append(f"{what} defined at {self._where()}")

    def alias_pointer(self, new, old, offset: int) -> None:
        """`new` points where `old` does (a kernel's result buffer, named again in its caller: kernels.py)."""
        if id(old) in self.pointers:
            self.pointers[id(new)] = (new, offset)
            self._pointers_at.setdefault(offset, []).append(id(new))

    def _where(self) -> str:
        if not self.frames:
            return "entry"
        frame = self.frames[-1]
        return f"{frame.aliasing.comp.name}:{frame.position}"

    def _release(self, offset: int, where: str) -> None:
        if offset not in self.allocator.live:
            return
        alloc = self._by_offset.pop(offset, None)
        if alloc is not None:
            alloc.released_at = where
        for key in self._pointers_at.pop(offset, ()):
            self.pointers.pop(key, None)
        if REUSE_TEMPORARIES:
            self.allocator.release(offset)
        else:
            self.allocator.live.pop(offset, None)

    # -- the emission protocol ---------------------------------------------------------------------------
    def analysis(self, comp, writable_params: bool, reorder=None) -> ComputationAliasing:
        key = (id(comp), writable_params)
        if key not in self._analyses:
            self._analyses[key] = ComputationAliasing(comp, writable_params, reorder)
        return self._analyses[key]

    def enter(self, comp, writable_params: bool, reorder=None) -> ComputationAliasing:
        """reorder(order) -> order changes the emission order of comp (the entry's; ComputationAliasing)."""
        self.frames.append(_Frame(self.analysis(comp, writable_params, reorder)))
        return self.frames[-1].aliasing

    @property
    def current(self) -> ComputationAliasing | None:
        return self.frames[-1].aliasing if self.frames else None

    def begin(self, position: int) -> None:
        self.frames[-1].position = position
        self.pending.append([])

    def end(self, inst: Instruction, value_pointers: list) -> None:
        """inst (at the frame's position) has been emitted with a value whose array leaves are at these pointers."""
        self.end_group([(inst, value_pointers)])

    def end_group(self, emitted: list[tuple[Instruction, list]]) -> None:
        """Instructions emitted together at the frame's position (concurrent_loops.py: two while loops running at
        once; none: the position of one emitted earlier with its partner), each with its value's leaf pointers.
        A slice of no value is released now, a value's after the value's last use."""
        frame = self.frames[-1]
        here = frame.position
        mine = self.pending.pop()
        last_of: dict[int, int] = {}
        for inst, value_pointers in emitted:
            last = frame.aliasing.last_use(inst)
            for p in value_pointers:
                if id(p) in self.pointers:
                    off = self.pointers[id(p)][1]
                    last_of[off] = max(last_of.get(off, last), last)
        where = ", ".join(inst.name for inst, _ in emitted) or "position"
        where = f"{where} ({self._where()})"
        for off in mine:
            if off in last_of:
                frame.release_at[off] = last_of[off]
            else:
                self._release(off, where)
        for off, last in last_of.items():   # an alias or in-place update extends the life of the slice underneath
            if off in frame.release_at:
                frame.release_at[off] = max(frame.release_at[off], last)
        for off in [o for o, p in frame.release_at.items() if p <= here]:
            del frame.release_at[off]
            self._release(off, f"after {where}")

    def leave(self) -> None:
        """The computation is emitted: its root's slices pass to the instruction that emitted it (the caller)."""
        frame = self.frames.pop()
        self.pending[-1].extend(frame.release_at)

    # -- report --------------------------------------------------------------------------------------------
    def to_text(self, module) -> str:
        """The assignment as text: parameters and outputs (caller-owned buffers), constants (globals) and every
        scratch slice with its offset, the values assigned to it and where its live range ends."""
        from .buffers import byte_size
        entry = module.entry
        fixed = [Allocation(0, "parameter", byte_size(s), None, [f"{p.name}{{{k}}} {s}" if p.shape.is_tuple
                                                                   else f"{p.name} {s}"])
                 for p in entry.parameters for k, s in enumerate(x for x in p.shape.leaves() if not x.is_token)]
        tag = (lambda k: f"{{{k}}}") if entry.root.shape.is_tuple else (lambda k: "")
        fixed += [Allocation(0, "output", byte_size(s), None, [f"{entry.root.name}{tag(k)} {s}"])
                  for k, s in enumerate(x for x in entry.root.shape.leaves() if not x.is_token)]
        lines = [f"BufferAssignment for module {module.name} (reuse of dead temporaries "
                 f"{'on' if REUSE_TEMPORARIES else 'off'}, in-place updates {'on' if IN_PLACE_UPDATES else 'off'})",
                 ""]
        for index, a in enumerate(fixed + self.allocations):
            where = f" offset={a.offset}" if a.offset is not None else ""
            lines.append(f"allocation {index}: size={a.size} kind={a.kind}{where}")
            for v in a.values or ["(internal to one instruction)"]:
                lines.append(f"  value: {v}")
            if a.kind == "temp":
                lines.append(f"  live until: {a.released_at or 'the end (a root value)'}")
        total = sum(a.size for a in self.allocations if a.kind == "temp")
        lines += ["", f"total scratch bytes: {self.allocator.size}",
                  f"sum of temp slices: {total} ({total - self.allocator.size} bytes saved by reuse)"]
        return "\n".join(lines) + "\n"


def dump(module, assignment: BufferAssignment) -> None:
    """Write PREFIX.cpu-buffer-assignment.txt when --xla_dump_to asks for this module (XLA: *-buffer-assignment.txt)."""
    from pathlib import Path
    from ... import debug
    from ...passes.dump import file_prefix
    options = debug.options()
    if not options.dumps_module(module.name):
        return
    out = Path(options.dump_to)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{file_prefix(module)}.cpu-buffer-assignment.txt").write_text(assignment.to_text(module))
