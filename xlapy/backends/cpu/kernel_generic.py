"""Kernels shared across shapes: kernels whose code differs only in some i64 constants (the same fusion at
different spatial sizes or channel counts: a loop bound, a stride) become one *generic* function that takes those
constants as arguments; each kernel's calls call it instead, with the kernel's own constants.

Why: LLVM's cost is per function and per loop more than per line (a 12-line loop costs ~3 ms at O3, a 4-deep
elementwise nest ~9 ms), and a network's repeated blocks at shrinking resolutions emit the same kernels at several
shapes: mobilenetv2/fwd makes 37 of its kernels 9 generic ones. Kernel replay (kernel_replay.py) and KernelCache
(kernels.py) only merge kernels that are equal. A generic loop with run-time bounds costs LLVM 1.5-2x a specialized
one (vectorized remainders), so a pair about breaks even and three or more members pay.

Which constants: an i64 constant operand of add, sub, mul, icmp, select, a GEP index or a phi incoming value, in the
positions where the kernels of a group differ (a constant all of them share stays a constant; so does every
divisor, shift amount, call argument, type or alignment: kernels differing there are not grouped). A loop whose
bound becomes an argument vectorizes with a remainder; the divisions that index reshapes keep their constants.

When: LLVM parts are shipped while Python emits (llvm_parallel.py), so a kernel that may join a group is held back
until the module is emitted. Which ones may is read off the optimized HLO before emission (`candidates`): an
instruction whose structure with the sizes left out (`_signature`) another instruction of another shape shares.
At the end (`Sharing.finish`) the held kernels are grouped by their text with numbers erased and by tier (a
generic function is compiled at one tier, its first member's: opt_levels.Tiers.of), checked instruction by
instruction, and each group of two or more becomes one generic function (GENERIC_PREFIX, a unit of its own in
llvm_parallel's parts), the members' calls redirected to it. Every member is checked against the generic's text with its own
constants put back: a member that differs anywhere else stays a kernel of its own. XLAPY_KERNEL_GENERIC=0 turns
this off (for comparisons).
"""
from __future__ import annotations

import collections
import os
import re

from llvmlite import ir

from ...hlo import Computation, Module
from . import kernel_replay
from .ir_text import function_text
from .kernels import GENERIC_PREFIX, INLINE, KERNEL_PREFIX, kernel_stem
from .parallel import _CACHED_TEXT

ENABLED = os.environ.get("XLAPY_KERNEL_GENERIC", "1") != "0"
PARAM = "kernel.shape"                   # its constant arguments: kernel.shape0, kernel.shape1, ...
MIN_GROUP = 2

# kernels made generic in this process, and the groups (tests read the differences)
STATS = {"groups": 0, "members": 0}

_I64 = ir.IntType(64)
_BINARY = frozenset({"add", "sub", "mul"})
_SUFFIX = re.compile(r"\.\d+$")                               # llvmlite's suffix for a name already taken
_NUMBER = re.compile(r"\d+")
_FUNCTION_REF = re.compile(r'@"?xlapy_(task|kernel)')
_SKIP_ATTRS = kernel_replay._SKIP_ATTRS


def _kind(shape) -> str:
    """A shape without its sizes: element type, rank and layout order (tuples by their leaves)."""
    if shape.is_tuple:
        return "(" + ",".join([_kind(s) for s in shape.tuple_shapes]) + ")"
    layout = shape.layout
    return f"{shape.element_type}/{len(shape.dims)}{layout.minor_to_major if layout is not None else ''}"


def _dims(inst) -> tuple:
    return (inst.shape.dims, *[o.shape.dims for o in inst.operands])


