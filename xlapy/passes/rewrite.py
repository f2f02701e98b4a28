"""Rewrite rules, rule sets and the driver that applies them (tinygrad's PatternMatcher and graph_rewrite; the
rules of XLA's algebraic simplifier, written as data).

    @rule(Op("add", A, ConstantScalar(0), dtype=INTS))
    def add_zero(inst, a):
        # A + 0 => A
        return a

    RULES = RuleSet([add_zero, ...]) + other.RULES      # indexed by root opcode once; sets combine with +
    changed = apply_rules(module, RULES, trace)

A rule's function receives the matched instruction and the pattern's captures as keyword arguments (it
takes exactly the names its pattern captures; `rule` checks this when the module loads). It returns the
instruction that should replace `inst`: an existing one, or a new one made with build.make (detached: the
driver adds it, with any new operands, to the computation); or None when the rewrite does not apply after
all. Replaced instructions are left for DCE. One sweep per call, in post order, which also tries each
instruction a rewrite makes: passes run the driver inside a FixedPoint, which a second sweep then usually
confirms.
"""
from __future__ import annotations

import inspect
from typing import Callable, Iterable, Iterator

from ..errors import XlapyError
from ..hlo import Computation, Instruction, Module
from .pattern import Pattern

RewriteFn = Callable[..., "Instruction | None"]


class Rule:
    """A pattern and the rewrite it guards; calling the rule calls the rewrite."""

    def __init__(self, pattern: Pattern, fn: RewriteFn):
        self.pattern, self.fn, self.name = pattern, fn, fn.__name__
        self.__doc__ = fn.__doc__

    def __call__(self, inst: Instruction, **captures: Instruction) -> Instruction | None:
        return self.fn(inst, **captures)

    def apply(self, inst: Instruction) -> Instruction | None:
        """The rewrite of `inst`, or None when the pattern does not match or the rewrite does not apply."""
        caps = self.pattern.match(inst)
        return None if caps is None else self.fn(inst, **caps)

    @property
    def opcodes(self) -> set[str] | None:
        """The root opcodes the pattern can match (None: any)."""
        return getattr(self.pattern, "opcodes", None)

    def __repr__(self) -> str:
        return f"<rule {self.name}: {self.pattern}>"


def rule(pattern: Pattern) -> Callable[[RewriteFn], Rule]:
    """Decorator: the function becomes a Rule guarded by `pattern`, its captures passed as keyword arguments."""
    def wrap(fn: RewriteFn) -> Rule:
        params = list(inspect.signature(fn).parameters)
        if set(params[1:]) != pattern.captures():
            raise TypeError(f"rule {fn.__name__}: its pattern {pattern} captures {sorted(pattern.captures())}, "
                            f"but the function takes {params[1:]} after the instruction")
        return Rule(pattern, fn)
    return wrap


class RuleSet:
    """An ordered table of rules, indexed by root opcode when it is made: the driver tries, for an
    instruction, only the rules whose pattern can match its opcode, in table order."""

    def __init__(self, rules: Iterable[Rule]):
        self.rules: tuple[Rule, ...] = tuple(rules)
        keyed = {op for r in self.rules for op in (r.opcodes or ())}
        self._by_opcode = {op: tuple(r for r in self.rules if r.opcodes is None or op in r.opcodes)
                           for op in keyed}
        self._generic = tuple(r for r in self.rules if r.opcodes is None)

    def for_opcode(self, opcode: str) -> tuple[Rule, ...]:
        """The rules that can match an instruction with `opcode`, in table order."""
        return self._by_opcode.get(opcode, self._generic)

    def __add__(self, other: "RuleSet") -> "RuleSet":
        return RuleSet(self.rules + other.rules)

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)


def _adopt(comp: Computation, inst: Instruction, added: list[Instruction]) -> None:
    """Add `inst` and any of its operands that are new (parent None) to `comp`, operands first; `added` collects
    them in that order."""
    if inst.parent is not None:
        return
    for op in inst.operands:
        _adopt(comp, op, added)
    comp.add_instruction(inst)
    added.append(inst)


# rewrites in a row of one instruction and what replaces it (a bound on rules that undo each other)
MAX_REWRITES_PER_INSTRUCTION = 16


def _rewrite(comp: Computation, inst: Instruction, rules: RuleSet, trace: list | None,
             added: list[Instruction], candidates: tuple[Rule, ...] | None = None) -> bool:
    """Apply the first rule that rewrites `inst`; the instructions it made go to `added`, operands first.
    `candidates`: rules.for_opcode(inst.opcode), when the caller has it."""
    for r in rules.for_opcode(inst.opcode) if candidates is None else candidates:
        caps: dict = {}
        if not r.pattern._match(inst, caps, None):      # Rule.apply, inlined: tried ~10^4 times a compile
            continue
        new = r.fn(inst, **caps)
        if new is None or new is inst:
            continue
        if not new.shape.compatible(inst.shape):
            raise XlapyError(f"rewrite rule {r.name} turned {inst.name} ({inst.shape}) into {new.name} "
                             f"of shape {new.shape}")
        if new.parent is None:
            new.shape = inst.shape   # keep the layout of the value it replaces
            _adopt(comp, new, added)
        inst.replace_all_uses_with(new)
        if trace is not None:
            trace.append((r.name, inst.name, new.name))
        return True
    return False


def apply_rules_to(comp: Computation, rules: RuleSet, trace: list | None = None) -> bool:
    """One sweep over `comp` in post order; `trace` collects (rule name, old name, new name) per rewrite.
    Instructions a rewrite makes are tried at once, operands first (a new reshape of a reshape folds in the same
    sweep): the users of a rewritten value come later in the sweep, so one sweep leaves nothing a rule can
    rewrite unless the rules themselves need another pass over what they rewrote earlier."""
    changed = False
    for inst in comp.post_order():
        if inst.parent is not comp:      # removed by an earlier rewrite in this sweep
            continue
        candidates = rules.for_opcode(inst.opcode)
        if not candidates:
            continue                     # no rule for it (parameters, most of a module's opcodes)
        if not inst.users and inst is not comp.root and not inst.has_side_effect:
            continue                     # dead (replaced earlier): DCE removes it, rewriting it makes more
        added: list[Instruction] = []
        if not _rewrite(comp, inst, rules, trace, added, candidates):
            continue
        changed = True
        budget = MAX_REWRITES_PER_INSTRUCTION
        work = added[::-1]               # popped operands first
        while work and budget:
            new = work.pop()
            if new.parent is not comp or not (new.users or new is comp.root):
                continue                 # replaced already, or left for DCE
            more: list[Instruction] = []
            if _rewrite(comp, new, rules, trace, more):
                budget -= 1
                work.extend(reversed(more))
    return changed


def apply_rules(module: Module, rules: RuleSet, trace: list | None = None) -> bool:
    changed = False
    for comp in list(module.computations):
        changed |= apply_rules_to(comp, rules, trace)
    return changed
