"""dynamic_padder: dynamic dimensions on static buffers. Each case is HLO in, CHECK lines out (check_rewrite,
without its interpreter step: the interpreter cannot run the module before the pass), then the rewritten module
runs on the interpreter and its valid elements are checked against numpy."""
import numpy as np
import pytest

import xlapy
from xlapy.errors import UnimplementedError
from xlapy.passes.dynamic_dimensions import reshape_groups
from xlapy.passes.dynamic_padder import DynamicPadder
from xlapy.testing import check_rewrite, hlo_module

X = np.array([3.0, -1.0, 4.0, 1.0, -5.0, 9.0, 2.0, -6.0], np.float32)


def masked(body: str, *computations: str, params=("f32[8]", "s32[]"), reducers=("add",)) -> str:
    """A module whose `d` is p0 with dimension 0 set to the size p1."""
    return hlo_module("d = f32[<=8] set-dimension-size(p0, p1), dimensions={0}\n" + body, *computations,
                      params=list(params), reducers=reducers)


def padded(hlo: str, checks: str):
    module = check_rewrite(hlo, "dynamic_padder", checks, semantics=False)
    exe = xlapy.compile(module, backend="interpreter")
    return exe


@pytest.mark.parametrize("n", [0, 3, 8])
def test_reduce_ignores_the_padding(n):
    exe = padded(masked("z = f32[] constant(0)\nROOT r = f32[] reduce(d, z), dimensions={0}, to_apply=add"), """
CHECK: iota(), iota_dimension=0
CHECK: compare({{.*}}), direction=LT
CHECK: select(
CHECK: ROOT {{.*}} reduce(
CHECK-NOT: set-dimension-size
""")
    np.testing.assert_allclose(exe(X, np.int32(n)), X[:n].sum())


def test_max_reduce_pads_with_its_init():
    exe = padded(masked("z = f32[] constant(-inf)\nROOT r = f32[] reduce(d, z), dimensions={0}, to_apply=max",
                        reducers=("max",)), "CHECK: select(\nCHECK: ROOT {{.*}} reduce(")
    assert exe(X, np.int32(4)) == 4.0


def test_get_dimension_size_is_the_size():
    exe = padded(masked("s = s32[] get-dimension-size(d), dimensions={0}\n"
                        "c = s32[] get-dimension-size(p0), dimensions={0}\nROOT t = (s32[], s32[]) tuple(s, c)"), """
CHECK-NOT: get-dimension-size
CHECK: ROOT {{.*}} tuple(
""")
    assert exe(X, np.int32(5)) == (5, 8)


def test_sort_puts_the_padding_last():
    cmp = "lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] compare(a, b), direction=LT\n}"
    exe = padded(masked("ROOT s = f32[<=8] sort(d), dimensions={0}, to_apply=lt", cmp, reducers=()), """
CHECK: lt.padding_last
CHECK: sort({{.*}}, pred[8] {{.*}}), dimensions={0}, to_apply=%lt.padding_last
""")
    for n in (0, 5, 8):
        np.testing.assert_array_equal(exe(X, np.int32(n))[:n], np.sort(X[:n]))


def test_concatenate_moves_the_later_operands():
    exe = padded(masked("ROOT c = f32[<=11] concatenate(d, p2), dimensions={0}", params=("f32[8]", "s32[]", "f32[3]"),
                        reducers=()), "CHECK: dynamic-update-slice(\nCHECK: ROOT {{.*}} dynamic-update-slice(")
    y = np.array([7, 8, 9], np.float32)
    np.testing.assert_array_equal(exe(X, np.int32(2), y)[:5], [3, -1, 7, 8, 9])


def test_dot_contracting_a_dynamic_dimension():
    exe = padded(masked("ROOT r = f32[] dot(d, p2), lhs_contracting_dims={0}, rhs_contracting_dims={0}",
                        params=("f32[8]", "s32[]", "f32[8]"), reducers=()), "CHECK: select(\nCHECK: ROOT {{.*}} dot(")
    np.testing.assert_allclose(exe(X, np.int32(3), np.ones(8, np.float32)), X[:3].sum())


