"""The HLO IR: Instruction, Computation, Module.

An Instruction has an opcode (a row of opcodes.OPCODES), a Shape, ordered operands, the list of its users,
and `attrs`: every attribute of the op as a typed value, keyed by its HLO text name, in print order
(`dimensions` -> tuple[int, ...], `window` -> attrs.Window, `to_apply` -> Computation,
`branch_computations` -> list[Computation], `metadata` -> raw text, ...). Constants carry `literal`
(a numpy array, a tuple of them for tuple constants, or ELIDED for `{...}`); parameters carry
`parameter_number`.
"""
from __future__ import annotations

import itertools
import re
from operator import attrgetter
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from .attr_table import ATTR_KINDS
from .opcodes import OpInfo, opinfo
from .shape import Shape


class _Elided:
    """The literal of a constant printed as `{...}`: its values are unknown; executing it is an error."""
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ELIDED"


ELIDED = _Elided()


def elided_constant_error(inst: "Instruction") -> Exception:
    """The error for running a constant whose values the dump left out (`constant({...})`): parsing and printing
    keep such a module, but it cannot run, and guessing values (XLA's parser reads zeros) would be a wrong
    answer. Say how to dump it again with its values."""
    from ..errors import ExecutionError
    return ExecutionError(
        f"constant {inst.name} ({inst.shape}) has its values elided ({{...}}) in this HLO text, so it cannot run; "
        f"dump the module again with its large constants: XLA_FLAGS=--xla_dump_large_constants for XLA's dumps, "
        f"Module.to_text(print_large_constants=True) for xlapy's, or pass such values as arguments (TensorFlow's "
        f"experimental_get_compiler_ir prints captured variables elided)")


# attributes whose value is a called computation (attr_table's kinds comp, comps, calls)
_CALL_ATTRS = frozenset(k for k, kind in ATTR_KINDS.items() if kind in ("comp", "comps", "calls"))


