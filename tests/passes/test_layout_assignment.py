"""LayoutAssignment makes the entry result's leaves the layouts the caller reads: text in, CHECK lines out, or must
not change (check_rewrite: semantics on corner values, idempotence). The CPU backend's side of it is
tests/backends/cpu/test_layout_property.py."""
import numpy as np
import pytest

import xlapy
from xlapy.passes.layout_assignment import LayoutAssignment
from xlapy.testing import check_rewrite

# TF's tf.image.resize / tf.sort(axis=0) pattern: the tuple declares {1,0}, its operand is {0,1}
TRANSPOSE_INTO_TUPLE = """HloModule m
ENTRY %e (a: f32[2,3]) -> (f32[3,2], f32[2,3]) {
  %a = f32[2,3]{1,0} parameter(0)
  %ta = f32[3,2]{0,1} transpose(f32[2,3]{1,0} %a), dimensions={1,0}
  %n = f32[2,3]{1,0} negate(%a)
  ROOT %t = (f32[3,2]{1,0}, f32[2,3]{1,0}) tuple(%ta, %n)
}"""

CASES = [
    ("tuple_operand_in_other_layout", TRANSPOSE_INTO_TUPLE,
     "CHECK: %ta.relayout = f32[3,2]{1,0} copy(f32[3,2]{0,1} %ta)\n"
     "CHECK: ROOT %tuple = (f32[3,2]{1,0}, f32[2,3]{1,0}) tuple(f32[3,2]{1,0} %ta.relayout, f32[2,3]{1,0} %n)"),
    ("nested_tuple", """HloModule m
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  ta = f32[3,2]{0,1} transpose(a), dimensions={1,0}
  inner = (f32[2,3]{1,0}, f32[3,2]{1,0}) tuple(a, ta)
  ROOT t = (f32[2,3]{1,0}, (f32[2,3]{1,0}, f32[3,2]{1,0})) tuple(a, inner)
}""", "CHECK: %ta.relayout = f32[3,2]{1,0} copy\n"
      "CHECK: tuple(f32[2,3]{1,0} %a, f32[3,2]{1,0} %ta.relayout)\nCHECK: ROOT"),
    ("get_tuple_element_forwards_its_operand", """HloModule m
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  ta = f32[3,2]{0,1} transpose(a), dimensions={1,0}
  inner = (f32[3,2]{1,0}) tuple(ta)
  ROOT g = f32[3,2]{1,0} get-tuple-element(inner), index=0
}""", "CHECK: %g.relayout = f32[3,2]{1,0} copy(f32[3,2]{1,0} %g)\nCHECK-NEXT: }"),
    ("call_result", """HloModule m
f {
  x = f32[2,3]{1,0} parameter(0)
  t = f32[3,2]{0,1} transpose(x), dimensions={1,0}
  ROOT r = (f32[3,2]{1,0}) tuple(t)
}
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  ROOT c = (f32[3,2]{1,0}) call(a), to_apply=f
}""", "CHECK: %get-tuple-element = f32[3,2]{1,0} get-tuple-element((f32[3,2]{1,0}) %c), index=0\n"
      "CHECK: copy(f32[3,2]{1,0} %get-tuple-element)\nCHECK: ROOT %tuple"),
    ("entry_computation_layout_decides", """HloModule m, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{0,1}}
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  ROOT n = f32[2,3]{1,0} negate(a)
}""", "CHECK: ROOT %n.relayout = f32[2,3]{0,1} copy(f32[2,3]{1,0} %n)"),
]

UNCHANGED = [
    ("consistent_tuple", """HloModule m
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  ta = f32[3,2]{0,1} transpose(a), dimensions={1,0}
  ROOT t = (f32[3,2]{0,1}, f32[2,3]{1,0}) tuple(ta, a)
}"""),
    ("vectors_have_one_layout", """HloModule m
ENTRY e {
  a = f32[5]{0} parameter(0)
  ROOT t = (f32[5]{0}) tuple(a)
}"""),
    ("array_root", """HloModule m
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  ROOT ta = f32[3,2]{0,1} transpose(a), dimensions={1,0}
}"""),
]


