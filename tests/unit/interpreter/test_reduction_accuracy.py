"""The interpreter's float sums (interpreter/summation.py): the reference order, its accuracy against XLA:CPU's,
and XLA:CPU's denormal flushing in reduce, reduce-window and scatter.

Before, a sum went through numpy's add.reduce, pairwise only along a contiguous last axis: a column sum of
65,536 values near 1 was 78 units in the last place off and BatchNorm's variance 3.8e-4 relative (XLA: 0.9
units, 8.0e-6); and a recognised add or max combiner read denormal operands as numbers, where the elementwise
add and max (and XLA:CPU, under FTZ/DAZ) read them as zeros.
"""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.backends.interpreter.summation import LEAF
from xlapy.testing import assert_bitwise_same, hlo_module

f32 = np.float32
TINY = float(np.finfo(f32).tiny)          # the smallest normal f32


def run(text: str, *args):
    return xlapy.compile(text, backend="interpreter")(*args)


def dims_text(shape) -> str:
    return ",".join(map(str, shape))


def sum_module(shape, dims, ty="f32", init="0") -> str:
    out = [n for d, n in enumerate(shape) if d not in dims]
    return hlo_module(f"""
        z = {ty}[] constant({init})
        ROOT r = {ty}[{dims_text(out)}] reduce(p0, z), dimensions={{{dims_text(dims)}}}, to_apply=add_{ty}
        """, params=[f"{ty}[{dims_text(shape)}]"], reducers=[f"add_{ty}"])


def normal(shape, seed=0):
    return (1 + 0.2 * np.random.default_rng(seed).standard_normal(shape)).astype(f32)


def mixed(shape, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.choice([-1.0, 1.0], shape) * 10.0 ** rng.uniform(-3, 3, shape)).astype(f32)


def ulps(got, x, dims) -> float:
    exact = x.astype(np.float64).sum(axis=dims)
    return float(np.max(np.abs(np.asarray(got, np.float64) - exact) / np.spacing(np.abs(exact).astype(x.dtype))))


# -- the order, spelled out in plain Python ----------------------------------------------------------------------
def reference_order(values, init, dtype):
    """summation.py's table for one output, one add at a time on numpy scalars (no denormals here)."""
    t = np.dtype(dtype).type
    if len(values) <= LEAF:
        acc = t(init)
        for v in values:
            acc = t(acc + t(v))
        return acc
    leaf_sums = []
    for start in range(0, len(values), LEAF):
        acc = t(-0.0)
        for v in values[start:start + LEAF]:
            acc = t(acc + t(v))
        leaf_sums.append(np.float64(acc))
    if t is np.float32:
        total = np.float64(-0.0)
        for s in leaf_sums:
            total = total + s
    else:                                          # f64: the binary counter (cascade.py)
        slots = {}
        for k, s in enumerate(leaf_sums):
            j = 0
            while k >> j & 1:
                s = slots[j] + s
                j += 1
            slots[j] = s
        total = np.float64(-0.0)
        for j in range(len(leaf_sums).bit_length()):
            if len(leaf_sums) >> j & 1:
                total = slots[j] + total
    return t(t(init) + t(total))


@pytest.mark.parametrize("ty", ["f32", "f64"])
@pytest.mark.parametrize("n", [1, 5, LEAF, LEAF + 1, 100, 1000, 4097])
def test_reference_order(n, ty):
    dtype = np.float32 if ty == "f32" else np.float64
    x = mixed((3, n), n).astype(dtype)
    got = run(sum_module((3, n), (1,), ty, init="0.5"), x)
    want = np.array([reference_order(row, 0.5, dtype) for row in x], dtype)
    assert_bitwise_same(np.asarray(got), want, f"{ty}[3,{n}]")


def test_reduced_dimensions_in_row_major_order():
    """Several reduced dims are one sequence, row-major, wherever they sit among the kept ones."""
    x = mixed((7, 3, 11, 5))
    got = run(sum_module((7, 3, 11, 5), (0, 2)), x)
    moved = np.moveaxis(x, (0, 2), (2, 3)).reshape(3, 5, 77)
    want = np.array([[reference_order(moved[i, j], 0, np.float32) for j in range(5)] for i in range(3)], f32)
    assert_bitwise_same(np.asarray(got), want)