def _signature(inst, memo: dict) -> str | None:
    """inst's structure with the sizes left out (kernel_replay's key, cheaper and coarser: attributes as text,
    called computations by their instructions' signatures in order); None for what is never replayed."""
    if inst.opcode in kernel_replay.NEVER:
        return None
    parts = [inst.opcode, _kind(inst.shape), *[_kind(o.shape) for o in inst.operands]]
    for k in sorted(inst.attrs):
        if k in _SKIP_ATTRS:
            continue
        v = inst.attrs[k]
        if isinstance(v, Computation):
            v = _computation_signature(v, memo)
        elif isinstance(v, (list, tuple)) and v and all(isinstance(c, Computation) for c in v):
            v = ";".join([str(_computation_signature(c, memo)) for c in v])
        else:
            v = v.to_text() if hasattr(v, "to_text") else repr(v)
        if v is None:
            return None
        parts.append(f"{k}={v}")
    if inst.opcode == "parameter":
        parts.append(str(inst.parameter_number))
    return " ".join(parts)


def _computation_signature(comp, memo: dict) -> str | None:
    hit = memo.get(id(comp), memo)
    if hit is not memo:
        return hit
    number = {id(inst): n for n, inst in enumerate(comp.instructions)}
    lines = []
    for inst in comp.instructions:
        line = _signature(inst, memo)
        if line is None:
            memo[id(comp)] = None
            return None
        lines.append(line + " <" + ",".join([str(number.get(id(o))) for o in inst.operands]))
    lines.append(f"root {number.get(id(comp.root))}")
    memo[id(comp)] = out = "\n".join(lines)
    return out


def candidates(module: Module) -> set[str]:
    """Kernel symbols (kernels.kernel_stem) of the instructions of `module` whose structure, sizes left out, some
    other instruction of a different shape shares: the kernels that may join a generic group. A coarse key first
    (opcode, shape kinds, the size of what it calls), the full signature only where that key has several shapes."""
    called = {id(c) for comp in module.computations for inst in comp.instructions
              if inst.opcode not in ("while", "conditional", "call") for c in inst.called_computations()}
    coarse: dict[tuple, list] = collections.defaultdict(list)
    for comp in module.computations:
        if id(comp) in called:
            continue                     # fused and applied computations: their instructions are no kernels
        for inst in comp.instructions:
            if inst.opcode in INLINE or inst.opcode in kernel_replay.NEVER:
                continue
            calls = tuple(len(c.instructions) for c in inst.called_computations())
            coarse[(inst.opcode, len(inst.operands), calls)].append(inst)
    out: set[str] = set()
    memo: dict = {}
    for insts in coarse.values():
        if len(insts) < 2 or len({_dims(i) for i in insts}) < 2:
            continue                     # alone, or every one the same shapes (kernel replay's business)
        groups: dict[str, list] = collections.defaultdict(list)
        for inst in insts:
            line = _signature(inst, memo)
            if line is not None:
                groups[line].append(inst)
        for same in groups.values():
            if len(same) > 1 and len({_dims(i) for i in same}) > 1:
                out.update(kernel_stem(i.name) for i in same)
    return out


