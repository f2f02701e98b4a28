"""HloConstantFolding: an instruction whose operands are all constants is evaluated (by the interpreter, the
definition of every op) and replaced by a constant holding the result.

A result whose elements are all equal becomes a broadcast of a scalar constant, never a big literal: pad or
concatenate of broadcast zeros (conv-base-dilation-decomposition makes them) folded into a 256 KB table of
zeros that the backend then read element by element.

Like XLA it leaves alone: broadcasts and iotas (folding only makes big constants of small ones), results of
more than MAX_ELEMENTS elements, ops with side effects or randomness, custom-calls, parameters, tokens, and
instructions whose evaluation fails (the failure stays a run-time error, where it belongs).
"""
from __future__ import annotations

import numpy as np

from ..errors import XlapyError
from ..hlo import ELIDED, Instruction, Module, Shape
from .pipeline import Pass

MAX_ELEMENTS = 1 << 20

_NEVER_FOLD = frozenset({"parameter", "constant", "broadcast", "iota", "custom-call", "rng", "rng-bit-generator",
                         "rng-get-and-update-state", "after-all", "add-dependency", "opt-barrier",
                         "while", "infeed", "outfeed", "send", "recv", "partition-id", "replica-id", "copy-start",
                         "copy-done", "domain", "get-dimension-size", "set-dimension-size"})


def _constant_value(op: Instruction):
    """The literal of a constant operand, or of a broadcast of one; None otherwise."""
    if op.opcode == "constant" and op.literal is not ELIDED and not op.shape.is_tuple:
        return op.literal
    if op.opcode == "broadcast" and op.operands[0].opcode == "constant":
        inner = _constant_value(op.operands[0])
        if inner is None or op.shape.numel > MAX_ELEMENTS:
            return None
        dims = op.attrs.get("dimensions", ())
        shape = [1] * op.shape.rank
        for i, d in enumerate(dims):
            shape[d] = inner.shape[i]
        return np.broadcast_to(np.asarray(inner).reshape(shape), op.shape.dims)
    return None


def _maybe_constant(op: Instruction) -> bool:
    """Could _constant_value(op) be a value (a cheap test first: most operands are neither)."""
    return op.opcode == "constant" or (op.opcode == "broadcast" and op.operands[0].opcode == "constant")


def _candidate(inst: Instruction) -> bool:
    """Might `inst` fold: an op that folds, every operand a constant or a broadcast of one (a cheap test)."""
    return inst.opcode not in _NEVER_FOLD and bool(inst.operands) and all(map(_maybe_constant, inst.operands))


def _uniform(result: np.ndarray) -> bool:
    """Every element has the same bits (so -0.0 differs from 0.0, and NaNs compare by payload)."""
    flat = np.ascontiguousarray(result).reshape(-1)
    raw = flat.view(np.uint8).reshape(flat.size, -1)
    return bool((raw == raw[0]).all())


def _leaf_elements(shape) -> int:
    return sum(s.numel for s in shape.leaves() if s.is_array)


class HloConstantFolding(Pass):
    name = "constant_folding"

    def run(self, module: Module) -> bool:
        from ..backends.interpreter.evaluator import Evaluator, handler_table
        table = handler_table()
        ev = Evaluator(module)
        changed = False
        for comp in module.computations:
            if not any(map(_candidate, comp.instructions)):
                continue                    # nothing to fold: no walk in post order (most computations, most runs)
            for inst in comp.post_order():
                if not _candidate(inst):
                    continue                # (most instructions leave here, before any literal is made)
                if (inst.has_side_effect or inst.shape.is_tuple or not inst.shape.is_array
                        or inst.shape.numel > MAX_ELEMENTS or inst.opcode not in table):
                    continue
                values = [_constant_value(o) for o in inst.operands]
                if any(v is None for v in values):
                    continue
                try:
                    with np.errstate(all="ignore"):
                        result = table[inst.opcode](inst, values, ev)
                except (XlapyError, ArithmeticError, ValueError, TypeError, IndexError):
                    continue
                result = np.asarray(result)
                if result.dtype != inst.shape.dtype or result.shape != inst.shape.dims:
                    continue
                if result.size > 1 and _uniform(result):
                    scalar = comp.add_instruction(Instruction("constant", Shape.scalar(inst.shape.element_type), (),
                                                              {}, "constant", literal=np.array(result.flat[0])))
                    folded = Instruction("broadcast", inst.shape, (scalar,), {"dimensions": ()}, "broadcast")
                else:
                    folded = Instruction("constant", inst.shape, (), {}, "constant", literal=np.array(result))
                comp.add_instruction(folded)
                inst.replace_all_uses_with(folded)
                changed = True
        return changed
