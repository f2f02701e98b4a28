"""The HLO builder (passes/build.py, passes/builder.py): shapes inferred, helpers that would copy their operand
emit nothing, detached instructions for rewrite rules, and one shared scalar reducer per module, opcode and
element type."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.errors import HloVerifierError, XlapyError
from xlapy.hlo import Module, Shape, verify
from xlapy.passes.build import (BuildError, make, make_constant, make_full_like, new_computation, scalar_comparator,
                                scalar_reducer)
from xlapy.passes.builder import Builder


def entry_builder(*param_shapes: Shape) -> tuple[Module, Builder, list]:
    module = Module("m")
    b = Builder(new_computation(module, "main"))
    module.entry = b.comp
    return module, b, [b.parameter(i, s, f"p{i}") for i, s in enumerate(param_shapes)]


def run(module: Module, *args):
    return xlapy.compile(module, backend="interpreter")(*args)


def test_emit_infers_shapes_and_element_type_names_the_result_type():
    _, b, (x, y) = entry_builder(Shape.array("f32", (2, 3)), Shape.array("f32", (3, 4)))
    assert b.add(x, x).shape == Shape.array("f32", (2, 3))
    dot = b.emit("dot", [x, y], {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}, element_type="f64")
    assert dot.shape == Shape.array("f64", (2, 4))
    assert b.convert(x, "s32").shape == Shape.array("s32", (2, 3))


def test_helpers_that_would_copy_their_operand_return_it():
    _, b, (x,) = entry_builder(Shape.array("f32", (2, 3)))
    before = len(b.comp.instructions)
    assert b.reshape(x, (2, 3)) is x
    assert b.transpose(x, (0, 1)) is x
    assert b.convert(x, "f32") is x
    assert b.reduce_sum(x, ()) is x
    assert len(b.comp.instructions) == before


def test_full_like_is_a_scalar_constant_broadcast_unless_like_is_a_scalar():
    _, b, (x, s) = entry_builder(Shape.array("bf16", (4,)), Shape.scalar("s8"))
    full = b.full_like(x, 0.5)
    assert full.opcode == "broadcast" and full.shape == Shape.array("bf16", (4,))
    assert full.operands[0].shape == Shape.scalar("bf16") and float(full.operands[0].literal) == 0.5
    one = b.full_like(s, 1)
    assert one.opcode == "constant" and one.shape == Shape.scalar("s8") and one.literal.dtype == np.int8
    zeros = b.zeros(Shape.tuple_of([Shape.array("f32", (2,)), Shape.scalar("s32")]))
    assert zeros.opcode == "tuple" and [o.opcode for o in zeros.operands] == ["broadcast", "constant"]


def test_gte_reads_a_tuple_instruction_directly():
    _, b, (x, y) = entry_builder(Shape.array("f32", (2,)), Shape.scalar("s32"))
    t = b.tuple([x, y])
    assert b.gte(t, 1) is y
    p = b.parameter(2, t.shape, "t")
    g = b.gte(p, 0)
    assert g.opcode == "get-tuple-element" and g.shape == x.shape


def test_detached_instructions_for_rewrite_rules():
    like = make("constant", [], shape=Shape.array("f32", (3,)), literal=np.zeros(3, np.float32))
    full = make_full_like(like, 2)
    assert full.parent is None and full.operands[0].parent is None
    assert full.shape == Shape.array("f32", (3,)) and full.operands[0].literal.dtype == np.float32
    c = make_constant([1, 2], "u8")
    assert c.shape == Shape.array("u8", (2,)) and c.literal.dtype == np.uint8


def test_make_names_the_opcode_and_shapes_when_it_cannot_infer():
    x = make_constant(np.zeros((2, 3), np.float32))
    with pytest.raises(BuildError, match=r"custom-call\(f32\[2,3\]\); pass shape=") as info:
        make("custom-call", [x], {"custom_call_target": "f"})
    assert isinstance(info.value, XlapyError) and isinstance(info.value, ValueError)
    assert not x.users


def test_a_shape_error_leaves_no_user_behind():
    x = make_constant(np.zeros((2, 3), np.float32))
    y = make_constant(np.zeros((4,), np.float32))
    with pytest.raises(HloVerifierError, match="same dimensions"):
        make("add", [x, y])
    assert not x.users and not y.users


def test_scalar_reducer_is_shared_per_module_opcode_and_type_and_placed_first():
    module, b, (x,) = entry_builder(Shape.array("f32", (2, 3)))
    add = scalar_reducer(module, "add", "f32")
    assert scalar_reducer(module, "add", "f32") is add
    assert b.reducer("add", "f32") is add
    assert module.computations[0] is add and add.name == "scalar_add_computation"
    assert [p.name for p in add.parameters] == ["scalar_lhs", "scalar_rhs"] and add.root.opcode == "add"
    assert scalar_reducer(module, "add", "f16") is not add
    assert scalar_reducer(module, "maximum", "f32").name == "scalar_maximum_computation"
    ge = scalar_comparator(module, "GE", "f32")
    assert ge.root.opcode == "compare" and ge.root.attrs["direction"] == "GE" and ge.root.shape == Shape.scalar("pred")
    assert scalar_reducer(Module("other"), "add", "f32") is not add


def test_a_removed_reducer_is_built_again():
    module, _, _ = entry_builder(Shape.array("f32", (2,)))
    add = scalar_reducer(module, "add", "f32")
    module.remove_computation(add)
    again = scalar_reducer(module, "add", "f32")
    assert again is not add and again.parent is module


def test_reduce_sum_uses_the_shared_reducer_and_computes_the_sum():
    module, b, (x,) = entry_builder(Shape.array("f32", (2, 3)))
    b.comp.root = b.tuple([b.reduce_sum(x, (1,)), b.reduce_sum(x, (0, 1))])
    reducers = {id(i.attrs["to_apply"]) for i in b.comp.instructions if i.opcode == "reduce"}
    assert reducers == {id(scalar_reducer(module, "add", "f32"))}
    verify(module)
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    rows, total = run(module, data)
    np.testing.assert_array_equal(rows, data.sum(axis=1))
    assert float(total) == 15.0
