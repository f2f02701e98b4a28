"""RowFusion (XLA name `row-fusion`; the CPU analogue of XLA:GPU's softmax rewriter): a reduction over the minor
dimensions and the loops that consume it run row by row, so each row's intermediates stay in cache.

After InstructionFusion, softmax is four loops over the whole array, each reading or writing all of it:

    m = reduce(x, max)  e = fusion(x, m){exp(x - m)}  s = reduce(e, add)  y = fusion(e, s){e / s}

A *row* is one index of the leading `k` dimensions (the outer dims, the same for every member). When every
member computes row r of its result from row r of the members it reads, the group becomes one kCustom fusion
whose computation holds the members unchanged (fusions stay nested), and the CPU emitter (row_emitter.py)
runs: for each row: for each member: compute its row into a row buffer (or the output). Main memory then sees
x read once and y written once; the row buffers live in L1/L2.

What preserves rows (ROW_RULES, checked through the members' fused computations too): elementwise ops, a
broadcast that keeps the outer dims as its leading dims (or reads a row-invariant operand), a reduce over
dims >= k, constants and iota. A member's operand from outside the group may be read at any index; an operand
from inside the group only through row-preserving paths. The group must stay convex (no path leaves it and
comes back) and its members' results are arrays in the default (row-major) layout.
"""
from __future__ import annotations

import math

from ...hlo import Computation, Instruction, Module, Shape
from ..pipeline import Pass
from .fuse import is_fusion, _place_computation
from .instruction_fusion import fusible_computations

MIN_ROWS = 8                    # fewer rows leave too little to split over threads
MAX_ROW_BUFFER_BYTES = 1 << 16  # the row buffers of one row must stay in L1/L2
KIND = "kCustom"
NAME = "row_fusion"

ROW = "row"             # read at the same outer index as the consumer's element
INVARIANT = "inv"       # read at an index that does not depend on the outer index
OTHER = "other"         # read at some other index (not allowed for a value computed inside the group)


def _row_major(shape: Shape) -> bool:
    return shape.layout is None or list(shape.layout.minor_to_major) == list(range(shape.rank))[::-1]


def _has_rows(shape: Shape, outer: tuple) -> bool:
    return (not shape.is_tuple and not shape.is_token and shape.rank >= len(outer)
            and tuple(shape.dims[:len(outer)]) == outer and _row_major(shape))


def _operand_modes(inst: Instruction, k: int, outer: tuple) -> list[str] | None:
    """How each operand of inst (whose own element is read at the outer index) is read; None: inst itself
    does not preserve rows. The rules of the module docstring, as a table per opcode kind."""
    op = inst.opcode
    if op in ("constant", "iota", "parameter"):
        return []
    if not _has_rows(inst.shape, outer):
        return None
    if inst.info.is_elementwise or op in ("convert", "bitcast-convert", "reduce-precision"):
        return [ROW if o.shape.rank else INVARIANT for o in inst.operands]
    if op == "broadcast":
        dims = list(inst.attrs.get("dimensions", ()))
        if dims[:k] == list(range(k)) and _has_rows(inst.operands[0].shape, outer):
            return [ROW]
        return [INVARIANT] if all(d >= k for d in dims) else None
    if op == "reduce" and not inst.shape.is_tuple:
        n = len(inst.operands) // 2
        if all(int(d) >= k for d in inst.attrs["dimensions"]) and all(_has_rows(o.shape, outer)
                                                                       for o in inst.operands[:n]):
            return [ROW] * n + [INVARIANT] * n
    return None


def member_reads(inst: Instruction, k: int, outer: tuple) -> list[str] | None:
    """How a candidate member reads each of its operands (ROW / INVARIANT / OTHER), or None when the member's
    own result is not row-local. A fusion is analysed through its computation, from the root down."""
    if not is_fusion(inst):
        return _operand_modes(inst, k, outer)
    if inst.attrs.get("kind") != "kLoop" or not _has_rows(inst.shape, outer):
        return None
    comp: Computation = inst.attrs["calls"]
    modes: dict[int, set] = {id(comp.root): {ROW}}
    for node in reversed(comp.post_order()):        # users before operands
        mine = modes.get(id(node), set())
        if node.opcode == "parameter" or not mine:
            continue
        if mine == {ROW}:
            reads = _operand_modes(node, k, outer) or [OTHER] * len(node.operands)
        else:
            reads = [INVARIANT if mine == {INVARIANT} else OTHER] * len(node.operands)
        for o, mode in zip(node.operands, reads):
            modes.setdefault(id(o), set()).add(mode)
    out = []
    for p in sorted(comp.parameters, key=lambda p: p.parameter_number):
        seen = modes.get(id(p), set())
        out.append(ROW if seen == {ROW} else INVARIANT if seen == {INVARIANT} else OTHER)
    return out