class Instruction:
    """One HLO instruction. Its fields are declared once, in the lists below: __init__ sets every one, __slots__
    admits no other, and Module.clone shares the VALUE_FIELDS and rebuilds the GRAPH_FIELDS
    (tests/unit/test_ir_fields.py holds all three to the lists)."""

    # immutable values: a clone shares them
    VALUE_FIELDS = ("info", "opcode", "shape", "name", "parameter_number")
    # edges, mutable containers and print hints: a clone rebuilds them for the new module
    GRAPH_FIELDS = ("operands", "users", "control_predecessors", "parent", "attrs", "literal", "_attr_order")
    FIELDS = VALUE_FIELDS + GRAPH_FIELDS
    __slots__ = FIELDS

    def __init__(self, opcode: str, shape: Shape, operands: Iterable["Instruction"] = (),
                 attrs: dict[str, Any] | None = None, name: str | None = None, *,
                 literal: Any = None, parameter_number: int | None = None):
        self.info: OpInfo = opinfo(opcode)                       # the opcode's row of opcodes.OPCODES
        self.opcode = opcode
        self.shape = shape
        self.name = name or opcode
        self.parameter_number = parameter_number                 # parameters only
        self.operands: list[Instruction] = []
        self.users: list[Instruction] = []                       # each instruction reading self, once
        self.control_predecessors: list[Instruction] = []
        self.parent: Computation | None = None
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.literal = literal                                   # constants only
        # the attribute order the parser read (the printer keeps it); None: the printer's canonical order
        self._attr_order: tuple[str, ...] | None = None
        mine = self.operands
        for op in operands:
            mine.append(op)
            users = op.users
            # self is new: it is among op's users only if op came earlier in this loop, and then last
            if not users or users[-1] is not self:
                users.append(self)

    # -- operands and users --------------------------------------------------------------------------
    def _append_operand(self, op: "Instruction") -> None:
        self.operands.append(op)
        users = op.users
        if not (users and users[-1] is self) and self not in users:
            users.append(self)

    def _drop_user_if_unused(self, op: "Instruction") -> None:
        if all(o is not op for o in self.operands) and self in op.users:
            op.users.remove(self)

    def operand(self, i: int) -> "Instruction":
        return self.operands[i]

    def replace_operand_with(self, i: int, new: "Instruction") -> None:
        old = self.operands[i]
        self.operands[i] = new
        self._drop_user_if_unused(old)
        if self not in new.users:
            new.users.append(self)

    def replace_uses_of(self, old: "Instruction", new: "Instruction") -> None:
        """Make every operand slot of self that reads `old` read `new`."""
        for i, op in enumerate(self.operands):
            if op is old:
                self.replace_operand_with(i, new)

    def replace_all_uses_with(self, new: "Instruction") -> None:
        """Every user of self reads `new` instead; if self is its computation's root, `new` becomes root."""
        if new is self:
            return
        users = self.users
        if users:
            # replace_uses_of per user, in one pass: O(users + their operands), where a membership test per
            # user made replacing an instruction with k users O(k^2)
            new_users = new.users
            present = set(new_users) if len(users) > 1 else new_users
            kept = []                   # users that do not read self (none, in a consistent graph) stay
            for user in list(users):
                ops = user.operands
                hit = False
                for i, op in enumerate(ops):
                    if op is self:
                        ops[i] = new
                        hit = True
                if not hit:
                    kept.append(user)
                elif user not in present:
                    new_users.append(user)
                    if present is not new_users:
                        present.add(user)
            users[:] = kept
        if self.parent is not None and self.parent.root is self:
            self.parent.root = new

    def detach(self) -> None:
        """Drop this instruction's operand edges (before deleting it)."""
        for op in set(self.operands):
            if self in op.users:
                op.users.remove(self)
        self.operands = []
        self.control_predecessors = []

    # -- queries -------------------------------------------------------------------------------------
    @property
    def is_root(self) -> bool:
        return self.parent is not None and self.parent.root is self

    @property
    def has_side_effect(self) -> bool:
        return self.info.has_side_effect or bool(self.attrs.get("custom_call_has_side_effect"))

    def called_computations(self) -> list["Computation"]:
        """Computations this instruction calls, in attribute order (to_apply, body, condition, ...)."""
        if not self.info.calls_computations and _CALL_ATTRS.isdisjoint(self.attrs):
            return []     # (most instructions: the walks over a module's calls ask every instruction, every pass)
        out: list[Computation] = []
        for v in self.attrs.values():
            if isinstance(v, Computation):
                out.append(v)
            elif (isinstance(v, (list, tuple)) and v and isinstance(v[0], Computation)
                  and all(isinstance(c, Computation) for c in v)):
                out.extend(v)
        return out

    def attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    # -- copying -------------------------------------------------------------------------------------
    def clone_with(self, operands: Iterable["Instruction"] | None = None, shape: Shape | None = None,
                   name: str | None = None) -> "Instruction":
        """A detached copy (same attrs; called computations shared) reading `operands`."""
        return Instruction(self.opcode, shape or self.shape, self.operands if operands is None else operands,
                           dict(self.attrs), name or self.name, literal=self.literal,
                           parameter_number=self.parameter_number)

    def to_text(self) -> str:
        from .printer import instruction_to_text
        return instruction_to_text(self)

    def __repr__(self) -> str:
        return f"<{self.name} = {self.shape} {self.opcode}({', '.join(o.name for o in self.operands)})>"


def _parameter_number(inst: Instruction) -> int:
    return inst.parameter_number


_opcode_of = attrgetter("opcode")
_control_predecessors_of = attrgetter("control_predecessors")


