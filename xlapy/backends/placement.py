"""Placement: checking a module against its backend's opcodes, and soft placement over several backends.

| rule | |
|---|---|
| what is checked | the live instructions of the entry computation (those the root depends on, and side-effecting ones), each with every instruction of the computations it calls (while, conditional, call, fusion, reduce bodies ...) |
| every opcode supported | the backend's factory compiles the module as it is |
| an opcode missing, no soft placement | `UnsupportedOpcodeError` naming the opcode, the instruction and the backend |
| an opcode missing, `allow_soft_placement=True` | the entry is split; each part is compiled on its backend and a `PlacedExecutable` runs the parts in order; one `SoftPlacementWarning` names each displaced opcode and the backend that runs it |

Soft placement assigns each live entry instruction, in post order, to the chosen backend if it supports the
instruction and everything it calls, else to the first backend of `registry.names()` (highest priority first,
so the interpreter, priority 0, comes after the built-in cpu) that does. Consecutive instructions with the same
backend form one part, as long as possible. A part is a Module of its own: its parameters are the values it reads
from the entry's parameters or from earlier parts, its root a tuple of the values later parts or the entry's
root read, and it keeps the computations its instructions call. The chosen backend's parts get the compile
options; the others compile with their defaults. The parts pass numpy arrays (or tuples of them).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import UnsupportedOpcodeError, XlapyError
from ..hlo import Computation, Instruction, Module
from ..hlo.ir import dependencies
from ..hlo.shape import Shape
from . import registry
from .registry import Backend


class SoftPlacementWarning(UserWarning):
    """Soft placement ran part of a module on another backend; the message names each such opcode and backend."""


def compile_placed(module: Module, backend: Backend, allow_soft_placement: bool = False, **options) -> Any:
    """Compile `module` on `backend` if it supports every live opcode; else split it (soft placement) or raise."""
    if module.entry is None:
        raise XlapyError(f"module {module.name} has no entry computation")
    opcodes = _Opcodes()
    live = live_instructions(module.entry)
    lacking = [inst for inst in live if backend.missing(opcodes(inst))]
    if not lacking:
        return backend.factory(module, **options)
    if not allow_soft_placement:
        raise _unsupported(module, backend, lacking, opcodes)
    parts = partition(module, backend, live, opcodes)
    warnings.warn(_placement_message(module, backend, parts, opcodes), SoftPlacementWarning, stacklevel=3)
    return PlacedExecutable(module, backend.name, [
        (part, part.backend.factory(part_module(module, part, k), **(options if part.backend is backend else {})))
        for k, part in enumerate(parts)])


# -- what a module uses ------------------------------------------------------------------------------------
class _Opcodes:
    """opcodes(inst): inst's opcode and those of every instruction in the computations it calls, transitively
    (memoized per computation)."""

    def __init__(self):
        self._comps: dict[int, frozenset[str]] = {}

    def __call__(self, inst: Instruction) -> frozenset[str]:
        out = {inst.opcode}
        for comp in inst.called_computations():
            out |= self._computation(comp)
        return frozenset(out)

    def _computation(self, comp: Computation) -> frozenset[str]:
        got = self._comps.get(id(comp))
        if got is None:
            self._comps[id(comp)] = frozenset()         # a cycle (none in valid HLO) ends here
            got = frozenset().union(*(self(i) for i in comp.instructions))
            self._comps[id(comp)] = got
        return got


def live_instructions(entry: Computation) -> list[Instruction]:
    """The entry's instructions the root depends on, and the side-effecting ones with theirs, in post order."""
    roots = [i for i in entry.instructions if i.has_side_effect]
    if entry.root is not None:
        roots.append(entry.root)
    live = dependencies(roots)
    return [i for i in entry.post_order() if id(i) in live]


def _where(inst: Instruction, opcode: str) -> str:
    """`instruction NAME` of the first instruction with `opcode` inside inst (inst itself first)."""
    if inst.opcode == opcode:
        return f"instruction {inst.name}"
    stack = list(inst.called_computations())
    seen: set[int] = set()
    while stack:
        comp = stack.pop(0)
        if id(comp) in seen:
            continue
        seen.add(id(comp))
        for i in comp.instructions:
            if i.opcode == opcode:
                return f"instruction {i.name}, in computation {comp.name} called by {inst.name}"
            stack.extend(i.called_computations())
    return f"instruction {inst.name}"


def _unsupported(module: Module, backend: Backend, lacking: list[Instruction], opcodes: _Opcodes
                 ) -> UnsupportedOpcodeError:
    first = lacking[0]
    opcode = backend.missing(opcodes(first))[0]
    others = sorted({op for inst in lacking for op in backend.missing(opcodes(inst))} - {opcode})
    also = f"; it also lacks {', '.join(others)}" if others else ""
    can = [b.name for b in registry.backends() if b is not backend and not b.missing({opcode})]
    elsewhere = f" (backends that have it: {', '.join(can)})" if can else ""
    return UnsupportedOpcodeError(
        f"{backend.name} backend: opcode {opcode} not supported yet ({_where(first, opcode)}, module "
        f"{module.name}){also}; compile with allow_soft_placement=True to run what it lacks on another "
        f"backend{elsewhere}")


# -- partitioning ------------------------------------------------------------------------------------------
@dataclass(eq=False)
class Part:
    """Consecutive entry instructions placed on one backend; `inputs`: the values it reads from outside (entry
    parameters or earlier parts), `outputs`: its values that later parts or the entry's root read."""
    backend: Backend
    instructions: list[Instruction] = field(default_factory=list)
    inputs: list[Instruction] = field(default_factory=list)
    outputs: list[Instruction] = field(default_factory=list)