# -- accuracy against XLA:CPU (jax 0.10.2, the same inputs) ------------------------------------------------------
# name, shape, reduced dims, XLA's error in ulps
CASES = [
    ("65536", (65536,), (0,), 0.7241),
    ("65536_as_256x256", (256, 256), (0, 1), 0.7241),
    ("65536_columns", (65536, 8), (0,), 0.9055),
    ("65536_rows", (8, 65536), (1,), 0.7241),
    ("1M", (1 << 20,), (0,), 0.2783),
]


@pytest.mark.parametrize("name,shape,dims,xla_ulps", CASES, ids=[c[0] for c in CASES])
def test_sum_at_least_as_accurate_as_xla(name, shape, dims, xla_ulps):
    x = normal(shape)
    got = run(sum_module(shape, dims), x)
    assert ulps(got, x, dims) <= xla_ulps + 1e-4
    if np.prod([shape[d] for d in dims]) == 65536:
        exact = x.astype(np.float64).sum(axis=dims)
        assert np.max(np.abs(np.asarray(got, np.float64) - exact) / exact) <= 9e-8     # XLA: 8.9e-8 (issue 11)


def test_mixed_signs_better_than_xla():
    """Cancelling sums (RMS error over 64 sums of 16,384 terms, in units of 2^-24 * ||x||_2): XLA 1.52 and 1.88
    (rows, columns), here 1.35 and 1.35: leaves of 16 keep partial sums small."""
    for shape, dims, xla in (((64, 16384), (1,), 1.52), ((16384, 64), (0,), 1.88)):
        x = mixed(shape)
        wide = x.astype(np.float64)
        err = np.abs(np.asarray(run(sum_module(shape, dims), x), np.float64) - wide.sum(axis=dims))
        err /= np.sqrt((wide * wide).sum(axis=dims)) * 2.0 ** -24
        assert np.sqrt(np.mean(err ** 2)) <= xla, shape


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batchnorm_variance(seed):
    """E[x^2] - E[x]^2 over f32[64,28,28,32]'s N, H, W: XLA 8.0e-6, 7.4e-6, 5.4e-6; before: 3.8e-4."""
    shape = (64, 28, 28, 32)
    x = normal(shape, seed)
    sums = run(sum_module(shape, (0, 1, 2)), x)
    squares = run(sum_module(shape, (0, 1, 2)), x * x)
    n = f32(50176)
    variance = np.asarray(squares / n, f32) - np.asarray(sums / n, f32) ** 2
    wide = x.astype(np.float64)
    exact = (wide * wide).mean(axis=(0, 1, 2)) - wide.mean(axis=(0, 1, 2)) ** 2
    assert np.max(np.abs(variance - exact) / exact) <= 8e-6


def test_big_window_sum():
    """reduce-window over 65,536 positions (global pooling) sums in the same order as reduce."""
    x = normal((1, 256, 256))
    text = hlo_module("""
        z = f32[] constant(0)
        ROOT r = f32[1,1,1] reduce-window(p0, z), window={size=1x256x256}, to_apply=add
        """, params=["f32[1,256,256]"], reducers=["add"])
    got = run(text, x)
    assert_bitwise_same(np.asarray(got).reshape(()), np.asarray(run(sum_module((256, 256), (0, 1)), x[0])))
    assert ulps(got.reshape(()), x.reshape(-1), (0,)) <= 0.7241


# -- NaN, infinities, signed zeros -------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [8, 1000])
def test_ieee_specials(n):
    text = sum_module((n,), (0,), init="-0")
    x = normal((n,))
    for values, check in (({3: np.nan}, np.isnan), ({0: np.inf}, np.isposinf), ({0: np.inf, n - 1: -np.inf}, np.isnan),
                          ({0: -np.inf}, np.isneginf)):
        y = x.copy()
        for at, v in values.items():
            y[at] = v
        assert check(run(text, y)), values
    zeros = np.full((n,), -0.0, f32)
    assert np.signbit(run(text, zeros)) and not np.signbit(run(sum_module((n,), (0,), init="0"), zeros))
    assert np.isposinf(run(text, np.full((n,), 3e38, f32)))


