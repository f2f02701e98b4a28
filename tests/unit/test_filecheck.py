"""xlapy.filecheck: each directive (CHECK, -NEXT, -SAME, -NOT, -DAG) and variable captures, where they hold and
where they fail; a failure names the check line and shows the text with the search position marked."""
import pytest

from xlapy.filecheck import FileCheckError, filecheck, parse_checks

TEXT = """HloModule m

ENTRY %e (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  %n = f32[4] negate(f32[4] %p)
  %x = f32[4] exponential(f32[4] %n)
  ROOT %a = f32[4] add(f32[4] %x, f32[4] %p)
}
"""


def fails(checks: str) -> str:
    with pytest.raises(FileCheckError) as info:
        filecheck(TEXT, checks)
    return str(info.value)


@pytest.mark.parametrize("checks", [
    "CHECK: ENTRY\nCHECK: parameter(0)\nCHECK: ROOT",
    "CHECK: %n = f32[4] negate(\nCHECK-SAME: %p)",                       # the same line, later on
    "CHECK: negate(\nCHECK-NEXT: exponential(\nCHECK-NEXT: ROOT %a",
    "CHECK: parameter\nCHECK-NOT: multiply\nCHECK: ROOT\nCHECK-NOT: negate",
    "CHECK: ENTRY\nCHECK-DAG: %x = \nCHECK-DAG: %n = \nCHECK-NEXT: ROOT",  # any order; NEXT follows the furthest
    "CHECK: %[[NEG:[a-z]+]] = f32[4] negate\nCHECK: exponential(f32[4] %[[NEG]])",
    "CHECK: ROOT %[[R:[a-z]+]] = f32[4] add(f32[4] %[[X:[a-z]+]], f32[4] %p)\nCHECK-NOT: [[R]] =",
    "CHECK: %{{[a-z]}} = f32[{{[0-9]+}}] negate",
    "// CHECK: ENTRY\n  # CHECK-NEXT: parameter\n\n    CHECK: ROOT",           # comment leaders, blank lines
])
def test_checks_that_hold(checks):
    filecheck(TEXT, checks)


def test_check_not_found_names_the_line_and_marks_the_search_start():
    message = fails("CHECK: negate(\nCHECK: multiply(")
    assert message.startswith("check line 2: CHECK: multiply(")
    assert "no match for 'multiply('" in message
    start = [line for line in message.splitlines() if line.startswith(">")]
    assert start == [">  5 |   %n = f32[4] negate(f32[4] %p)"][:1] or start == ["> 5 |   %n = f32[4] negate(f32[4] %p)"]


def test_check_not_found_points_at_the_closest_line():
    message = fails("CHECK: ROOT %a = f32[4] add(f32[4] %n")
    closest = [line for line in message.splitlines() if line.startswith("?")]
    assert closest and "ROOT %a = f32[4] add" in closest[0]


def test_checks_search_after_the_previous_match():
    assert "no match for 'negate'" in fails("CHECK: exponential\nCHECK: negate")


def test_check_next_on_a_later_line_fails():
    message = fails("CHECK: parameter(0)\nCHECK-NEXT: exponential")
    assert "CHECK-NEXT: the first match is at line 6, not on the line after the previous match" in message
    assert any(line.startswith("!") and "exponential" in line for line in message.splitlines())


def test_check_next_on_the_same_line_fails():
    assert "on the same line as the previous match" in fails("CHECK: %n =\nCHECK-NEXT: negate")


def test_check_same_on_another_line_fails():
    assert "not on the line of the previous match" in fails("CHECK: negate(\nCHECK-SAME: exponential")


def test_check_next_needs_a_previous_match():
    assert "needs an earlier CHECK" in fails("CHECK-NEXT: ENTRY")


def test_check_not_between_matches_fails():
    message = fails("CHECK: parameter(0)\nCHECK-NOT: exponential\nCHECK: ROOT")
    assert "CHECK-NOT: found 'exponential' at line 6, where it must not occur" in message
    assert message.startswith("check line 2: CHECK-NOT: exponential")


def test_check_not_after_the_last_match_fails():
    assert "found 'add(' at line 7" in fails("CHECK: exponential\nCHECK-NOT: add(")


def test_check_not_before_the_first_match_is_bounded_by_it():
    filecheck(TEXT, "CHECK-NOT: ROOT\nCHECK: exponential")
    assert "found 'negate'" in fails("CHECK-NOT: negate\nCHECK: exponential")


def test_check_dag_matches_must_not_overlap():
    message = fails("CHECK-DAG: %p = f32[4]\nCHECK-DAG: %p =")
    assert "CHECK-DAG: no match for '%p =' that does not overlap" in message


def test_check_not_before_a_dag_group_is_bounded_by_its_first_match():
    filecheck(TEXT, "CHECK: %p =\nCHECK-NOT: add(\nCHECK-DAG: exponential(\nCHECK-DAG: negate(")
    assert "found 'negate(f32" in fails("CHECK: %p =\nCHECK-NOT: negate(f32\nCHECK-DAG: exponential(")


def test_captured_variable_must_match_its_value():
    message = fails("CHECK: %[[V:[a-z]+]] = f32[4] negate\nCHECK: add(f32[4] %[[V]],")
    assert "Variables: [[V]] = 'n'" in message


def test_variable_used_on_its_own_line_is_a_backreference():
    filecheck(TEXT, "CHECK: %[[V:[a-z]]] = f32[4] negate(f32[4] %p)\nCHECK: exponential(f32[4] %[[V]])")
    assert "no match" in fails("CHECK: %[[V:[a-z]]] = f32[4] negate(f32[4] %[[V]])")


@pytest.mark.parametrize("checks, message", [
    ("CHEK: ENTRY", "check line 1 is not a CHECK directive: 'CHEK: ENTRY'"),
    ("CHECK: ENTRY\nCHECK-NEXTT: x", "check line 2: unknown directive CHECK-NEXTT"),
    ("CHECK:   ", "check line 1: CHECK has an empty pattern"),
    ("", "no CHECK directives"),
    ("CHECK: [[UNDEFINED]]", "[[UNDEFINED]] is used before it is defined (defined so far: none)"),
    ("CHECK: [[A:x]] [[A:y]]", "[[A]] is defined twice on one line"),
    ("CHECK: {{(}}", "bad regular expression"),
])
def test_malformed_checks_are_errors(checks, message):
    assert message in fails(checks)


def test_parse_checks_keeps_line_numbers():
    directives = parse_checks("\nCHECK: a\n\n  CHECK-NOT: b\n")
    assert [(d.kind, d.pattern, d.line) for d in directives] == [("CHECK", "a", 2), ("CHECK-NOT", "b", 4)]


def test_long_texts_show_a_window():
    text = "\n".join(f"line {i}" for i in range(200))
    with pytest.raises(FileCheckError) as info:
        filecheck(text, "CHECK: line 150\nCHECK: nothing")
    message = str(info.value)
    assert "lines above" in message and "lines below" in message and "line 10\n" not in message
