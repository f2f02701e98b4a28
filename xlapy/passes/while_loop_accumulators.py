"""Loop-carried accumulators added into in place (issue 11: keep loop-carried state in place).

TensorFlow's gradient of a TensorList read inside a while loop adds a list of zeros holding one item to the
accumulator on every iteration:

    acc' = add(acc, dynamic-update-slice(broadcast(0), u, i...))       a pass over all of acc per iteration

rewritten, as XLA's algebraic simplifier does, to add into the item's window only:

    acc' = dynamic-update-slice(acc, add(dynamic-slice(acc, i...), u), i...)

which the CPU backend runs in place (a window's work). Both forms clamp the start indices alike (the slice's sizes
are the update's), so they touch the same window, and inside it they add the same values in the same order.
Outside it the first form adds a zero: exact for integers and for -0.0, but x + (+0.0) is +0.0 for x = -0.0
(and quiets a signalling NaN). So, IEEE-strict, a +0.0 zero is rewritten only where acc never holds -0.0 or a
NaN that the add would change:

| rule | when |
|---|---|
| acc' = add(acc, DUS(zeros, u, i...)) => DUS(acc, add(DS(acc, i...), u), i...), either operand order | acc is the body's state leaf at some path, the body's result at that path is this add, and the DUS has no other user |
| ... with zeros = broadcast(+0.0) (floats) | the while's init at that path is a constant (or a broadcast of one) holding no -0.0 and no NaN: by induction acc then never holds -0.0 (a sum is -0.0 only when both addends are) nor a signalling NaN (arithmetic never makes one) |
| ... with zeros of -0.0, or integers | always |

Run from WhileLoopSimplifier (it needs the while's init, which a local algebraic rule does not see).
"""
from __future__ import annotations

import numpy as np

from ..hlo import ELIDED, Computation, Instruction
from .build import make

_FLOAT_KINDS = "f"
_INT_KINDS = "iu"


def rewrite_accumulators(inst: Instruction) -> bool:
    """Rewrite the accumulators of while `inst`'s body (the table above); True when any was."""
    body = inst.attrs["body"]
    param = body.parameter(0)
    changed = False
    for path, element in _leaves(body.root, ()):
        match = _match(element, param, path)
        if match is None or not _sole_caller(inst, body):
            continue
        acc, dus, acc_first, negative_zero = match
        exact = element.shape.ptype.kind in ("int", "uint") or negative_zero
        if not exact and not _never_negative_zero(_at(inst.operands[0], path)):
            continue
        _rewrite(body, element, acc, dus, acc_first)
        changed = True
    return changed


def _sole_caller(inst: Instruction, body: Computation) -> bool:
    """No instruction but `inst` calls `body` (the proof is about this loop's init)."""
    module = inst.parent.parent if inst.parent is not None else None
    return module is not None and all(other is inst or body not in other.called_computations()
                                      for other in module.instructions())


def _leaves(inst: Instruction, path: tuple) -> list[tuple[tuple, Instruction]]:
    """(path, instruction) for each element of inst's value that a tuple instruction does not group."""
    if inst.opcode != "tuple":
        return [(path, inst)]
    return [leaf for k, op in enumerate(inst.operands) for leaf in _leaves(op, path + (k,))]


def _state_path(inst: Instruction, param: Instruction) -> tuple | None:
    """The path of the state leaf `inst` reads: a chain of get-tuple-elements from the body's parameter."""
    path: list[int] = []
    while inst.opcode == "get-tuple-element":
        path.append(int(inst.attrs["index"]))
        inst = inst.operands[0]
    return tuple(reversed(path)) if inst is param else None


def _at(inst: Instruction, path: tuple) -> Instruction | None:
    """The instruction making the value at `path` of inst's value, through tuple instructions; None if hidden."""
    for k in path:
        if inst.opcode != "tuple":
            return None
        inst = inst.operands[k]
    return inst


def _match(element: Instruction, param: Instruction, path: tuple):
    """(acc, dus, acc is the add's first operand, the zero is -0.0) when `element` is add(acc, DUS(zeros, u, i...))
    in either order, acc being the state leaf at `path`; else None."""
    if element.opcode != "add" or element.shape.is_tuple or len(element.operands) != 2:
        return None
    for acc_first, (acc, dus) in ((True, element.operands), (False, element.operands[::-1])):
        if dus.opcode != "dynamic-update-slice" or len(dus.users) != 1 or _state_path(acc, param) != path:
            continue
        if acc.shape.dims != element.shape.dims or acc.shape.element_type != element.shape.element_type:
            continue
        zero = _zero_sign(dus.operands[0])
        if zero is not None:
            return acc, dus, acc_first, zero
    return None


def _scalar_literal(inst: Instruction):
    """The array a constant, or a broadcast of a constant, holds (its operand's values suffice); else None."""
    if inst.opcode == "broadcast":
        inst = inst.operands[0]
    if inst.opcode != "constant" or inst.literal is None or inst.literal is ELIDED:
        return None
    return np.asarray(inst.literal)


def _zero_sign(inst: Instruction) -> bool | None:
    """For all zeros: True if every zero is -0.0, False if not (+0.0 somewhere, or integers); None: not zeros."""
    values = _scalar_literal(inst)
    if values is None or values.dtype.kind not in _FLOAT_KINDS + _INT_KINDS or np.any(values != 0):
        return None
    return bool(values.dtype.kind in _FLOAT_KINDS and np.all(np.signbit(values)))


def _never_negative_zero(init: Instruction | None) -> bool:
    """The init holds neither -0.0 nor a NaN (checked on its constant's values)."""
    values = None if init is None else _scalar_literal(init)
    if values is None or values.dtype.kind not in _FLOAT_KINDS:
        return False
    return not np.any((values == 0) & np.signbit(values)) and not np.any(np.isnan(values))


def _rewrite(body: Computation, element: Instruction, acc: Instruction, dus: Instruction, acc_first: bool) -> None:
    # add(acc, DUS(zeros, u, i...)) => DUS(acc, add(DS(acc, i...), u), i...)
    update, starts = dus.operands[1], list(dus.operands[2:])
    window = body.add_instruction(make("dynamic-slice", [acc] + starts,
                                       {"dynamic_slice_sizes": tuple(update.shape.dims)},
                                       shape=update.shape, name=f"{element.name}.window"))
    pair = [window, update] if acc_first else [update, window]
    total = body.add_instruction(make("add", pair, shape=update.shape, name=f"{element.name}.sum"))
    body.replace_instruction(element, make("dynamic-update-slice", [acc, total] + starts, shape=element.shape,
                                           name=element.name))
