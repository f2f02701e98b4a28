"""Alias analysis for one computation, in emission (post) order: which buffer each array leaf of each value
lives in, and where each buffer is read. The emitter asks it one question (XLA's CanShareOperandBufferWithUser):
may a dynamic-update-slice, or a fusion whose root is one, write its update into operand 0's buffer in place?

Buffers are named by where they come from: ("def", id(inst), leaf) for a value an instruction writes into a
fresh buffer, ("param", number, leaf) for a parameter leaf, ("const", id(inst)) for constants and ("call", ...)
for results of calls (which may be any of the callee's buffers, so they also count as their operands'). Alias
ops (tuple, get-tuple-element, bitcast, reshape, ...) forward the buffers of their operand: reading an alias is
reading the buffer underneath. The root reads its buffers at position len(order): after everything else.
"""
from __future__ import annotations

from ...hlo import Computation, Instruction

# Ops whose value is (part of) an operand's buffers. reshape only aliases when both layouts are row-major;
# calling every reshape an alias is the conservative choice (a copying reshape read its operand earlier).
FORWARDING = {"tuple", "get-tuple-element", "bitcast", "reshape", "opt-barrier", "add-dependency"}

Leaf = frozenset      # the buffers one array leaf may live in


def _array_leaf_count(shape) -> int:
    return len([s for s in shape.leaves() if not s.is_token])


class ComputationAliasing:
    """The buffers of every value of `comp` and the positions that read them. `writable_params`: the caller
    owns the parameter buffers and lets the computation overwrite them (a while body's loop state)."""

    def __init__(self, comp: Computation, writable_params: bool = False, reorder=None):
        self.comp = comp
        self.writable_params = writable_params
        self.leaves: dict[int, list[Leaf]] = {}
        for inst in comp.post_order():
            self.leaves[id(inst)] = self._leaves_of(inst)
        self.order: list[Instruction] = _sink_in_place_updates(comp, self.leaves)
        if reorder is not None:         # reorder(order) -> order: the entry's paired loops (concurrent_loops.py)
            self.order = reorder(self.order)
        self.position = {id(inst): k for k, inst in enumerate(self.order)}
        self.reads: dict[tuple, list[int]] = {}
        for k, inst in enumerate(self.order):
            if inst.opcode not in FORWARDING:
                for op in inst.operands:
                    for leaf in self.leaves[id(op)]:
                        for buf in leaf:
                            self.reads.setdefault(buf, []).append(k)
        end = len(self.order)
        for leaf in self.leaves[id(comp.root)]:
            for buf in leaf:
                self.reads.setdefault(buf, []).append(end)

    def _leaves_of(self, inst: Instruction) -> list[Leaf]:
        op = inst.opcode
        if op == "parameter":
            return [Leaf({("param", inst.parameter_number, k)}) for k in range(_array_leaf_count(inst.shape))]
        if op == "constant":
            return [Leaf({("const", id(inst))})]
        if op == "tuple":
            return [leaf for o in inst.operands for leaf in self.leaves[id(o)]]
        if op == "get-tuple-element":
            shapes = inst.operands[0].shape.tuple_shapes
            k = int(inst.attrs["index"])
            start = sum(_array_leaf_count(s) for s in shapes[:k])
            return self.leaves[id(inst.operands[0])][start:start + _array_leaf_count(shapes[k])]
        if op in FORWARDING:
            return list(self.leaves[id(inst.operands[0])])
        n = _array_leaf_count(inst.shape)
        if op == "while":     # a leaf the body passes through stays in the init's buffer (loop_state.py)
            init = self.leaves[id(inst.operands[0])]
            read_only = while_read_only_leaves(inst)
            return [init[k] if k in read_only else Leaf({("def", id(inst), k)}) for k in range(n)]
        if op == "call":      # the callee's root may be any of its parameters' buffers
            operand_bufs = frozenset(b for o in inst.operands for leaf in self.leaves[id(o)] for b in leaf)
            return [Leaf({("call", id(inst), k)}) | operand_bufs for k in range(n)]
        return [Leaf({("def", id(inst), k)}) for k in range(n)]

    # -- queries -----------------------------------------------------------------------------------------
    def last_use(self, inst: Instruction) -> int:
        """The position of the last instruction that reads inst's value directly (not through an alias)."""
        users = [self.position[id(u)] for u in inst.users if id(u) in self.position]
        if inst is self.comp.root:
            users.append(len(self.order))
        return max(users, default=self.position[id(inst)])

    def writable(self, buf: tuple) -> bool:
        return buf[0] == "def" or (buf[0] == "param" and self.writable_params)

    def can_overwrite(self, user: Instruction, operand_number: int) -> bool:
        """May `user` write into the buffer of its operand `operand_number` (one array leaf)? Yes when that
        buffer is writable, no other operand of `user` reads it, and nothing after `user` reads its old value."""
        leaves = self.leaves[id(user.operands[operand_number])]
        if len(leaves) != 1 or len(leaves[0]) != 1:
            return False
        (buf,) = leaves[0]
        if not self.writable(buf):
            return False
        for k, other in enumerate(user.operands):
            if k != operand_number and any(buf in leaf for leaf in self.leaves[id(other)]):
                return False
        here = self.position[id(user)]
        return all(p <= here for p in self.reads.get(buf, ()))


