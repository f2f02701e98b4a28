"""InstructionFusion (XLA name `fusion`): XLA:CPU's CpuInstructionFusion over the rules of fusible.py.

Consumers are visited in reverse post order; each tries its operands, latest-defined first, and after every
successful fusion the grown fusion tries again, so a whole producer chain (and the reduction consuming it)
becomes one kLoop fusion. A dot feeding an add alone becomes a kOutput fusion. A decision is the first
matching row of REFUSALS (a reason why not) or, when none matches, a fusion:

    refused                               because
    producer/consumer not fusible         parameters, tuples, control flow, calls, custom-calls, sort, rng,
                                          side effects, control edges
    non-scalar constant                   it would be copied into the loop body
    producer is not loop-fusible          dot, convolution, reduce-window, scatter, fft, ... (LOOP_FUSIBLE)
    producer must not be duplicated       a multi-user producer some user cannot take, or a link of a chain of
                                          multi-user values (x_l = x_(l-1) + a_l): see _globally_unfusible
    concatenate fusion is inefficient     > 8 operands, or a large concat along the minor dimension
    expensive producer, consumer reuses   exp(x) broadcast: exp would run once per output element
    expensive producer would duplicate    exp(x) with two users is computed once, not once per user
    constant into a non-fusion            a fusion of a constant and one op gains nothing
    producer is a fusion                  XLA:CPU does not fuse fusions; FusionMerger does it, with care
    too many reductions / too large       caps below
    consumer is not loop-fusible          the consumer cannot be emitted elementally (a scatter's indices and
                                          updates can: scatter fusions)
"""
from __future__ import annotations

from typing import Callable

from ...hlo import Computation, Instruction, Module
from ..control_util import has_control_edges
from ..pipeline import Pass
from . import fusible as F
from .fuse import fuse_into, fused_computation, fused_size, is_fusion, rename_parameters

MAX_CONCATENATE_ARGUMENTS = 8
MAX_REDUCTIONS_IN_FUSION = 5
MAX_FUSED_INSTRUCTIONS = 200
MAX_FUSION_PARAMETERS = 64


def fusible_computations(module: Module) -> list[Computation]:
    """Computations run as sequential code: the entry and what while/conditional/call run, transitively.
    Reducers, comparators and scatter combiners are applied per element and are left alone."""
    out: list[Computation] = []
    seen: set[int] = set()
    stack = [module.entry] if module.entry is not None else []
    while stack:
        comp = stack.pop()
        if id(comp) in seen:
            continue
        seen.add(id(comp))
        out.append(comp)
        for inst in comp.instructions:
            if inst.opcode in ("while", "conditional", "call"):
                stack.extend(inst.called_computations())
    return out


# -- the predicates of the decision table ----------------------------------------------------------------
def _loop_fusion(inst: Instruction) -> bool:
    return is_fusion(inst) and inst.attrs.get("kind") == "kLoop" and not inst.shape.is_tuple


