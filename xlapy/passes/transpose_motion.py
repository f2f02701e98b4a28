"""Transpose motion (run by reshape-mover): sink transposes through the ops between them, so that a
convolution's output transpose (NHWC -> NCHW, from convolution-canonicalization) meets the next convolution's
input transpose (NCHW -> NHWC) and the two cancel, instead of the NCHW ops between them (bias, GroupNorm,
activations, skip connections) keeping one transpose kernel on each side. XLA:CPU gets the same from layout
assignment; here the region between the transposes is rewritten in the transposed (physical) order.

A value X has the *form* q when X == transpose(X', q) for an X' that costs nothing extra: a transpose's
operand, or an op rebuilt on its operands' X'. Forms flow forward through these rules (X' on the right):

| X                                   | X'                                               | X's form             |
|-------------------------------------|--------------------------------------------------|----------------------|
| transpose(a, p) (a seed)            | a                                                | p                    |
| transpose(a, p), a of form q        | a'                                               | q o p (i -> q[p[i]]); none when identity: X = a' |
| elementwise(a, b, ...), each of form q, or a constant c, or broadcast(v, dims) | elementwise(a', b', ...) with transpose(c, q^-1), broadcast(v, q(dims)) | q (q(dims) sorted, v's unit dims left out) |
| reshape(a), a of form q             | reshape(a') splitting/merging the same dim groups| q' (each group's dims consecutive and in order under q) |
| reduce(a, init, dims D)             | reduce(a', init, q(D))                           | the kept dims' order; none when kept in order |
| concatenate(a, b, ..., dim d)       | concatenate(a', b', ..., q[d])                   | q                    |
| slice(a) / pad(a, v) / reverse(a)   | the same with ranges, padding, dims permuted by q| q                    |

A value of no form is plain (a reduce that keeps its dims in order, two transposes that cancel).
Rewriting X replaces it by transpose(X', q) (X' when plain); its consumers read X' directly.

Like reshape-mover, a carrier (a value with a form: a transpose, or a rewritten op) is consumed only when
every user of it is rewritten and it is not the root, so that nothing is computed twice; members are pruned
until that holds. Each connected group of rewrites must materialize fewer transposed elements (the
transposes left at the group's exits) than it removes (the seeds it consumes, the transposes it merges), or as
many in fewer transposes: a move that only relocates a transpose is not made (it changes the fusions around it
for nothing). Transposes of constants and scalar broadcasts (constant folding's) and effective scalars do not
seed; variadic reduces, fused computations, ops with side effects, shardings or control predecessors are left
alone.
"""
from __future__ import annotations

from math import prod

from ..hlo import Computation, Instruction, Shape
from .build import make

_SKIP = frozenset({"map", "copy"})


def _inverse(perm) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _identity(perm) -> bool:
    return all(i == p for i, p in enumerate(perm))


def _is_seed(inst: Instruction) -> bool:
    if inst.opcode != "transpose" or not inst.shape.is_array or _identity(inst.attrs["dimensions"]):
        return False
    src = inst.operands[0]
    trivial = src.opcode == "constant" or (src.opcode == "broadcast" and src.operands[0].shape.rank == 0)
    return not trivial and not all(d == 1 for d in inst.shape.dims)


# -- rules: (X, forms) -> (consumed operand indices, X's form or None, build(primes) -> X') or None -------------
def _broadcast_dims(op: Instruction, q) -> tuple[int, ...] | None:
    """The dims of broadcast `op`'s operand in the form q, its unit dims left out (a [C,1,1] bias), when sorted."""
    dims = tuple(q[d] for d, n in zip(op.attrs["dimensions"], op.operands[0].shape.dims) if n != 1)
    return dims if all(a < b for a, b in zip(dims, dims[1:])) else None