def _in_place_operand(inst: Instruction) -> int | None:
    if inst.opcode == "dynamic-update-slice":
        return 0
    return fused_in_place_operand(inst) if inst.opcode == "fusion" and "calls" in inst.attrs else None


def _sink_in_place_updates(comp: Computation, leaves: dict[int, list[Leaf]]) -> list[Instruction]:
    """comp's post order, with each dynamic-update-slice (or DUS fusion) moved after the other instructions that
    read the old value of the buffer it updates, where none of them depends on it (XLA's scheduler puts readers
    first too): then the update may run in place (can_overwrite) instead of copying the whole buffer. A loop body
    that updates a list and reads the old one after (TensorFlow's gradient loops) writes a window, not 1 MB."""
    order = comp.post_order()
    candidates = [i for i in order if _in_place_operand(i) is not None]
    if not candidates:
        return order
    root_bufs = {b for leaf in leaves[id(comp.root)] for b in leaf}
    readers_of: dict[tuple, list[Instruction]] = {}
    for r in order:
        if r.opcode not in FORWARDING:
            for b in {b for o in r.operands for leaf in leaves[id(o)] for b in leaf}:
                readers_of.setdefault(b, []).append(r)
    position = {id(i): k for k, i in enumerate(order)}
    for inst in candidates:
        target = leaves[id(inst.operands[_in_place_operand(inst)])]
        if len(target) != 1 or len(target[0]) != 1:
            continue
        (buf,) = target[0]
        if buf in root_bufs:
            continue
        readers = [position[id(r)] for r in readers_of.get(buf, ()) if r is not inst]
        here = position[id(inst)]
        last = max(readers, default=-1)
        moved = _with_forwarding_users(inst, position, comp.root)   # a tuple or bitcast of it moves with it
        if last < here:
            continue
        first_user = min((position[id(u)] for m in moved for u in m.users
                          if id(u) in position and u.opcode not in FORWARDING), default=len(order))
        if last < first_user:      # no reader depends on inst: each reads before inst's first user
            moved = [m for m in moved if position[id(m)] < last]    # alias ops after the readers stay
            keep = {id(m) for m in moved}
            rest = [i for i in order if id(i) not in keep]
            at = rest.index(order[last]) + 1
            order = rest[:at] + sorted(moved, key=lambda m: position[id(m)]) + rest[at:]
            position = {id(i): k for k, i in enumerate(order)}
    return order


def _with_forwarding_users(inst: Instruction, position: dict[int, int], root: Instruction) -> list[Instruction]:
    """inst and the alias ops (tuple, get-tuple-element, bitcast ...) over it, transitively, but the root."""
    out, work, seen = [], [inst], set()
    while work:
        i = work.pop()
        if id(i) in seen or id(i) not in position or (i is root and i is not inst):
            continue
        seen.add(id(i))
        out.append(i)
        work.extend(u for u in i.users if u.opcode in FORWARDING)
    return out


def while_read_only_leaves(loop: Instruction) -> frozenset[int]:
    """The state leaves of while `loop` that its body passes through unchanged (the root's leaf k is the
    parameter's leaf k): no iteration writes them, so the loop may read them where its init lives."""
    body = loop.attrs["body"]
    root_leaves = ComputationAliasing(body).leaves[id(body.root)]
    return frozenset(k for k, leaf in enumerate(root_leaves) if leaf == Leaf({("param", 0, k)}))


def fused_in_place_operand(fusion: Instruction) -> int | None:
    """For a fusion whose root is a dynamic-update-slice of a fusion parameter (XLA's in-place DUS fusion): the
    fusion operand number whose buffer the DUS may update in place, when the fused computation reads that
    parameter only as the DUS's operand 0 or through dynamic-slices at the DUS's own window (read before the same
    element is written); else None."""
    comp = fusion.attrs["calls"]
    root = comp.root
    if root.opcode != "dynamic-update-slice" or root.operands[0].opcode != "parameter":
        return None
    param = root.operands[0]
    starts, window = root.operands[2:], tuple(root.operands[1].shape.dims)
    if any(o is param for o in root.operands[1:]):
        return None
    for user in param.users:
        if user is root:
            continue
        if user.opcode != "dynamic-slice" or user.operands[0] is not param:
            return None
        sizes = tuple(user.attrs.get("dynamic_slice_sizes", user.shape.dims))
        if sizes != window or len(user.operands[1:]) != len(starts) \
                or any(a is not b for a, b in zip(user.operands[1:], starts)):
            return None
    if fusion.operands[param.parameter_number].shape.is_tuple:
        return None
    return param.parameter_number
