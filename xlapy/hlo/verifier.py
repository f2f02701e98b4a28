"""The HLO verifier: structural checks, then every instruction's declared shape against shape inference.

`verify(module)` returns None or raises HloVerifierError naming the instruction (or computation), what was
expected and what was found. Layouts are ignored when shapes are compared (Shape.compatible).
"""
from __future__ import annotations

from ..errors import HloVerifierError, XlapyError
from .ir import Computation, Instruction, Module
from .opcodes import OPCODES, VARIADIC
from .shape_inference import fail, rule_table, shapes_text, text


def verify(module: Module) -> None:
    if module.entry is None:
        raise HloVerifierError(f"module {module.name} has no entry computation")
    in_module = {id(c) for c in module.computations}
    if id(module.entry) not in in_module:
        raise HloVerifierError(f"module {module.name}: entry computation {module.entry.name} is not in the module")
    comp_names: set[str] = set()
    for comp in module.computations:
        if comp.name in comp_names:
            raise HloVerifierError(f"module {module.name}: two computations are named {comp.name}")
        comp_names.add(comp.name)
        _verify_structure(comp, in_module)
    for comp in module.computations:
        _verify_shapes(comp)


def _verify_structure(comp: Computation, in_module: set[int]) -> None:
    # Instruction names must be unique within a computation. Across computations XLA's text format may
    # repeat them (its parser renames on loading; ours keeps them so that parse -> print is exact).
    inst_names: set[str] = set()
    if comp.root is None:
        raise HloVerifierError(f"computation {comp.name} has no root instruction")
    if comp.root.parent is not comp:
        raise HloVerifierError(f"computation {comp.name}: root {comp.root.name} is not one of its instructions")
    numbers = []
    for inst in comp.instructions:
        if inst.name in inst_names:
            raise HloVerifierError(f"{inst.name}: instruction name is used twice in computation {comp.name}")
        inst_names.add(inst.name)
        if inst.parent is not comp:
            fail(inst, f"listed in computation {comp.name} but its parent is "
                       f"{inst.parent.name if inst.parent else None}")
        info = OPCODES.get(inst.opcode)
        if info is None:
            raise HloVerifierError(f"{inst.name}: unknown opcode {inst.opcode!r}")
        if info.arity != VARIADIC and len(inst.operands) != info.arity:
            fail(inst, f"{inst.opcode} takes {info.arity} operand(s), got {len(inst.operands)}: "
                       f"{shapes_text([o.shape for o in inst.operands])}")
        for i, op in enumerate(inst.operands):
            if op.parent is not comp:
                fail(inst, f"operand {i} ({op.name}) belongs to computation "
                           f"{op.parent.name if op.parent else None}, not {comp.name}")
        for pred in inst.control_predecessors:
            if pred.parent is not comp:
                fail(inst, f"control predecessor {pred.name} is not in computation {comp.name}")
        for callee in inst.called_computations():
            if id(callee) not in in_module:
                fail(inst, f"calls computation {callee.name}, which is not in the module")
        if inst.opcode == "parameter":
            if inst.parameter_number is None:
                fail(inst, "parameter has no parameter number")
            numbers.append(inst.parameter_number)
    if sorted(numbers) != list(range(len(numbers))):
        raise HloVerifierError(f"computation {comp.name}: parameter numbers {sorted(numbers)} must be "
                               f"0..{len(numbers) - 1} with no gaps or duplicates")


# (element type, dims) of array shapes known to fit int64's counts: most shapes of a module repeat
_FITS: set[tuple] = set()


def _verify_shapes(comp: Computation) -> None:
    table = rule_table()
    for inst in comp.instructions:
        shape = inst.shape
        for leaf in (shape.leaves() if shape.is_tuple else (shape,)):
            key = (leaf.element_type, leaf.dims)
            if key in _FITS:
                continue
            overflow = leaf.size_overflow() if leaf.is_array else None
            if overflow is not None:
                raise HloVerifierError(f"{inst.name}: shape {text(leaf)} has {overflow}")
            if len(_FITS) > 1 << 14:
                _FITS.clear()
            _FITS.add(key)
        rule = table.get(inst.opcode)
        if rule is None:
            fail(inst, f"no shape inference rule for opcode {inst.opcode}")
        shapes = [o.shape for o in inst.operands]
        try:
            inferred = rule(inst, shapes)
        except XlapyError:
            raise
        except Exception as e:   # malformed attributes reach here: name the instruction, never crash
            raise HloVerifierError(f"{inst.name}: cannot infer the shape of {inst.opcode}{shapes_text(shapes)}: "
                                   f"{type(e).__name__}: {e}") from e
        if inferred is not None and not inferred.compatible(inst.shape):
            _mismatch(inst, inferred, shapes)


def _mismatch(inst: Instruction, inferred, shapes) -> None:
    raise HloVerifierError(f"{inst.name}: expected shape {text(inferred)} inferred from operands "
                           f"{shapes_text(shapes)}, but the instruction declares {text(inst.shape)}")
