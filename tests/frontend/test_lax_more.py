"""xlapy.lax's names beyond the core families (frontend/lax_more.py): each checked against JAX's outputs
(api_data/jax_api_more.npz, from tools/gen_api_data.py), eagerly and under jit, on both backends; plus the
errors and the helpers that return Python values."""
import sys
from pathlib import Path

import numpy as np
import pytest

import xlapy
import xlapy.lax as lax
from xlapy.errors import XlapyError

sys.path.insert(0, str(Path(__file__).parent))     # pytest's importlib mode does not: the shared case table
from api_more_cases import LAX_CASES
from api_more_check import check_case


@pytest.mark.parametrize("case", LAX_CASES, ids=[c[0] for c in LAX_CASES])
def test_against_jax(case):
    check_case(case)


def test_mulhi_64_bits():
    xlapy.config.update("jax_enable_x64", True)
    try:
        a = np.array([3, -5, 2 ** 62, -(2 ** 63), 123456789123], np.int64)
        b = np.array([7, 9, 8, -1, -987654321987], np.int64)
        want = np.array([(int(x) * int(y)) >> 64 for x, y in zip(a, b)], np.int64)
        np.testing.assert_array_equal(np.asarray(lax.mulhi(a, b)), want)
        ua = a.view(np.uint64)
        ub = b.view(np.uint64)
        want_u = np.array([(int(x) * int(y)) >> 64 for x, y in zip(ua, ub)], np.uint64)
        np.testing.assert_array_equal(np.asarray(lax.mulhi(ua, ub)), want_u)
    finally:
        xlapy.config.update("jax_enable_x64", False)


def test_small_helpers():
    assert lax.broadcast_shapes((3, 1), (1, 4)) == (3, 4)
    assert lax.dtype(np.float32(1)) == np.float32 and lax.dtype(1.0) == np.float32
    assert lax.dtype(1) == np.int32 and lax.dtype("int64") == np.int32
    e = lax.empty((2, 3), np.float32)
    assert e.shape == (2, 3) and e.dtype == np.float32
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(lax.broadcast_like(np.ones(3, np.float32), x)), np.ones((2, 3)))
    np.testing.assert_array_equal(np.asarray(lax.stage(x)), x)
    np.testing.assert_array_equal(np.asarray(lax.shape_as_value((2, 5))), [2, 5])
    np.testing.assert_array_equal(np.asarray(lax.with_sharding_constraint(x, None)), x)   # a real op now (GSPMD)
    assert lax.platform_dependent(x, cpu=lambda v: v * 2, default=lambda v: v)[0, 1] == 2
    np.testing.assert_array_equal(np.asarray(lax.composite(lambda v: v + 1, "inc")(x)), x + 1)
    tok = lax.after_all(lax.create_token())
    assert repr(tok) == "Token" and lax.dce_sink(x) is None
    u = lax.rng_uniform(np.float32(2), np.float32(3), (100,))
    u = np.asarray(u)
    assert u.shape == (100,) and u.min() >= 2 and u.max() < 3 and len(set(u.tolist())) > 90
    assert lax.DotAlgorithmPreset.DEFAULT and lax.Tolerance(atol=1e-3).atol == 1e-3
    assert lax.RandomAlgorithm.RNG_THREE_FRY == 1 and lax.AccuracyMode.HIGHEST


def test_solvers_give_the_solve():
    a = np.array([[4.0, 1.0], [1.0, 3.0]], np.float32)
    b = np.array([1.0, 2.0], np.float32)
    solve = lambda matvec, rhs: xlapy.numpy.linalg.solve(a, rhs)
    x = lax.custom_linear_solve(lambda v: a @ v, b, solve)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b), rtol=1e-5)
    root = lax.custom_root(lambda v: v * v - 2.0, np.float32(1.0),
                           lambda f, x0: lax.fori_loop(0, 20, lambda i, v: v - f(v) / (2 * v), x0), None)
    np.testing.assert_allclose(float(root), np.sqrt(2), rtol=1e-6)


def test_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(XlapyError, match="asin: needs a floating-point"):
        lax.asin(np.ones(3, np.int32))
    with pytest.raises(XlapyError, match="mulhi: needs integer operands"):
        lax.mulhi(x, x)
    with pytest.raises(XlapyError, match="select_n: a boolean `which` selects between 2 cases"):
        lax.select_n(np.array(True), x, x, x)
    with pytest.raises(XlapyError, match="split: sizes"):
        lax.split(x, (1, 1), axis=1)
    with pytest.raises(XlapyError, match="index_in_dim: index 5 is out of bounds"):
        lax.index_in_dim(x, 5, 1)
    with pytest.raises(XlapyError, match="batch_matmul: operands must have equal rank"):
        lax.batch_matmul(x, np.ones((2, 3, 4), np.float32))
    with pytest.raises(XlapyError, match="tile: reps"):
        lax.tile(x, (2,))


def test_conv_dimension_numbers_are_jax_s():
    dn = lax.conv_dimension_numbers((2, 5, 6, 3), (3, 3, 3, 4), ("NHWC", "HWIO", "NHWC"))
    assert isinstance(dn, lax.ConvDimensionNumbers) and dn == ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    x = np.random.default_rng(0).standard_normal((2, 5, 6, 3)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((3, 3, 3, 4)).astype(np.float32)
    a = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
    b = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
