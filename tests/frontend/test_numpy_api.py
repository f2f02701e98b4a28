"""xlapy.numpy beyond the op table: the seed examples, retracing, errors (op, shapes, the user's line),
data-dependent shapes (ConcretizationError under jit, concrete results eagerly), dtype names and constants."""
import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp

rng = np.random.default_rng(1)
F = rng.standard_normal((3, 4)).astype(np.float32)
V = np.array([3, 1, 3, 2, 1, 5, 3], np.int32)


def _where(fn) -> str:
    """`file:line` of the first statement of `fn` (where errors raised by its body must point)."""
    return f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno + 1}"


# -- seed examples ----------------------------------------------------------------------------------------

def test_jit_sum_of_expression():
    f = xlapy.jit(lambda x, y, z: xnp.sum(x + y * z))
    x, y, z = (rng.standard_normal(5).astype(np.float32) for _ in range(3))
    out = f(x, y, z)
    assert out.dtype == np.float32 and out.shape == ()
    np.testing.assert_allclose(np.asarray(out), np.sum(x + y * z), rtol=1e-5)
    assert "reduce" in f.lower(x, y, z).as_text()


def get_MSE(y_true, y_pred):
    return xnp.mean((y_true - y_pred) ** 2)


def test_get_mse_recompiles_on_new_shapes_only():
    mse = xlapy.jit(get_MSE)
    a, b = rng.standard_normal((2, 10)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(mse(a, b)), np.mean((a - b) ** 2), rtol=1e-5)
    mse(b, a)
    mse(a * 2, b)
    assert mse.trace_count == 1
    c, d = rng.standard_normal((2, 7)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(mse(c, d)), np.mean((c - d) ** 2), rtol=1e-5)
    assert mse.trace_count == 2
    mse(a, b)
    mse(d, c)
    assert mse.trace_count == 2
    why = xlapy.explain_recompile(mse, np.zeros(9, np.float32), np.zeros(9, np.float32))
    assert "-> (9,)" in why, why


def test_weak_scalars_keep_array_dtype():
    f = xlapy.jit(lambda x, s: x * s + 1)
    out = f(np.ones(3, np.int8), 3)
    assert out.dtype == np.int8
    assert xnp.add(np.ones(2, np.float16), 2.5).dtype == np.float16
    assert (xnp.arange(3) / 2).dtype == np.float32


# -- errors name the op, the shapes and the user's line ------------------------------------------------------

def _bad_add(x):
    return xnp.add(x, np.ones(5, np.float32))


def _bad_matmul(x):
    return xnp.matmul(x, x)


def _bad_concatenate(x):
    return xnp.concatenate([x, x[:, :2].T])


def _bad_einsum(x):
    return xnp.einsum("ij,jk->ik", x, x)


def _bad_where(x):
    return xnp.where(x > 0, x, np.zeros(3, np.float32))


def _bad_reshape(x):
    return xnp.reshape(x, (5, -1))


def _bad_stack(x):
    return xnp.stack([x, x[:2]])


def _bad_dot(x):
    return xnp.dot(x, x)


def _bad_broadcast_to(x):
    return xnp.broadcast_to(x, (3, 5))


def _bad_split(x):
    return xnp.split(x, 3, axis=1)


def _bad_axis(x):
    return xnp.sum(x, axis=2)


BAD = [(_bad_add, "add", ["f32[3,4]", "f32[5]"]), (_bad_matmul, "matmul", ["f32[3,4]"]),
       (_bad_concatenate, "concatenate", ["f32[3,4]", "f32[2,3]"]), (_bad_einsum, "einsum", ["4", "3"]),
       (_bad_where, "where", ["f32[3,4]", "f32[3]"]), (_bad_reshape, "reshape", ["f32[3,4]", "(5, -1)"]),
       (_bad_stack, "stack", ["f32[3,4]", "f32[2,4]"]), (_bad_dot, "dot", ["f32[3,4]"]),
       (_bad_broadcast_to, "broadcast_to", ["f32[3,4]", "(3, 5)"]), (_bad_split, "split", ["4", "3"]),
       (_bad_axis, "sum", ["axis 2"])]


@pytest.mark.parametrize("fn,op,shapes", BAD, ids=[b[1] for b in BAD])
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_shape_errors_name_op_shapes_and_line(fn, op, shapes, mode):
    run = fn if mode == "eager" else xlapy.jit(fn)
    arg = xlapy.Array(F) if mode == "eager" else F
    with pytest.raises(xlapy.XlapyError) as info:
        run(arg)
    msg = str(info.value)
    assert msg.startswith(op + ":") or f"{op}:" in msg, msg
    for s in shapes:
        assert s in msg, (s, msg)
    assert _where(fn) in msg, msg


# -- data-dependent output shapes -------------------------------------------------------------------------

def _nonzero(x):
    return xnp.nonzero(x)


def _unique(x):
    return xnp.unique(x)


def _where_one(x):
    return xnp.where(x > 2)


def _argwhere(x):
    return xnp.argwhere(x)


def _flatnonzero(x):
    return xnp.flatnonzero(x)


@pytest.mark.parametrize("fn", [_nonzero, _unique, _where_one, _argwhere, _flatnonzero],
                         ids=lambda f: f.__name__)
def test_data_dependent_shape_under_jit_raises(fn):
    with pytest.raises(xlapy.ConcretizationError) as info:
        xlapy.jit(fn)(V)
    msg = str(info.value)
    assert "size=" in msg and _where(fn) in msg, msg


def _mask_index(x):
    return x[x > 2]