def _reduces(inst: Instruction) -> list[Instruction]:
    comp = inst.attrs["calls"] if is_fusion(inst) else None
    insts = comp.instructions if isinstance(comp, Computation) else [inst]
    return [i for i in insts if i.opcode == "reduce" and not i.shape.is_tuple]


def _outer_rank(seed: Instruction) -> int:
    """The outer rank a seed (a member holding a reduce) allows: below its smallest reduced dimension."""
    return min((int(d) for r in _reduces(seed) for d in r.attrs["dimensions"]), default=0)


def _inner_bytes(inst: Instruction, k: int) -> int:
    return math.prod(inst.shape.dims[k:]) * max(1, inst.shape.ptype.bits // 8)


class _Group:
    def __init__(self, seed: Instruction, k: int):
        self.k = k
        self.outer = tuple(seed.shape.dims[:k])
        self.members: list[Instruction] = [seed]
        self.ids = {id(seed)}
        self._reads: dict[int, list | None] = {}    # member_reads of each candidate, asked once per group

    def reaches_group(self, inst: Instruction, memo: dict, order: "_Order") -> bool:
        """Does inst (not a member) depend on a member? (then adding its user would break convexity) Only what
        lies after the seed in the topological order can: the walk stops there, so it covers the group's span,
        not everything above it."""
        first = order.key[id(self.members[0])]          # the seed: every other member reads it, transitively
        stack = [inst]
        while stack:
            x = stack.pop()
            if id(x) in memo:
                if memo[id(x)]:
                    return True
                continue
            if id(x) in self.ids:
                return True
            memo[id(x)] = False
            if order.key[id(x)] > first:
                stack.extend(x.operands)
        return False

    def accepts(self, user: Instruction, order: "_Order") -> bool:
        if user.opcode in ("parameter", "tuple", "get-tuple-element") or user.control_predecessors:
            return False
        if id(user) not in self._reads:
            self._reads[id(user)] = member_reads(user, self.k, self.outer)
        reads = self._reads[id(user)]
        if reads is None or (_reduces(user) and _outer_rank(user) < self.k):
            return False
        memo: dict = {}
        for o, mode in zip(user.operands, reads):
            if id(o) in self.ids:
                if mode != ROW:
                    return False
            elif self.reaches_group(o, memo, order):
                return False
        return True

    def grow(self, order: "_Order") -> None:
        changed = True
        while changed:
            changed = False
            users = sorted({id(u): u for m in self.members for u in m.users if id(u) not in self.ids}.values(),
                           key=order.of)
            for u in users:
                if self.accepts(u, order):
                    self.members.append(u)
                    self.ids.add(id(u))
                    changed = True
                    break

    def profitable(self) -> bool:
        if len(self.members) < 2 or math.prod(self.outer) < MIN_ROWS:
            return False
        internal = [m for m in self.members if any(id(u) in self.ids for u in m.users)]
        return sum(_inner_bytes(m, self.k) for m in internal) <= MAX_ROW_BUFFER_BYTES


class _Order:
    """A topological order of a computation's instructions, kept valid across outlines without walking the
    computation again (a post order per outline made the pass quadratic: outlines grow with the module). Keys
    are tuples, compared lexicographically, so there is always room for a key between two others: the fusion
    replacing a group takes its last member's key K, and what must now follow it (the get-tuple-elements, then
    the users of the group that came before K, and their users before K, in their old order) takes K + (0, i).
    No key extends K + (0, ...) yet: K belonged to one instruction, now gone."""

    def __init__(self, comp: Computation):
        self.key: dict[int, tuple] = {id(inst): (n,) for n, inst in enumerate(comp.post_order())}

    def of(self, inst: Instruction) -> tuple:
        return self.key[id(inst)]

    def outlined(self, members: list[Instruction], fusion: Instruction, after: list[Instruction]) -> None:
        """`fusion` replaced `members` (sorted by key); `after` (the get-tuple-elements of the fusion) read it."""
        key = self.key
        last = key[id(members[-1])]
        # the group's users that came before its last member, and what reads them before it (never a member:
        # the group is convex), must now follow the fusion
        cone, stack, seen = [], list(after) + [fusion], set()
        while stack:
            for u in stack.pop().users:
                if id(u) not in seen and key.get(id(u), last) < last:
                    seen.add(id(u))
                    cone.append(u)
                    stack.append(u)
        cone.sort(key=self.of)
        for m in members:
            del key[id(m)]
        key[id(fusion)] = last
        for n, inst in enumerate(list(after) + cone, start=1):
            key[id(inst)] = last + (0, n)

    def sort(self, comp: Computation) -> None:
        """The instruction list in key order (then in post order: control edges are not keyed)."""
        comp.instructions.sort(key=self.of)
        comp._positions = None
        comp.instructions = comp.post_order()


def _seeds(comp: Computation) -> list[Instruction]:
    out = []
    for inst in comp.post_order():
        if inst.control_predecessors or inst.shape.is_tuple:
            continue
        if (inst.opcode == "reduce" or is_fusion(inst) and inst.attrs.get("kind") == "kLoop") and _reduces(inst):
            k = _outer_rank(inst)
            if k >= 1 and member_reads(inst, k, tuple(inst.shape.dims[:k])) is not None:
                out.append(inst)
    return out


def _outline(comp: Computation, group: _Group, order: _Order) -> Instruction:
    """Replace the group's members by one kCustom fusion holding them (in post order) in its computation. The
    fusion is appended to comp's list and the members leave it: the caller puts the list back in order
    (order.sort) once it has outlined every group."""
    module = comp.parent
    members = sorted(group.members, key=order.of)
    outside = [m for m in members if m.is_root or any(id(u) not in group.ids for u in m.users)]
    inner = Computation(module.unique_name(NAME))
    externals: list[Instruction] = []
    mapping: dict[int, Instruction] = {}
    for m in members:
        for o in m.operands:
            if id(o) not in group.ids and id(o) not in mapping:
                p = Instruction("parameter", o.shape, (), {}, module.unique_name(f"param_{len(externals)}"),
                                parameter_number=len(externals))
                inner.add_instruction(p)
                externals.append(o)
                mapping[id(o)] = p
    for m in members:
        mapping[id(m)] = inner.add_instruction(m.clone_with([mapping[id(o)] for o in m.operands]))
    if len(outside) == 1:
        inner.root = mapping[id(outside[0])]
        shape = outside[0].shape
    else:
        elements = [mapping[id(m)] for m in outside]
        shape = Shape.tuple_of(tuple(m.shape for m in outside))
        inner.root = inner.add_instruction(Instruction("tuple", shape, elements, {}, "tuple"))
    _place_computation(module, inner, comp)
    fusion = comp.add_instruction(Instruction("fusion", shape, externals, {"kind": KIND, "calls": inner},
                                              module.unique_name(NAME)))
    gtes = []
    for n, m in enumerate(outside):
        value = fusion
        if len(outside) > 1:
            value = comp.add_instruction(Instruction("get-tuple-element", m.shape, [fusion], {"index": n},
                                                     "get-tuple-element"))
            gtes.append(value)
        m.replace_all_uses_with(value)
    for m in reversed(members):         # users first: each is unused once the later ones are gone
        if m.users:
            raise ValueError(f"cannot remove {m.name}: still used by {[u.name for u in m.users]}")
        m.detach()
        m.parent = None
    order.outlined(members, fusion, gtes)
    return fusion


def row_plan(fusion: Instruction) -> tuple[int, tuple] | None:
    """(k, outer dims) when `fusion` is a row fusion the CPU emitter can run row by row, else None: every
    member of its computation preserves rows and reads the other members only along rows."""
    comp = fusion.attrs.get("calls")
    if fusion.opcode != "fusion" or fusion.attrs.get("kind") != KIND or not isinstance(comp, Computation):
        return None
    members = [i for i in comp.post_order() if i.opcode not in ("parameter", "tuple")]
    if not members or any(i.opcode == "tuple" and i is not comp.root for i in comp.instructions):
        return None
    seeds = [m for m in members if _reduces(m)]
    if not seeds:
        return None
    k = min(_outer_rank(s) for s in seeds)
    outer = tuple(members[0].shape.dims[:k]) if not members[0].shape.is_tuple else None
    if k < 1 or outer is None:
        return None
    ids = {id(m) for m in members}
    for m in members:
        reads = member_reads(m, k, outer)
        if reads is None or any(id(o) in ids and mode != ROW for o, mode in zip(m.operands, reads)):
            return None
    return k, outer


class RowFusion(Pass):
    name = "row-fusion"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in fusible_computations(module):
            taken: set[int] = set()
            order = None                # made on the first seed, kept valid by each outline
            outlined = False
            for seed in _seeds(comp):
                if id(seed) in taken or seed.parent is not comp:
                    continue
                if order is None:
                    order = _Order(comp)
                group = _Group(seed, _outer_rank(seed))
                group.grow(order)
                if group.profitable():
                    taken |= group.ids
                    _outline(comp, group, order)
                    outlined = True
            if outlined:
                comp.instructions = [i for i in comp.instructions if i.parent is comp]
                order.sort(comp)
                changed = True
        return changed
