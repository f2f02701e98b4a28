"""xlapy.Array: eager op-by-op execution (cached), operators, indexing, .at updates."""
import numpy as np
import pytest

import xlapy
from xlapy.frontend import eager_stats

A = np.arange(12, dtype=np.float32).reshape(3, 4)
I = np.arange(12, dtype=np.int32).reshape(3, 4) - 5


def arr(x):
    return xlapy.Array(x)


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "//", "%", "**", "<", "<=", ">", ">=", "==", "!="])
def test_binary_operators_match_numpy(op):
    for a, b in [(A, A[::-1] + 1), (I, np.array([3, -2, 5, -7], np.int32))]:
        if op == "**" and a.dtype.kind == "i":
            b = np.abs(b)
        got = eval(f"x {op} y", {"x": arr(a), "y": arr(b)})
        want = eval(f"x {op} y", {"x": a, "y": b})
        np.testing.assert_allclose(np.asarray(got), want.astype(np.asarray(got).dtype), rtol=1e-6)
        got_r = eval(f"2 {op} y", {"y": arr(b)})
        np.testing.assert_allclose(np.asarray(got_r), eval(f"2 {op} y", {"y": b}).astype(np.asarray(got_r).dtype),
                                   rtol=1e-6)


def test_bitwise_unary_matmul():
    x, y = arr(I), arr(I[::-1])
    for op in ["&", "|", "^", "<<", ">>"]:
        yy = np.abs(I[::-1]) % 8 if op in ("<<", ">>") else I[::-1]
        np.testing.assert_array_equal(np.asarray(eval(f"x {op} y", {"x": x, "y": arr(yy)})),
                                      eval(f"x {op} y", {"x": I, "y": yy}))
    np.testing.assert_array_equal(np.asarray(~x), ~I)
    np.testing.assert_array_equal(np.asarray(-x), -I)
    np.testing.assert_array_equal(np.asarray(abs(x)), np.abs(I))
    np.testing.assert_allclose(np.asarray(arr(A) @ arr(A.T)), A @ A.T)
    np.testing.assert_allclose(np.asarray(arr(A) @ arr(A[0])), A @ A[0])
    b = np.ones((2, 4, 3), np.float32)
    np.testing.assert_allclose(np.asarray(arr(b) @ arr(A)), b @ A)


def test_weak_scalars_keep_dtype_and_promotion():
    h = arr(np.ones(3, np.float16))
    assert (h + 1.0).dtype == np.float16 and (h * 2).dtype == np.float16
    assert (arr(np.ones(3, np.int8)) + 1).dtype == np.int8
    assert (arr(np.ones(3, np.int32)) + 1.5).dtype == np.float32
    assert (arr(np.ones(3, np.uint8)) + arr(np.ones(3, np.int8))).dtype == np.int16
    assert (arr(np.ones(3, np.int32)) / 2).dtype == np.float32
    assert arr(np.ones(3, np.float64)).dtype == np.float32     # canonicalized without x64
    assert (arr(A) + 1).weak_type is False


def test_properties_and_methods():
    x = arr(A)
    assert x.shape == (3, 4) and x.ndim == 2 and x.size == 12 and x.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(x.T), A.T)
    np.testing.assert_array_equal(np.asarray(x.reshape(4, 3)), A.reshape(4, 3))
    np.testing.assert_array_equal(np.asarray(x.reshape(-1)), A.ravel())
    assert x.astype(np.int32).dtype == np.int32
    assert float(x.sum()) == A.sum() and np.allclose(np.asarray(x.sum(axis=0)), A.sum(0))
    assert np.allclose(np.asarray(x.mean(1, keepdims=True)), A.mean(1, keepdims=True))
    assert float(x.max()) == 11 and np.array_equal(np.asarray(x.min(axis=1)), A.min(1))
    assert int(x.argmax()) == 11
    assert x.block_until_ready() is x
    assert "Array(" in repr(x) and "float32" in repr(x)
    assert np.asarray(x).dtype == np.float32 and bool(arr(np.float32(1.0)))
    assert len(x) == 3 and [np.asarray(r).tolist() for r in x] == A.tolist()


@pytest.mark.parametrize("index", [1, -1, (1, 2), (slice(None), 2), slice(1, None), slice(None, None, -1),
                                   (Ellipsis, 1), (None, 1), (slice(0, 3, 2), slice(3, 0, -2)), (1, None, slice(1, 3)),
                                   np.array([2, 0, 2]), ([0, 2], [1, -1]), (slice(None), [3, 0]),
                                   ([[0], [2]], [1, 2]), (slice(1, 3), np.array([0, 0]))])
