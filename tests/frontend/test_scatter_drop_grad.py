"""Derivatives of scatters whose updates are dropped (out of bounds) or overwritten (duplicate indices): such an
update gets no cotangent, as in JAX (its gather in fill-or-drop mode; for overwriting scatters its id trick).
Expected values are JAX 0.10.2's."""
import numpy as np

import xlapy
import xlapy.numpy as jnp

WEIGHTS = np.arange(1.0, 6.0, dtype=np.float32)
IDX = np.array([1, 7, -9])          # 7 and -9 (-4 after wrapping) are out of bounds for 5 elements


def _loss(method, mode):
    def f(x, v):
        return jnp.sum(getattr(x.at[jnp.asarray(IDX)], method)(v, mode=mode) * WEIGHTS)
    return xlapy.grad(f, argnums=(0, 1))


def test_dropped_updates_get_no_gradient():
    x, v = jnp.arange(5.0), jnp.array([10.0, 20.0, 30.0])
    cases = {("set", "drop"): ([1, 0, 3, 4, 5], [2, 0, 0]), ("add", "drop"): ([1, 2, 3, 4, 5], [2, 0, 0]),
             ("set", None): ([1, 0, 3, 4, 5], [2, 0, 0]), ("set", "clip"): ([0, 0, 3, 4, 0], [2, 5, 1])}
    for (method, mode), (want_x, want_v) in cases.items():
        gx, gv = xlapy.jit(_loss(method, mode))(x, v)
        np.testing.assert_array_equal(gx, want_x, err_msg=f"{method} {mode}")
        np.testing.assert_array_equal(gv, want_v, err_msg=f"{method} {mode}")


def test_overwritten_and_dropped_rows():
    # rows 0 and 3 (dropped), then 2 and -1 (= 2: the later update is the one kept)
    w = np.arange(12.0, dtype=np.float32).reshape(3, 4)

    def f(m, u):
        return jnp.sum(m.at[jnp.array([[0, 3], [2, -1]])].set(u, mode="drop") * w)
    gm, gu = xlapy.grad(f, argnums=(0, 1))(jnp.asarray(w), jnp.ones((2, 2, 4)))
    np.testing.assert_array_equal(gm, [[0, 0, 0, 0], [4, 5, 6, 7], [0, 0, 0, 0]])
    np.testing.assert_array_equal(gu, [[[0, 1, 2, 3], [0, 0, 0, 0]], [[0, 0, 0, 0], [8, 9, 10, 11]]])


def test_static_in_bounds_indices_need_no_mask():
    text = xlapy.jit(xlapy.grad(lambda v: jnp.sum(jnp.zeros(4).at[jnp.array([0, 2])].set(v) * 2.0))).lower(
        jnp.ones(2)).as_text()
    assert "iota" not in text and "select(" not in text