class Computation:
    """A list of instructions and its root. FIELDS declares every field (__init__ sets each, __slots__ admits
    no other)."""

    FIELDS = ("name", "instructions", "root", "parent", "attrs", "_async_sugar", "_parameter_index", "_positions",
              "_removed_since")
    __slots__ = FIELDS

    def __init__(self, name: str, instructions: Iterable[Instruction] = (), root: Instruction | None = None):
        self.name = name
        self.instructions: list[Instruction] = []
        self.root: Instruction | None = None
        self.parent: Module | None = None
        self.attrs: dict[str, Any] = {}   # e.g. execution_thread
        # the parser made this computation from X-start/-update/-done sugar; the printer writes it back that way
        self._async_sugar = False
        self._parameter_index: dict[int, Instruction] | None = None     # parameter(n)'s cache, never cloned
        # position() hints for big computations: index of each instruction when made, and removals since
        self._positions: dict[Instruction, int] | None = None
        self._removed_since = 0
        for inst in instructions:
            self.add_instruction(inst)
        if root is not None:
            self.root = root

    # -- editing -------------------------------------------------------------------------------------
    def add_instruction(self, inst: Instruction) -> Instruction:
        """Append `inst` (its operands must already be in this computation); its name is made unique."""
        if inst.parent is not None and inst.parent is not self:
            raise ValueError(f"instruction {inst.name} already belongs to computation {inst.parent.name}")
        inst.parent = self
        if self.parent is not None:
            inst.name = self.parent.unique_name(inst.name)
        self.instructions.append(inst)
        if self.root is None:
            self.root = inst
        if inst.opcode == "parameter" and self._parameter_index is not None:
            self._parameter_index[inst.parameter_number] = inst
        return inst

    def remove_instruction(self, inst: Instruction) -> None:
        if inst.users:
            raise ValueError(f"cannot remove {inst.name}: still used by {[u.name for u in inst.users]}")
        if inst is self.root:
            raise ValueError(f"cannot remove root {inst.name} of {self.name}")
        inst.detach()
        del self.instructions[self.position(inst)]
        self._removed_since += 1
        inst.parent = None

    def remove_instructions(self, insts: Iterable[Instruction]) -> int:
        """Remove many unused instructions at once (a pass deleting a share of a big computation): the list is
        filtered once, where a remove_instruction each would find each one's position. Every one must be unused
        once all of them are gone, and none the root. Returns how many were removed."""
        doomed = {id(i): i for i in insts if i.parent is self}
        if not doomed:
            return 0
        for inst in doomed.values():
            if inst is self.root:
                raise ValueError(f"cannot remove root {inst.name} of {self.name}")
            if any(id(u) not in doomed for u in inst.users):
                raise ValueError(f"cannot remove {inst.name}: still used by "
                                 f"{[u.name for u in inst.users if id(u) not in doomed]}")
        for inst in doomed.values():
            inst.detach()
            inst.parent = None
        self.instructions = [i for i in self.instructions if id(i) not in doomed]
        self._positions = None
        return len(doomed)

    # a removal from a list of n instructions scanned it: O(n) each, O(n^2) for a pass removing a share of a big
    # computation (fusion, DCE, CSE). Positions recorded once stay close: each removal through
    # remove_instruction moves the later ones one place down, so the search is a window that many places wide
    _HINTED = 256               # lists shorter than this are scanned
    _MAX_DRIFT = 64             # removals after which the hints are made again: this many, or n/32 when more
                                # (remaking them, O(n), once per 64 removals made n removals O(n^2 / 64))

    def position(self, inst: Instruction) -> int:
        """The index of `inst` in `instructions` (ValueError when absent); fast for big computations."""
        insts = self.instructions
        if len(insts) < self._HINTED:
            return insts.index(inst)
        hints, drift = self._positions, self._removed_since
        if hints is not None and (drift <= self._MAX_DRIFT or drift <= len(insts) >> 5):
            at = hints.get(inst)
            if at is None:              # added since the hints were made: one scan (in C), the hints stay good
                return insts.index(inst)
            else:
                lo = at - drift
                if at < len(insts) and insts[at] is inst:
                    return at
                try:
                    # edits made straight to the list (an insert) may have moved it elsewhere: then scan
                    return insts.index(inst, lo if lo > 0 else 0, at)
                except ValueError:
                    pass
        self._positions = {inst: i for i, inst in enumerate(insts)}
        self._removed_since = 0
        return self._positions[inst] if inst in self._positions else insts.index(inst)

    def replace_instruction(self, old: Instruction, new: Instruction) -> None:
        """Redirect all uses (and rootness) of `old` to `new`, then delete `old`. `new` is added if needed."""
        if new.parent is None:
            self.add_instruction(new)
        old.replace_all_uses_with(new)
        if not old.users and old is not self.root:
            self.remove_instruction(old)

    def remove_dead(self) -> int:
        """Delete instructions with no users that are not the root, parameters or side-effecting."""
        # A worklist from the unused instructions up through what each removal leaves unused (its operands, and
        # its control predecessors, which it no longer pins): the same set as sweeping until nothing changes,
        # where a sweep asked every instruction whether it was a control predecessor (O(n^2) per sweep)
        pins: dict[Instruction, int] = {}
        for u in self.instructions:
            for p in u.control_predecessors:
                pins[p] = pins.get(p, 0) + 1

        def removable(inst: Instruction) -> bool:
            return not (inst.users or inst is self.root or inst.opcode == "parameter" or inst.has_side_effect
                        or pins.get(inst))
        dead = [i for i in self.instructions if removable(i)]
        removed = 0
        while dead:
            inst = dead.pop()
            if inst.parent is not self or not removable(inst):
                continue
            freed = list(dict.fromkeys(inst.operands + inst.control_predecessors))
            for p in inst.control_predecessors:
                pins[p] -= 1
            self.remove_instruction(inst)
            removed += 1
            dead.extend(i for i in freed if i.parent is self and removable(i))
        return removed

    # -- queries -------------------------------------------------------------------------------------
    @property
    def parameters(self) -> list[Instruction]:
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(params, key=lambda i: i.parameter_number)

    def parameter(self, n: int) -> Instruction:
        # an index of the parameters, checked on use (instructions come and go without telling it); a fusion pass
        # asks for parameters of growing fused computations hundreds of thousands of times
        index = self._parameter_index
        inst = index.get(n) if index else None
        if inst is not None and inst.parent is self and inst.opcode == "parameter" and inst.parameter_number == n:
            return inst
        self._parameter_index = index = {i.parameter_number: i for i in self.instructions if i.opcode == "parameter"}
        if n in index:
            return index[n]
        raise IndexError(f"computation {self.name} has no parameter {n}")

    def remove_parameter(self, number: int, rename: Callable[[Instruction], str] | None = None) -> Instruction:
        """Remove parameter `number` (unused) and number the later ones one lower, in order, naming each
        `rename(parameter)` when given; parameter(n) stays indexed (a fusion pass does this once per fused
        producer). Returns the removed parameter."""
        param = self.parameter(number)
        self.remove_instruction(param)
        params = [i for i in self.instructions if i.opcode == "parameter"]
        later = sorted((p for p in params if p.parameter_number > number), key=_parameter_number)
        for p in later:
            p.parameter_number -= 1
            if rename is not None:
                p.name = rename(p)
        self._parameter_index = {p.parameter_number: p for p in params}
        return param

    @property
    def is_entry(self) -> bool:
        return self.parent is not None and self.parent.entry is self

    def post_order(self) -> list[Instruction]:
        """All instructions, each after its operands and control predecessors (XLA's MakeInstructionPostOrder)."""
        order: list[Instruction] = []
        seen: set[Instruction] = set()          # Instruction hashes by identity
        mark, emit, covered = seen.add, order.append, seen.issuperset

        def edges(inst: Instruction):
            preds = inst.control_predecessors
            return iter(inst.operands + preds if preds else inst.operands)
        for start in self.instructions:
            if start in seen:
                continue
            # the common case, an instruction listed after everything it reads: the walk below would emit it
            # at once, so do that without building its stack
            if covered(start.operands):
                preds = start.control_predecessors
                if not preds or covered(preds):
                    mark(start)
                    emit(start)
                    continue
            mark(start)
            stack = [(start, edges(start))]
            while stack:
                node, it = stack[-1]
                for nxt in it:                  # the next unseen edge: descend into it
                    if nxt not in seen:
                        mark(nxt)
                        stack.append((nxt, edges(nxt)))
                        break
                else:                           # every edge done
                    emit(node)
                    stack.pop()
        return order

    def post_order_of(self, opcodes: str | frozenset[str]) -> list[Instruction]:
        """The instructions of post_order() whose opcode is `opcodes` (or one of them), without the walk when the
        computation holds none (passes looking for a while or a sort in every computation)."""
        wanted = frozenset((opcodes,)) if isinstance(opcodes, str) else opcodes
        if wanted.isdisjoint(map(_opcode_of, self.instructions)):     # (a scan in C: asked of every computation)
            return []
        return [i for i in self.post_order() if i.opcode in wanted]

    def has_control_edges(self) -> bool:
        """Does any instruction have a control predecessor (a scan in C; most computations have none)."""
        return any(map(_control_predecessors_of, self.instructions))

    def clone(self, suffix: str = "clone") -> "Computation":
        """A copy of this computation; called computations are shared, names get `.suffix`."""
        mapping: dict[int, Instruction] = {}
        new_insts = []
        for inst in self.post_order():
            new = inst.clone_with([mapping[id(o)] for o in inst.operands],
                                  name=f"{inst.name}.{suffix}" if suffix else inst.name)
            new.control_predecessors = [mapping[id(p)] for p in inst.control_predecessors]
            mapping[id(inst)] = new
            new_insts.append(new)
        comp = Computation(f"{self.name}.{suffix}" if suffix else self.name, new_insts,
                           mapping[id(self.root)] if self.root is not None else None)
        comp.attrs = dict(self.attrs)
        return comp

    def __repr__(self) -> str:
        return f"<Computation {self.name}: {len(self.instructions)} instructions>"