@pytest.mark.parametrize("name, text, checks", CASES, ids=[c[0] for c in CASES])
def test_layout_assignment(name, text, checks):
    check_rewrite(text, "layout-assignment", checks)


@pytest.mark.parametrize("name, text", UNCHANGED, ids=[c[0] for c in UNCHANGED])
def test_must_not_change(name, text):
    check_rewrite(text, "layout-assignment", None)


@pytest.mark.parametrize("run_pipeline", [True, False])
def test_cpu_backend_returns_the_transpose(run_pipeline):
    """The reproduction from issue 11: [[0,1],[2,3],[4,5]] came back where [[0,3],[1,4],[2,5]] is right."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ta, n = xlapy.compile(xlapy.hlo.parse(TRANSPOSE_INTO_TUPLE), backend="cpu", run_pipeline=run_pipeline)(x)
    np.testing.assert_array_equal(ta, x.T)
    np.testing.assert_array_equal(n, -x)


# The JIT's mode (entry_layouts="row-major"): the layouts a converter wrote, the entry's included, give way to
# row-major, as XLA's StableHLO route makes them. gpt2/train's optimizer step: a row-major parameter and a
# gradient laid out transposed make new state declared transposed (36 such fusions transposed memory each call).
OPTIMIZER_STEP = """HloModule m, entry_computation_layout={(f32[2,3]{1,0}, f32[3,2]{1,0})->f32[2,3]{0,1}}
ENTRY e {
  mu = f32[2,3]{1,0} parameter(0)
  d = f32[3,2]{1,0} parameter(1)
  g = f32[2,3]{0,1} transpose(d), dimensions={1,0}
  ROOT new = f32[2,3]{0,1} add(g, mu)
}"""
ROW_MAJOR = lambda: LayoutAssignment(entry_layouts="row-major")


def test_row_major_mode_relayouts_everything():
    out = check_rewrite(OPTIMIZER_STEP, ROW_MAJOR,
                        "CHECK: %g = f32[2,3]{1,0} transpose(f32[3,2]{1,0} %d)\n"
                        "CHECK: ROOT %new = f32[2,3]{1,0} add(f32[2,3]{1,0} %g, f32[2,3]{1,0} %mu)")
    assert "entry_computation_layout" not in out.attrs


def test_row_major_mode_keeps_the_layouts_of_a_module_with_a_bitcast():
    """A bitcast's meaning is its two layouts: such a module keeps them (only the declared result is conformed)."""
    text = """HloModule m
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  t = f32[3,2]{0,1} bitcast(a)
  ROOT n = f32[3,2]{0,1} negate(t)
}"""
    check_rewrite(text, ROW_MAJOR, None, semantics=False)


def test_declared_mode_is_the_default():
    check_rewrite(OPTIMIZER_STEP, "layout-assignment", None)


def test_entry_layouts_must_be_known():
    with pytest.raises(xlapy.XlapyError, match="entry_layouts must be one of declared, row-major"):
        LayoutAssignment(entry_layouts="column-major")


def test_jit_results_are_row_major():
    """The JIT runs the row-major mode: the result is the right value and comes back C-contiguous (the native
    fast call takes the module); AOT keeps the declared layout (the C caller's contract)."""
    mu, d = np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(6, 12, dtype=np.float32).reshape(3, 2)
    exe = xlapy.compile(xlapy.hlo.parse(OPTIMIZER_STEP), backend="cpu")
    got = exe(mu, d)
    np.testing.assert_array_equal(got, d.T + mu)
    assert got.flags.c_contiguous and exe.fast_call is not None


def test_row_major_mode_keeps_what_follows_the_colon():
    """Element size and memory space (the layout's text after ':') are not the dimension order: they stay."""
    text = """HloModule m
ENTRY e {
  a = s4[2,3]{0,1:E(4)} parameter(0)
  ROOT n = s4[2,3]{0,1:E(4)} negate(a)
}"""
    check_rewrite(text, ROW_MAJOR, "CHECK: ROOT %n = s4[2,3]{1,0:E(4)} negate(s4[2,3]{1,0:E(4)} %a)")