def _adapt(comp: Computation, op: Instruction, q) -> Instruction:
    """A non-carrier operand of an elementwise op in the form q: op == transpose(result, q)."""
    new_shape = Shape.array(op.shape.element_type, tuple(op.shape.dims[i] for i in _inverse(q)))
    if op.opcode == "broadcast":
        src = op.operands[0]
        dims = _broadcast_dims(op, q)
        if 1 in src.shape.dims:
            kept = Shape.array(src.shape.element_type, tuple(n for n in src.shape.dims if n != 1))
            src = comp.add_instruction(make("reshape", [src], shape=kept))
        return comp.add_instruction(make("broadcast", [src], {"dimensions": dims}, shape=new_shape))
    return comp.add_instruction(make("transpose", [op], {"dimensions": _inverse(q)}, shape=new_shape))


def _adaptable(op: Instruction, q) -> bool:
    return op.opcode == "constant" or (op.opcode == "broadcast" and _broadcast_dims(op, q) is not None)


def _elementwise(inst, forms):
    if inst.opcode in _SKIP or inst.has_side_effect or not inst.operands:
        return None
    q, carried = None, []
    for k, op in enumerate(inst.operands):
        if not op.shape.is_array or op.shape.dims != inst.shape.dims:
            return None
        f = forms.get(id(op))
        if f is not None:
            if q is not None and f != q:
                return None
            q = f
            carried.append(k)
    if q is None or any(k not in carried and not _adaptable(op, q) for k, op in enumerate(inst.operands)):
        return None

    def build(comp, primes):
        ops = [primes[k] if k in carried else _adapt(comp, op, q) for k, op in enumerate(inst.operands)]
        shape = Shape.array(inst.shape.element_type, ops[carried[0]].shape.dims)
        return comp.add_instruction(inst.clone_with(ops, shape=shape))
    return carried, q, build


def _transpose(inst, forms):
    q = forms.get(id(inst.operands[0]))
    if q is None:
        return None
    p = inst.attrs["dimensions"]
    r = tuple(q[i] for i in p)
    return [0], (None if _identity(r) else r), lambda comp, primes: primes[0]


def _groups(src, dst):
    """The dim groups of a reshape src -> dst: [(src indices, dst indices)], each with equal products; None when
    a side is empty or a dim is 0."""
    if not src or not dst or 0 in src or 0 in dst:
        return None
    out, i, j = [], 0, 0
    while i < len(src) and j < len(dst):
        gi, gj, a, b = [i], [j], src[i], dst[j]
        i, j = i + 1, j + 1
        while a != b:
            if a < b:
                if i == len(src):
                    return None
                gi.append(i); a *= src[i]; i += 1
            else:
                if j == len(dst):
                    return None
                gj.append(j); b *= dst[j]; j += 1
        out.append((gi, gj))
    # trailing 1s join the last group
    if any(src[k] != 1 for k in range(i, len(src))) or any(dst[k] != 1 for k in range(j, len(dst))):
        return None
    out[-1] = (out[-1][0] + list(range(i, len(src))), out[-1][1] + list(range(j, len(dst))))
    return out


def _reshape(inst, forms):
    a = inst.operands[0]
    q = forms.get(id(a))
    if q is None or not inst.shape.is_array:
        return None
    groups = _groups(a.shape.dims, inst.shape.dims)
    if groups is None:
        return None
    for gi, _ in groups:
        src = [q[k] for k in gi]
        if any(y != x + 1 for x, y in zip(src, src[1:])):
            return None
    order = sorted(groups, key=lambda g: q[g[0][0]])
    new_dims, position = [], {}
    for _, gj in order:
        for j in gj:
            position[j] = len(new_dims)
            new_dims.append(inst.shape.dims[j])
    r = tuple(position[j] for j in range(inst.shape.rank))

    def build(comp, primes):
        shape = Shape.array(inst.shape.element_type, tuple(new_dims))
        return comp.add_instruction(make("reshape", [primes[0]], shape=shape, name=inst.name))
    return [0], (None if _identity(r) else r), build


