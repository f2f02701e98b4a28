"""Kernels recorded once per structure and replayed: an instruction whose kernel (kernels.py) is structurally
equal to one emitted before is not emitted again; its call is made from the recipe the first emission left.

Why: a training step repeats its blocks (ViT's 6 encoder layers, their gradients, Adam's update per parameter):
vit/train emits 880 kernels of which 186 are distinct, and building LLVM IR with llvmlite, then printing it so
KernelCache can find the duplicates, was the largest part of its compile (11 s of thread time, more than LLVM's
optimizer). XLA:CPU's answer is the same: emit a kernel once per fingerprint and call it.

The key is the instruction's structure, independent of names: opcode, shapes with layouts, attributes, the
called computations' structure (recursively), constants' bytes; and of its place in the emitter: the shapes of
the operand buffers, which operand leaves (and preassigned results) are one buffer, the bytes of operands that
are constants (a kernel names their global), and whether each result leaf has a preassigned buffer. Context
queries the emission made (may this instruction update an operand in place?) are the recipe's guards: a later
instruction replays the recipe only when the same queries give the same answers for it.

A recipe says, in terms of roles, what the call passes and what the instruction's value is: operand leaf k, the
preassigned result leaf j, or the n-th scratch slice allocated while the instruction was emitted (replayed by
allocating the same sizes in the same order, so liveness and reuse are what emission would have done). An
emission whose arguments or value cannot be said in roles leaves no recipe.

XLAPY_KERNEL_REPLAY=0 emits every kernel (for comparisons); =check emits every kernel and also checks that the
recipe gives the same call and the same kernel (tests and the model suite run this way in
tests/backends/cpu/test_kernel_replay.py).
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field

import numpy as np
from llvmlite import ir

from ...hlo import ELIDED, Computation, Instruction
from .buffers import BufferRef, ValueTree, leaves
from .parallel import in_caller_region
from .irhelpers import i64

MODE = os.environ.get("XLAPY_KERNEL_REPLAY", "1")       # "1" replay, "0" off, "check" emit and compare

# opcodes whose emission depends on more than the structure (names in runtime tables, host state), anywhere in
# the instruction or its called computations: always emitted
NEVER = frozenset({
    "custom-call", "all-reduce", "all-reduce-start", "all-reduce-done", "all-gather", "all-gather-start",
    "all-gather-done", "reduce-scatter", "all-to-all", "ragged-all-to-all", "collective-permute",
    "collective-permute-start", "collective-permute-done", "collective-broadcast", "send", "send-done", "recv",
    "recv-done", "infeed", "outfeed", "replica-id", "partition-id", "async-start", "async-update", "async-done",
    "scatter", "rng", "rng-get-and-update-state"})

# kernels emitted and replayed in this process (tests read the differences)
STATS = {"emitted": 0, "replayed": 0}

_SKIP_ATTRS = frozenset({"metadata", "backend_config", "frontend_attributes", "sharding", "statistics_viz",
                         "origin"})
_GLOBAL = re.compile(r'@"?([^"\s()]+)"?')


class ReplayMismatch(AssertionError):
    """XLAPY_KERNEL_REPLAY=check: a recipe and a fresh emission disagree (a bug in the key)."""


@dataclass
class Recipe:
    kernel: ir.Function
    args: list[tuple]                       # per kernel argument: ("operand", k) / ("target", j) / ("alloc", n)
    value: object                           # inst's value: nested tuples of (role, shape) leaves, None for tokens
    allocs: list[tuple[int, str | None]]    # (bytes, what the dump calls it, with the name as "{}") in order
    guards: list[tuple[int, bool]] = field(default_factory=list)   # (operand number, may update it in place)


class Recording:
    """What one emission does that a replay must repeat: its scratch allocations and context queries."""

    def __init__(self):
        self.allocs: list[tuple[int, int]] = []      # (offset, bytes)
        self.names: dict[int, str] = {}              # offset -> what name_pointer called it
        self.guards: list[tuple[int, bool]] = []


class KernelReplay:
    def __init__(self, em):
        self.em = em
        self.recipes: dict[str, list[Recipe]] = {}
        self._structure: dict[int, str] = {}        # id(computation) -> digest, for this module's computations
        self.recording: Recording | None = None

    # -- keys ------------------------------------------------------------------------------------------
    def key(self, inst: Instruction, operands: list[ValueTree]) -> str | None:
        if MODE == "0" or self.em.timer is not None:
            return None
        parts = [self._instruction(inst, {})]
        if parts[0] is None:
            return None
        if in_caller_region():          # the same instruction emitted without its pool jobs (a small loop body)
            parts.append("on-caller")
        seen: dict[int, int] = {}
        for k, op in enumerate(operands):
            for leaf in leaves(op):
                p = leaf.pointer
                if not isinstance(p, (ir.Instruction, ir.Argument)):
                    parts.append("const:" + self._constant(p))
                parts.append(f"{k}:{leaf.shape.to_text()}#{seen.setdefault(id(p), len(seen))}")
        targets = self.em.targets
        for j in range(len([s for s in inst.shape.leaves() if not s.is_token])):
            t = targets.get((id(inst), j))
            parts.append("t-" if t is None else f"t{seen.setdefault(id(t.pointer), len(seen))}:{t.shape.dims}")
        return hashlib.sha1("\n".join(parts).encode()).hexdigest()

    def _constant(self, pointer) -> str:
        m = _GLOBAL.search(str(pointer))
        name = m.group(1) if m else None
        if name is None or name not in self.em.b.module.globals:
            return str(pointer)
        return self.em.kernel_cache.key(name)

    def _computation(self, comp: Computation) -> str | None:
        hit = self._structure.get(id(comp))
        if hit is not None or id(comp) in self._structure:
            return hit
        number: dict[int, int] = {}
        lines = []
        for inst in comp.post_order():
            line = self._instruction(inst, number)
            if line is None:
                self._structure[id(comp)] = None
                return None
            number[id(inst)] = len(number)
            lines.append(line)
        lines.append(f"root {number[id(comp.root)]}")
        digest = hashlib.sha1("\n".join(lines).encode()).hexdigest()
        self._structure[id(comp)] = digest
        return digest

    def _instruction(self, inst: Instruction, number: dict[int, int]) -> str | None:
        """One line for inst: operands by their number in the computation (or shape, at the top)."""
        if inst.opcode in NEVER:
            return None
        ops = ",".join(str(number[id(o)]) if id(o) in number else o.shape.to_text() for o in inst.operands)
        attrs = []
        for k in sorted(inst.attrs):
            if k in _SKIP_ATTRS:
                continue
            v = inst.attrs[k]
            if isinstance(v, Computation):
                v = self._computation(v)
                if v is None:
                    return None
            elif isinstance(v, (list, tuple)) and v and all(isinstance(c, Computation) for c in v):
                v = [self._computation(c) for c in v]
                if any(c is None for c in v):
                    return None
            attrs.append(f"{k}={_attr_text(v)}")
        extra = ""
        if inst.opcode == "parameter":
            extra = str(inst.parameter_number)
        elif inst.opcode == "constant":
            extra = _literal_digest(inst)
        return f"{inst.opcode}({ops}){extra} {inst.shape.to_text()} {' '.join(attrs)}"

    # -- replay ----------------------------------------------------------------------------------------
    def find(self, key: str, inst: Instruction, operands: list[ValueTree]) -> Recipe | None:
        for recipe in self.recipes.get(key, ()):
            if all(self.em.may_update_in_place(inst, n, operands[n], record=False) == answer
                   for n, answer in recipe.guards):
                return recipe
        return None

    def replay(self, recipe: Recipe, inst: Instruction, operands: list[ValueTree]) -> ValueTree:
        em = self.em
        b = em.b
        offsets = [em.scratch.allocate(nbytes) for nbytes, _ in recipe.allocs]
        geps: dict[int, ir.Value] = {}

        def gep(n: int) -> ir.Value:
            p = geps.get(n)
            if p is None:
                p = geps[n] = b.gep(em.scratch_arg, [i64(offsets[n])], inbounds=True)
                what = recipe.allocs[n][1]
                if what is not None:
                    em.assignment.name_pointer(p, offsets[n], what.replace("{}", inst.name, 1))
            return p
        op_leaves = [leaf.pointer for op in operands for leaf in leaves(op)]

        def value_of(role: tuple) -> ir.Value:
            kind, n = role
            if kind == "operand":
                return op_leaves[n]
            if kind == "target":
                return em.targets[(id(inst), n)].pointer
            return gep(n)
        for n, (_, what) in enumerate(recipe.allocs):
            if what is not None:
                gep(n)                                  # named slices are registered (liveness, the dump)
        em.kernel_cache.called(recipe.kernel, b.call(recipe.kernel, [value_of(r) for r in recipe.args]))
        STATS["replayed"] += 1
        return _build(recipe.value, value_of)

    # -- recording -------------------------------------------------------------------------------------
    def start(self) -> Recording:
        STATS["emitted"] += 1
        rec = Recording()
        scratch, assignment = self.em.scratch, self.em.assignment
        inner_alloc, inner_name = scratch.on_allocate, assignment.name_pointer
        patched = assignment.__dict__.get("name_pointer")      # an outer recording's, when nested

        def on_allocate(offset: int, size: int) -> None:
            rec.allocs.append((offset, size))
            inner_alloc(offset, size)

        def name_pointer(pointer, offset: int, what: str) -> None:
            rec.names.setdefault(offset, what)
            inner_name(pointer, offset, what)
        scratch.on_allocate = on_allocate
        assignment.name_pointer = name_pointer

        def restore() -> None:
            scratch.on_allocate = inner_alloc
            if patched is None:
                del assignment.name_pointer
            else:
                assignment.name_pointer = patched
        rec.restore = restore
        self.recording, rec.outer = rec, self.recording
        return rec

    def stop(self, rec: Recording) -> None:
        rec.restore()
        self.recording = rec.outer

    def make(self, rec: Recording, inst: Instruction, operands: list[ValueTree], kernel: ir.Function,
             buffers: list[ir.Value], value: ValueTree) -> Recipe | None:
        """The recipe of an emission (None when some argument or result cannot be said in roles)."""
        index = {offset: n for n, (offset, _) in enumerate(rec.allocs)}
        op_roles: dict[int, tuple] = {}
        for k, leaf in enumerate(p.pointer for op in operands for p in leaves(op)):
            op_roles.setdefault(id(leaf), ("operand", k))
        for j in range(len([s for s in inst.shape.leaves() if not s.is_token])):
            t = self.em.targets.get((id(inst), j))
            if t is not None:
                op_roles.setdefault(id(t.pointer), ("target", j))

        def role(v: ir.Value) -> tuple | None:
            r = op_roles.get(id(v))
            if r is not None:
                return r
            if isinstance(v, ir.GEPInstr) and v.pointer is self.em.scratch_arg and len(v.indices) == 1:
                n = index.get(getattr(v.indices[0], "constant", None))
                return None if n is None else ("alloc", n)
            return None
        args = [role(v) for v in buffers]
        if any(r is None for r in args):
            return None
        shape_tree = _roles(value, role)
        if shape_tree is _NO_ROLE:
            return None
        name = inst.name
        allocs = [(size, _template(rec.names.get(offset), name)) for offset, size in rec.allocs]
        return Recipe(kernel, args, shape_tree, allocs, list(rec.guards))

    def add(self, key: str, recipe: Recipe) -> None:
        self.recipes.setdefault(key, []).append(recipe)

    def check(self, recipe: Recipe, fresh: Recipe | None, inst: Instruction) -> None:
        if fresh is None or fresh.kernel is not recipe.kernel or fresh.args != recipe.args \
                or fresh.value != recipe.value or [a for a, _ in fresh.allocs] != [a for a, _ in recipe.allocs]:
            raise ReplayMismatch(f"kernel replay: {inst.name} ({inst.opcode}) would replay a recipe that differs "
                                 f"from its emission: recipe {recipe.args} {recipe.value}, emitted "
                                 f"{None if fresh is None else (fresh.args, fresh.value)}")


# Recursion by name, not by nested functions: a nested function that calls itself is a cycle (function -> cell
# -> function) per kernel, left to the cyclic collector (ir_release.py).
_NO_ROLE = object()


def _roles(v, role):
    """A value tree as nested lists of (role, shape) leaves (None for tokens); _NO_ROLE when a leaf has none."""
    if isinstance(v, tuple):
        out = [_roles(x, role) for x in v]
        return _NO_ROLE if any(x is _NO_ROLE for x in out) else out
    if v is None:
        return None
    r = role(v.pointer)
    return _NO_ROLE if r is None else (r, v.shape)


def _build(v, value_of) -> ValueTree:
    """The value tree a recipe's (role, shape) tree stands for."""
    if v is None:
        return None
    if isinstance(v, list):
        return tuple(_build(x, value_of) for x in v)
    role, shape = v
    return BufferRef(value_of(role), shape)


def _template(what: str | None, name: str) -> str | None:
    if what is None:
        return None
    return "{}" + what[len(name):] if what.startswith(name) else what


def _attr_text(v) -> str:
    if hasattr(v, "to_text"):
        return v.to_text()
    return repr(v)


def _literal_digest(inst: Instruction) -> str:
    lit = inst.literal
    if lit is ELIDED or lit is None:
        return "elided"
    if inst.shape.is_tuple:
        return repr(lit)
    arr = np.ascontiguousarray(np.asarray(lit))
    return hashlib.sha1(arr.tobytes()).hexdigest() + str(arr.dtype)
