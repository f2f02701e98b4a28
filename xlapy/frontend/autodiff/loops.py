"""Reverse mode through `while` loops with a static trip count N: a taped forward loop, then a reverse loop.

This is JAX's scan transpose, in HLO. (Loops with N <= vjp.MAX_UNROLL are unrolled by the driver instead.)

    forward   while over (state..., tape...): the original body, and each tape k, of shape [N, *shape of
              state[k]], gets the value of state[k] at the START of iteration i written at row i
              (dynamic-update-slice); i = iv - start
    backward  while over (j, state cotangent..., tape..., fixed state...), j = 0 .. N-1 and i = N-1-j:
              rebuild the state of iteration i (tape rows read with dynamic-slice), run the VJP of the
              body on it with the carried cotangent of the body's result; its cotangent of the body's
              parameter is the new carried cotangent. After N steps that is the cotangent of the init.

Memory: the tapes hold N x (the size of the taped state elements), never the whole state. Not taped are
    the induction variable   its value at iteration i is start + i
    loop invariants          the body returns them unchanged (fori_loop/scan captures, scan's xs):
                             every iteration sees the init value
    write-only buffers       read by the body only as the operand that a dynamic-update-slice overwrites,
                             that result being the element's new value (scan's ys): the derivative never
                             reads their contents, so the backward pass feeds the init value
So for scan, as in JAX, the tape is N x (carry size), plus the integer state elements that vary.
Both new loops count up from a constant by 1 to a constant bound, so they are static loops again and
can be differentiated once more (grad of grad).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...hlo import Computation, Instruction, Shape
from .rules_common import AutodiffError, Emitter, is_float

IV, INVARIANT, WRITE_ONLY, TAPED = "iv", "invariant", "write-only", "taped"


@dataclass
class Tape:
    """What the forward taped loop recorded, for its VJP rule."""
    body: Computation
    kinds: list[str]             # per state element
    init: Instruction            # the original loop's init tuple
    iv: int                      # index of the induction variable in the state
    start: int
    n: int


def _param_uses(body: Computation) -> dict[int, list[Instruction]] | None:
    """Per state element, the body's get-tuple-elements of its parameter; None if the parameter is used
    in any other way."""
    param = body.parameters[0]
    uses: dict[int, list[Instruction]] = {}
    for user in param.users:
        if user.opcode != "get-tuple-element":
            return None
        uses.setdefault(user.attrs["index"], []).append(user)
    return uses


def _is_write_only(body: Computation, k: int, gtes: list[Instruction]) -> bool:
    """`state[k]` is only overwritten: root[k] = dynamic-update-slice(state[k], ...) and nothing else reads it."""
    root = body.root
    for g in gtes:
        for user in g.users:
            if (user.opcode != "dynamic-update-slice" or any(o is g for o in user.operands[1:])
                    or user.users != [root] or [j for j, o in enumerate(root.operands) if o is user] != [k]):
                return False
    return root.operands[k].opcode == "dynamic-update-slice" and any(root.operands[k].operands[0] is g for g in gtes)


def classify(body: Computation, iv: int) -> list[str]:
    root = body.root
    param = body.parameters[0]
    uses = _param_uses(body)
    kinds = []
    for k, out in enumerate(root.operands):
        if k == iv:
            kinds.append(IV)
        elif out.opcode == "get-tuple-element" and out.operands[0] is param and out.attrs["index"] == k:
            kinds.append(INVARIANT)
        elif uses is not None and _is_write_only(body, k, uses.get(k, [])):
            kinds.append(WRITE_ONLY)
        else:
            kinds.append(TAPED)
    return kinds


def _index(b: Emitter, value: int, like: Instruction) -> Instruction:
    return b.scalar(value, like.shape.element_type)


def _tape_shape(n: int, shape: Shape) -> Shape:
    return Shape.array(shape.element_type, (n, *shape.dims))


def _read_row(b: Emitter, tape: Instruction, i: Instruction, shape: Shape) -> Instruction:
    zeros = [_index(b, 0, i) for _ in shape.dims]
    row = b.emit("dynamic-slice", [tape, i, *zeros], {"dynamic_slice_sizes": (1, *shape.dims)})
    return b.reshape(row, shape.dims)


def _write_row(b: Emitter, tape: Instruction, value: Instruction, i: Instruction) -> Instruction:
    zeros = [_index(b, 0, i) for _ in value.shape.dims]
    row = b.reshape(value, (1, *value.shape.dims))
    return b.emit("dynamic-update-slice", [tape, row, i, *zeros])


def _counting_condition(b: Emitter, name: str, state: Shape, k: int, limit: int, like: Instruction) -> Computation:
    """(state) -> state[k] < limit."""
    from .vjp import add_parameter, new_computation
    cond, cb = new_computation(b.module, name)
    p = add_parameter(cb, state, 0, "state")
    cond.root = cb.compare(cb.emit("get-tuple-element", [p], {"index": k}), _index(cb, limit, like), "LT")
    return cond


def _original_state(b: Emitter, comp: Computation, p: Instruction, m: int) -> Instruction:
    """What `comp` (a loop body or condition) should read as its parameter inside a taped loop whose
    parameter `p` is (state..., tapes...): `p` itself when comp only takes elements of it (element indices
    are the same; and the new loop keeps the shape that static_loop recognises), else the first m."""
    if _param_uses(comp) is not None:
        return p
    return b.tuple([b.gte(p, k) for k in range(m)])


def emit_taped_loop(b: Emitter, w: Instruction, init: Instruction, n: int, iv: int, start: int,
                    tapes: dict[int, Tape]) -> Instruction:
    """The forward loop of `w` (a static loop, copied into b's computation with init `init`) that also
    records its state; returns the value standing for w's result. `tapes` learns the new loop."""
    from .vjp import add_parameter, copy_forward, new_computation
    body = w.attrs["body"]
    kinds = classify(body, iv)
    elems = [b.gte(init, k) for k in range(len(init.shape.tuple_shapes))]
    taped = [k for k, kind in enumerate(kinds) if kind == TAPED]
    for k in taped:
        if not elems[k].shape.is_array:
            raise AutodiffError(f"reverse-mode differentiation of while loop {w.name}: loop state element {k} "
                                f"is {elems[k].shape}, only arrays can be saved for the backward pass")
    tape_shapes = [_tape_shape(n, elems[k].shape) for k in taped]
    state = Shape.tuple_of([e.shape for e in elems] + tape_shapes)

    new_body, bb = new_computation(b.module, f"{body.name}.taped")
    p = add_parameter(bb, state, 0, "state_and_tape")
    out = copy_forward(bb, body, [_original_state(bb, body, p, len(elems))])
    ivp = bb.gte(p, iv)
    i = bb.sub(ivp, _index(bb, start, ivp)) if start else ivp
    rows = [_write_row(bb, bb.gte(p, len(elems) + t), bb.gte(p, k), i) for t, k in enumerate(taped)]
    new_body.root = bb.tuple([bb.gte(out, k) for k in range(len(elems))] + rows)
    new_body.remove_dead()

    cond_src = w.attrs["condition"]
    new_cond, cb = new_computation(b.module, f"{cond_src.name}.taped")
    q = add_parameter(cb, state, 0, "state_and_tape")
    new_cond.root = copy_forward(cb, cond_src, [_original_state(cb, cond_src, q, len(elems))])
    new_cond.remove_dead()

    attrs = dict(w.attrs)
    attrs["body"], attrs["condition"] = new_body, new_cond
    loop = b.emit("while", [b.tuple(elems + [b.zeros(s) for s in tape_shapes])], attrs, shape=state)
    tapes[id(loop)] = Tape(body, kinds, init, iv, start, n)
    return b.tuple([b.gte(loop, k) for k in range(len(elems))])


def taped_loop_vjp(b: Emitter, loop: Instruction, tape: Tape, ct: Any) -> list:
    """Cotangent of the taped loop's init tuple (as a one-operand rule result) from that of its result."""
    from .vjp import add_parameter, materialize, new_computation, split, vjp_into
    m = len(tape.kinds)
    shapes = loop.shape.tuple_shapes[:m]
    ct = (split(b, ct) if not isinstance(ct, list) else ct)[:m]
    float_elems = [k for k in range(m) if is_float(shapes[k]) and tape.kinds[k] != IV]
    taped = [k for k, kind in enumerate(tape.kinds) if kind == TAPED]
    fixed = [k for k, kind in enumerate(tape.kinds) if kind in (INVARIANT, WRITE_ONLY)]
    iv_init = b.gte(tape.init, tape.iv)
    # backward state: (j, cotangents of float_elems..., tapes..., fixed values...)
    ct_at = {k: 1 + s for s, k in enumerate(float_elems)}
    tape_at = {k: 1 + len(float_elems) + t for t, k in enumerate(taped)}
    fixed_at = {k: 1 + len(float_elems) + len(taped) + f for f, k in enumerate(fixed)}
    init = ([_index(b, 0, iv_init)] + [materialize(b, ct[k], shapes[k]) for k in float_elems]
            + [b.gte(loop, m + t) for t in range(len(taped))] + [b.gte(tape.init, k) for k in fixed])
    state = Shape.tuple_of([x.shape for x in init])

    body, bb = new_computation(b.module, f"{tape.body.name}.reverse")
    p = add_parameter(bb, state, 0, "step_ct_and_tape")
    j = bb.gte(p, 0)
    i = bb.sub(_index(bb, tape.n - 1, j), j)
    values = []
    for k, kind in enumerate(tape.kinds):
        if kind == IV:
            values.append(bb.add(i, _index(bb, tape.start, i)) if tape.start else i)
        elif kind == TAPED:
            values.append(_read_row(bb, bb.gte(p, tape_at[k]), i, shapes[k]))
        else:
            values.append(bb.gte(p, fixed_at[k]))
    ct_out = [bb.gte(p, ct_at[k]) if k in ct_at else None for k in range(m)]
    _, grads = vjp_into(bb, tape.body, [bb.tuple(values)], ct_out)
    ct_in = materialize(bb, grads[0], Shape.tuple_of(shapes))
    passed = [bb.gte(p, x) for x in range(1 + len(float_elems), len(init))]
    body.root = bb.tuple([bb.add(j, _index(bb, 1, j))] + [bb.gte(ct_in, k) for k in float_elems] + passed)
    body.remove_dead()

    cond = _counting_condition(b, f"{tape.body.name}.reverse.cond", state, 0, tape.n, iv_init)
    back = b.emit("while", [b.tuple(init)], {"condition": cond, "body": body}, shape=state)
    ct_init = [b.gte(back, ct_at[k]) if k in ct_at else None for k in range(m)]
    return [ct_init + [None] * len(taped)]
