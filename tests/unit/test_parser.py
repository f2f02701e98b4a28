"""What the parser builds: names, shapes, typed attributes, literals, tables, async sugar, nesting."""
from __future__ import annotations


import ml_dtypes
import numpy as np
import pytest

from xlapy import HloParseError
from xlapy.hlo import ELIDED, Computation, Instruction, Module, Shape, parse
from xlapy.hlo import attrs as A
from xlapy.hlo.literal import literal_to_text


def _entry_root(text: str) -> Instruction:
    return parse(text).entry.root


def test_bare_and_percent_names_with_and_without_operand_shapes():
    a = parse("HloModule m\nENTRY e {\n p = f32[] parameter(0)\n ROOT a = f32[] add(p, p)\n}")
    b = parse("HloModule m\nENTRY %e (p: f32[]) -> f32[] {\n %p = f32[] parameter(0)\n"
              " ROOT %a = f32[] add(f32[] %p, f32[] %p)\n}")
    assert a.to_text() == b.to_text()
    assert [o.name for o in a.entry.root.operands] == ["p", "p"]


def test_use_before_definition_and_comments():
    m = parse("HloModule m // trailing\n/* block */\nENTRY e {\n ROOT a = f32[2] add(x, /*index=1*/ x)\n"
              " x = f32[2]{0} parameter(0) // comment\n}")
    root = m.entry.root
    assert root.operands[0].opcode == "parameter" and root.operands[0].parameter_number == 0
    assert m.to_text().index("%x = ") < m.to_text().index("ROOT %a")


def test_header_attributes_and_tables_are_kept():
    text = ('HloModule m, is_scheduled=true, entry_computation_layout={(f32[])->f32[]}, '
            'input_output_alias={ {}: (0, {}, may-alias) }\n\nFileNames\n1 "a.py"\n\nFunctionNames\n1 "f"\n\n'
            'FileLocations\n1 {file_name_id=1 function_name_id=1 line=1 end_line=1 column=1 end_column=2}\n\n'
            'StackFrames\n1 {file_location_id=1 parent_frame_id=1}\n\n\n'
            'ENTRY %e (p: f32[]) -> f32[] {\n  ROOT %p = f32[] parameter(0), metadata={op_name="x" stack_frame_id=1}\n}\n')
    m = parse(text)
    assert m.attrs["is_scheduled"] == "true"
    assert m.attrs["input_output_alias"] == "{ {}: (0, {}, may-alias) }"
    assert m.tables.startswith("FileNames") and m.tables.endswith("parent_frame_id=1}")
    assert m.to_text() == text


def test_typed_attributes():
    m = parse("""HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  p = f32[4,6]{1,0} parameter(0)
  z = f32[] constant(0)
  r = f32[4] reduce(p, z), dimensions={1}, to_apply=add
  w = f32[2,3] reduce-window(p, z), window={size=2x2 stride=2x2}, to_apply=add
  s = f32[2,3] slice(p), slice={[0:4:2], [0:6:2]}
  q = f32[5,7] pad(p, z), padding=0_1x0_1_0
  c = pred[4] compare(r, r), direction=GT, type=TOTALORDER
  ROOT cc = f32[4] custom-call(r), custom_call_target="x\\"y", backend_config={"k": 1}, sharding={replicated}
}""")
    comp = m.entry
    by = {i.name: i for i in comp.instructions}
    assert by["r"].attrs == {"dimensions": (1,), "to_apply": m.computation("add")}
    assert isinstance(by["w"].attrs["window"], A.Window) and by["w"].attrs["window"].dims[0].stride == 2
    assert by["s"].attrs["slice"] == (A.SliceRange(0, 4, 2), A.SliceRange(0, 6, 2))
    assert by["q"].attrs["padding"] == (A.PadDim(0, 1, 0), A.PadDim(0, 1, 0))
    assert by["c"].attrs == {"direction": "GT", "type": "TOTALORDER"}
    assert by["cc"].attrs["custom_call_target"] == 'x"y'
    assert by["cc"].attrs["backend_config"] == '{"k": 1}'
    assert by["cc"].attrs["sharding"] == "{replicated}"
    assert 'custom_call_target="x\\"y"' in m.to_text()