def _reduce(inst, forms):
    if len(inst.operands) != 2 or not inst.shape.is_array:
        return None
    q = forms.get(id(inst.operands[0]))
    if q is None or id(inst.operands[1]) in forms:
        return None
    dims = set(inst.attrs["dimensions"])
    kept = [q[k] for k in range(len(q)) if k not in dims]
    rank = {d: n for n, d in enumerate(sorted(kept))}
    r = tuple(rank[d] for d in kept)

    def build(comp, primes):
        dims_out = tuple(primes[0].shape.dims[d] for d in sorted(kept))
        new = inst.clone_with([primes[0], inst.operands[1]], shape=Shape.array(inst.shape.element_type, dims_out))
        new.attrs["dimensions"] = tuple(sorted(q[d] for d in dims))
        return comp.add_instruction(new)
    return [0], (None if _identity(r) else r), build


def _concatenate(inst, forms):
    qs = {forms.get(id(op)) for op in inst.operands}
    if len(qs) != 1 or None in qs:
        return None
    q = qs.pop()
    d = q[inst.attrs["dimensions"][0]]

    def build(comp, primes):
        ops = [primes[k] for k in range(len(inst.operands))]
        return comp.add_instruction(make("concatenate", ops, {"dimensions": (d,)}, name=inst.name))
    return list(range(len(inst.operands))), q, build


def _permuted_attr(key):
    def rule(inst, forms):
        q = forms.get(id(inst.operands[0]))
        if q is None or any(id(op) in forms for op in inst.operands[1:]):
            return None
        inv = _inverse(q)

        def build(comp, primes):
            new = inst.clone_with([primes[0], *inst.operands[1:]])
            if key == "dimensions":     # reverse
                new.attrs[key] = tuple(sorted(q[d] for d in inst.attrs[key]))
            else:                       # slice ranges, padding: one entry per dim
                new.attrs[key] = tuple(inst.attrs[key][inv[k]] for k in range(len(q)))
            new.shape = Shape.array(inst.shape.element_type, tuple(inst.shape.dims[inv[k]] for k in range(len(q))))
            return comp.add_instruction(new)
        return [0], q, build
    return rule


RULES = {"transpose": _transpose, "reshape": _reshape, "reduce": _reduce, "concatenate": _concatenate,
         "slice": _permuted_attr("slice"), "pad": _permuted_attr("padding"), "reverse": _permuted_attr("dimensions")}


def _rule(inst: Instruction, forms: dict):
    # a sharding or a control edge describes the instruction as it is, not its transposed form
    if "sharding" in inst.attrs or inst.control_predecessors:
        return None
    if inst.info.is_elementwise:
        return _elementwise(inst, forms)
    rule = RULES.get(inst.opcode)
    return rule(inst, forms) if rule is not None else None


# -- planning -------------------------------------------------------------------------------------------------
def _plan(order: list[Instruction], excluded: set[int]):
    """Forward pass: forms of the carriers, and the members (id -> (inst, consumed operand indices, form))."""
    forms: dict[int, tuple] = {}
    members: dict[int, tuple] = {}
    for inst in order:
        for op in inst.operands:
            if id(op) in forms:
                break
        else:       # no operand with a form: only a seed can start one
            if inst.opcode == "transpose" and _is_seed(inst):
                forms[id(inst)] = tuple(inst.attrs["dimensions"])
            continue
        if id(inst) not in excluded:
            planned = _rule(inst, forms)
            if planned is not None:
                carried, form, _ = planned
                members[id(inst)] = (inst, carried, form)
                if form is not None:
                    forms[id(inst)] = form
                continue
        if _is_seed(inst):
            forms[id(inst)] = tuple(inst.attrs["dimensions"])
    return forms, members


def _prune(order: list[Instruction]) -> tuple[dict, dict]:
    excluded: set[int] = set()
    while True:
        forms, members = _plan(order, excluded)
        consumers: dict[int, set[int]] = {}
        carriers: dict[int, Instruction] = {}
        for inst, carried, _ in members.values():
            for k in carried:
                consumers.setdefault(id(inst.operands[k]), set()).add(id(inst))
                carriers[id(inst.operands[k])] = inst.operands[k]
        bad = set()
        for carrier_id, users in consumers.items():
            carrier = carriers[carrier_id]
            if carrier.is_root or any(id(u) not in users for u in carrier.users):
                bad |= users
        if not bad:
            return forms, members
        excluded |= bad


