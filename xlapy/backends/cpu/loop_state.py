"""Where a while loop's state lives, so that loop-carried values stay in place (issue 11, "loops and small ops").

A while's state is one buffer per array leaf, read by the condition and the body and updated at the end of each
iteration (emitter._while). Two rules keep the state's bytes from being copied:

| where | rule | instead of |
|---|---|---|
| before the loop | an init leaf whose buffer the loop may own (a temporary, or writable loop state of an enclosing body, that nothing reads after the while) becomes the state leaf itself | a copy of the init into a fresh state buffer |
| before the loop | so does an init leaf the body passes through unchanged (read only: any buffer, a parameter's too); the alias analysis knows the while's result leaf is the init's buffer (aliasing.while_read_only_leaves) | the same copy |
| in the body | a loop fusion (or an elementwise instruction) whose output is state element k writes it into state leaf k directly, when every read of the old leaf k happens at or before it, and it reads the old leaf only element for element (XLA's CanShareOperandBufferWithUser for loop fusions) | the copy of its result into the state at the end of the iteration |

A leaf whose result buffer is preassigned (the entry's result buffers, compiler.py) keeps it and is copied into.
The second rule preassigns the body instruction's result buffer (IrEmitter.targets) for the body's emission.

Which thread runs a loop's iterations (`runs_on_caller`): a body whose work per iteration is small runs whole on
the calling thread (parallel.on_calling_thread), its GEMMs as single-threaded BLAS calls, as XLA:CPU runs such
loops (its gru/fwd takes the same time with a competing busy process as without). Splitting a recurrent step's
kernels (a 32 x 384 x 128 GEMM, a 32 x 128 gate fusion) over the pool costs a publish and a join per kernel per
iteration, for kernels of 5-30 us; with other processes on the cores each join may wait for a descheduled worker.
Interleaved rounds on the loaded 2-core machine, on the caller against on the pool: gru/fwd 0.92x the time,
lstm/fwd 0.93x, lstm/train 0.94x, gru/train 0.92x, gpt2/sample 0.94x; with one more busy process 0.93x, 0.94x,
0.89x, 0.93x, 0.91x, and 4-15% less CPU.

A dot of a small body (at most CALLER_MAX_FLOPS, at any thread count) whose rhs is a state element the body passes
through unchanged (a recurrent step's weight) gets a scratch slice for a packed copy of it, reset before the first
iteration, so the copy is made once per run of the loop (dot_plan's "packed" plan, dot_loops.emit_packed) where a
BLAS call would pack the whole weight again in every iteration: with 12 accumulators (4 rows x 3 vectors) the
kernel also keeps its FMA units busy when another thread shares the core.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ...hlo import Computation, Instruction
from ...hlo.ir import reachable_computations
from ...hlo.cost import computation_flops
from ...hlo.opcodes import opinfo
from . import buffer_assignment
from .aliasing import ComputationAliasing, while_read_only_leaves
from .buffers import BufferRef, ValueTree, leaf_count
from .dot_blas import set_serial_blas
from .dot_plan import PACKED_RHS, packed_bytes
from .irhelpers import I64, i64
from .indexing import major_to_minor
from .parallel import on_calling_thread
from .threadpool import serial_blas_available

_PASS_THROUGH = frozenset({"tuple"})      # a fused root that only groups outputs
_IN_PLACE = frozenset({"dynamic-update-slice", "scatter"})     # ops the emitter may run in their operand's buffer


def _same_layout(a, b) -> bool:
    return a.dims == b.dims and major_to_minor(a) == major_to_minor(b)


# -- which thread ---------------------------------------------------------------------------------------------
CALLER_MAX_FLOPS = 64e6       # per iteration (hlo/cost.py's count: 2 per multiply-add); ~1 ms of one core


def runs_on_caller(inst: Instruction, num_threads: int) -> bool:
    """Does while `inst` run its condition and body on the calling thread (parallel.on_calling_thread)? Yes
    when there are threads to decline and one iteration's work is at most CALLER_MAX_FLOPS."""
    return num_threads > 1 and _small_body(inst)


def _small_body(inst: Instruction) -> bool:
    """At most CALLER_MAX_FLOPS per iteration: a body whose kernels run one thread's code at any thread count."""
    return sum(sum(computation_flops(inst.attrs[k])) for k in ("condition", "body")) <= CALLER_MAX_FLOPS