def test_boolean_mask_under_jit_raises_naming_line():
    with pytest.raises(xlapy.XlapyError) as info:
        xlapy.jit(_mask_index)(V)
    assert _where(_mask_index) in str(info.value)


def test_data_dependent_shapes_eager_use_concrete_values():
    x = xlapy.Array(V)
    (idx,) = xnp.nonzero(x > 2)
    assert isinstance(idx, xlapy.Array) and idx.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(idx), np.nonzero(V > 2)[0])
    np.testing.assert_array_equal(np.asarray(xnp.unique(x)), np.unique(V))
    vals, inv, counts = xnp.unique(x, return_inverse=True, return_counts=True)
    want = np.unique(V, return_inverse=True, return_counts=True)
    for g, w in zip((vals, inv, counts), want):
        np.testing.assert_array_equal(np.asarray(g), w)
    np.testing.assert_array_equal(np.asarray(xnp.argwhere(F > 0)), np.argwhere(F > 0))
    np.testing.assert_array_equal(np.asarray(xnp.where(x > 2)[0]), np.where(V > 2)[0])


def test_size_makes_nonzero_traceable_and_compiles_once():
    f = xlapy.jit(lambda x: xnp.nonzero(x > 0, size=3, fill_value=-1))
    a = np.array([[1, 0], [0, 2]], np.int32)
    rows, cols = f(a)
    np.testing.assert_array_equal(np.asarray(rows), [0, 1, -1])
    np.testing.assert_array_equal(np.asarray(cols), [0, 1, -1])
    f(np.array([[0, 0], [3, 4]], np.int32))
    assert f.trace_count == 1


def _traced_arange(n):
    return xnp.arange(n)


def test_arange_needs_static_bounds():
    with pytest.raises(xlapy.XlapyError):
        xlapy.jit(_traced_arange)(3)
    np.testing.assert_array_equal(np.asarray(xlapy.jit(_traced_arange, static_argnums=0)(3)), [0, 1, 2])


def test_linspace_with_traced_endpoints():
    f = xlapy.jit(lambda a, b: xnp.linspace(a, b, 5))
    np.testing.assert_allclose(np.asarray(f(np.float32(1), np.float32(3))), np.linspace(1, 3, 5), rtol=1e-6)


# -- dtype names, constants, x64 ----------------------------------------------------------------------------

def test_dtype_names_and_constants():
    one = xnp.float32(1.5)
    assert isinstance(one, xnp.ndarray) and one.dtype == np.float32 and one.shape == ()
    assert np.dtype(xnp.int8) == np.int8 and xnp.float32 == np.float32 and xnp.bfloat16.dtype.name == "bfloat16"
    assert xlapy.Array(F).astype(xnp.int16).dtype == np.int16
    assert xnp.zeros(2, xnp.uint8).dtype == np.uint8
    assert xnp.pi == np.pi and xnp.e == np.e and np.isinf(xnp.inf) and np.isnan(xnp.nan)
    assert xlapy.Array(F)[:, xnp.newaxis].shape == (3, 1, 4)
    assert xnp.result_type(xnp.int8, 1.0) == np.float32 and xnp.promote_types(np.uint8, np.int8) == np.int16
    assert xnp.issubdtype(xnp.float32, xnp.floating) and not xnp.issubdtype(np.int32, xnp.floating)
    assert xnp.finfo(xnp.float32).eps == np.finfo(np.float32).eps


def test_x64_mode_defaults():
    xlapy.config.update("jax_enable_x64", True)
    try:
        assert xnp.arange(3).dtype == np.int64
        assert xnp.zeros(2).dtype == np.float64
        assert xnp.mean(np.arange(4)).dtype == np.float64
        assert xnp.sum(np.ones(3, np.int8)).dtype == np.int64
    finally:
        xlapy.config.update("jax_enable_x64", False)
    assert xnp.arange(3).dtype == np.int32


def test_functions_are_exported():
    expected = """array asarray zeros ones full empty arange linspace eye identity zeros_like ones_like full_like tri
    tril triu meshgrid add subtract multiply divide true_divide floor_divide remainder mod power negative positive
    abs absolute sign exp exp2 expm1 log log2 log10 log1p sqrt cbrt square reciprocal sin cos tan arcsin arccos
    arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh floor ceil round around rint trunc maximum minimum fmax
    fmin clip where logical_and logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_xor bitwise_not
    invert left_shift right_shift isnan isinf isfinite equal not_equal less less_equal greater greater_equal
    allclose isclose sinc heaviside sum mean var std max min amax amin prod argmax argmin any all cumsum cumprod
    nanmax median matmul dot vdot inner outer einsum tensordot reshape ravel transpose swapaxes moveaxis
    expand_dims squeeze concatenate stack hstack vstack split array_split tile repeat broadcast_to
    broadcast_arrays pad flip roll atleast_1d atleast_2d sort argsort take take_along_axis nonzero unique pi e inf
    nan newaxis float32 float64 int32 ndarray""".split()
    missing = [n for n in expected if not hasattr(xnp, n)]
    assert not missing, missing


def test_products_lower_to_one_dot():
    a, b = F, F.T.copy()
    for fn in (lambda x, y: xnp.einsum("ij,jk->ik", x, y), lambda x, y: x @ y, xnp.matmul, xnp.dot,
               lambda x, y: xnp.tensordot(x, y, 1)):
        text = xlapy.jit(fn).lower(a, b).as_text()
        assert text.count(" dot(") == 1 and "reduce(" not in text, text


def test_reductions_lower_to_one_reduce():
    text = xlapy.jit(lambda x: xnp.sum(x, axis=(0, 1))).lower(np.ones((2, 3, 4), np.float32)).as_text()
    assert text.count(" reduce(") == 1, text