def _elements(inst: Instruction) -> int:
    return prod(inst.shape.dims)


def _accepted(members: dict, forms: dict) -> set[int]:
    """The members of the groups that leave fewer transposed elements than they remove, or as many in fewer
    transposes (a move alone changes nothing worth its risk: the fusions around it change)."""
    parent: dict[int, int] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    consumed: set[int] = set()
    carriers: dict[int, Instruction] = {}
    for inst, carried, _ in members.values():
        for k in carried:
            op = inst.operands[k]
            consumed.add(id(op))
            carriers[id(op)] = op
            parent[find(id(inst))] = find(id(op))
    cost: dict[int, tuple[int, int]] = {}      # group -> (transposed elements, transposes) added

    def add(x, elements, count):
        e, c = cost.get(find(x), (0, 0))
        cost[find(x)] = (e + elements, c + count)
    for cid, op in carriers.items():
        if cid not in members:      # a seed: removed
            add(cid, -_elements(op), -1)
    for mid, (inst, _, form) in members.items():
        if inst.opcode == "transpose":                  # merged into the one before: removed too
            add(mid, -_elements(inst), -1)
        if form is not None and mid not in consumed:     # left at an exit
            add(mid, _elements(inst), 1)
    return {mid for mid in members if cost.get(find(mid), (0, 0)) < (0, 0)}


def _cone_order(comp: Computation) -> list[Instruction]:
    """The seeds and what forms can reach from them (users that a rule may take), operands first: the part of
    the computation the plan needs, without a walk of the whole of it."""
    def movable(u):
        return u.info.is_elementwise or u.opcode in RULES
    cone: dict[int, Instruction] = {}
    # a seed read by the root or by an op no rule takes (a dot, a convolution) stays whatever happens around it
    stack = [inst for inst in comp.instructions if inst.opcode == "transpose" and _is_seed(inst)
             and not inst.is_root and inst.users and all(movable(u) for u in inst.users)]
    while stack:
        inst = stack.pop()
        if id(inst) not in cone:
            cone[id(inst)] = inst
            stack.extend(u for u in inst.users if movable(u))
    pending = {k: len({id(op) for op in inst.operands if id(op) in cone}) for k, inst in cone.items()}
    ready = [inst for inst in cone.values() if not pending[id(inst)]]
    order = []
    while ready:
        inst = ready.pop()
        order.append(inst)
        for u in {id(u): u for u in inst.users}.values():
            if id(u) in pending:
                pending[id(u)] -= 1
                if not pending[id(u)]:
                    ready.append(u)
    return order


def move_transposes(comp: Computation) -> bool:
    if not any(inst.opcode == "transpose" for inst in comp.instructions):     # most computations: nothing to seed
        return False
    order = _cone_order(comp)
    forms, members = _prune(order)
    accepted = _accepted(members, forms)
    if not accepted:
        return False
    primes: dict[int, Instruction] = {}     # id(carrier as it is now) -> X'
    live_forms: dict[int, tuple] = {}
    for inst in order:
        if inst.opcode == "transpose" and id(inst) not in accepted and _is_seed(inst):
            primes[id(inst)] = inst.operands[0]
            live_forms[id(inst)] = tuple(inst.attrs["dimensions"])
    changed = False
    for inst in order:
        if id(inst) not in accepted:
            continue
        planned = _rule(inst, live_forms)
        if planned is None:     # cannot happen when the plan holds; inst stays as it is, still correct
            continue
        carried, form, build = planned
        operand_primes = {k: primes[id(inst.operands[k])] for k in carried}
        new = build(comp, operand_primes)
        if form is None:
            if new is not inst:
                comp.replace_instruction(inst, new)
        else:
            replacement = make("transpose", [new], {"dimensions": form}, shape=inst.shape, name=inst.name)
            comp.replace_instruction(inst, replacement)
            primes[id(replacement)] = new
            live_forms[id(replacement)] = form
        changed = True
    return changed