# -- denormals: read as zero and flushed, as the elementwise ops and XLA:CPU do ---------------------------------
def combiner_module(op: str, shape, dims, init: str) -> str:
    out = [n for d, n in enumerate(shape) if d not in dims]
    return hlo_module(f"""
        z = f32[] constant({init})
        ROOT r = f32[{dims_text(out)}] reduce(p0, z), dimensions={{{dims_text(dims)}}}, to_apply=comb
        """, f"comb {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] {op}(a, b)\n}}",
        params=[f"f32[{dims_text(shape)}]"])


def elementwise_fold(op: str, values, init):
    """The same reduction as a chain of elementwise ops (which flush), one instruction per element."""
    lines = [f"acc0 = f32[] constant({init})"]
    for k in range(len(values)):
        lines.append(f"s{k} = f32[1] slice(p0), slice={{[{k}:{k + 1}]}}")
        lines.append(f"v{k} = f32[] reshape(s{k})")
        lines.append(f"acc{k + 1} = f32[] {op}(acc{k}, v{k})")
    lines[-1] = "ROOT " + lines[-1]
    return run(hlo_module("\n".join(lines), params=[f"f32[{len(values)}]"]), np.asarray(values, f32))


DENORMAL_CASES = [
    ("add", [3 * TINY / 4, TINY / 2, -TINY / 8], "0"),             # denormal terms read as zeros
    ("add", [1.5 * TINY, -1.25 * TINY, TINY / 2], "0"),            # a denormal partial sum flushed
    ("maximum", [-1.0, TINY / 2, -2.0], "-inf"),                   # max(-1, denormal) is +0
    ("minimum", [1.0, -TINY / 2, 2.0], "inf"),                     # min(1, -denormal) is -0
    ("multiply", [TINY / 2, 4.0, 1.0], "1"),
]


@pytest.mark.parametrize("op,values,init", DENORMAL_CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(DENORMAL_CASES)])
def test_reduce_flushes_denormals_like_the_elementwise_ops(op, values, init):
    want = elementwise_fold(op, values, init)
    got = run(combiner_module(op, (len(values),), (0,), init), np.asarray(values, f32))
    assert_bitwise_same(np.asarray(got), np.asarray(want), op)


def test_reduce_window_flushes_denormals():
    x = np.array([[3 * TINY / 4, TINY / 2, -1.0, TINY / 4]], f32)
    for op, init, want in (("add", "0", [0.0, -1.0, -1.0]), ("maximum", "-inf", [0.0, 0.0, 0.0])):
        text = hlo_module(f"""
            z = f32[] constant({init})
            ROOT r = f32[1,3] reduce-window(p0, z), window={{size=1x2}}, to_apply=comb
            """, f"comb {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] {op}(a, b)\n}}",
            params=["f32[1,4]"])
        assert_bitwise_same(np.asarray(run(text, x)), np.array([want], f32), op)


@pytest.mark.parametrize("op", ["add", "maximum"])
def test_scatter_flushes_denormals(op):
    """Updated elements read their old value and the update as zeros when denormal; the others keep their bits."""
    operand = np.array([TINY / 2, -1.0, TINY / 4, 5.0], f32)
    updates = np.array([TINY / 8, TINY / 2, 2.0], f32)
    indices = np.array([[0], [1], [3]], np.int32)
    text = hlo_module(f"""
        ROOT s = f32[4] scatter(p0, p1, p2), update_window_dims={{}}, inserted_window_dims={{0}},
            scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=comb
        """, f"comb {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] {op}(a, b)\n}}",
        params=["f32[4]", "s32[3,1]", "f32[3]"])
    want = {"add": [0.0, -1.0, TINY / 4, 7.0], "maximum": [0.0, 0.0, TINY / 4, 5.0]}[op]
    assert_bitwise_same(np.asarray(run(text, operand, indices, updates)), np.array(want, f32), op)