def partition(module: Module, chosen: Backend, live: Sequence[Instruction] | None = None,
              opcodes: _Opcodes | None = None) -> list[Part]:
    """Split the entry's live instructions into parts by backend (the module docstring's rule)."""
    entry = module.entry
    live = live_instructions(entry) if live is None else live
    opcodes = opcodes or _Opcodes()
    candidates = [chosen] + [b for b in registry.backends() if b is not chosen]
    parts: list[Part] = []
    part_of: dict[int, Part] = {}
    for inst in live:
        if inst.opcode == "parameter":
            continue
        used = opcodes(inst)
        backend = next((b for b in candidates if not b.missing(used)), None)
        if backend is None:
            raise _unplaceable(module, inst, used, candidates)
        if not parts or parts[-1].backend is not backend:
            parts.append(Part(backend))
        parts[-1].instructions.append(inst)
        part_of[id(inst)] = parts[-1]
    outputs: set[int] = set()
    if entry.root is not None and entry.root.opcode != "parameter":
        outputs.add(id(entry.root))
    for part in parts:
        for inst in part.instructions:
            for op in inst.operands:
                if part_of.get(id(op)) is not part and all(op is not x for x in part.inputs):
                    part.inputs.append(op)
                    if op.opcode != "parameter":
                        outputs.add(id(op))
    for part in parts:
        part.outputs = [i for i in part.instructions if id(i) in outputs]
    return parts


def _unplaceable(module: Module, inst: Instruction, used: frozenset[str], candidates: list[Backend]
                 ) -> UnsupportedOpcodeError:
    """No backend has every opcode `inst` uses: name one nobody has, else say that none has them all."""
    nobody = sorted(op for op in used if all(b.missing([op]) for b in candidates))
    registered = ", ".join(registry.names())
    if nobody:
        what = f"opcode {nobody[0]} ({_where(inst, nobody[0])}, module {module.name})"
    else:
        what = (f"all of the opcodes {', '.join(sorted(used))} that instruction {inst.name} uses (module "
                f"{module.name}); a part of a computation is not split off")
    return UnsupportedOpcodeError(f"no backend supports {what}; registered backends: {registered}")


def part_module(module: Module, part: Part, k: int) -> Module:
    """Part k of `module` as a Module of its own (the module docstring's rule); `module` is not modified."""
    clone = module.clone()
    by_name = {i.name: i for i in clone.entry.instructions}
    mapping: dict[str, Instruction] = {}
    insts: list[Instruction] = []
    for n, value in enumerate(part.inputs):
        param = Instruction("parameter", value.shape, name=value.name, parameter_number=n)
        mapping[value.name] = param
        insts.append(param)
    members = {i.name for i in part.instructions}
    for inst in part.instructions:
        original = by_name[inst.name]
        new = original.clone_with([mapping[o.name] for o in original.operands], name=original.name)
        new.control_predecessors = [mapping[p.name] for p in original.control_predecessors if p.name in members]
        mapping[inst.name] = new
        insts.append(new)
    outs = [mapping[o.name] for o in part.outputs]
    root = Instruction("tuple", Shape.tuple_of([o.shape for o in outs]), outs, name="outputs")
    insts.append(root)
    out = Module(f"{module.name}.part{k}")
    for comp in clone.computation_post_order():
        if comp is not clone.entry:
            out.add_computation(comp)
    out.add_computation(Computation(clone.entry.name, insts, root), entry=True)
    out.remove_unreachable_computations()
    return out


def _placement_message(module: Module, chosen: Backend, parts: list[Part], opcodes: _Opcodes) -> str:
    moved = []
    for part in parts:
        if part.backend is chosen:
            continue
        for inst in part.instructions:
            lacks = ", ".join(f"{op} ({_where(inst, op)})" for op in chosen.missing(opcodes(inst)))
            moved.append(f"it lacks {lacks}: {inst.name} runs on backend {part.backend.name!r}")
    return f"soft placement in module {module.name}, backend {chosen.name!r}: " + "; ".join(moved)


# -- running the parts -------------------------------------------------------------------------------------
class PlacedExecutable:
    """Runs a soft-placed module: each part's executable in order, values passed between them as numpy arrays.
    Offers what every Executable does: `exe(*arrays)`, `as_text()`, `module` (the module as given), `backend`
    (the chosen backend's name); `parts` lists (backend name, executable)."""

    def __init__(self, module: Module, backend: str, compiled: list[tuple[Part, Any]]):
        self.module, self.backend = module, backend
        self._params = module.entry.parameters
        self._root = module.entry.root
        self._steps = [(exe, part.inputs, part.outputs) for part, exe in compiled]
        self.parts = [(part.backend.name, exe) for part, exe in compiled]

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self._params):
            raise XlapyError(f"module {self.module.name} takes {len(self._params)} arguments, got {len(args)}")
        env: dict[int, Any] = {id(p): a for p, a in zip(self._params, args)}
        for exe, inputs, outputs in self._steps:
            results = exe(*[env[id(v)] for v in inputs])
            env.update(zip([id(v) for v in outputs], results))
        return env[id(self._root)]

    def as_text(self) -> str:
        return "\n".join(f"// part {k}: backend {name}\n{exe.as_text()}" for k, (name, exe) in enumerate(self.parts))


__all__ = ["SoftPlacementWarning", "compile_placed", "live_instructions", "partition", "part_module", "Part",
           "PlacedExecutable"]
