"""lax.max / lax.min on complex values: JAX's lowering (lexicographic: real parts, then imaginary parts where the
real parts are equal; x where that comparison holds, else y), which neither backend's `maximum` defines. Expected
values are JAX 0.10.2's (lax.max / lax.min, eagerly and under jit), NaN cases included."""
import numpy as np
import pytest

import xlapy
from xlapy import lax

nan = float("nan")
X = np.array([1 + 2j, 1 + 3j, 2 + 0j, nan + 0j, 1 + 0j, 1 + nan * 1j, 1 + 1j, nan + 1j, 0 + 0j], np.complex64)
Y = np.array([1 + 3j, 1 + 2j, 1 + 5j, 1 + 0j, nan + 0j, 1 + 1j, 1 + nan * 1j, nan + 2j, -0.0 + 0j], np.complex64)
# (1 + nan * 1j is nan+nanj in Python); JAX 0.10.2's results:
MAX = [1 + 3j, 1 + 3j, 2 + 0j, 1 + 0j, nan + 0j, 1 + 1j, complex(nan, nan), nan + 2j, 0j]
MIN = [1 + 2j, 1 + 2j, 1 + 5j, 1 + 0j, nan + 0j, 1 + 1j, complex(nan, nan), nan + 2j, 0j]


@pytest.mark.parametrize("op,want", [(lax.max, MAX), (lax.min, MIN)], ids=["max", "min"])
def test_complex_max_min_match_jax(op, want):
    want = np.array(want, np.complex64)
    np.testing.assert_array_equal(op(X, Y), want)
    np.testing.assert_array_equal(xlapy.jit(op)(X.astype(np.complex128), Y.astype(np.complex128)), want)


def test_complex_max_lowers_to_compare_and_select():
    text = xlapy.jit(lax.max).lower(X, Y).as_text()
    assert "maximum" not in text and text.count("compare(") == 3 and text.count("select(") == 2
    assert "maximum(" in xlapy.jit(lax.max).lower(1.0, 2.0).as_text()       # real values keep the op
    assert float(lax.max(1.0, 2.0)) == 2.0 and lax.min(np.int32(3), 2).dtype == np.int32
