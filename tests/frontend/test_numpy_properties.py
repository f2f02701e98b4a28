"""Property-based checks of xlapy.numpy against numpy, with JAX's semantics where JAX departs from numpy (issue 12):
random shapes (empty ones included), dtypes and edge values (signed zeros, infinities, NaN, extremes), through
elementwise ops, reductions, cumulative ops, sorting, shape ops and static indexing.

The reference is numpy; the table `JAX_DIFFERENCES` below names every place JAX (and so xlapy) differs on purpose,
and the reference applies it. Examples are drawn deterministically (derandomize), so CI sees the same cases.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xlapy.numpy as xnp

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.5, np.inf, -np.inf, np.nan, 3.0e38, -3.0e38, 1e-30]
INT_EDGES = [0, 1, -1, 2, -2, 7, -7, 2**31 - 1, -2**31]
UINT8_EDGES = [0, 1, 2, 7, 128, 255]

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def arrays(dtype, shape=shapes):
    if np.dtype(dtype).kind == "f":
        elements = st.sampled_from(FLOAT_EDGES) | st.floats(-1e3, 1e3, width=32, allow_subnormal=False)
    elif np.dtype(dtype) == np.uint8:
        elements = st.sampled_from(UINT8_EDGES) | st.integers(0, 255)
    else:
        elements = st.sampled_from(INT_EDGES) | st.integers(-100, 100)
    return hnp.arrays(dtype, shape, elements=elements)


same_shape_pairs = st.sampled_from([np.float32, np.int32, np.uint8]).flatmap(
    lambda dt: shapes.flatmap(lambda s: st.tuples(arrays(dt, s), arrays(dt, s))))


def flush_denormals(x: np.ndarray) -> np.ndarray:
    """XLA:CPU (so JAX and xlapy) flushes denormal results to zero, keeping the sign; numpy does not."""
    if x.dtype.kind != "f":
        return x
    tiny = np.finfo(x.dtype).tiny
    return np.where(np.abs(x) < tiny, np.copysign(np.zeros_like(x), x), x).astype(x.dtype)


def check(got, expected, *, exact: bool = False) -> None:
    got = np.asarray(got)
    expected = flush_denormals(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    if exact or expected.dtype.kind in "iub":
        np.testing.assert_array_equal(got, expected)
        if expected.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))
    else:
        np.testing.assert_allclose(got, expected, rtol=2e-6, atol=0, equal_nan=True)


# -- where JAX departs from numpy, and so does the reference ---------------------------------------------------------
def _int_floor_divide(x, y):
    """JAX: XLA's division by zero (-1 for signed, all ones for unsigned), then floor's correction."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.floor_divide(x, np.where(y == 0, 1, y))
    if x.dtype.kind == "u":
        return np.where(y == 0, np.iinfo(x.dtype).max, q).astype(x.dtype)
    by_zero = np.where(x != 0, -2, -1).astype(x.dtype)
    return np.where(y == 0, by_zero, q).astype(x.dtype)


def _int_remainder(x, y):
    """JAX: x % 0 is 0 (the divisor is replaced by 1)."""
    return np.remainder(x, np.where(y == 0, 1, y)).astype(x.dtype)


def _int_wrapping(fn):
    """numpy's int32 minimum // -1 overflows the same way XLA's does; only the warning differs."""
    def wrapped(x, y):
        with np.errstate(all="ignore"):
            return fn(x, y)
    return wrapped


def _ieee_max_min(ufunc, join):
    """XLA:CPU's max/min (IEEE 754-2019): NaN propagates and -0 < +0; numpy's leaves the sign of a zero tie open."""
    def ref(x, y):
        ity = np.dtype(f"i{x.dtype.itemsize}")
        tie = join(x.view(ity), y.view(ity)).view(x.dtype)
        return np.where(x == y, tie, ufunc(x, y)).astype(x.dtype)
    return ref


JAX_DIFFERENCES = {
    ("maximum", "f"): _ieee_max_min(np.maximum, np.bitwise_and),
    ("minimum", "f"): _ieee_max_min(np.minimum, np.bitwise_or),
    # (op, dtype kind) -> the reference for that case
    ("floor_divide", "i"): _int_wrapping(_int_floor_divide),
    ("floor_divide", "u"): _int_floor_divide,
    ("remainder", "i"): _int_wrapping(_int_remainder),
    ("remainder", "u"): _int_remainder,
}

BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
    "minimum": np.minimum, "floor_divide": np.floor_divide, "remainder": np.remainder,
    "equal": np.equal, "less": np.less, "greater_equal": np.greater_equal,
}


@pytest.mark.parametrize("name", sorted(BINARY))
@SETTINGS
@given(pair=same_shape_pairs)
def test_binary(name, pair):
    x, y = pair
    if name in ("floor_divide", "remainder") and x.dtype.kind == "f":
        finite = np.isfinite(x) & np.isfinite(y) & (y != 0) & (np.abs(x) < 1e30)
        x, y = np.where(finite, x, 1).astype(x.dtype), np.where(finite, y, 1).astype(y.dtype)
    reference = JAX_DIFFERENCES.get((name, x.dtype.kind), BINARY[name])
    with np.errstate(all="ignore"):
        expected = np.asarray(reference(x, y))
    got = getattr(xnp, name)(xnp.asarray(x), xnp.asarray(y))
    check(got, expected, exact=name not in ("floor_divide", "remainder"))