class Sharing:
    """One module's generic kernels: `hold(kernel)` during emission says whether a kernel waits for the end
    (instead of being reported to llvm_parallel), `finish()` at the end makes the groups. `tier_of` is
    opt_levels.Tiers.of (a group's members share a tier)."""

    def __init__(self, module: Module, cache, tier_of):
        self.cache = cache
        self.tier_of = tier_of
        self.wanted = candidates(module) if ENABLED else set()
        self.held: list[ir.Function] = []

    def hold(self, kernel: ir.Function) -> bool:
        name = kernel.name
        if name not in self.wanted and _SUFFIX.sub("", name) not in self.wanted:
            return False
        if _FUNCTION_REF.search(_body(self._text(kernel))):
            return False                 # calls a pool worker (its loops live there): not made generic
        self.held.append(kernel)
        return True

    def _text(self, kernel: ir.Function) -> str:
        text = self.cache.printed.get(kernel.name)
        if text is None:
            text = self.cache.printed[kernel.name] = function_text(kernel)
        return text

    def finish(self) -> list[ir.Function]:
        """Group the held kernels and make each group generic; returns the generic functions made."""
        groups: dict[tuple, list[ir.Function]] = collections.defaultdict(list)
        for kernel in self.held:     # numbers erased (in names and floats too: the checks below decide), by tier
            groups[(_NUMBER.sub("#", _body(self._text(kernel))), self.tier_of(kernel.name))].append(kernel)
        made = []
        for members in groups.values():
            if len(members) >= MIN_GROUP:
                generic = self._generalize(members)
                if generic is not None:
                    made.append(generic)
        self.held = []
        return made

    def _generalize(self, members: list[ir.Function]) -> ir.Function | None:
        flat = [[i for block in k.blocks for i in block.instructions] for k in members]
        if len({len(f) for f in flat}) != 1:
            return None
        params: dict[tuple, int] = {}                 # the members' values at a position -> parameter number
        edits: list[tuple[int, list[int | None]]] = []    # (instruction index, parameter per operand slot)
        for n, insts in enumerate(zip(*flat)):
            first = insts[0]
            if any(type(i) is not type(first) or i.opname != first.opname for i in insts):
                return None
            slots = [_values(i) for i in insts]
            if slots[0] is None or len({len(s) for s in slots}) != 1:
                if slots[0] is None and all(s is None for s in slots):
                    continue
                return None
            row: list[int | None] = []
            for j, values in enumerate(zip(*slots)):
                if all(v is values[0] for v in values):
                    row.append(None)
                    continue
                if not all(type(v) is ir.Constant and v.type is _I64 and type(v.constant) is int for v in values):
                    row.append(None)            # not a constant: the text check below decides
                    continue
                consts = tuple(v.constant for v in values)
                if len(set(consts)) == 1:
                    row.append(None)
                    continue
                if not _parametrizable(first, j):
                    return None
                row.append(params.setdefault(consts, len(params)))
            if any(p is not None for p in row):
                edits.append((n, row))
        if not params:
            return None
        lead = members[0]
        generic = self._make_generic(lead, flat[0], edits, len(params))
        if generic is None:
            return None
        by_param = sorted(params.items(), key=lambda kv: kv[1])
        template = _body(function_text(generic))
        kept = []
        for m, member in enumerate(members):
            values = [consts[m] for consts, _ in by_param]
            if m == 0 or _instantiate(template, values) == _body(self._text(member)):
                kept.append((member, values))
        if _instantiate(template, kept[0][1]) != _body(self._text(lead)) or len(kept) < MIN_GROUP:
            self._undo(generic, lead)
            return None
        for member, values in kept:
            self._call_generic(member, generic, values)
        STATS["groups"] += 1
        STATS["members"] += len(kept)
        return generic

    def _make_generic(self, lead: ir.Function, insts: list, edits: list, count: int) -> ir.Function | None:
        """The generic function: lead's blocks under a function of lead's arguments and `count` i64 ones, the
        edited slots reading those. Lead is left without blocks (undone by `_undo`)."""
        module = lead.module
        name = module.get_unique_name(GENERIC_PREFIX + lead.name[len(KERNEL_PREFIX):])
        ftype = ir.FunctionType(lead.ftype.return_type, [a.type for a in lead.args] + [_I64] * count)
        generic = ir.Function(module, ftype, name)
        generic.linkage = lead.linkage
        for attr in lead.attributes:
            set.add(generic.attributes, attr)
        generic.scope = lead.scope
        # lead's arguments (which its blocks use) move to the generic function with its blocks; lead, which
        # becomes the call, gets the generic's fresh ones under the same names
        n = len(lead.args)
        mine, fresh = lead.args, generic.args[:n]
        shape_args = generic.args[n:]
        for old, new in zip(mine, fresh):
            new._name = old._name            # registered in the scope already: the same names
            for attr in old.attributes:
                new.add_attribute(attr)
            old.parent, new.parent = generic, lead
        generic.args, lead.args = tuple(mine) + tuple(shape_args), tuple(fresh)
        for p, arg in enumerate(shape_args):
            arg.name = f"{PARAM}{p}"
        generic.blocks, lead.blocks = lead.blocks, []
        for block in generic.blocks:
            block.parent = generic
        saved = []
        for n, row in edits:
            inst = insts[n]
            saved.append((inst, _slots_state(inst)))
            _set_slots(inst, [v if row[j] is None else shape_args[row[j]] for j, v in enumerate(_values(inst))])
        self._saved = saved
        if any(a.name != f"{PARAM}{p}" for p, a in enumerate(shape_args)):
            self._undo(generic, lead)        # a name taken: the generic's text would not read as intended
            return None
        return generic

    def _undo(self, generic: ir.Function, lead: ir.Function) -> None:
        for inst, state in self._saved:
            inst.__dict__.update(state)
            inst.__dict__.pop(_CACHED_TEXT, None)
        lead.blocks, generic.blocks = generic.blocks, []
        for block in lead.blocks:
            block.parent = lead
        n = len(lead.args)
        mine, fresh = generic.args[:n], lead.args
        for old, new in zip(mine, fresh):
            old.parent, new.parent = lead, generic
        lead.args, generic.args = tuple(mine), tuple(fresh) + tuple(generic.args[n:])
        del lead.module.globals[generic.name]

    def _call_generic(self, member: ir.Function, generic: ir.Function, values: list[int]) -> None:
        """member's calls call `generic` instead, with member's constants; member leaves the module. (A member
        whose calls were not all noted keeps a body of one call: llvmlite has no use lists to check.)"""
        cache = self.cache
        consts = [ir.Constant(_I64, v) for v in values]
        calls = cache.calls.pop(member.name, None)
        old, member.blocks = member.blocks, []
        if calls:
            for call in calls:
                call.operands = [generic, *call.operands[1:], *consts]
                call.__dict__.pop(_CACHED_TEXT, None)
            del member.module.globals[member.name]
            cache.dropped.append(member)
        else:
            b = ir.IRBuilder(member.append_basic_block("generic"))
            b.call(generic, list(member.args) + consts)
            b.ret_void()
            member.attributes.add("optnone")     # one call: nothing for LLVM to optimize (kernels._launch_only)
        cache.printed.pop(member.name, None)
        for block in old:                        # nothing refers to them any more (ir_release.py)
            for inst in block.instructions:
                inst.__dict__.clear()
            block.__dict__.clear()


