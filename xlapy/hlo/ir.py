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
from typing import Any, Iterable, Iterator

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


class Instruction:
    def __init__(self, opcode: str, shape: Shape, operands: Iterable["Instruction"] = (),
                 attrs: dict[str, Any] | None = None, name: str | None = None, *,
                 literal: Any = None, parameter_number: int | None = None):
        self.info: OpInfo = opinfo(opcode)
        self.opcode = opcode
        self.shape = shape
        self.operands: list[Instruction] = []
        self.users: list[Instruction] = []
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.name = name or opcode
        self.literal = literal
        self.parameter_number = parameter_number
        self.control_predecessors: list[Instruction] = []
        self.parent: Computation | None = None
        for op in operands:
            self._append_operand(op)

    # -- operands and users --------------------------------------------------------------------------
    def _append_operand(self, op: "Instruction") -> None:
        self.operands.append(op)
        if self not in op.users:
            op.users.append(self)

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
        for user in list(self.users):
            user.replace_uses_of(self, new)
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
        out: list[Computation] = []
        for v in self.attrs.values():
            if isinstance(v, Computation):
                out.append(v)
            elif isinstance(v, (list, tuple)) and v and all(isinstance(c, Computation) for c in v):
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


class Computation:
    def __init__(self, name: str, instructions: Iterable[Instruction] = (), root: Instruction | None = None):
        self.name = name
        self.instructions: list[Instruction] = []
        self.root: Instruction | None = None
        self.parent: Module | None = None
        self.attrs: dict[str, Any] = {}   # e.g. execution_thread
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
        return inst

    def remove_instruction(self, inst: Instruction) -> None:
        if inst.users:
            raise ValueError(f"cannot remove {inst.name}: still used by {[u.name for u in inst.users]}")
        if inst is self.root:
            raise ValueError(f"cannot remove root {inst.name} of {self.name}")
        inst.detach()
        self.instructions.remove(inst)
        inst.parent = None

    def replace_instruction(self, old: Instruction, new: Instruction) -> None:
        """Redirect all uses (and rootness) of `old` to `new`, then delete `old`. `new` is added if needed."""
        if new.parent is None:
            self.add_instruction(new)
        old.replace_all_uses_with(new)
        if not old.users and old is not self.root:
            self.remove_instruction(old)

    def remove_dead(self) -> int:
        """Delete instructions with no users that are not the root, parameters or side-effecting."""
        removed = 0
        changed = True
        while changed:
            changed = False
            for inst in reversed(list(self.instructions)):
                if (inst.users or inst is self.root or inst.opcode == "parameter" or inst.has_side_effect
                        or any(inst in u.control_predecessors for u in self.instructions)):
                    continue
                self.remove_instruction(inst)
                removed += 1
                changed = True
        return removed

    # -- queries -------------------------------------------------------------------------------------
    @property
    def parameters(self) -> list[Instruction]:
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(params, key=lambda i: i.parameter_number)

    def parameter(self, n: int) -> Instruction:
        for inst in self.instructions:
            if inst.opcode == "parameter" and inst.parameter_number == n:
                return inst
        raise IndexError(f"computation {self.name} has no parameter {n}")

    @property
    def is_entry(self) -> bool:
        return self.parent is not None and self.parent.entry is self

    def post_order(self) -> list[Instruction]:
        """All instructions, each after its operands and control predecessors (XLA's MakeInstructionPostOrder)."""
        order: list[Instruction] = []
        seen: set[int] = set()
        for start in self.instructions:
            if id(start) in seen:
                continue
            stack: list[tuple[Instruction, Iterator[Instruction]]] = [
                (start, iter(itertools.chain(start.operands, start.control_predecessors)))]
            seen.add(id(start))
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    order.append(node)
                    stack.pop()
                elif id(nxt) not in seen:
                    seen.add(id(nxt))
                    stack.append((nxt, iter(itertools.chain(nxt.operands, nxt.control_predecessors))))
        return order

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
    def __init__(self, name: str):
        self.name = name
        self.computations: list[Computation] = []
        self.entry: Computation | None = None
        self.attrs: dict[str, Any] = {}      # header attributes, e.g. entry_computation_layout, is_scheduled
        self.tables: str = ""                # FileNames/FunctionNames/FileLocations/StackFrames, verbatim
        self._names: set[str] = set()

    def unique_name(self, base: str) -> str:
        """`base` if unused in this module, else `base.N` for the smallest free N (XLA's NameUniquer)."""
        if base not in self._names:
            self._names.add(base)
            return base
        stem = re.sub(r"\.\d+$", "", base)
        for n in itertools.count(1):
            cand = f"{stem}.{n}"
            if cand not in self._names:
                self._names.add(cand)
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
                for callee in inst.called_computations():
                    visit(callee)
            order.append(c)
        for c in self.computations:
            visit(c)
        return order

    def remove_unreachable_computations(self) -> int:
        reachable: set[int] = set()
        stack = [self.entry] if self.entry else []
        while stack:
            c = stack.pop()
            if id(c) in reachable:
                continue
            reachable.add(id(c))
            for inst in c.instructions:
                stack.extend(inst.called_computations())
        dead = [c for c in self.computations if id(c) not in reachable]
        for c in dead:
            self.remove_computation(c)
        return len(dead)

    def instructions(self) -> Iterator[Instruction]:
        for c in self.computations:
            yield from c.instructions

    def to_text(self, **options) -> str:
        from .printer import module_to_text
        return module_to_text(self, **options)

    def clone(self) -> "Module":
        """A deep copy via the text format (exact: parse(print) is a fixed point)."""
        from .parser import parse
        return parse(self.to_text())

    def __repr__(self) -> str:
        return f"<Module {self.name}: {len(self.computations)} computations>"
