"""Interpreter: reduce, reduce-window, select-and-scatter. HLO text in, numpy expectations out."""
import itertools

import ml_dtypes
import numpy as np
import pytest

import xlapy
from xlapy.testing import assert_same

RNG = np.random.default_rng(0)


def run(text, *args):
    return xlapy.compile(xlapy.hlo.parse(text), backend="interpreter", verify=False)(*args)


def binary(name, op, ty):
    return f"""{name} {{
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT r = {ty}[] {op}(a, b)
}}
"""


def reduce_module(ty, in_dims, out_dims, dims, op, init):
    ins, outs = ",".join(map(str, in_dims)), ",".join(map(str, out_dims))
    return "HloModule m\n" + binary("red", op, ty) + f"""ENTRY e {{
  x = {ty}[{ins}] parameter(0)
  init = {ty}[] constant({init})
  ROOT r = {ty}[{outs}] reduce(x, init), dimensions={{{",".join(map(str, dims))}}}, to_apply=red
}}
"""


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------------------
# reduce with recognised reducers
# ---------------------------------------------------------------------------------------------------------
X345 = f32(3, 4, 5)
I46 = RNG.integers(-50, 50, (4, 6)).astype(np.int32)
B35 = RNG.random((3, 5)) < 0.5

REDUCE_CASES = [
    # name, element type, input, dims, reducer, init, expected
    ("sum_dim1", "f32", X345, (1,), "add", "0", X345.sum(1)),
    ("sum_dims02", "f32", X345, (0, 2), "add", "0", X345.sum((0, 2))),
    ("sum_all_init1", "f32", X345, (0, 1, 2), "add", "1", np.float32(X345.sum() + 1)),
    ("sum_none", "f32", X345, (), "add", "0", X345),
    ("max_dim2", "f32", X345, (2,), "maximum", "-inf", X345.max(2)),
    ("min_dim0", "f32", X345, (0,), "minimum", "inf", X345.min(0)),
    ("prod_dim1", "f32", X345, (1,), "multiply", "1", X345.prod(1)),
    ("int_sum", "s32", I46, (1,), "add", "0", I46.sum(1).astype(np.int32)),
    ("int_max", "s32", I46, (0,), "maximum", "-2147483648", I46.max(0)),
    ("any", "pred", B35, (1,), "or", "false", B35.any(1)),
    ("all", "pred", B35, (0,), "and", "true", B35.all(0)),
]


@pytest.mark.parametrize("name,ty,x,dims,op,init,expected", REDUCE_CASES, ids=[c[0] for c in REDUCE_CASES])
def test_reduce_recognised(name, ty, x, dims, op, init, expected):
    out_dims = [d for i, d in enumerate(x.shape) if i not in dims]
    assert_same(run(reduce_module(ty, x.shape, out_dims, dims, op, init), x), expected, name)


def test_reduce_max_propagates_nan():
    x = np.array([[1, np.nan, 3], [4, 5, 6]], np.float32)
    out = run(reduce_module("f32", (2, 3), (2,), (1,), "maximum", "-inf"), x)
    assert np.isnan(out[0]) and out[1] == 6


def test_reduce_bf16_sum():
    x = RNG.standard_normal((8, 64)).astype(ml_dtypes.bfloat16)
    out = run(reduce_module("bf16", (8, 64), (8,), (1,), "add", "0"), x)
    expected = x.astype(np.float32).sum(1).astype(ml_dtypes.bfloat16)
    assert_same(out, expected, "bf16 sum")


def test_reduce_over_empty_dimension_is_init():
    x = np.zeros((3, 0), np.float32)
    assert_same(run(reduce_module("f32", (3, 0), (3,), (1,), "maximum", "-inf"), x),
                np.full(3, -np.inf, np.float32))


# ---------------------------------------------------------------------------------------------------------
# reduce with generic reducers: variadic argmax, an elementwise reducer, a non-elementwise one
# ---------------------------------------------------------------------------------------------------------
ARGMAX = """HloModule argmax
argmax_red {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  nan = pred[] compare(av, av), direction=NE
  take_a = pred[] or(gt, nan)
  v = f32[] select(take_a, av, bv)
  eq = pred[] compare(av, bv), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  take_ai = pred[] or(take_a, tie)
  i = s32[] select(take_ai, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[6,7] parameter(0)
  iota = s32[6,7] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[6], s32[6]) reduce(x, iota, ninf, zero), dimensions={1}, to_apply=argmax_red
}
"""


def test_reduce_variadic_argmax_with_ties():
    x = RNG.integers(0, 3, (6, 7)).astype(np.float32)   # many ties: the first maximum must win
    values, indices = run(ARGMAX, x)
    assert_same(values, x.max(1))
    assert_same(indices, x.argmax(1).astype(np.int32))


