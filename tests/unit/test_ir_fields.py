"""The IR's fields are declared once (Instruction.FIELDS, Computation.FIELDS, Module.FIELDS): every one is set by
__init__, no other can be added, and Module.clone carries every one over. A new field that the cloner forgets
fails here, not later as a module that lost something in a copy."""
from __future__ import annotations

import numpy as np
import pytest

from xlapy.hlo import Computation, Instruction, Module, Shape, parse

F32 = Shape.array("f32", (2,))

# A value for every Instruction field that differs from what __init__ gives; adding a field means adding it here.
NON_DEFAULT = {
    "info": None, "opcode": None, "shape": None,          # fixed by the constructor's arguments below
    "name": "sum.7",
    "parameter_number": 7,
    "operands": None, "users": None, "parent": None,      # made by building the module below
    "control_predecessors": None,
    "attrs": {"metadata": '{op_name="f"}'},
    "literal": np.array([1.5, -2.0], np.float32),
    "_attr_order": ("metadata", "control-predecessors"),
}


def _module() -> tuple[Module, Instruction]:
    module = Module("fields")
    comp = Computation("entry")
    module.add_computation(comp, entry=True)
    x = comp.add_instruction(Instruction("parameter", F32, name="x", parameter_number=0))
    y = comp.add_instruction(Instruction("negate", F32, [x], name="y"))
    inst = Instruction("add", F32, [x, y], name="sum")
    for field, value in NON_DEFAULT.items():
        if value is not None:
            setattr(inst, field, value)
    inst.control_predecessors = [y]
    comp.add_instruction(inst)
    comp.root = comp.add_instruction(Instruction("negate", F32, [inst], name="out"))
    comp.attrs["execution_thread"] = "main"
    comp._async_sugar = True
    module.attrs["is_scheduled"] = "true"
    module.tables = 'FileNames\n1 "f.py"'
    return module, inst


@pytest.mark.parametrize("cls", [Instruction, Computation])
def test_slots_are_the_declared_fields(cls):
    assert cls.__slots__ == cls.FIELDS
    assert len(set(cls.FIELDS)) == len(cls.FIELDS)
    assert all("__dict__" not in vars(base) for base in cls.__mro__ if base is not object)


def test_instruction_fields_split_into_shared_and_rebuilt():
    assert Instruction.FIELDS == Instruction.VALUE_FIELDS + Instruction.GRAPH_FIELDS
    assert set(NON_DEFAULT) == set(Instruction.FIELDS), "give the new field a non-default value in NON_DEFAULT"


def test_init_sets_every_field_and_admits_no_other():
    inst = Instruction("negate", F32)
    comp = Computation("c")
    for obj in (inst, comp):
        for field in type(obj).FIELDS:
            getattr(obj, field)                  # AttributeError: __init__ left a declared field unset
        with pytest.raises(AttributeError):
            obj.undeclared_field = 1
    assert set(vars(Module("m"))) == set(Module.FIELDS)


def test_clone_keeps_every_instruction_field():
    module, inst = _module()
    clone = module.clone()
    new = next(i for i in clone.instructions() if i.name == inst.name)
    assert new is not inst
    for field in Instruction.VALUE_FIELDS:
        assert getattr(new, field) == getattr(inst, field), field
    names = lambda insts: [i.name for i in insts]   # noqa: E731
    assert names(new.operands) == names(inst.operands) and names(new.users) == names(inst.users)
    assert names(new.control_predecessors) == names(inst.control_predecessors) == ["y"]
    assert all(o.parent is new.parent for o in new.operands + new.users + new.control_predecessors)
    assert new.parent is clone.entry and new.parent.name == inst.parent.name
    assert new.attrs == inst.attrs and new.attrs is not inst.attrs
    assert new.literal is not inst.literal and np.array_equal(new.literal, inst.literal)
    assert new._attr_order == inst._attr_order


def test_clone_keeps_every_computation_and_module_field():
    module, _ = _module()
    clone = module.clone()
    old, new = module.entry, clone.entry
    assert (new.name, new.attrs, new._async_sugar) == (old.name, old.attrs, old._async_sugar)
    assert [i.name for i in new.instructions] == [i.name for i in old.instructions]
    assert new.root.name == old.root.name and new.parent is clone
    # _parameter_index is a cache of parameter(n), _positions/_removed_since position()'s hints, each rebuilt on
    # use: a clone starts without them
    assert set(Computation.FIELDS) == {"name", "instructions", "root", "parent", "attrs", "_async_sugar",
                                       "_parameter_index", "_positions", "_removed_since"}, \
        "a new Computation field: clone it in ir._clone_module and check it above"
    for field in Module.CLONED_FIELDS:
        a, b = getattr(module, field), getattr(clone, field)
        if field == "computations":
            assert [c.name for c in a] == [c.name for c in b]
        elif field == "entry":
            assert a.name == b.name
        else:
            assert a == b, field
    assert set(Module.FIELDS) - set(Module.CLONED_FIELDS) == {"_name_hints", "unique_id"}, \
        "a new Module field: clone it in ir._clone_module (CLONED_FIELDS) or say why not"


def test_parsed_and_cloned_modules_hold_only_declared_fields():
    module = parse("HloModule m\n\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] negate(a)\n}\n")
    module.unique_name("b")
    for m in (module, module.clone(), module.clone_via_text()):
        assert set(vars(m)) == set(Module.FIELDS)