@contextmanager
def iterations(em, inst: Instruction) -> Iterator[None]:
    """Emit while `inst`'s loop inside: on the calling thread when runs_on_caller says so, and then, if the loop
    calls the BLAS, with the BLAS single-threaded around the whole loop (dot_blas.set_serial_blas), so that each
    GEMM's own bracket finds it so and changes no thread count (0.8 us a GEMM, 4% of a 16 x 64 x 512 one)."""
    on_caller = runs_on_caller(inst, em.num_threads)
    bracket = on_caller and _calls_blas(inst) and serial_blas_available()
    packed = _pack_invariant_rhs(em, inst) if _small_body(inst) else []
    try:
        with on_calling_thread(on_caller):
            if bracket:
                set_serial_blas(em.b, True)
            yield
            if bracket:
                set_serial_blas(em.b, False)
    finally:
        for dot in packed:
            PACKED_RHS.pop(id(dot), None)


_BLAS_OPS = frozenset({"dot", "convolution"})


def _invariant_rhs_dots(inst: Instruction) -> list[Instruction]:
    """The dots of while inst's body (its own instructions) whose rhs is a state element the body passes through
    unchanged: the same array in every iteration of a run of the loop (dot_plan's "packed" plan)."""
    body = inst.attrs["body"]
    read_only = while_read_only_leaves(inst)
    if not read_only:
        return []
    leaves = ComputationAliasing(body).leaves

    def state_leaf(value: Instruction) -> int | None:
        found = leaves[id(value)]
        if len(found) != 1 or len(found[0]) != 1:
            return None
        (buf,) = found[0]
        return buf[2] if buf[:2] == ("param", 0) else None
    return [i for i in body.instructions if i.opcode == "dot" and state_leaf(i.operands[1]) in read_only]


def _pack_invariant_rhs(em, inst: Instruction) -> list[Instruction]:
    """For each dot of while inst's body whose rhs is loop-invariant and suits dot_plan's "packed" plan: a scratch
    slice for the packed copy (live while the loop is: the while instruction's temporary), its header set to
    "no copy" here, before the first iteration, so the dot makes the copy once per run of the loop
    (dot_loops.emit_packed). Returns the dots registered in dot_plan.PACKED_RHS."""
    b = em.b
    dots = []
    for dot in _invariant_rhs_dots(inst):
        nbytes = packed_bytes(dot)
        if not nbytes:
            continue
        region = b.gep(em.scratch_arg, [i64(em.scratch.allocate(nbytes))], inbounds=True)
        b.store(i64(0), b.bitcast(region, I64.as_pointer()))
        PACKED_RHS[id(dot)] = region
        dots.append(dot)
    return dots


def _calls_blas(inst: Instruction) -> bool:
    return any(i.opcode in _BLAS_OPS
               for comp in reachable_computations([inst.attrs["condition"], inst.attrs["body"]])
               for i in comp.instructions)


# -- before the loop -------------------------------------------------------------------------------------------
def initial_state(em, inst: Instruction, init: ValueTree) -> tuple[ValueTree, list[tuple]]:
    """The state tree of while `inst` whose init value is `init`, and the (source, state) leaf pairs still to
    copy before the first iteration: leaves the loop may own, and leaves it only reads, stay where the init is;
    the others get fresh buffers."""
    owned = _ownable_leaves(em, inst) | while_read_only_leaves(inst)
    counter = iter(range(1 << 30))
    copies: list[tuple] = []

    def build(shape, value):
        if shape.is_tuple:
            return tuple(build(s, v) for s, v in zip(shape.tuple_shapes, value))
        if shape.is_token:
            return None
        k = next(counter)
        if k in owned and (id(inst), k) not in em.targets and _same_layout(value.shape, shape):
            return BufferRef(value.pointer, shape)
        state = em.new_buffer(shape, inst, k)
        copies.append((value, state))
        return state
    return build(inst.shape, init), copies


def _ownable_leaves(em, inst: Instruction) -> set[int]:
    """Leaf numbers of inst's init whose buffer is writable here and dead after the while (the alias analysis of
    the computation being emitted says so), each buffer appearing in one leaf only."""
    aliasing = em.assignment.current
    if not buffer_assignment.IN_PLACE_UPDATES or aliasing is None or id(inst) not in aliasing.position:
        return set()
    here = aliasing.position[id(inst)]
    # the second loop of a concurrent pair (concurrent_loops.py) owns nothing the first one reads: that one runs
    # at the same time, at position `partner`
    partner = em.partner_position.get(id(inst))
    init_leaves = aliasing.leaves[id(inst.operands[0])]
    seen: dict[tuple, int] = {}
    for leaf in init_leaves:
        for buf in leaf:
            seen[buf] = seen.get(buf, 0) + 1
    owned = set()
    for k, leaf in enumerate(init_leaves):
        if len(leaf) != 1:
            continue
        (buf,) = leaf
        reads = aliasing.reads.get(buf, ())
        if aliasing.writable(buf) and seen[buf] == 1 and all(p <= here for p in reads) and partner not in reads:
            owned.add(k)
    return owned