MAX_BY_SELECT = """HloModule m
red {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  gt = pred[] compare(a, b), direction=GT
  ROOT r = f32[] select(gt, a, b)
}
ENTRY e {
  x = f32[5,9,3] parameter(0)
  init = f32[] constant(-inf)
  ROOT r = f32[9] reduce(x, init), dimensions={0,2}, to_apply=red
}
"""

SUM_THROUGH_RESHAPE = """HloModule m
red {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ar = f32[] reshape(a)
  ROOT r = f32[] add(ar, b)
}
ENTRY e {
  x = f32[3,4] parameter(0)
  init = f32[] constant(0)
  ROOT r = f32[3] reduce(x, init), dimensions={1}, to_apply=red
}
"""


def test_reduce_elementwise_reducer():
    x = f32(5, 9, 3)
    assert_same(run(MAX_BY_SELECT, x), x.max((0, 2)))


def test_reduce_non_elementwise_reducer_runs_per_element():
    x = f32(3, 4)
    assert_same(run(SUM_THROUGH_RESHAPE, x), x.sum(1))


# ---------------------------------------------------------------------------------------------------------
# reduce-window: a naive reference that walks every window and skips padding / dilation holes
# ---------------------------------------------------------------------------------------------------------
def naive_reduce_window(x, init, fn, size, stride, pad, lhs, rhs):
    base = [(d - 1) * b + 1 + lo + hi for d, b, (lo, hi) in zip(x.shape, lhs, pad)]
    out_shape = [(n - ((k - 1) * r + 1)) // s + 1 for n, k, r, s in zip(base, size, rhs, stride)]
    out = np.empty(out_shape, x.dtype)
    for o in itertools.product(*map(range, out_shape)):
        acc = init
        for k in itertools.product(*map(range, size)):
            pos = [oi * s + ki * r - lo for oi, s, ki, r, (lo, _) in zip(o, stride, k, rhs, pad)]
            if all(p >= 0 and p % b == 0 and p // b < d for p, b, d in zip(pos, lhs, x.shape)):
                acc = fn(acc, x[tuple(p // b for p, b in zip(pos, lhs))])
        out[o] = acc
    return out


def window_text(size, stride, pad, lhs, rhs):
    def x(v):
        return "x".join(map(str, v))
    text = f"size={x(size)} stride={x(stride)} pad={'x'.join(f'{lo}_{hi}' for lo, hi in pad)}"
    if any(v != 1 for v in lhs):
        text += f" lhs_dilate={x(lhs)}"
    if any(v != 1 for v in rhs):
        text += f" rhs_dilate={x(rhs)}"
    return "{" + text + "}"


def reduce_window_module(ty, in_dims, out_dims, op, init, window):
    return "HloModule m\n" + binary("red", op, ty) + f"""ENTRY e {{
  x = {ty}[{",".join(map(str, in_dims))}] parameter(0)
  init = {ty}[] constant({init})
  ROOT r = {ty}[{",".join(map(str, out_dims))}] reduce-window(x, init), window={window}, to_apply=red
}}
"""


WINDOW_CASES = [
    # name, input shape, size, stride, pad, lhs_dilate, rhs_dilate, reducer
    ("maxpool_2x2_s2", (2, 4, 6, 3), (1, 2, 2, 1), (1, 2, 2, 1), [(0, 0)] * 4, (1,) * 4, (1,) * 4, "maximum"),
    ("avgpool_same_3x3", (1, 5, 5, 2), (1, 3, 3, 1), (1, 1, 1, 1), [(0, 0), (1, 1), (1, 1), (0, 0)],
     (1,) * 4, (1,) * 4, "add"),
    ("maxpool_3x3_s2_pad", (1, 7, 7, 1), (1, 3, 3, 1), (1, 2, 2, 1), [(0, 0), (1, 1), (1, 1), (0, 0)],
     (1,) * 4, (1,) * 4, "maximum"),
    ("base_dilation", (5, 4), (2, 3), (1, 2), [(1, 0), (0, 2)], (2, 3), (1, 1), "add"),
    ("window_dilation", (9, 8), (3, 2), (2, 1), [(0, 0), (1, 1)], (1, 1), (2, 3), "maximum"),
    ("negative_padding", (8, 6), (2, 2), (1, 1), [(-1, 1), (2, -2)], (1, 1), (1, 1), "minimum"),
    ("everything", (4, 5), (2, 3), (2, 1), [(1, 2), (3, 0)], (2, 2), (2, 1), "add"),
    ("global_pool_big_window", (2, 9, 9, 3), (1, 9, 9, 1), (1, 1, 1, 1), [(0, 0)] * 4, (1,) * 4, (1,) * 4, "add"),
    ("big_window_padded_dilated", (40, 3), (70, 1), (3, 1), [(4, 2), (0, 0)], (2, 1), (1, 1), "maximum"),
    ("cummax_axis0", (6, 3), (6, 1), (1, 1), [(5, 0), (0, 0)], (1, 1), (1, 1), "maximum"),
    ("reverse_cumsum", (3, 7), (1, 7), (1, 1), [(0, 0), (0, 6)], (1, 1), (1, 1), "add"),
]

_FNS = {"add": np.add, "maximum": np.maximum, "minimum": np.minimum}
_INITS = {"add": "0", "maximum": "-inf", "minimum": "inf"}


@pytest.mark.parametrize("name,shape,size,stride,pad,lhs,rhs,op", WINDOW_CASES, ids=[c[0] for c in WINDOW_CASES])
def test_reduce_window(name, shape, size, stride, pad, lhs, rhs, op):
    x = f32(*shape)
    expected = naive_reduce_window(x, np.float32(float(_INITS[op])), _FNS[op], size, stride, pad, lhs, rhs)
    text = reduce_window_module("f32", shape, expected.shape, op, _INITS[op], window_text(size, stride, pad, lhs, rhs))
    assert_same(run(text, x), expected, name)


def test_reduce_window_cumsum():
    # JAX's cumsum: reduce-window with a window as long as the axis, padded n-1 on the low side.
    x = RNG.integers(-9, 9, (3, 10)).astype(np.int32)
    text = reduce_window_module("s32", (3, 10), (3, 10), "add", "0", "{size=1x10 pad=0_0x9_0}")
    assert_same(run(text, x), np.cumsum(x, axis=1, dtype=np.int32))


def test_reduce_window_non_identity_init_skips_padding():
    # Padding never reaches the reducer, so init is combined once per window.
    x = np.ones((4,), np.float32)
    text = reduce_window_module("f32", (4,), (4,), "add", "10", "{size=3 pad=1_1}")
    assert_same(run(text, x), np.array([12, 13, 13, 12], np.float32))


ARGMAX_POOL = """HloModule m
red {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  ge = pred[] compare(av, bv), direction=GE
  v = f32[] select(ge, av, bv)
  i = s32[] select(ge, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[7] parameter(0)
  iota = s32[7] iota(), iota_dimension=0
  ninf = f32[] constant(-inf)
  minus1 = s32[] constant(-1)
  ROOT r = (f32[4], s32[4]) reduce-window(x, iota, ninf, minus1), window={size=3 stride=2 pad=1_1}, to_apply=red
}
"""


def test_reduce_window_variadic_argmax():
    x = np.array([3, 1, 4, 1, 5, 9, 2], np.float32)
    values, indices = run(ARGMAX_POOL, x)
    assert_same(values, np.array([3, 4, 9, 9], np.float32))
    assert_same(indices, np.array([0, 2, 5, 5], np.int32))


# ---------------------------------------------------------------------------------------------------------
# select-and-scatter: the gradient of max pooling
# ---------------------------------------------------------------------------------------------------------
def naive_max_pool_grad(x, g, size, stride, pad):
    """Scatter each g into the first maximum of its window (padding never selected)."""
    out = np.zeros_like(x)
    for o in itertools.product(*map(range, g.shape)):
        best = None
        for k in itertools.product(*map(range, size)):
            pos = tuple(oi * s + ki - lo for oi, s, ki, (lo, _) in zip(o, stride, k, pad))
            if all(0 <= p < d for p, d in zip(pos, x.shape)) and (best is None or not x[best] >= x[pos]):
                best = pos
        if best is not None:
            out[best] += g[o]
    return out


def select_and_scatter_module(in_dims, src_dims, window):
    d = ",".join(map(str, in_dims))
    s = ",".join(map(str, src_dims))
    return f"""HloModule m
sel {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT ge = pred[] compare(a, b), direction=GE
}}
{binary("acc", "add", "f32")}ENTRY e {{
  x = f32[{d}] parameter(0)
  g = f32[{s}] parameter(1)
  zero = f32[] constant(0)
  ROOT r = f32[{d}] select-and-scatter(x, g, zero), window={window}, select=sel, scatter=acc
}}
"""


SAS_CASES = [
    ("nonoverlapping", (2, 4, 4, 3), (1, 2, 2, 1), (1, 2, 2, 1), [(0, 0)] * 4),
    ("overlapping_pad", (1, 7, 7, 2), (1, 3, 3, 1), (1, 2, 2, 1), [(0, 0), (1, 1), (1, 1), (0, 0)]),
    ("ties_first_wins", (6, 6), (3, 3), (1, 1), [(1, 1), (1, 1)]),
]


@pytest.mark.parametrize("name,shape,size,stride,pad", SAS_CASES, ids=[c[0] for c in SAS_CASES])
def test_select_and_scatter(name, shape, size, stride, pad):
    x = f32(*shape) if name != "ties_first_wins" else RNG.integers(0, 2, shape).astype(np.float32)
    src_shape = tuple((n + lo + hi - k) // s + 1 for n, k, s, (lo, hi) in zip(shape, size, stride, pad))
    g = f32(*src_shape)
    window = window_text(size, stride, pad, (1,) * len(shape), (1,) * len(shape))
    expected = naive_max_pool_grad(x, g, size, stride, pad)
    assert_same(run(select_and_scatter_module(shape, src_shape, window), x, g), expected, name)


# ---------------------------------------------------------------------------------------------------------
# the slow paths (computations that cannot run on whole arrays) and narrow floats
# ---------------------------------------------------------------------------------------------------------
def test_reduce_window_non_elementwise_reducer():
    x = f32(5, 4)
    text = SUM_THROUGH_RESHAPE.replace("f32[3,4] parameter(0)", "f32[5,4] parameter(0)").replace(
        "ROOT r = f32[3] reduce(x, init), dimensions={1}",
        "ROOT r = f32[3,4] reduce-window(x, init), window={size=3x2 pad=0_0x1_0}")
    expected = naive_reduce_window(x, np.float32(0), np.add, (3, 2), (1, 1), [(0, 0), (1, 0)], (1, 1), (1, 1))
    assert_same(run(text, x), expected)


def test_select_and_scatter_non_elementwise_select():
    shape, size, stride, pad = (1, 7, 7, 2), (1, 3, 3, 1), (1, 2, 2, 1), [(0, 0), (1, 1), (1, 1), (0, 0)]
    x, g = f32(*shape), f32(1, 4, 4, 2)
    text = select_and_scatter_module(shape, g.shape, window_text(size, stride, pad, (1,) * 4, (1,) * 4))
    text = text.replace("ROOT ge = pred[] compare(a, b), direction=GE",
                        "ar = f32[] reshape(a)\n  ROOT ge = pred[] compare(ar, b), direction=GE")
    assert_same(run(text, x, g), naive_max_pool_grad(x, g, size, stride, pad))


def test_select_and_scatter_max_scatter_combiner():
    # scatter = max instead of add: the chosen position keeps the largest routed gradient.
    x = np.array([[1, 5, 2], [7, 3, 9], [4, 8, 6]], np.float32)
    g = np.array([[1, -2], [3, 4]], np.float32)
    text = select_and_scatter_module((3, 3), (2, 2), "{size=2x2}").replace(
        "ROOT r = f32[] add(a, b)", "ROOT r = f32[] maximum(a, b)")
    # windows at (0,0)->7@(1,0); (0,1)->9@(1,2); (1,0)->8@(2,1); (1,1)->9@(1,2)
    expected = np.zeros((3, 3), np.float32)
    expected[1, 0], expected[1, 2], expected[2, 1] = 1, 4, 3
    assert_same(run(text, x, g), expected)


def test_max_pool_and_grad_bf16():
    x = RNG.standard_normal((1, 6, 6, 2)).astype(ml_dtypes.bfloat16)
    pooled = run(reduce_window_module("bf16", (1, 6, 6, 2), (1, 3, 3, 2), "maximum", "-inf",
                                      "{size=1x2x2x1 stride=1x2x2x1}"), x)
    assert_same(pooled, x.reshape(1, 3, 2, 3, 2, 2).max((2, 4)))
    g = RNG.standard_normal((1, 3, 3, 2)).astype(ml_dtypes.bfloat16)
    text = select_and_scatter_module((1, 6, 6, 2), (1, 3, 3, 2), "{size=1x2x2x1 stride=1x2x2x1}").replace("f32", "bf16")
    expected = naive_max_pool_grad(x.astype(np.float32), g.astype(np.float32), (1, 2, 2, 1), (1, 2, 2, 1),
                                   [(0, 0)] * 4).astype(ml_dtypes.bfloat16)
    assert_same(run(text, x, g), expected)


def test_elementwise_computations_run_lifted_on_whole_arrays():
    # regression: the evaluator's result-shape check made every lifted call fail, so select-and-scatter
    # and scatter silently fell back to one Python call per element
    import numpy as np
    import xlapy
    from xlapy.backends.interpreter.evaluator import Evaluator
    from xlapy.backends.interpreter.reducers import call_lifted
    m = xlapy.hlo.parse("""HloModule m
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
ENTRY e {
  ROOT p = f32[] parameter(0)
}""")
    ge = m.computation("ge")
    x, y = np.array([1, 5, 3], np.float32), np.array([2, 5, 1], np.float32)
    out = call_lifted(Evaluator(m), ge, [x, y], (3,))
    assert out is not None and out[0].tolist() == [False, True, True]
