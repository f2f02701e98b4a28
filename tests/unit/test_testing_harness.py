"""xlapy.testing.check_rewrite, the pass-test harness: each of its steps catches the mistake it is there for
(a rewrite the CHECK lines do not describe, a change where none may happen, a rewrite that changes results on
corner values, a pass that never settles, a pass that lies about changing), and the builders and inputs it
shares with the pass tests."""
import numpy as np
import pytest

import xlapy
from xlapy.errors import HloVerifierError, XlapyError
from xlapy.filecheck import FileCheckError
from xlapy.hlo import Instruction, Shape
from xlapy.passes import Pass
from xlapy.passes.algsimp import AlgebraicSimplifier
from xlapy.testing import (argument_sets, assert_bitwise_same, assert_same_semantics, check_rewrite,
                           corner_values, hlo_module, random_args, reducer)

NEG_NEG = hlo_module("""
p = f32[4] parameter(0)
n = f32[4] negate(p)
ROOT a = f32[4] negate(n)""")

MUL_ZERO = hlo_module("""
p = f32[4] parameter(0)
z = f32[4] constant({0, 0, 0, 0})
ROOT m = f32[4] multiply(p, z)""")

ADD = hlo_module("""
p = f32[4] parameter(0)
q = f32[4] parameter(1)
ROOT a = f32[4] add(p, q)""")


class ConstantOperandWins(Pass):
    """Wrong for floats: multiply(x, constant) => constant. Right for x * 0 on integers, but NaN * 0 and
    inf * 0 are NaN and -1 * 0 is -0."""
    name = "constant-operand-wins"

    def run(self, module):
        changed = False
        for inst in list(module.entry.instructions):
            if inst.opcode == "multiply" and inst.operands[1].opcode == "constant":
                module.entry.replace_instruction(inst, inst.operands[1])
                changed = True
        return changed


class AddingAConstantIsNothing(Pass):
    """Wrong for floats: add(x, constant) => x. Right for x + -0, but -0 + 0 is +0."""
    name = "adding-a-constant-is-nothing"

    def run(self, module):
        root = module.entry.root
        if root.opcode != "add" or root.operands[1].opcode != "constant":
            return False
        module.entry.replace_instruction(root, root.operands[0])
        return True


class SwapAddOperands(Pass):
    """add(a, b) => add(b, a): exact, and never done (every run finds the swapped add and swaps it back)."""
    name = "swap-add-operands"

    def __init__(self, report: bool = True):
        self.report = report

    def run(self, module):
        adds = [i for i in module.entry.instructions if i.opcode == "add"]
        for inst in adds:
            module.entry.replace_instruction(inst, inst.clone_with(operands=inst.operands[::-1]))
        return bool(adds) and self.report


class ReportsNone(Pass):
    name = "reports-none"

    def run(self, module):
        return None


class BreaksShape(Pass):
    name = "breaks-shape"

    def run(self, module):
        module.entry.root.shape = Shape.array("f32", (7,))
        return True


# -- what passes -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("passes", ["algsimp,dce", ["algsimp", "dce"], [AlgebraicSimplifier, "dce"],
                                    [lambda: AlgebraicSimplifier(fast_math=False), "dce"],
                                    [AlgebraicSimplifier(), "dce"]])
def test_a_right_rewrite_passes_with_any_way_of_naming_the_passes(passes):
    module = check_rewrite(NEG_NEG, passes, "CHECK: ROOT %p = f32[4] parameter(0)", fixed_point=True)
    assert module.entry.root.opcode == "parameter"


def test_the_input_module_is_left_alone():
    module = xlapy.hlo.parse(NEG_NEG)
    before = module.to_text()
    after = check_rewrite(module, "algsimp,dce", "CHECK-NOT: negate", fixed_point=True)
    assert module.to_text() == before and after is not module


def test_must_not_change_passes_when_nothing_changes():
    check_rewrite(MUL_ZERO, "algsimp,dce", None, fixed_point=True)     # IEEE-strict: x * 0 stays


# -- what each step catches ------------------------------------------------------------------------------------
def test_checks_that_do_not_hold_fail_with_the_filecheck_message():
    with pytest.raises(FileCheckError, match="check line 1: CHECK: ROOT %q"):
        check_rewrite(NEG_NEG, "algsimp,dce", "CHECK: ROOT %q", fixed_point=True)


def test_checks_fail_when_no_pass_changes_anything():
    with pytest.raises(AssertionError, match="the CHECK lines expect a rewrite, but the passes reported no change"):
        check_rewrite(MUL_ZERO, "algsimp", "CHECK: multiply")