# -- in the body -------------------------------------------------------------------------------------------------
def write_in_place(em, body: Computation, state: ValueTree) -> list[tuple[int, int]]:
    """Preassign the result buffers of body instructions that may compute loop state element k straight into
    state leaf k (em.targets); returns the keys set, for the caller to remove after the body is emitted."""
    root = body.root
    if not buffer_assignment.IN_PLACE_UPDATES or root.opcode != "tuple":
        return []
    aliasing = em.assignment.analysis(body, True)
    state_leaves = _array_leaves(state)
    keys: list[tuple[int, int]] = []
    for k, element in _root_elements(root):
        producer = _producer(element)
        key = None if producer is None else (id(producer[0]), producer[1])
        if key is not None and key not in em.targets \
                and _may_write(aliasing, producer, ("param", 0, k), state_leaves[k]):
            em.targets[key] = BufferRef(state_leaves[k].pointer, state_leaves[k].shape)
            keys.append(key)
    return keys


def _root_elements(root: Instruction) -> list[tuple[int, Instruction]]:
    """(leaf number, instruction) for each array leaf of the body's result that is an array instruction, through
    tuple instructions (TensorFlow's loops carry (array, size) pairs)."""
    out: list[tuple[int, Instruction]] = []

    def walk(inst: Instruction, k: int) -> int:
        if inst.opcode == "tuple":
            for op in inst.operands:
                k = walk(op, k)
            return k
        n = leaf_count(inst.shape)
        if n == 1 and not inst.shape.is_tuple:
            out.append((k, inst))
        return k + n
    walk(root, 0)
    return out


def _array_leaves(tree: ValueTree) -> list[BufferRef]:
    if isinstance(tree, tuple):
        return [leaf for t in tree for leaf in _array_leaves(t)]
    return [] if tree is None else [tree]


def _producer(element: Instruction) -> tuple[Instruction, int] | None:
    """The instruction computing a root element, and the leaf of its value that the element is."""
    if element.opcode == "get-tuple-element":
        tup = element.operands[0]
        if any(s.is_tuple or s.is_token for s in tup.shape.tuple_shapes):
            return None
        return tup, int(element.attrs["index"])
    return (element, 0) if not element.shape.is_tuple else None


def _may_write(aliasing, key, buf: tuple, state: BufferRef) -> bool:
    inst, leaf = key
    if id(inst) not in aliasing.position:
        return False
    shape = inst.shape.tuple_shapes[leaf] if inst.shape.is_tuple else inst.shape
    if not _same_layout(shape, state.shape):
        return False
    here = aliasing.position[id(inst)]
    if any(p > here for p in aliasing.reads.get(buf, ())):
        return False
    readers = [n for n, op in enumerate(inst.operands) if any(buf in lf for lf in aliasing.leaves[id(op)])]
    if any(_takes_over(user) for user in _readers_of(aliasing, buf) if user is not inst):
        return False
    if inst.opcode == "fusion":
        comp = inst.attrs["calls"]
        if inst.attrs.get("kind") != "kLoop" or not (comp.root.opcode in _PASS_THROUGH
                                                      or opinfo(comp.root.opcode).is_elementwise):
            return False
        params = {p.parameter_number: p for p in comp.parameters}
        return all(_same_layout(inst.operands[n].shape, state.shape) and _elementwise_uses(params[n])
                   for n in readers)
    if opinfo(inst.opcode).is_elementwise and not inst.shape.is_tuple:
        return all(_same_layout(inst.operands[n].shape, state.shape) for n in readers)
    return not readers and inst.opcode not in ("parameter", "get-tuple-element", "tuple", "bitcast", "reshape")


def _readers_of(aliasing, buf: tuple) -> list[Instruction]:
    order = aliasing.order
    return [order[p] for p in aliasing.reads.get(buf, ()) if p < len(order)]


def _takes_over(inst: Instruction) -> bool:
    """May inst write its result into an operand's buffer (an in-place update, a loop owning its init)? Then
    leaf k's buffer also holds a value the alias analysis names after inst, which may be read after the body
    instruction that would overwrite it."""
    if inst.opcode == "fusion":
        return inst.attrs["calls"].root.opcode in _IN_PLACE
    return inst.opcode in _IN_PLACE or inst.opcode == "while"


def _elementwise_uses(param: Instruction) -> bool:
    """Every instruction reached from param (inside a fused computation) reads it element for element: an
    elementwise op of param's dims and layout, or the root tuple."""
    work, seen = [param], set()
    while work:
        inst = work.pop()
        for user in inst.users:
            if id(user) in seen:
                continue
            seen.add(id(user))
            if user.opcode in _PASS_THROUGH and not user.users:
                continue
            if not opinfo(user.opcode).is_elementwise or not _same_layout(user.shape, param.shape):
                return False
            work.append(user)
    return True
