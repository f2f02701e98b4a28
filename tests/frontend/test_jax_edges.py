"""Edge cases where xlapy used to differ from JAX without a word (issue 12): each expected value is what JAX 0.10.2
computes, spelled out here (the reasons are in the comments), checked eagerly and under jit on both backends."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax

X = np.arange(10, dtype=np.float32)


def both(f, *args):
    """f(*args) eagerly (on xlapy Arrays) and under jit: the two results, as numpy arrays."""
    return np.asarray(f(*map(xnp.asarray, args))), np.asarray(xlapy.jit(f)(*args))


# -- dynamic slicing: a negative traced index counts from the end; wide or unsigned ones never wrap ----------
@pytest.mark.parametrize("index, start", [
    (np.int32(-3), 7), (np.int32(-10), 0), (np.int32(-11), 0),     # from the end, then clamped
    (np.int8(-2), 8), (np.int64(-1), 8),                            # any signed width
    (np.uint32(2**31 + 5), 8), (np.uint32(2**32 - 1), 8),           # u32 >= 2**31 is not a negative s32
    (np.uint8(250), 8), (np.int32(3), 3),
])
def test_dynamic_slice_index(index, start):
    for got in both(lambda x, i: lax.dynamic_slice(x, [i], [2]), X, index):
        np.testing.assert_array_equal(got, X[start:start + 2])


@pytest.mark.parametrize("index, start", [(np.int64(2**40), 8), (np.uint64(2**63), 8), (np.int64(-2**40), 0),
                                          (np.int64(-3), 7)])
def test_dynamic_slice_64_bit_index(x64, index, start):
    """With x64 on, a 64-bit index past int32's range is clamped, not wrapped, on the way to XLA's s32."""
    for got in both(lambda x, i: lax.dynamic_slice(x, [i], [2]), X, index):
        np.testing.assert_array_equal(got, X[start:start + 2])


@pytest.mark.parametrize("index, start", [(np.int32(-2), 8), (np.int32(-4), 6), (np.uint32(2**31), 8)])
def test_dynamic_update_slice_index(index, start):
    expected = X.copy()
    expected[start:start + 2] = -1
    for got in both(lambda x, i: lax.dynamic_update_slice(x, -np.ones(2, np.float32), [i]), X, index):
        np.testing.assert_array_equal(got, expected)


def test_dynamic_index_in_dim_counts_from_the_end():
    for got in both(lambda x, i: lax.dynamic_index_in_dim(x, i, keepdims=False), X, np.int32(-1)):
        assert got == 9.0


def test_static_index_into_dynamic_slice():
    assert float(lax.dynamic_slice(xnp.asarray(X), [-2], [2])[0]) == 8.0


# -- integer division and remainder by zero ------------------------------------------------------------------
# JAX: floor_divide(x, y) = div - 1 where sign(x) != sign(y) and rem(x, y) != 0, on XLA's div (x / 0 = -1 for
# signed ints, all ones for unsigned) and rem (x % 0 = x); remainder and fmod replace a zero divisor by one.
@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.int64])
def test_signed_division_by_zero(dtype):
    a = np.array([7, -7, 0, 1], dtype)
    z = np.zeros(4, dtype)
    for got in both(lambda x, y: x // y, a, z):
        np.testing.assert_array_equal(got, np.array([-2, -2, -1, -2], dtype))
    for got in both(lambda x, y: x % y, a, z):
        np.testing.assert_array_equal(got, np.zeros(4, dtype))
    for got in both(xnp.fmod, a, z):
        np.testing.assert_array_equal(got, np.zeros(4, dtype))
    for got in both(xnp.floor_divide, a, z):
        np.testing.assert_array_equal(got, np.array([-2, -2, -1, -2], dtype))


def test_unsigned_division_by_zero():
    a = np.array([7, 0], np.uint32)
    z = np.zeros(2, np.uint32)
    for got in both(lambda x, y: x // y, a, z):
        np.testing.assert_array_equal(got, np.full(2, 2**32 - 1, np.uint32))
    for got in both(lambda x, y: x % y, a, z):
        np.testing.assert_array_equal(got, np.zeros(2, np.uint32))


def test_division_with_nonzero_divisors_is_pythons():
    a = np.array([7, -7, 7, -7, 6, -6], np.int32)
    b = np.array([2, 2, -2, -2, 3, -3], np.int32)
    for got in both(lambda x, y: x // y, a, b):
        np.testing.assert_array_equal(got, a // b)
    for got in both(lambda x, y: x % y, a, b):
        np.testing.assert_array_equal(got, a % b)


def test_float_floor_divide_is_cpythons():
    """`1.0 // 0.1` is 9.0 in Python and JAX (divmod), not floor(1.0 / 0.1) = 10."""
    a = np.array([1.0, -1.0, 7.5, 0.0], np.float64)
    b = np.array([0.1, 0.1, -2.0, 3.0], np.float64)
    expected = np.array([divmod(float(p), float(q))[0] for p, q in zip(a, b)], np.float32)
    for got in both(lambda x, y: x // y, a.astype(np.float32), b.astype(np.float32)):
        np.testing.assert_array_equal(got, expected)


# -- integer powers ---------------------------------------------------------------------------------------------
def jax_int_power(x: int, y: int, bits: int = 32) -> int:
    """JAX's integer x ** y with a traced exponent: square-and-multiply over the exponent's low 6 bits, read as
    unsigned, wrapping at `bits` (so (-1) ** -3 == -1 and 2 ** -1 == 0)."""
    mask = (1 << bits) - 1
    acc = 0 if (x == 0 and y != 0) else 1
    y &= mask
    for _ in range(6):
        if y & 1:
            acc = (acc * x) & mask
        x = (x * x) & mask
        y >>= 1
    return acc - (1 << bits) if acc >> (bits - 1) else acc


def test_integer_power_with_negative_exponents():
    base = np.array([-1, -1, 2, 3, 0, 0, 1, -2, 5], np.int32)
    exp = np.array([-3, -2, -1, -2, -1, 0, -7, 3, 2], np.int32)
    expected = np.array([jax_int_power(int(a), int(b)) for a, b in zip(base, exp)], np.int32)
    assert list(expected[:4]) == [-1, 1, 0, jax_int_power(3, -2)] and expected[-1] == 25
    for got in both(xnp.power, base, exp):
        np.testing.assert_array_equal(got, expected)
    for got in both(lambda x, y: x ** y, base, exp):
        np.testing.assert_array_equal(got, expected)


def test_integer_to_a_static_negative_power_is_an_error():
    with pytest.raises(xlapy.XlapyError, match="negative powers"):
        xnp.power(xnp.arange(3), -2)


# -- empty axes --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [xnp.cumsum, xnp.cumprod, xnp.cummax if hasattr(xnp, "cummax") else xnp.cumsum])
@pytest.mark.parametrize("shape, axis", [((3, 0), 1), ((0,), 0), ((0, 4), 0), ((2, 0, 3), 1)])
def test_cumulative_along_an_empty_axis(fn, shape, axis):
    for got in both(lambda x: fn(x, axis=axis), np.zeros(shape, np.float32)):
        assert got.shape == shape


@pytest.mark.parametrize("shape, axis", [((3, 0), 1), ((0,), 0), ((0, 3), 0), ((2, 0), 0)])
def test_sort_along_an_empty_axis(shape, axis):
    x = np.zeros(shape, np.float32)
    for got in both(lambda x: xnp.sort(x, axis=axis), x):
        assert got.shape == shape
    for got in both(lambda x: xnp.argsort(x, axis=axis), x):
        assert got.shape == shape


# -- static integer indices out of bounds are clamped, as JAX does -------------------------------------------------
@pytest.mark.parametrize("index, expected", [(100, 9), (-100, 0), (9, 9), (-1, 9), (0, 0)])
def test_out_of_bounds_static_index_clamps(index, expected):
    for got in both(lambda x: x[index], np.arange(10, dtype=np.int32)):
        assert got == expected


def test_index_into_an_empty_axis_is_an_error():
    with pytest.raises(xlapy.XlapyError, match="out of bounds for axis 0 with size 0"):
        xnp.zeros((0, 3))[0]


# -- max and min order signed zeros (IEEE 754-2019, XLA:CPU's llvm.maximum / llvm.minimum) --------------------------
ZEROS_A = np.array([0.0, -0.0, 0.0, -0.0], np.float32)
ZEROS_B = np.array([-0.0, 0.0, 0.0, -0.0], np.float32)


def test_elementwise_max_min_of_signed_zeros():
    for got in both(xnp.maximum, ZEROS_A, ZEROS_B):
        assert list(np.signbit(got)) == [False, False, False, True]
    for got in both(xnp.minimum, ZEROS_A, ZEROS_B):
        assert list(np.signbit(got)) == [True, True, False, True]
    for got in both(lambda x: xnp.clip(x, 0.0, 1.0), ZEROS_B):
        assert not np.signbit(got).any()
    for got in both(lambda x: xnp.clip(x, -1.0, -0.0), ZEROS_B):
        assert np.signbit(got).all()


@pytest.mark.parametrize("n", [3, 38])      # short (the plain loop) and long (the vectorized reduction)
def test_max_min_reductions_of_signed_zeros(n):
    x = np.full(n, -0.0, np.float32)
    x[n // 3] = 0.0
    for got in both(xnp.max, x):
        assert not np.signbit(got)
    for got in both(xnp.min, -x):
        assert np.signbit(got)
    for got in both(xnp.max, np.full(n, -0.0, np.float32)):
        assert np.signbit(got)


def test_nan_still_propagates_through_max_min():
    x = np.array([np.nan, 1.0, -0.0], np.float32)
    y = np.array([1.0, np.nan, 0.0], np.float32)
    for got in both(xnp.maximum, x, y):
        assert np.isnan(got[:2]).all() and got[2] == 0 and not np.signbit(got[2])
    for got in both(xnp.max, np.array([0.0, np.nan] + [1.0] * 30, np.float32)):
        assert np.isnan(got)