def test_fusion_while_conditional_and_control_predecessors():
    m = parse("""HloModule m
f { a = f32[] parameter(0)  ROOT n = f32[] negate(a) }
c { a = f32[] parameter(0)  ROOT t = pred[] constant(false) }
ENTRY e {
  p = f32[] parameter(0)
  fu = f32[] fusion(p), kind=kLoop, calls=f
  w = f32[] while(fu), condition=c, body=f, control-predecessors={p}
  i = s32[] constant(1)
  ROOT k = f32[] conditional(i, w, w), branch_computations={f, f}
}""")
    by = {i.name: i for i in m.entry.instructions}
    assert by["fu"].attrs == {"kind": "kLoop", "calls": m.computation("f")}
    assert by["w"].attrs["condition"] is m.computation("c")
    assert by["w"].control_predecessors == [by["p"]]
    assert by["k"].attrs["branch_computations"] == [m.computation("f")] * 2
    assert "control-predecessors={%p}" in m.to_text()


@pytest.mark.parametrize("shape,text,expected", [
    ("f32[6]", "{nan, -nan, inf, -inf, 1e-05, -0}", [np.nan, -np.nan, np.inf, -np.inf, 1e-05, -0.0]),
    ("bf16[2]", "{3.39e+38, 0.1001}", [3.39e38, 0.1]),
    ("f16[2]", "{65504, 500}", [65504, 500]),
    ("f8e4m3fn[2]", "{-nan, 448}", [-np.nan, 448]),
    ("c64[2]", "{(1, 2), (-inf, nan)}", [1 + 2j, complex(-np.inf, np.nan)]),
    ("pred[3]", "{1, 0, 1}", [True, False, True]),
    ("u64[1]", "{18446744073709551615}", [2**64 - 1]),
    ("s4[2]", "{-8, 7}", [-8, 7]),
    ("s32[0]", "{}", []),          # TF's EmptyTensorList accumulators; it leaked StopIteration
])
def test_literals_round_trip(shape, text, expected):
    root = _entry_root(f"HloModule m\nENTRY e {{\n ROOT c = {shape} constant({text})\n}}")
    lit = root.literal
    assert lit.dtype == root.shape.dtype
    wide = np.complex128 if lit.dtype.kind == "c" else (np.float64 if lit.dtype.kind not in "biu" else lit.dtype)
    np.testing.assert_array_equal(lit.astype(wide), np.array(expected).astype(lit.dtype).astype(wide))
    if lit.dtype.kind == "f" or lit.dtype in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn):
        np.testing.assert_array_equal(np.signbit(lit.astype(np.float32)),
                                      np.signbit(np.array(expected, dtype=np.float32)))
    assert f"constant({text})" in root.to_text()


def test_tuple_and_elided_and_scalar_literals():
    m = parse("HloModule m\nENTRY e {\n t = (f32[2], (s32[], pred[])) constant(( {1, 2}, ( 3, true ) ))\n"
              " big = f32[100] constant({...})\n ROOT s = f32[] constant(0.1)\n}")
    by = {i.name: i for i in m.entry.instructions}
    assert by["t"].literal[0].tolist() == [1.0, 2.0] and by["t"].literal[1][1] == np.True_
    assert by["big"].literal is ELIDED
    assert by["s"].literal.dtype == np.float32
    assert "constant({...})" in m.to_text() and "constant(0.1)" in m.to_text()


def test_shapes_dynamic_layout_tails_tuples_tokens():
    m = parse("HloModule m\nENTRY e {\n a = f32[<=4,?]{1,0:T(8,128)S(1)} parameter(0)\n"
              " b = ((f32[2]{0}, u32[]{:S(2)}), token[]) parameter(1)\n ROOT t = (f32[<=4,?]{1,0:T(8,128)S(1)}, "
              "((f32[2]{0}, u32[]{:S(2)}), token[])) tuple(a, b)\n}")
    a = m.entry.parameter(0)
    assert a.shape.dims == (4, -1) and a.shape.dynamic == (True, True)
    assert a.shape.layout.tail == "T(8,128)S(1)" and a.shape.layout.memory_space == 1
    b = m.entry.parameter(1)
    assert b.shape.tuple_shapes[1].is_token and b.shape.tuple_shapes[0].tuple_shapes[1].layout.tail == "S(2)"
    assert "f32[<=4,?]{1,0:T(8,128)S(1)}" in m.to_text()


def test_shape_text_read_once_is_shared_and_positions_stay_exact():
    """parser_shapes._SEEN: a shape's text is read once; a hit leaves the cursor where a full read would (past the
    blanks after a shape without a layout: an error after it points at the opcode, not at the blank)."""
    text = ("HloModule m\nENTRY e {\n p = (f32[], s32[2]{0}) parameter(0)\n"
            " a = f32[] get-tuple-element((f32[], s32[2]{0}) p), index=0\n b = f32[] get-tuple-element((f32[],"
            " s32[2]{0}) %p), index=0\n c = f32[2] {0} broadcast(f32[] a), dimensions={}\n"
            " ROOT t = (f32[], f32[]) tuple(a, b)\n}")
    m = parse(text)
    by = {i.name: i for i in m.entry.instructions}
    assert by["a"].shape is by["b"].shape and by["a"].operands[0].shape is by["p"].shape
    assert by["c"].shape.layout.minor_to_major == (0,)
    assert parse(m.to_text()).to_text() == m.to_text()
    with pytest.raises(HloParseError) as e:
        parse("HloModule m\nENTRY e {\n  ROOT p = f32[] frobnicate(0)\n}")
    assert (e.value.line, e.value.column) == (3, 18)