def test_reshape_and_slice_scale_the_size():
    body = ("r = f32[<=4,2] reshape(d)\nt = f32[<=3,2] slice(r), slice={[1:4], [0:2]}\nz = f32[] constant(0)\n"
            "ROOT s = f32[2] reduce(t, z), dimensions={0}, to_apply=add")
    exe = padded(masked(body), "CHECK: divide(\nCHECK: select(\nCHECK: ROOT {{.*}} reduce(")
    np.testing.assert_allclose(exe(X, np.int32(6)), X.reshape(4, 2)[1:3].sum(axis=0))


def test_scatter_skips_padded_updates():
    body = ("i = s32[4,1] parameter(2)\nu = f32[4] parameter(3)\nn = s32[] parameter(1)\n"
            "du = f32[<=4] set-dimension-size(u, n), dimensions={0}\n"
            "di = s32[<=4,1] set-dimension-size(i, n), dimensions={0}\n"
            "ROOT s = f32[8] scatter(p0, di, du), update_window_dims={}, inserted_window_dims={0}, "
            "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add")
    text = hlo_module(body, params=["f32[8]"], reducers=["add"])
    exe = padded(text, "CHECK: select(\nCHECK: ROOT {{.*}} scatter(")
    got = exe(np.zeros(8, np.float32), np.int32(2), np.array([[1], [2], [3], [4]], np.int32),
              np.ones(4, np.float32))
    np.testing.assert_array_equal(got, [0, 1, 1, 0, 0, 0, 0, 0])


def test_dynamic_update_slice_keeps_what_the_padding_would_overwrite():
    body = ("d = f32[<=3] set-dimension-size(p2, p1), dimensions={0}\nk = s32[] constant(2)\n"
            "ROOT u = f32[8] dynamic-update-slice(p0, d, k)")
    exe = padded(hlo_module(body, params=["f32[8]", "s32[]", "f32[3]"]), "CHECK: dynamic-slice(\nCHECK: select(")
    got = exe(X, np.int32(1), np.array([10, 20, 30], np.float32))
    np.testing.assert_array_equal(got, [3, -1, 10, 1, -5, 9, 2, -6])


def test_cumulative_reduce_window():
    body = ("z = f32[] constant(0)\nROOT c = f32[<=8] reduce-window(d, z), window={size=8 pad=7_0}, to_apply=add")
    exe = padded(masked(body), "CHECK: select(\nCHECK: ROOT {{.*}} reduce-window(")
    np.testing.assert_allclose(exe(X, np.int32(5))[:5], np.cumsum(X[:5]))


def test_dynamic_reshape_of_a_prefix():
    body = ("a = f32[4,2] reshape(p0)\nda = f32[<=4,2] set-dimension-size(a, p1), dimensions={0}\n"
            "two = s32[] constant(2)\nm = s32[] multiply(p1, two)\n"
            "r = f32[<=8] dynamic-reshape(da, m)\nz = f32[] constant(0)\n"
            "ROOT s = f32[] reduce(r, z), dimensions={0}, to_apply=add")
    exe = padded(hlo_module(body, params=["f32[8]", "s32[]"], reducers=["add"]), "CHECK-NOT: dynamic-reshape")
    np.testing.assert_allclose(exe(X, np.int32(3)), X[:6].sum())