class Module:
    """Computations, the entry, and the header. FIELDS declares every field; Module.clone copies CLONED_FIELDS
    (a clone is a new module: it gets its own dump number and name-search hints)."""

    CLONED_FIELDS = ("name", "computations", "entry", "attrs", "tables", "_names")
    FIELDS = CLONED_FIELDS + ("_name_hints", "unique_id")

    def __init__(self, name: str):
        self.name = name
        self.computations: list[Computation] = []
        self.entry: Computation | None = None
        self.attrs: dict[str, Any] = {}      # header attributes, e.g. entry_computation_layout, is_scheduled
        self.tables: str = ""                # FileNames/FunctionNames/FileLocations/StackFrames, verbatim
        self._names: set[str] = set()        # every computation and instruction name in use
        self._name_hints: dict[str, int] = {}    # unique_name: per stem, the smallest N that may be free
        self.unique_id: int | None = None    # the number of its dump files (passes/dump.py), once dumped

    def unique_name(self, base: str) -> str:
        """`base` if unused in this module, else `base.N` for the smallest free N (XLA's NameUniquer)."""
        if base not in self._names:
            self._names.add(base)
            return base
        head, dot, tail = base.rpartition(".")
        stem = head if dot and tail.isdigit() and tail.isascii() else base     # base less a `.N` suffix
        # names are only ever added, so the smallest free N never decreases: resume from the last one found
        # per stem (probing from 1 every time made building a module of n instructions O(n^2))
        hints = self._name_hints
        for n in itertools.count(hints.get(stem, 1)):
            cand = f"{stem}.{n}"
            if cand not in self._names:
                self._names.add(cand)
                hints[stem] = n + 1
                return cand
        raise AssertionError("unreachable")

    def add_computation(self, comp: Computation, entry: bool = False) -> Computation:
        comp.parent = self
        comp.name = self.unique_name(comp.name)
        for inst in comp.instructions:
            inst.name = self.unique_name(inst.name)
        self.computations.append(comp)
        if entry:
            self.entry = comp
        return comp

    def remove_computation(self, comp: Computation) -> None:
        self.computations.remove(comp)
        comp.parent = None

    def computation(self, name: str) -> Computation:
        for c in self.computations:
            if c.name == name:
                return c
        raise KeyError(f"module {self.name} has no computation {name!r}")

    def computation_post_order(self) -> list[Computation]:
        """Every computation after the computations it calls."""
        order: list[Computation] = []
        seen: set[int] = set()

        def visit(c: Computation) -> None:
            if id(c) in seen:
                return
            seen.add(id(c))
            for inst in c.instructions:
                if inst.info.calls_computations or not _CALL_ATTRS.isdisjoint(inst.attrs):  # (called_computations'
                    for callee in inst.called_computations():                               # test, without its call)
                        visit(callee)
            order.append(c)
        for c in self.computations:
            visit(c)
        return order

    def remove_unreachable_computations(self) -> int:
        reachable = {id(c) for c in reachable_computations([self.entry] if self.entry else [])}
        dead = [c for c in self.computations if id(c) not in reachable]
        if dead:
            self.computations = [c for c in self.computations if id(c) in reachable]
            for c in dead:
                c.parent = None
        return len(dead)

    def instructions(self) -> Iterator[Instruction]:
        for c in self.computations:
            yield from c.instructions

    def to_text(self, **options) -> str:
        from .printer import module_to_text
        return module_to_text(self, **options)

    def clone(self) -> "Module":
        """A deep copy, built directly: the same module parse(self.to_text()) gives (names, attributes, layouts,
        computation and instruction order, attribute print order), without printing and parsing it."""
        from .gc_pause import paused
        with paused():          # (gc_pause.py: a big module's objects made with the collector on ran full collections)
            return _clone_module(self)

    def clone_via_text(self) -> "Module":
        """The reference deep copy through the text format (parse(print) is a fixed point); tests compare
        clone() with it."""
        from .parser import parse
        return parse(self.to_text())

    def __repr__(self) -> str:
        return f"<Module {self.name}: {len(self.computations)} computations>"