def test_async_syntax_sugar_wraps_a_computation():
    m = parse("""HloModule m
ENTRY e {
  p = f32[10]{0} parameter(0)
  s = ((f32[10]{0}), f32[20]{0}, s32[]) custom-call-start(p), async_execution_thread="t", custom_call_target="foo"
  u = ((f32[10]{0}), f32[20]{0}, s32[]) custom-call-update(s)
  ROOT d = f32[20]{0} custom-call-done(u)
}""")
    start = m.entry.instructions[1]
    assert start.opcode == "async-start" and start.attrs["async_execution_thread"] == "t"
    wrapped = start.attrs["calls"]
    assert wrapped.root.opcode == "custom-call" and wrapped.root.attrs == {"custom_call_target": "foo"}
    assert wrapped.attrs["execution_thread"] == "t"
    assert [i.opcode for i in m.entry.instructions[2:]] == ["async-update", "async-done"]
    assert "custom-call-start(f32[10]{0} %p)" in m.to_text()


def test_nested_anonymous_instructions_get_names_and_shapes():
    m = parse("HloModule test\nENTRY test {\n add = add(f32[10] parameter(0), f32[10] parameter(1))\n"
              " g = get-tuple-element((f32[10], f16[10]) tuple(f32[10] parameter(2), f16[10] parameter(3))), index=1\n"
              " ROOT root = tuple(add, add(add, add), g)\n}")
    root = m.entry.root
    assert root.shape.to_text() == "(f32[10], f32[10], f16[10])"
    names = [i.name for i in m.entry.instructions]
    assert len(set(names)) == len(names) and "add.1" in names


def test_computation_execution_thread_and_entry_default():
    m = parse('HloModule m\nc { ROOT p = f32[] parameter(0) }, execution_thread="side"\n'
              "last { ROOT q = f32[] parameter(0) }")
    assert m.computation("c").attrs["execution_thread"] == "side"
    assert m.entry is m.computation("last")
    assert '}, execution_thread="side"' in m.to_text()


def test_code_built_instructions_print_in_xla_order():
    p = Instruction("parameter", Shape.array("f32", (4,)), name="p", parameter_number=0)
    z = Instruction("constant", Shape.scalar("s32"), name="z", literal=np.array(0, np.int32))
    g = Instruction("gather", Shape.array("f32", (1,)), [p, z], {
        "slice_sizes": (1,), "index_vector_dim": 0, "start_index_map": (0,), "collapsed_slice_dims": (),
        "offset_dims": (0,), "metadata": '{op_name="g"}', "indices_are_sorted": True}, name="g")
    comp = Computation("e", [p, z, g], g)
    m = Module("m")
    m.add_computation(comp, entry=True)
    text = g.to_text()
    assert text == ('%g = f32[1] gather(f32[4] %p, s32[] %z), offset_dims={0}, collapsed_slice_dims={}, '
                    'start_index_map={0}, index_vector_dim=0, slice_sizes={1}, indices_are_sorted=true, '
                    'metadata={op_name="g"}')
    assert parse(m.to_text()).to_text() == m.to_text()


def test_print_options():
    m = parse("HloModule m\nENTRY e {\n p = f32[12]{0} parameter(0), metadata={op_name=\"x\"}\n"
              " c = f32[12]{0} constant({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})\n ROOT a = f32[12]{0} add(p, c)\n}")
    short = m.to_text(short_parsable=True)
    assert "ENTRY e {" in short and "add(p, c)" in short and "metadata" not in short
    assert "add(%p, %c)" in m.to_text(print_operand_shape=False)
    assert "constant({...})" in m.to_text(print_large_constants=False)


def test_million_element_constant_parses_exactly():
    # (its speed — about 1 s, bulk tokenizing — is a benchmark matter, not a test assertion)
    values = np.random.RandomState(0).standard_normal(1_000_000).astype(np.float32)
    text = ("HloModule m\nENTRY e {\n ROOT c = f32[1000,1000]{1,0} constant("
            + literal_to_text(values.reshape(1000, 1000), Shape.array("f32", (1000, 1000))) + ")\n}")
    root = _entry_root(text)
    np.testing.assert_array_equal(root.literal.reshape(-1), values)
