"""Array and Tracer methods (jax.Array's), weak types of all-scalar numpy ops, isinstance(tracer, xlapy.Array),
and donate_argnums deleting the donated Arrays."""
import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.frontend import is_concrete_array

@pytest.fixture(autouse=True)
def _x32():
    """The expected dtypes are JAX's defaults (32-bit), whatever JAX_ENABLE_X64 says."""
    old = xlapy.config.enable_x64
    xlapy.config.enable_x64 = False
    yield
    xlapy.config.enable_x64 = old


A = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5) / 3

# (method, positional args, keyword args): numpy's method of the same name gives the expected value
METHODS = [
    ("any", (), {}), ("all", (), {"axis": 0}), ("var", (), {}), ("var", (1,), {"ddof": 1}), ("std", (0,), {}),
    ("cumsum", (1,), {}), ("cumprod", (), {}), ("clip", (-1, 1), {}), ("round", (1,), {}),
    ("take", (np.array([0, 5, 11]),), {}), ("take", (np.array([3, 0]),), {"axis": 1}),
    ("dot", (np.ones((4, 2), np.float32),), {}), ("argmax", (), {}), ("argmin", (1,), {}),
    ("argsort", (), {"axis": 0}), ("sort", (), {}), ("prod", (), {"axis": 1}), ("flatten", (), {}), ("ravel", (), {}),
    ("swapaxes", (0, 1), {}), ("transpose", (1, 0), {}), ("transpose", ((1, 0),), {}), ("conj", (), {}),
    ("sum", (), {"axis": 1}), ("mean", (0,), {}), ("max", (), {}), ("min", (1,), {}), ("reshape", (4, 3), {}),
]


@pytest.mark.parametrize("name,args,kwargs", METHODS, ids=[f"{m[0]}{m[1]}{m[2]}" for m in METHODS])
def test_methods_match_numpy_eager_and_traced(name, args, kwargs):
    want = np.sort(A, *args, **kwargs) if name == "sort" else getattr(A, name)(*args, **kwargs)   # (in place)
    eager = getattr(xlapy.Array(A), name)(*args, **kwargs)
    traced = xlapy.jit(lambda v: getattr(v, name)(*args, **kwargs))(A)
    for got in (eager, traced):
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-6)


def test_squeeze_and_properties():
    x = xlapy.Array(np.ones((1, 3, 1), np.float32))
    assert x.squeeze().shape == (3,) and x.squeeze(2).shape == (1, 3)
    assert (x.nbytes, x.itemsize) == (12, 4)
    c = xlapy.Array(np.array([1 + 2j, 3 - 4j], np.complex64))
    np.testing.assert_array_equal(np.asarray(c.real), [1, 3])
    np.testing.assert_array_equal(np.asarray(c.imag), [2, -4])
    np.testing.assert_array_equal(np.asarray(c.conj()), [1 - 2j, 3 + 4j])
    seen = {}

    def f(v):
        seen.update(nbytes=v.nbytes, itemsize=v.itemsize, real=v.real.shape, imag=v.imag.dtype)
        return v
    xlapy.jit(f)(A)
    assert seen == {"nbytes": 48, "itemsize": 4, "real": (3, 4), "imag": np.float32}


def test_item_and_tolist_are_eager_only():
    x = xlapy.Array(A)
    assert x[1, 2].item() == float(A[1, 2]) and x.tolist() == A.tolist()
    for method in ("item", "tolist"):
        with pytest.raises(xlapy.ConcretizationError, match=f"{method}\\(\\)"):
            xlapy.jit(lambda v: getattr(v.sum(), method)())(A)


# -- weak types ---------------------------------------------------------------------------------------------
# (expression, dtype, weak_type) as jax.numpy 0.10.2 gives them
WEAK_CASES = [
    ("xnp.add(1, 2.0)", "float32", True), ("xnp.multiply(2, 3)", "int32", True), ("xnp.add(1, 2j)", "complex64", True),
    ("xnp.maximum(1, 2.5)", "float32", True), ("xnp.subtract(True, 2.0)", "float32", True),
    ("xnp.add(xnp.float32(1), 2)", "float32", False), ("xnp.add(np.int8(1), 2.0)", "float32", True),
    ("xnp.add(np.int8(1), 2)", "int8", False), ("xnp.add(np.float16(1), 2.0)", "float16", False),
]


@pytest.mark.parametrize("expr,dtype,weak", WEAK_CASES, ids=[c[0] for c in WEAK_CASES])
def test_all_scalar_ops_are_weakly_typed_like_jax(expr, dtype, weak):
    for got in (eval(expr), xlapy.jit(lambda: eval(expr))()):
        assert (str(got.dtype), got.weak_type) == (dtype, weak)
        if dtype == "float32":           # a weak result does not widen what it meets later
            assert (xnp.ones(2, np.float16) + got).dtype == (np.float16 if weak else np.float32)


# -- isinstance ---------------------------------------------------------------------------------------------

def test_tracers_are_instances_of_array_and_ndarray():
    seen = []

    def f(v):
        seen.extend([isinstance(v, xlapy.Array), isinstance(v, xnp.ndarray), is_concrete_array(v)])
        return v
    xlapy.jit(f)(A)
    assert seen == [True, True, False]
    x = xlapy.Array(A)           # construction is unchanged
    assert isinstance(x, xlapy.Array) and is_concrete_array(x) and np.array_equal(np.asarray(x), A)
    assert issubclass(xlapy.frontend.Tracer, xlapy.Array) and not isinstance(A, xlapy.Array)
    assert is_concrete_array(xlapy.Array(x)) and xlapy.device_put(x) is x
    with pytest.raises(xlapy.ConcretizationError):
        xlapy.jit(lambda v: xlapy.Array(v))(A)


# -- donation -----------------------------------------------------------------------------------------------

def test_donated_arrays_are_deleted_after_the_call():
    f = xlapy.jit(lambda a, b: a + b, donate_argnums=0)
    a, b = xlapy.Array(A), xlapy.Array(A)
    out = f(a, b)
    np.testing.assert_array_equal(np.asarray(out), 2 * A)
    assert a.is_deleted() and not b.is_deleted() and a.shape == (3, 4) and "deleted" in repr(a)
    for use in (lambda: a + 1, lambda: np.asarray(a), lambda: f(a, b), lambda: a.tolist()):
        with pytest.raises(xlapy.XlapyError, match="Array has been deleted \\(donated to a jitted call\\)"):
            use()
    n = A.copy()
    f(n, b)                                   # numpy arguments are copied in, never deleted
    np.testing.assert_array_equal(n, A)
    g = xlapy.jit(lambda params, x: params["w"] * x, donate_argnames="params")
    params = {"w": xlapy.Array(A)}
    g(params, 2.0)
    assert params["w"].is_deleted()
    h = xlapy.jit(lambda a: a * 2, donate_argnums=(0,))
    c = xlapy.Array(A)
    h.lower(c).compile()(c)
    assert c.is_deleted()
