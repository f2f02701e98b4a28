"""LayoutAssignment makes the entry result's leaves the layouts the caller reads: text in, CHECK lines out, or must
not change (check_rewrite: semantics on corner values, idempotence). The CPU backend's side of it is
tests/backends/cpu/test_layout_property.py."""
import numpy as np
import pytest

import xlapy
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