_VALUE_CLASSES = frozenset({ir.Instruction, ir.ICMPInstr, ir.SelectInstr, ir.GEPInstr, ir.LoadInstr, ir.StoreInstr,
                            ir.CastInstr, ir.CallInstr, ir.FCMPInstr, ir.Branch, ir.ConditionalBranch, ir.Ret})


def _values(inst) -> list | None:
    """The value operands of inst, in slot order (None for an instruction class not handled)."""
    if type(inst) is ir.PhiInstr:
        return [v for v, _ in inst.incomings]
    if type(inst) in _VALUE_CLASSES:
        return list(inst.operands)
    return None


def _parametrizable(inst, slot: int) -> bool:
    """May slot `slot` of inst hold a value that is not a constant, at no cost to what LLVM does with it?"""
    t = type(inst)
    if t is ir.Instruction:
        return inst.opname in _BINARY
    if t is ir.ICMPInstr or t is ir.PhiInstr:
        return True
    if t is ir.SelectInstr:
        return slot >= 1
    if t is ir.GEPInstr:
        return slot >= 1 and not isinstance(inst.source_etype, ir.BaseStructType)
    return False


def _slots_state(inst) -> dict:
    return {k: inst.__dict__[k] for k in ("operands", "incomings", "pointer", "indices") if k in inst.__dict__}


def _set_slots(inst, values: list) -> None:
    """inst's value operands set to `values` (a class _parametrizable allows), llvmlite's copies kept in step."""
    if type(inst) is ir.PhiInstr:
        inst.incomings = [(v, b) for v, (_, b) in zip(values, inst.incomings)]
    else:
        inst.operands = values if isinstance(inst.operands, list) else tuple(values)
        if type(inst) is ir.GEPInstr:
            inst.pointer, inst.indices = values[0], values[1:]
    inst.__dict__.pop(_CACHED_TEXT, None)


def _body(text: str) -> str:
    return text[text.index("\n"):]


def _instantiate(template: str, values: list[int]) -> str:
    for p in range(len(values) - 1, -1, -1):     # kernel.shape10 before kernel.shape1
        template = template.replace(f'%"{PARAM}{p}"', str(values[p]))
    return template


__all__ = ["ENABLED", "GENERIC_PREFIX", "STATS", "candidates", "Sharing"]