def test_must_not_change_fails_when_a_pass_changes_the_module():
    with pytest.raises(AssertionError, match="must not change, but algsimp, dce changed it") as info:
        check_rewrite(NEG_NEG, "algsimp,dce", None)
    assert "-  ROOT %a = f32[4] negate(f32[4] %n)" in str(info.value)      # the diff shows what changed


def test_must_not_change_fails_when_a_pass_changes_the_module_and_says_it_did_not():
    with pytest.raises(AssertionError, match=r"must not change, but a pass changed it \(reported change: False\)"):
        check_rewrite(ADD, lambda: SwapAddOperands(report=False), None)


def test_semantics_catch_a_float_rewrite_that_is_wrong_on_nan_and_inf():
    with pytest.raises(AssertionError, match="differ bit for bit") as info:
        check_rewrite(MUL_ZERO, [ConstantOperandWins, "dce"], "CHECK: ROOT %z")
    assert "np.float32(0.0) != expected np.float32(-0.0)" in str(info.value)       # -1 * 0 is -0
    nan_and_inf = [[np.array([2, 3, np.inf, np.nan], np.float32)]]
    with pytest.raises(AssertionError) as info:
        check_rewrite(MUL_ZERO, [ConstantOperandWins, "dce"], "CHECK: ROOT %z", args=nan_and_inf)
    assert "2 of 4 values differ bit for bit; first at flat index 2: np.float32(0.0) != expected np.float32(nan)" \
        in str(info.value)


def test_semantics_catch_x_plus_positive_zero_on_negative_zero():
    text = hlo_module("""
p = f32[4] parameter(0)
z = f32[4] constant({0, 0, 0, 0})
ROOT a = f32[4] add(p, z)""")
    with pytest.raises(AssertionError, match="differ bit for bit") as info:
        check_rewrite(text, [AddingAConstantIsNothing, "dce"], "CHECK: ROOT %p")
    assert "-0." in str(info.value)
    check_rewrite(text.replace("{0, 0, 0, 0}", "{-0, -0, -0, -0}"), [AddingAConstantIsNothing, "dce"], "CHECK: ROOT %p")


def test_semantics_can_be_turned_off():
    check_rewrite(MUL_ZERO, [ConstantOperandWins, "dce"], "CHECK: ROOT %z", semantics=False)


def test_integer_corner_values_keep_a_right_rewrite():
    text = hlo_module("""
p = s32[4] parameter(0)
z = s32[4] constant({0, 0, 0, 0})
ROOT m = s32[4] multiply(p, z)""")
    check_rewrite(text, [ConstantOperandWins, "dce"], "CHECK: ROOT %z")


def test_idempotence_catches_a_pass_that_changes_on_every_run():
    with pytest.raises(AssertionError, match=r"running the passes again changed the module \(swap-add-operands\)"):
        check_rewrite(ADD, SwapAddOperands, "CHECK: add(f32[4] %q, f32[4] %p)")
    check_rewrite(ADD, SwapAddOperands, "CHECK: add(f32[4] %q, f32[4] %p)", idempotent=False)


def test_a_pass_must_report_a_bool():
    with pytest.raises(XlapyError, match="pass reports-none returned None; run\\(\\) must return True or False"):
        check_rewrite(ADD, ReportsNone, None)


def test_the_verifier_runs_after_every_pass():
    with pytest.raises(HloVerifierError, match="after pass breaks-shape"):
        check_rewrite(ADD, BreaksShape, "CHECK: add")


def test_a_module_that_does_not_verify_is_refused():
    bad = ADD.replace("ROOT a = f32[4] add", "ROOT a = f32[5] add")
    with pytest.raises(HloVerifierError):
        check_rewrite(bad, "algsimp", None)


def test_something_that_is_not_a_pass_is_refused():
    with pytest.raises(TypeError, match="not a pass, a pass name or a pass factory"):
        check_rewrite(ADD, 42, None)
    with pytest.raises(TypeError, match="a pass factory returned 'dce', not a Pass"):
        check_rewrite(ADD, lambda: "dce", None)


class DivideByThreeIsMultiplyByAThird(Pass):
    """x / 3 => x * 0.33333334: close, but not exact (the last bit differs for some x)."""
    name = "divide-by-three"

    def run(self, module):
        root = module.entry.root
        if root.opcode != "divide":
            return False
        third = next(i for i in module.entry.instructions if i.name == "t")
        module.entry.replace_instruction(root, Instruction("multiply", root.shape, [root.operands[0], third]))
        return True