# -- reachability -------------------------------------------------------------------------------------------
def dependencies(roots: Iterable["Instruction"]) -> set[int]:
    """ids of `roots` and of every instruction they depend on, through operands and control predecessors."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        inst = stack.pop()
        if id(inst) in seen:
            continue
        seen.add(id(inst))
        stack.extend(inst.operands)
        stack.extend(inst.control_predecessors)
    return seen


# -- structural clone ---------------------------------------------------------------------------------------
def reachable_computations(roots: Iterable["Computation"]) -> Iterator["Computation"]:
    """`roots` and every computation their instructions call, directly or not, each once (depth first)."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        c = stack.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        yield c
        for inst in c.instructions:
            if inst.info.calls_computations or not _CALL_ATTRS.isdisjoint(inst.attrs):     # (as above)
                stack.extend(inst.called_computations())


def _norm_ints(v):
    """An `ints` attribute as the parser reads it back: nested tuples of ints."""
    if isinstance(v, (list, tuple)):
        return tuple(_norm_ints(x) for x in v)
    return int(v)


def _clone_attr(key: str, v: Any, kind: str, comps: dict[int, "Computation"], printer) -> Any:
    """The value attribute `key` has after a print-parse round trip, computations remapped through `comps`."""
    if isinstance(v, Computation):
        return comps[id(v)]
    if isinstance(v, (list, tuple)) and v and all(isinstance(c, Computation) for c in v):
        return [comps[id(c)] for c in v]
    if kind == "raw":
        return v if isinstance(v, str) else printer.value(key, v)
    if kind == "ints":
        return _norm_ints(v)
    if kind == "words" or kind == "slice" or kind == "padding":
        return tuple(v)
    if kind == "int" and not isinstance(v, bool):
        return int(v)
    if kind == "float" and not isinstance(v, (bool, float)):
        return float(v)
    return v        # bool, word, string, float, window, dim_labels, shape: immutable values