def test_markers_reading_markers():
    """Two dimensions set one after the other; a size read back and set again."""
    body = ("a = f32[4,2] reshape(p0)\nd0 = f32[<=4,2] set-dimension-size(a, p1), dimensions={0}\n"
            "one = s32[] constant(1)\nd1 = f32[<=4,<=2] set-dimension-size(d0, one), dimensions={1}\n"
            "s = s32[] get-dimension-size(d1), dimensions={0}\nn = f32[8] negate(p0)\n"
            "d2 = f32[<=8] set-dimension-size(n, s), dimensions={0}\nz = f32[] constant(0)\n"
            "r1 = f32[] reduce(d1, z), dimensions={0,1}, to_apply=add\n"
            "r2 = f32[] reduce(d2, z), dimensions={0}, to_apply=add\nROOT t = (f32[], f32[]) tuple(r1, r2)")
    exe = padded(hlo_module(body, params=["f32[8]", "s32[]"], reducers=["add"]), "CHECK-NOT: dimension-size")
    got = exe(X, np.int32(3))
    np.testing.assert_allclose(got, (X.reshape(4, 2)[:3, :1].sum(), -X[:3].sum()))


def test_conditional_branches_return_their_sizes():
    """A branch's dynamic result comes back with its size (TF's rot90 returns 5 x 7 or 7 x 5 as <=7 x <=7)."""
    branch = ("{name} {{\n  x = f32[8] parameter(0)\n  n = s32[] constant({n})\n"
              "  ROOT d = f32[<=8] set-dimension-size(x, n), dimensions={{0}}\n}}")
    body = ("c = f32[<=8] conditional(p1, p0, p0), true_computation=three, false_computation=five\n"
            "z = f32[] constant(0)\nROOT s = f32[] reduce(c, z), dimensions={0}, to_apply=add")
    text = hlo_module(body, branch.format(name="three", n=3), branch.format(name="five", n=5),
                      params=["f32[8]", "pred[]"], reducers=["add"])
    exe = padded(text, "CHECK: tuple(\nCHECK: conditional(\nCHECK: select(")
    assert exe(X, np.bool_(True)) == X[:3].sum() and exe(X, np.bool_(False)) == X[:5].sum()


def test_a_call_returning_a_dynamic_result_wants_inlining():
    callee = ("callee {\n  x = f32[8] parameter(0)\n  n = s32[] parameter(1)\n"
              "  ROOT d = f32[<=8] set-dimension-size(x, n), dimensions={0}\n}")
    text = hlo_module("ROOT c = f32[<=8] call(p0, p1), to_apply=callee", callee, params=["f32[8]", "s32[]"])
    with pytest.raises(UnimplementedError, match="call-inliner"):
        DynamicPadder().run(xlapy.hlo.parse(text))


def test_static_set_dimension_size_is_dropped():
    """TF's top_k: the size is the dimension's and the result static."""
    text = hlo_module("k = s32[] constant(3)\nROOT r = f32[4,3] set-dimension-size(p0, k), dimensions={1}",
                      params=["f32[4,3]"])
    check_rewrite(text, "dynamic_padder", "CHECK-NOT: set-dimension-size\nCHECK: ROOT {{.*}} parameter(0)")


def test_static_module_does_not_change():
    check_rewrite(hlo_module("ROOT r = f32[8] negate(p0)", params=["f32[8]"]), "dynamic_padder", None)


@pytest.mark.parametrize("body, op", [
    ("ROOT r = f32[<=8] reverse(d), dimensions={0}", "reverse"),
    ("z = f32[] constant(0)\nROOT r = f32[<=9] pad(d, z), padding=0_1", "pad"),
])
def test_unsupported_ops_are_named(body, op):
    with pytest.raises(UnimplementedError, match=f"dynamic_padder: {op}"):
        DynamicPadder().run(xlapy.hlo.parse(masked(body, reducers=())))


@pytest.mark.parametrize("src, dst, groups", [
    ((8, 1), (8,), [([0, 1], [0])]),
    ((1, 8), (8,), [([0, 1], [0])]),
    ((6, 3), (18,), [([0, 1], [0])]),
    ((2, 1, 3), (2, 3), [([0, 1], [0]), ([2], [1])]),
    ((4, 6), (2, 2, 3, 2), [([0], [0, 1]), ([1], [2, 3])]),
])
def test_reshape_groups(src, dst, groups):
    assert reshape_groups(src, dst) == groups
