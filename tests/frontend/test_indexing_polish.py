"""`x.at[idx]` as one HLO scatter (JAX's out-of-bounds modes), boolean masks, indexing of every index form.

The JAX table's expected values were produced with jax 0.10.2 (jax.numpy, same expressions) and pasted here."""
import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp

NAN = float("nan")


@pytest.fixture(autouse=True)
def _x32():
    """The expected dtypes are JAX's defaults (32-bit), whatever JAX_ENABLE_X64 says."""
    old = xlapy.config.enable_x64
    xlapy.config.enable_x64 = False
    yield
    xlapy.config.enable_x64 = old


# (expression over m = xlapy.numpy and x = arange(5.), y = arange(12.).reshape(3, 4), z = arange(24).reshape(2, 3,
#  4) (int32), xi = arange(5) (int32); what jax.numpy gives; its dtype)
JAX_CASES = [
    ('x.at[10].set(9.)',
     [0.0, 1.0, 2.0, 3.0, 4.0], 'float32'),
    ('x.at[-6].set(9.)',
     [0.0, 1.0, 2.0, 3.0, 4.0], 'float32'),
    ("x.at[10].set(9., mode='clip')",
     [0.0, 1.0, 2.0, 3.0, 9.0], 'float32'),
    ("x.at[-10].add(9., mode='clip')",
     [9.0, 1.0, 2.0, 3.0, 4.0], 'float32'),
    ('x.at[m.array([0, 7, -1, -7])].add(1.)',
     [1.0, 1.0, 2.0, 3.0, 5.0], 'float32'),
    ("x.at[m.array([0, 7, -1, -7])].add(1., mode='clip')",
     [2.0, 1.0, 2.0, 3.0, 6.0], 'float32'),
    ('x.at[m.array([0, 7, -1, -7])].get()',
     [0.0, 4.0, 4.0, 0.0], 'float32'),
    ("x.at[m.array([0, 7, -1, -7])].get(mode='fill')",
     [0.0, NAN, 4.0, NAN], 'float32'),
    ("x.at[m.array([0, 7, -1, -7])].get(mode='fill', fill_value=-1.)",
     [0.0, -1.0, 4.0, -1.0], 'float32'),
    ("x.at[-1].set(99., wrap_negative_indices=False, mode='drop')",
     [0.0, 1.0, 2.0, 3.0, 4.0], 'float32'),
    ("x.at[-1].set(99., wrap_negative_indices=False, mode='clip')",
     [99.0, 1.0, 2.0, 3.0, 4.0], 'float32'),
    ('x.at[10].get()',
     4.0, 'float32'),
    ("x.at[10].get(mode='fill')",
     NAN, 'float32'),
    ('y.at[1:3, 5].set(0.)',
     [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]], 'float32'),
    ('y.at[m.array([0, 5]), m.array([1, 2])].set(-1.)',
     [[0.0, -1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]], 'float32'),
    ('y.at[m.array([[0], [1]]), m.array([3, 9])].multiply(2.)',
     [[0.0, 1.0, 2.0, 6.0], [4.0, 5.0, 6.0, 14.0], [8.0, 9.0, 10.0, 11.0]], 'float32'),
    ("y.at[m.array([[0], [1]]), m.array([3, 9])].get(mode='fill', fill_value=0.)",
     [[3.0, 0.0], [7.0, 0.0]], 'float32'),
    ('y.at[1, -5].set(7.)',
     [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]], 'float32'),
    ('y.at[4, 1:].add(1.)',
     [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]], 'float32'),
    ('y.at[m.array([2, 3, -4]), ::2].max(100.)',
     [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [100.0, 9.0, 100.0, 11.0]], 'float32'),
    ("y.at[m.array([2, 3, -4]), ::2].min(-100., mode='clip')",
     [[-100.0, 1.0, -100.0, 3.0], [4.0, 5.0, 6.0, 7.0], [-100.0, 9.0, -100.0, 11.0]], 'float32'),
    ('z.at[:, m.array([0, 4]), 1:3].set(-1)',
     [[[0, -1, -1, 3], [4, 5, 6, 7], [8, 9, 10, 11]], [[12, -1, -1, 15], [16, 17, 18, 19], [20, 21, 22, 23]]], 'int32'),
    ('z.at[m.array([0, 1]), :, m.array([[5], [3]])].add(100)',
     [[[0, 1, 2, 103], [4, 5, 6, 107], [8, 9, 10, 111]], [[12, 13, 14, 115], [16, 17, 18, 119], [20, 21, 22, 123]]], 'int32'),
    ('z.at[m.array([0, 1]), :, m.array([[5], [3]])].get()',
     [[[3, 7, 11], [15, 19, 23]], [[3, 7, 11], [15, 19, 23]]], 'int32'),
    ('z.at[-3, None, 0].set(-7)',
     [[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], [[12, 13, 14, 15], [16, 17, 18, 19], [20, 21, 22, 23]]], 'int32'),
    ('z.at[1, ..., m.array([4, -5, 0])].multiply(0)',
     [[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], [[0, 13, 14, 15], [0, 17, 18, 19], [0, 21, 22, 23]]], 'int32'),
    ('xi.at[m.array([1, 1, 3])].add(1.5)',
     [0, 4, 2, 4, 4], 'int32'),
    ('xi.at[m.array([1, 1, 3])].multiply(0.5)',
     [0, 0, 2, 1, 4], 'int32'),
    ('xi.at[2].set(-2.7)',
     [0, 1, -2, 3, 4], 'int32'),
    ('xi.at[m.array([1, 1])].subtract(3)',
     [0, -5, 2, 3, 4], 'int32'),
    ('x.at[m.array([0, 2, 2])].divide(2.)',
     [0.0, 1.0, 0.5, 3.0, 4.0], 'float32'),
    ('x.at[1::2].power(2.)',
     [0.0, 1.0, 2.0, 9.0, 4.0], 'float32'),
]