def test_tolerances_with_random_inputs_accept_a_rewrite_exact_only_up_to_rounding():
    text = hlo_module("""
p = f32[64] parameter(0)
three = f32[] constant(3)
third = f32[] constant(0.33333334)
c = f32[64] broadcast(three), dimensions={}
t = f32[64] broadcast(third), dimensions={}
ROOT d = f32[64] divide(p, c)""")
    with pytest.raises(AssertionError, match="differ bit for bit"):
        check_rewrite(text, [DivideByThreeIsMultiplyByAThird, "dce"], "CHECK: multiply", corners=False)
    check_rewrite(text, [DivideByThreeIsMultiplyByAThird, "dce"], "CHECK: multiply", corners=False, rtol=1e-6,
                  atol=0)


# -- builders and inputs ---------------------------------------------------------------------------------------
def test_hlo_module_builds_parameters_reducers_and_computations():
    text = hlo_module("""
        z = f32[] constant(0)
        ROOT r = f32[] reduce(p0, z), dimensions={0}, to_apply=max""", "other {\n  ROOT c = s32[] constant(1)\n}",
                      params=["f32[4]"], reducers=["max", "add_s32"], entry_name="main")
    module = xlapy.hlo.parse(text)
    assert [c.name for c in module.computations] == ["max", "add_s32", "other", "main"]
    assert module.entry.parameters[0].shape.to_text() == "f32[4]"
    assert module.computation("add_s32").root.to_text() == "%s = s32[] add(s32[] %x, s32[] %y)"
    assert module.computation("max").root.opcode == "maximum"
    with pytest.raises(ValueError, match="unknown reducer 'median'"):
        reducer("median")


def test_corner_values_cover_the_edges_of_each_type():
    f32 = corner_values(np.float32)
    for v in (0.0, 1.0, -1.0, np.inf, -np.inf, np.finfo(np.float32).max, np.finfo(np.float32).tiny):
        assert v in f32
    assert np.isnan(f32).any() and np.signbit(f32[f32 == 0]).any() and (np.abs(f32[f32 != 0]) <
                                                                         np.finfo(np.float32).tiny).any()
    s8 = corner_values(np.int8)
    assert {0, 1, -1, -128, 127} <= set(s8.tolist())
    assert {0, 1, 255} <= set(corner_values(np.uint8).tolist())
    assert set(corner_values(np.bool_).tolist()) == {False, True}


def test_argument_sets_give_every_parameter_every_corner_then_random_values():
    text = hlo_module("ROOT t = (f32[2], s32[], (pred[3])) tuple(p0, p1, p2)", params=["f32[2]", "s32[]", "(pred[3])"])
    sets = argument_sets(text, random_rounds=2)
    assert len(sets) == len(corner_values(np.int32)) + 2          # the scalar s32 needs one round per corner
    assert set(a[1].item() for a in sets[:-2]) == set(corner_values(np.int32).tolist())
    seen = np.concatenate([a[0] for a in sets[:-2]])
    assert np.isnan(seen).any() and np.isinf(seen).any()
    assert isinstance(sets[0][2], tuple) and sets[0][2][0].dtype == np.bool_


def test_random_args_options():
    text = hlo_module("ROOT t = (f32[50], s32[50]) tuple(var, p1)", params=["f32[50]", "s32[50]"]).replace(
        "p0 =", "var =")
    var, ints = random_args(text, seed=3, int_range=(0, 3), positive=lambda name: name.startswith("var"))
    assert (var >= 0).all() and set(ints.tolist()) <= {0, 1, 2}


def test_bitwise_comparison_tells_zeros_apart_and_not_nans():
    assert_bitwise_same(np.array([np.nan, 1], np.float32), np.array([-np.nan, 1], np.float32))
    with pytest.raises(AssertionError, match="1 of 2 values differ bit for bit; first at flat index 1"):
        assert_bitwise_same(np.array([1, 0.0], np.float32), np.array([1, -0.0], np.float32))


def test_semantics_read_denormal_results_as_zeros():
    # x + -0 => x returns a denormal x where the interpreter's add (flush-to-zero) returned 0
    text = hlo_module("""
p = f32[4] parameter(0)
z = f32[4] constant({-0, -0, -0, -0})
ROOT a = f32[4] add(p, z)""")
    assert_same_semantics(text, xlapy.hlo.parse(hlo_module("ROOT p = f32[4] parameter(0)")),
                          args=[[np.full(4, 1e-45, np.float32)]])