def _printed_attr_order(inst: "Instruction") -> tuple[str, ...]:
    """The attribute names in the order the printer writes them (what the parser records as _attr_order)."""
    from .attr_table import print_rank
    keys = list(inst.attrs)
    if inst.control_predecessors:
        keys.append("control-predecessors")
    order = inst._attr_order
    if order is not None and len(order) == len(keys) and order == tuple(keys):
        return order                # as parsed, unchanged since (most instructions of a parsed module)
    if order is not None:
        pos = {k: i for i, k in enumerate(order)}
        if all(k in pos for k in keys):
            return tuple(sorted(keys, key=pos.__getitem__))
    return tuple(sorted(keys, key=print_rank))


def _clone_module(module: "Module") -> "Module":
    from .attr_table import kind_of
    from .printer import _Printer, _options, _sugar_wrapped
    printer = _Printer(_options({}))
    new = Module(module.name)
    new.attrs = {k: v if isinstance(v, str) else str(v) for k, v in module.attrs.items()}
    new.tables = module.tables.rstrip() if module.tables else ""
    order = module.computation_post_order()
    comps: dict[int, Computation] = {}
    for c in order:                      # shells first: attributes may name any computation
        nc = Computation(c.name)
        nc.parent = new
        nc.attrs = {"execution_thread": c.attrs["execution_thread"]} if "execution_thread" in c.attrs else {}
        nc._async_sugar = c._async_sugar
        comps[id(c)] = nc
    names = new._names
    for c in order:
        nc = comps[id(c)]
        names.add(c.name)
        mapping: dict[int, Instruction] = {}
        insts = nc.instructions
        for inst in c.post_order():
            attrs = inst.attrs
            if attrs:
                if _sugar_wrapped(inst) is not None:      # printed as X-start/-update/-done sugar
                    order_keys = tuple(k for k in _printed_attr_order(inst) if k != "calls")
                    if inst.opcode == "async-start":
                        order_keys = tuple(k for k in order_keys if k == "async_execution_thread") + ("calls",)
                else:
                    order_keys = _printed_attr_order(inst)
                attrs = {k: _clone_attr(k, v, kind_of(k), comps, printer) for k, v in attrs.items()}
            else:
                order_keys = ("control-predecessors",) if inst.control_predecessors else ()
            ni = Instruction.__new__(Instruction)
            for field in Instruction.VALUE_FIELDS:
                setattr(ni, field, getattr(inst, field))
            # Instruction.GRAPH_FIELDS, each rebuilt for the new module:
            ops = [mapping[id(o)] for o in inst.operands]
            ni.operands = ops
            ni.users = []
            for o in ops:               # ni is new: among o's users only if o came earlier in ops, and then last
                if not o.users or o.users[-1] is not ni:
                    o.users.append(ni)
            ni.control_predecessors = [mapping[id(p)] for p in inst.control_predecessors]
            ni.parent = nc
            ni.attrs = attrs if attrs is not inst.attrs else {}
            lit = inst.literal
            ni.literal = lit.copy() if isinstance(lit, np.ndarray) else lit
            ni._attr_order = order_keys
            mapping[id(inst)] = ni
            insts.append(ni)
            names.add(inst.name)
        nc.root = mapping[id(c.root)] if c.root is not None else (insts[0] if insts else None)
        new.computations.append(nc)
    new.entry = comps[id(module.entry)] if module.entry is not None else \
        (new.computations[-1] if new.computations else None)
    return new