def _is_minor_dim_concatenate(inst: Instruction) -> bool:
    shape = inst.shape
    if shape.rank <= 1:
        return False
    dim = inst.attrs["dimensions"][0]
    minor = shape.layout.minor_to_major[0] if shape.layout and shape.layout.minor_to_major else shape.rank - 1
    element_bytes = max(1, shape.ptype.bits // 8)
    return dim == minor and shape.dims[dim] * element_bytes >= 64 and shape.numel * element_bytes >= 2048


def _inefficient_concatenate(inst: Instruction) -> bool:
    return inst.opcode == "concatenate" and (len(inst.operands) > MAX_CONCATENATE_ARGUMENTS
                                             or _is_minor_dim_concatenate(inst))


def _scatter_input(consumer: Instruction, index: int) -> bool:
    """The indices or updates of a one-operand scatter: computed per update element where the scatter reads them
    (scatter_emitter.scatter_fusion), instead of written out and read back (a segment sum's messages)."""
    return consumer.opcode == "scatter" and len(consumer.operands) == 3 and index in (1, 2)


def _would_duplicate(producer: Instruction, consumer: Instruction) -> bool:
    return producer.is_root or any(u is not consumer for u in producer.users)


def _always_duplicable(producer: Instruction) -> bool:
    return not producer.operands and producer.shape.is_array and producer.shape.numel <= 1


def _size(inst: Instruction) -> int:
    """Instructions a fusion holds besides its parameters (1 for an unfused instruction); counted, not walked:
    this runs for every candidate pair."""
    return fused_size(inst) if is_fusion(inst) else 1


def _too_large(producer: Instruction, consumer: Instruction) -> bool:
    grown = _size(consumer) + _size(producer)
    params = set(map(id, consumer.operands)) - {id(producer)}
    params |= set(map(id, producer.operands))
    return grown > MAX_FUSED_INSTRUCTIONS or len(params) > MAX_FUSION_PARAMETERS


def _too_many_reductions(producer: Instruction, consumer: Instruction) -> bool:
    if producer.opcode != "reduce" or not is_fusion(consumer):
        return False
    return sum(i.opcode == "reduce" for i in fused_computation(consumer).instructions) > MAX_REDUCTIONS_IN_FUSION


def can_be_output_fused(producer: Instruction, consumer: Instruction) -> bool:
    """dot(matrix, vector) + bias: XLA:CPU's kOutput fusion (the dot emitter adds the addend in place)."""
    return (consumer.opcode == "add" and producer.opcode == "dot" and producer.shape.rank <= 1
            and not producer.shape.ptype.is_complex and not producer.attrs.get("lhs_batch_dims")
            and len(producer.users) == 1 and consumer.operands.count(producer) == 1 and not producer.is_root)


def _output_fusible_into_some_operand(inst: Instruction) -> bool:
    return inst.opcode == "add" and any(can_be_output_fused(op, inst) for op in inst.operands)


class Context:
    """What the rows may consult beyond the pair: the producers that must stay materialized
    (_globally_unfusible), and the fused values known to have no element re-read below them (a cache for the
    reuse row, kept by InstructionFusion for one computation: fusing adds values above, never below, a fused
    value; None: no cache), and whether the computation may have control edges (fusion adds none)."""
    __slots__ = ("do_not_duplicate", "known_use", "control_edges")

    def __init__(self, do_not_duplicate=frozenset(), known_use: set | None = None, control_edges: bool = True):
        self.do_not_duplicate = do_not_duplicate
        self.known_use = known_use
        self.control_edges = control_edges


Rule = Callable[[Instruction, Instruction, int, Context], bool]

# (reason, predicate(producer, consumer, operand_index, context)) — the first true row refuses.
REFUSALS: list[tuple[str, Rule]] = [
    ("producer is not fusible", lambda p, c, i, ctx: not F.is_fusible(p, ctx.control_edges) or p.shape.is_tuple),
    ("consumer is not fusible", lambda p, c, i, ctx: not (F.is_fusible(c, ctx.control_edges) or is_fusion(c))),
    ("non-scalar constant", lambda p, c, i, ctx: F.is_non_scalar_constant(p)),
    ("producer can be output-fused into some operand", lambda p, c, i, ctx: _output_fusible_into_some_operand(p)),
    # (the rows below may assume the rows above did not refuse: p is fusible, c fusible or a fusion)
    ("producer is not loop-fusible", lambda p, c, i, ctx: not F.loop_fusible_kind(p)),
    # (before the rows that walk or scan: two thirds of all refusals on ViT's training step are this one)
    ("producer must not be duplicated",
     lambda p, c, i, ctx: id(p) in ctx.do_not_duplicate and _would_duplicate(p, c)),
    ("concatenate fusion is inefficient",
     lambda p, c, i, ctx: _inefficient_concatenate(p) or _inefficient_concatenate(c)),
    ("expensive producer, consumer reuses its elements",
     lambda p, c, i, ctx: F.is_expensive(p) and F.reuses_operand_elements(c, i, ctx.known_use)),
    ("expensive producer would be duplicated",
     lambda p, c, i, ctx: _would_duplicate(p, c) and F.is_expensive(p) and not _always_duplicable(p)),
    ("too many reductions in one fusion", lambda p, c, i, ctx: _too_many_reductions(p, c)),
    ("constant into a non-fusion", lambda p, c, i, ctx: p.opcode == "constant" and not is_fusion(c)),
    ("fusion would be too large", lambda p, c, i, ctx: _too_large(p, c)),
    ("consumer is not loop-fusible",
     lambda p, c, i, ctx: not (_loop_fusion(c) if is_fusion(c) else F.loop_fusible_kind(c) or _scatter_input(c, i))),
]


# refusals that stand while the consumer grows (InstructionFusion._run_on asks each such producer once per
# consumer, instead of once per operand fused into it): those that depend on the producer alone, and reuse,
# which fusing more producers only adds to (a parameter's users and the paths from it only grow)
PRODUCER_ONLY = frozenset({"producer is a fusion", "producer is not fusible", "non-scalar constant",
                           "producer is not loop-fusible", "producer can be output-fused into some operand",
                           "expensive producer, consumer reuses its elements"})


def decide(consumer: Instruction, index: int, do_not_duplicate: set = frozenset(),
           known_use: set | None = None) -> tuple[str | None, str]:
    """(fusion kind, "") when operand `index` should be fused into `consumer`, else (None, reason)."""
    return _decide(consumer, index, Context(do_not_duplicate, known_use))


def _decide(consumer: Instruction, index: int, ctx: Context) -> tuple[str | None, str]:
    producer = consumer.operands[index]
    if is_fusion(producer):
        return None, "producer is a fusion"
    if can_be_output_fused(producer, consumer):
        return "kOutput", ""
    for reason, refuses in REFUSALS:
        if refuses(producer, consumer, index, ctx):
            return None, reason
    return "kLoop", ""


def _coupled_max_shift_exp_producer(inst: Instruction) -> bool:
    """x feeding both reduce-max(x) and exp(x - broadcast(max)): recomputing x in the exp fusion may differ
    from the x the max saw by an ulp (FMA contraction), and exp turns that into inf. Keep x materialized.
    The subtract may already sit in a fusion (a second run of the pass must decide the same)."""
    if not inst.info.is_elementwise or is_fusion(inst):
        return False
    maxes = {id(u) for u in inst.users if u.opcode == "reduce" and u.operands[0] is inst
             and u.attrs["to_apply"].root.opcode == "maximum"}
    if not maxes:
        return False
    for sub, outer in _subtracts_reading(inst):
        if not any(u.opcode == "exponential" for u in sub.users):
            continue
        if any(o.opcode == "broadcast" and id(outer(o.operands[0])) in maxes for o in sub.operands):
            return True
    return False


def _subtracts_reading(inst: Instruction):
    """(subtract, map from a value beside it to the instruction outside any fusion) for each subtract that
    reads `inst`, directly or as a parameter of a fusion."""
    for user in inst.users:
        if user.opcode == "subtract":
            yield user, lambda o: o
        elif is_fusion(user):
            comp = fused_computation(user)
            outer = {id(comp.parameter(i)): op for i, op in enumerate(user.operands)}
            for sub in comp.parameter(user.operands.index(inst)).users:
                if sub.opcode == "subtract":
                    yield sub, lambda o, outer=outer: outer.get(id(o), o)


def _is_link(value: Instruction) -> bool:
    """A value that fusion would duplicate into each of its users, reading more than one real input."""
    return len(value.users) > 1 and bool(value.operands) and not F.effectively_unary(value)


def _travels_with(value: Instruction) -> bool:
    """Would `value` be fused (moved, not copied) into its one user's fusion, and so be recomputed wherever
    that user is duplicated? Single-user cheap loop-fusible ops are; expensive ones stop a duplication."""
    return (len(value.users) == 1 and not value.is_root and F.is_fusible(value) and F.loop_fusible_kind(value)
            and not F.is_expensive(value) and value.opcode != "constant")


def _reaches_a_link(value: Instruction, memo: dict[int, bool]) -> bool:
    """Does some operand of `value` either link a chain itself, or travel with it and reach one further up?"""
    known = memo.get(id(value))
    if known is not None:
        return known
    memo[id(value)] = False
    stack, out = [(value, iter(value.operands))], False
    while stack:                         # iterative: a chain of single-user ops may be thousands long
        inst, ops = stack[-1]
        op = next(ops, None)
        if op is None:
            stack.pop()
            memo.setdefault(id(inst), False)
            continue
        if _is_link(op) or (memo.get(id(op)) is True):
            out = True
        elif id(op) not in memo and _travels_with(op):
            memo[id(op)] = False
            stack.append((op, iter(op.operands)))
            continue
        if out:
            for inst_, _ in stack:       # every value on the walked path reaches the link
                memo[id(inst_)] = True
            return True
    return False


def _links_a_chain(producer: Instruction, memo: dict[int, bool]) -> bool:
    """Is `producer` (several users, reads more than it writes) computed from another value with several users
    that is not effectively unary, directly or through single-user cheap ops fused along with it? Then
    duplicating it into its users would make each recompute the chain behind it as well (the operand is
    duplicable for the same reason, and so on up): a transformer's residual stream x_l = x_(l-1) + f_l(...),
    read by every layer's LayerNorm, was recomputed from x_0 inside each LayerNorm fusion (quadratic in depth;
    ViT's training step held twice XLA's fused instructions, whose reductions are not loop-fusible and so keep
    each x_l materialized). Its gradient g_l = g_(l+1) + a_l + b_l + c_l has single-user adds between the
    multi-user links, which the walk through single-user ops finds. Such links stay materialized."""
    return _reaches_a_link(producer, memo)


def _globally_unfusible(order: list[Instruction], control_edges: bool = True) -> set[int]:
    """Multi-user producers that must stay materialized: duplicating them into the users that can take
    them would read more than it saves while some other user still needs the materialized value."""
    out: set[int] = set()
    memo: dict[int, bool] = {}
    ctx = Context(control_edges=control_edges)
    for producer in order:
        if len(producer.users) < 2:
            continue
        if _coupled_max_shift_exp_producer(producer):
            out.add(id(producer))
            continue
        if F.effectively_unary(producer):
            continue
        if sum(F.byte_size(o) for o in producer.operands) <= F.byte_size(producer):
            continue
        if _links_a_chain(producer, memo):
            out.add(id(producer))
            continue
        if all(_decide(u, u.operands.index(producer), ctx)[0] is not None for u in producer.users):
            continue
        out.add(id(producer))
    return out


class InstructionFusion(Pass):
    name = "fusion"

    def __init__(self):
        self.decisions: list[tuple[str, str, str]] = []   # (consumer, producer, "fused" or the refusal)

    def run(self, module: Module) -> bool:
        self.decisions = []
        changed = False
        for comp in fusible_computations(module):
            changed |= self._run_on(comp)
        return changed

    def _run_on(self, comp: Computation) -> bool:
        order = comp.post_order()
        position = {id(inst): n for n, inst in enumerate(order)}
        edges = has_control_edges(comp)
        ctx = Context(_globally_unfusible(order, edges), known_use=set(), control_edges=edges)
        changed = False
        grown: dict[int, Instruction] = {}      # the fusions made or grown, renamed once at the end
        for consumer in reversed(order):
            current = consumer
            settled: set[int] = set()          # producers refused for a PRODUCER_ONLY reason
            while current.parent is comp:
                fused = self._fuse_one_operand(current, position, ctx, settled)
                if fused is None:
                    break
                position[id(fused)] = position[id(consumer)]
                grown[id(fused)] = fused
                current = fused
                changed = True
        for fusion in grown.values():
            if fusion.parent is comp:
                rename_parameters(fusion)
        return changed

    def _fuse_one_operand(self, consumer: Instruction, position: dict, ctx: Context,
                          settled: set | None = None):
        """Fuse the first operand (latest defined first) that the rules allow; the fusion, or None. `settled`:
        producers already refused for a reason of their own (PRODUCER_ONLY), skipped, and added to."""
        if not (is_fusion(consumer) or F.is_fusible(consumer, ctx.control_edges)):
            return None
        settled = set() if settled is None else settled
        later_first = [-position.get(id(op), -1) for op in consumer.operands]
        indices = sorted(range(len(later_first)), key=later_first.__getitem__)
        tried: set[int] = set()
        for i in indices:
            producer = consumer.operands[i]
            if id(producer) in tried or id(producer) in settled:
                continue
            tried.add(id(producer))
            kind, reason = _decide(consumer, i, ctx)
            if kind is None:
                self.decisions.append((consumer.name, producer.name, reason))
                if reason in PRODUCER_ONLY:
                    settled.add(id(producer))
                continue
            self.decisions.append((consumer.name, producer.name, "fused"))
            return fuse_into(consumer, producer, kind, rename=False)
        return None


def refusals(pass_: InstructionFusion) -> dict[tuple[str, str], str]:
    """The last decision for each (consumer, producer) pair that was refused: handy in tests."""
    return {(c, p): r for c, p, r in pass_.decisions if r != "fused"}


__all__ = ["InstructionFusion", "Context", "decide", "REFUSALS", "PRODUCER_ONLY", "fusible_computations", "refusals"]