def _env():
    return dict(m=xnp, x=xnp.arange(5.0), y=xnp.arange(12.0).reshape(3, 4), z=xnp.arange(24).reshape(2, 3, 4),
                xi=xnp.arange(5))


@pytest.mark.parametrize("expr,want,dtype", JAX_CASES, ids=[c[0] for c in JAX_CASES])
def test_at_matches_jax(expr, want, dtype):
    got = eval(expr, _env())
    assert str(got.dtype) == dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want, dtype))


def test_at_matches_jax_on_the_cpu_backend():
    old = xlapy.config.default_backend
    xlapy.config.default_backend = "cpu"
    try:
        for expr, want, dtype in JAX_CASES[:8] + JAX_CASES[20:24]:
            np.testing.assert_array_equal(np.asarray(eval(expr, _env())), np.asarray(want, dtype), err_msg=expr)
    finally:
        xlapy.config.default_backend = old


def test_traced_indices_drop_or_clip_like_jax():
    x = np.arange(5, dtype=np.float32)
    idx = np.array([0, 7, -1, -7], np.int32)
    f = xlapy.jit(lambda v, i, mode: v.at[i].add(1.0, mode=mode), static_argnums=2)
    np.testing.assert_array_equal(np.asarray(f(x, idx, None)), [1, 1, 2, 3, 5])       # jax.numpy's values
    np.testing.assert_array_equal(np.asarray(f(x, idx, "clip")), [2, 1, 2, 3, 6])
    g = xlapy.jit(lambda v, i: v.at[i].set(9.0))
    for i, want in [(7, x), (-1, [0, 1, 2, 3, 9]), (-7, x), (2, [0, 1, 9, 3, 4])]:
        np.testing.assert_array_equal(np.asarray(g(x, np.int32(i))), want)
    get = xlapy.jit(lambda v, i: (v[i], v.at[i].get(mode="fill", fill_value=-1.0)))
    plain, filled = get(x, idx)
    np.testing.assert_array_equal(np.asarray(plain), [0, 4, 4, 0])
    np.testing.assert_array_equal(np.asarray(filled), [0, -1, 4, -1])
    y = np.arange(12, dtype=np.float32).reshape(3, 4)
    h = xlapy.jit(lambda v, i, j: v.at[i, j].multiply(2.0))
    np.testing.assert_array_equal(np.asarray(h(y, np.array([[0], [1]], np.int32), np.array([3, 9], np.int32))),
                                  [[0, 1, 2, 6], [4, 5, 6, 14], [8, 9, 10, 11]])


# -- in-bounds index forms: numpy agrees with JAX here ----------------------------------------------------
S = (3, 4, 5)
NUMPY_INDICES = [
    1, -1, (slice(1, 3),), (slice(None, None, -2), 2), (Ellipsis, 1), (None, 1, slice(None), None, 0),
    ([0, 2],), (slice(None), [3, 1], [0, 4]), ([0, 2], slice(None), [1, 3]), ([[0], [2]], 1, [1, 3]),
    (1, slice(1, None, 2), [4, 0]), (np.array([[1, 0]]), Ellipsis), (slice(2, 0, -1), None, [1, 2]),
    (Ellipsis, np.array([-1, -5])), (slice(None), slice(1, 4), slice(0, 5, 3)), (), (2, 3, 4),
    ([1, 0], None, [2, 3], slice(1, 2)),
]


def _static(index):
    """The index with array-likes as numpy arrays (hashable pieces stay)."""
    index = index if isinstance(index, tuple) else (index,)
    return tuple(np.asarray(i) if isinstance(i, list) else i for i in index)


def _traced(index):
    """(index with each array replaced by a placeholder position, the arrays) for passing arrays through jit."""
    arrays = [i for i in index if isinstance(i, np.ndarray)]
    return [("arg", k) if isinstance(i, np.ndarray) else i for k, i in
            zip(np.cumsum([isinstance(i, np.ndarray) for i in index]) - 1, index)], arrays


def _rebuild(template, arrays):
    return tuple(arrays[k[1]] if isinstance(k, tuple) and k and k[0] == "arg" else k for k in template)