UNARY = {"negative": np.negative, "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "sign": np.sign,
         "sqrt": np.sqrt, "exp": np.exp, "tanh": np.tanh, "square": np.square}


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(x=arrays(np.float32))
def test_unary_float(name, x):
    with np.errstate(all="ignore"):
        if name in ("exp", "square"):
            x = np.where(np.abs(x) < 80, x, np.where(np.isnan(x), x, np.sign(x) * np.inf)).astype(np.float32)
        expected = UNARY[name](x)
    check(getattr(xnp, name)(xnp.asarray(x)), expected, exact=name in ("negative", "abs", "floor", "ceil"))


def _axis(x, data):
    return data.draw(st.integers(-x.ndim, x.ndim - 1)) if x.ndim else None


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "cumsum", "cumprod", "sort", "argsort"])
@SETTINGS
@given(x=st.sampled_from([np.float32, np.int32]).flatmap(arrays), data=st.data())
def test_along_an_axis(name, x, data):
    axis = _axis(x, data)
    if name in ("sort", "argsort") and axis is None:
        axis = -1 if x.ndim else None
        if axis is None:
            return
    if x.dtype.kind == "f":              # keep sums finite and comparable; NaN/inf still flow through max/min/sort
        x = np.where(np.abs(x) > 1e3, np.where(np.isnan(x), x, np.sign(x) * 7), x).astype(np.float32)
    else:
        x = np.clip(x, -100, 100).astype(np.int32)
    reduces_empty = name in ("max", "min") and (x.size == 0 if axis is None else x.shape[axis] == 0)
    if reduces_empty:
        with pytest.raises(Exception):
            np.asarray(getattr(xnp, name)(xnp.asarray(x), axis=axis))
        return
    kwargs = {"axis": axis}
    if name in ("sort", "argsort"):
        kwargs["kind"] = "stable"                    # JAX's sort is stable; -0.0 and 0.0 are equal keys
    with np.errstate(all="ignore"):
        expected = np.asarray(getattr(np, name)(x, **kwargs))
    if name in ("max", "min") and x.dtype.kind == "f":          # -0 < +0, as the elementwise ops (above)
        winner = np.float32(0.0 if name == "max" else -0.0)
        won = np.logical_or.reduce((x == 0) & (np.signbit(x) == np.signbit(winner)), axis=axis)
        expected = np.where(expected == 0, np.where(won, winner, -winner), expected).astype(x.dtype)
    if name in ("sum", "prod", "cumsum", "cumprod", "argsort") and expected.dtype == np.int64:
        expected = expected.astype(np.int32)         # JAX's ints are 32-bit with x64 off (indices too)
    got = getattr(xnp, name)(xnp.asarray(x), axis=axis)
    check(got, expected, exact=name in ("max", "min", "sort", "argsort"))


@SETTINGS
@given(x=arrays(np.float32), data=st.data())
def test_shape_ops(x, data):
    perm = data.draw(st.permutations(range(x.ndim)))
    check(xnp.transpose(xnp.asarray(x), perm), np.transpose(x, perm), exact=True)
    check(xnp.reshape(xnp.asarray(x), (-1,)), x.reshape(-1), exact=True)
    if x.ndim:
        axis = _axis(x, data)
        check(xnp.flip(xnp.asarray(x), axis), np.flip(x, axis), exact=True)
        check(xnp.concatenate([xnp.asarray(x), xnp.asarray(x)], axis=axis), np.concatenate([x, x], axis=axis),
              exact=True)
    check(xnp.where(xnp.asarray(x) > 0, xnp.asarray(x), 0.0), np.where(x > 0, x, np.float32(0)), exact=True)


index_parts = st.one_of(
    st.integers(-6, 6),                                              # out of bounds included: JAX clamps
    st.builds(slice, st.none() | st.integers(-6, 6), st.none() | st.integers(-6, 6),
              st.none() | st.sampled_from([1, 2, -1, -2, 3])),
    st.just(None), st.just(Ellipsis))


def _reference_index(x: np.ndarray, idx: tuple):
    """numpy's indexing with JAX's rule for an out-of-bounds integer: clamped into the axis."""
    fixed, axis = [], 0
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    for i in idx:
        if i is Ellipsis:
            axis += x.ndim - n_real
            fixed.append(i)
            continue
        if isinstance(i, int):
            n = x.shape[axis]
            i = min(max(i + n if i < 0 else i, 0), n - 1)
        if i is not None:
            axis += 1
        fixed.append(i)
    return x[tuple(fixed)]


@SETTINGS
@given(x=arrays(np.int32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5)), data=st.data())
def test_static_indexing(x, data):
    idx = tuple(data.draw(st.lists(index_parts, max_size=x.ndim)))
    if sum(i is Ellipsis for i in idx) > 1 or sum(1 for i in idx if i is not None and i is not Ellipsis) > x.ndim:
        return
    ints_on_empty = any(isinstance(i, int) for i in idx) and 0 in x.shape
    if ints_on_empty:          # an integer index into an empty axis is an error in JAX too
        return
    check(xnp.asarray(x)[idx], np.asarray(_reference_index(x, idx)))