def test_getitem_matches_numpy(index):
    np.testing.assert_array_equal(np.asarray(arr(A)[index]), A[index])
    np.testing.assert_array_equal(np.asarray(xlapy.jit(lambda v: v[index])(A)), A[index])


def test_dynamic_scalar_index_under_jit():
    f = xlapy.jit(lambda v, i: v[i])
    np.testing.assert_array_equal(np.asarray(f(A, np.int32(2))), A[2])
    np.testing.assert_array_equal(np.asarray(f(A, np.int32(-1))), A[-1])
    g = xlapy.jit(lambda v, i: v[[0, 2], i])
    np.testing.assert_array_equal(np.asarray(g(A, np.int32(1))), A[[0, 2], 1])


def test_index_errors():
    # an out-of-bounds static integer index is clamped, as in JAX (test_jax_edges.py); an empty axis has no element
    np.testing.assert_array_equal(np.asarray(arr(A)[5]), A[-1])
    with pytest.raises(xlapy.XlapyError, match="out of bounds"):
        arr(A)[:, :0][:, 0]
    with pytest.raises(xlapy.XlapyError, match="too many indices"):
        arr(A)[1, 2, 3]


def test_at_updates():
    x = arr(A)
    np.testing.assert_array_equal(np.asarray(x.at[1].set(0.0)), np.where(np.arange(3)[:, None] == 1, 0, A))
    want = A.copy(); want[0, [1, 1, 3]] += 5; np.add.at(want, (0, [1, 1, 3]), 0)
    got = x.at[0, np.array([1, 1, 3])].add(5.0)
    w2 = A.copy(); np.add.at(w2, (0, [1, 1, 3]), 5.0)
    np.testing.assert_array_equal(np.asarray(got), w2)
    w3 = A.copy(); w3[:, 2] *= 3
    np.testing.assert_array_equal(np.asarray(x.at[:, 2].multiply(3.0)), w3)
    w4 = A.copy(); w4[1:] = np.minimum(w4[1:], 4.0)
    np.testing.assert_array_equal(np.asarray(x.at[1:].min(4.0)), w4)
    w5 = A.copy(); w5[::2, 1] = np.maximum(w5[::2, 1], [100, -1])
    np.testing.assert_array_equal(np.asarray(xlapy.jit(lambda v: v.at[::2, 1].max(np.array([100.0, -1.0], np.float32)))(A)), w5)
    np.testing.assert_array_equal(np.asarray(x.at[2].get()), A[2])
    w6 = A.copy(); w6[1] = [9, 8, 7, 6]
    np.testing.assert_array_equal(np.asarray(xlapy.jit(lambda v, u: v.at[1].set(u))(A, np.array([9, 8, 7, 6], np.float32))), w6)
    np.testing.assert_array_equal(np.asarray(x), A)        # functional: the original is unchanged


def test_eager_ops_are_cached():
    x, y = arr(np.ones((5, 2), np.float32)), arr(np.full((5, 2), 3.0, np.float32))
    _ = (x * y + 1.0).sum()
    before = eager_stats()
    out = (x * y + 2.0).sum()                 # same ops, shapes, dtypes: no compilation
    after = eager_stats()
    assert after["compiles"] == before["compiles"]
    assert after["hits"] >= before["hits"] + 3
    assert float(out) == 50.0


def test_eager_control_flow():
    out = xlapy.lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2.0), (0, arr(np.ones(2, np.float32))))
    assert int(out[0]) == 5 and np.allclose(np.asarray(out[1]), 32.0)
    r = xlapy.lax.cond(arr(np.bool_(False)), lambda v: v + 1.0, lambda v: v - 1.0, arr(np.zeros(2, np.float32)))
    assert np.allclose(np.asarray(r), -1.0)


def test_device_get_and_tree_interop():
    tree = {"a": arr(A), "b": (arr(I), 3)}
    got = xlapy.device_get(tree)
    assert isinstance(got["a"], np.ndarray) and got["b"][1] == 3


def test_jit_accepts_arrays_and_returns_arrays():
    f = xlapy.jit(lambda v: v * 2)
    out = f(arr(A))
    assert isinstance(out, xlapy.Array)
    out2 = f(out)
    np.testing.assert_array_equal(np.asarray(out2), A * 4)