@pytest.mark.parametrize("index", NUMPY_INDICES, ids=[repr(i) for i in NUMPY_INDICES])
def test_every_index_form_matches_numpy(index):
    rng = np.random.default_rng(0)
    base = rng.standard_normal(S).astype(np.float32)
    idx = _static(index)
    vals = rng.standard_normal(base[idx].shape).astype(np.float32)
    want_set = base.copy(); want_set[idx] = vals
    want_add = base.copy(); np.add.at(want_add, idx, vals)
    x = xlapy.Array(base)
    np.testing.assert_array_equal(np.asarray(x[idx]), base[idx])
    np.testing.assert_array_equal(np.asarray(x.at[idx].get()), base[idx])
    np.testing.assert_array_equal(np.asarray(x.at[idx].set(vals)), want_set)
    np.testing.assert_allclose(np.asarray(x.at[idx].add(vals)), want_add, rtol=1e-6)
    template, arrays = _traced(idx)
    f = xlapy.jit(lambda v, u, *a: (v[_rebuild(template, a)], v.at[_rebuild(template, a)].set(u),
                                    v.at[_rebuild(template, a)].max(u)))
    got_get, got_set, got_max = f(base, vals, *arrays)
    want_max = base.copy(); np.maximum.at(want_max, idx, vals)
    np.testing.assert_array_equal(np.asarray(got_get), base[idx])
    np.testing.assert_array_equal(np.asarray(got_set), want_set)
    np.testing.assert_array_equal(np.asarray(got_max), want_max)


def test_repeated_indices_accumulate_like_ufunc_at():
    base = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    idx = (np.array([1, 1, 2, 1]), slice(None, None, 3))
    vals = np.arange(8, dtype=np.float32).reshape(4, 2) - 3
    x = xlapy.Array(base)
    for method, ufunc in [("add", np.add), ("multiply", np.multiply), ("min", np.minimum), ("max", np.maximum)]:
        want = base.copy(); ufunc.at(want, idx, vals)
        np.testing.assert_allclose(np.asarray(getattr(x.at[idx], method)(vals)), want, rtol=1e-6, err_msg=method)


def test_scalar_operand_and_broadcast_values():
    s = xnp.float32(3.0)
    assert float(s.at[()].set(5.0)) == 5.0 and float(s.at[...].add(1.0)) == 4.0 and s.at[None].get().shape == (1,)
    y = xlapy.Array(np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(np.asarray(y.at[:, 1:].set(np.array([1.0, 2.0], np.float32))),
                                  [[0, 1, 2], [0, 1, 2]])
    with pytest.raises(xlapy.XlapyError, match="cannot be broadcast"):
        y.at[0].set(np.ones(2, np.float32))
    with pytest.raises(xlapy.XlapyError, match="unknown mode"):
        y.at[0].set(1.0, mode="wrap")
    assert y.at[0].add(1.0).weak_type is False and y.at[5:, 1].set(1.0).shape == (2, 3)     # empty: unchanged


def test_scatter_hints_reach_the_hlo():
    f = xlapy.jit(lambda v, i: v.at[i].add(1.0, indices_are_sorted=True, unique_indices=True))
    text = f.lower(np.zeros(4, np.float32), np.array([0, 2], np.int32)).as_text()
    assert "scatter(" in text and "indices_are_sorted=true" in text and "unique_indices=true" in text
    assert "iota" not in text          # a direct scatter, not one through a flattened iota


# -- boolean masks --------------------------------------------------------------------------------------------

def test_concrete_boolean_masks_match_numpy():
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = xlapy.Array(base)
    for index in [base > 10, (base > 10)[:, :, 0], (slice(None), (base > 5)[0, :, 0]), (Ellipsis, base[0, 0] > 1),
                  (1, base[1, :, 2] > 16, slice(1, 3)), [True, False]]:
        idx = index if isinstance(index, tuple) else (np.asarray(index),)
        np.testing.assert_array_equal(np.asarray(x[index]), base[idx])
        want = base.copy(); want[idx] = -1
        np.testing.assert_array_equal(np.asarray(x.at[index].set(-1.0)), want)
    got = xlapy.jit(lambda v: v.at[np.array([True, False, True, False])].add(1.0))(np.zeros(4, np.float32))
    np.testing.assert_array_equal(np.asarray(got), [1, 0, 1, 0])       # a concrete mask inside jit is fine
    with pytest.raises(xlapy.XlapyError, match="boolean index"):
        x[np.array([True, False, True])]


def _mask_get(v):
    return v[v > 2]


def _mask_set(v):
    return v.at[v > 2].set(0.0)


@pytest.mark.parametrize("fn", [_mask_get, _mask_set])
def test_traced_boolean_mask_raises_concretization_error_naming_the_line(fn):
    with pytest.raises(xlapy.ConcretizationError) as info:
        xlapy.jit(fn)(np.arange(5, dtype=np.float32))
    msg = str(info.value)
    assert "boolean indices produce data-dependent shapes" in msg and "xnp.where(mask, x, y)" in msg
    assert f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno + 1}" in msg
