"""xlapy.grad / value_and_grad / vjp / jvp: gradients checked against central finite differences in f64,
on pytrees, with argnums and has_aux, under jit and around it, to second order, and through control flow."""
import numpy as np
import pytest

import xlapy
from xlapy import lax
from xlapy.testing import numerical_grad

rng = np.random.default_rng(0)
pytestmark = pytest.mark.usefixtures("x64")      # the conftest fixture, for every test here


def log_softmax(z):
    shifted = z - lax.stop_gradient(z.max(axis=-1, keepdims=True))
    return shifted - lax.log(lax.exp(shifted).sum(axis=-1, keepdims=True))


def cross_entropy(logits, labels):
    return -(labels * log_softmax(logits)).sum() / logits.shape[0]


def mlp_loss(params, x, labels):
    h = lax.tanh(x @ params["w1"] + params["b1"])
    return cross_entropy(h @ params["w2"] + params["b2"], labels)


X3 = rng.standard_normal(3)
X23 = rng.standard_normal((2, 3))
LOGITS = rng.standard_normal((4, 5))
LABELS = np.eye(5)[rng.integers(0, 5, 4)]

# name, scalar function of one array, input
SCALAR_CASES = [
    ("cubic", lambda x: (x * x * x - 2.0 * x * x + x).sum(), X3),
    ("tanh", lambda x: lax.tanh(x).sum(), X23),
    ("log_exp", lambda x: lax.log(1.0 + lax.exp(x)).sum(), X23),
    ("sin_cos_product", lambda x: (lax.sin(x) * lax.cos(2.0 * x)).sum(), X3),
    ("matmul", lambda x: lax.tanh(x @ x.T).sum(), X23),
    ("cross_entropy", lambda z: cross_entropy(z, LABELS), LOGITS),
    ("max_reduce", lambda x: (x.max(axis=1) ** 2).sum(), X23),
    ("mean_square", lambda x: ((x - 0.5) ** 2).mean(), X23),
    ("vmap_rows", lambda x: xlapy.vmap(lambda r: lax.tanh(r @ r) * r[0])(x).sum(), X23),
    ("vmap_of_grad", lambda x: (xlapy.vmap(xlapy.grad(lambda r: (lax.sin(r) * r).sum()))(x) ** 2).sum(), X23),
]


@pytest.mark.parametrize("name,f,x", SCALAR_CASES, ids=[c[0] for c in SCALAR_CASES])
def test_grad_matches_finite_differences(name, f, x):
    g = xlapy.grad(f)(x)
    assert g.shape == x.shape and g.dtype == np.float64
    np.testing.assert_allclose(np.asarray(g), numerical_grad(f, x), rtol=1e-6, atol=1e-8)


def test_mlp_loss_gradient_on_a_dict_of_params():
    params = {"w1": rng.standard_normal((3, 4)) * 0.5, "b1": rng.standard_normal(4) * 0.1,
              "w2": rng.standard_normal((4, 5)) * 0.5, "b2": np.zeros(5)}
    x = rng.standard_normal((4, 3))
    g = xlapy.grad(mlp_loss)(params, x, LABELS)
    assert isinstance(g, dict) and sorted(g) == sorted(params)
    for key, value in params.items():
        def f(v, key=key):
            return mlp_loss(dict(params, **{key: v}), x, LABELS)
        np.testing.assert_allclose(np.asarray(g[key]), numerical_grad(f, value), rtol=1e-6, atol=1e-8,
                                   err_msg=key)


def test_list_and_tuple_pytrees_mirror_the_argument():
    def f(p):
        (a, b), c = p
        return (a * b).sum() + (c[0] ** 3).sum()
    p = ((X3, 2.0 * X3), [X23])
    g = xlapy.grad(f)(p)
    assert isinstance(g, tuple) and isinstance(g[0], tuple) and isinstance(g[1], list)
    np.testing.assert_allclose(np.asarray(g[0][0]), 2.0 * X3)
    np.testing.assert_allclose(np.asarray(g[0][1]), X3)
    np.testing.assert_allclose(np.asarray(g[1][0]), 3 * X23 ** 2)


def test_argnums_tuple_and_value_and_grad():
    def f(x, y, z):
        return (x * y * y).sum() + z
    gx, gz = xlapy.grad(f, argnums=(0, 2))(X3, 2 * X3, 1.5)
    np.testing.assert_allclose(np.asarray(gx), 4 * X3 ** 2)
    assert float(gz) == 1.0
    gy = xlapy.grad(f, argnums=1)(X3, 2 * X3, 1.5)
    np.testing.assert_allclose(np.asarray(gy), 4 * X3 ** 2)
    value, g = xlapy.value_and_grad(f, argnums=(1,))(X3, 2 * X3, 1.5)
    np.testing.assert_allclose(float(value), (4 * X3 ** 3).sum() + 1.5)
    assert isinstance(g, tuple) and len(g) == 1


def test_has_aux():
    def f(x):
        return (x ** 2).sum(), {"double": 2 * x, "n": 3}
    g, aux = xlapy.grad(f, has_aux=True)(X3)
    np.testing.assert_allclose(np.asarray(g), 2 * X3)
    np.testing.assert_allclose(np.asarray(aux["double"]), 2 * X3)
    assert int(aux["n"]) == 3
    (value, aux), g = xlapy.value_and_grad(f, has_aux=True)(X3)
    np.testing.assert_allclose(float(value), (X3 ** 2).sum())


def test_vjp_with_a_non_scalar_output():
    def f(x, y):
        return {"s": lax.sin(x) * y, "p": x @ y}
    y = rng.standard_normal(3)
    out, vjp_fn = xlapy.vjp(f, X3, y)
    np.testing.assert_allclose(np.asarray(out["s"]), np.sin(X3) * y)
    ct = {"s": rng.standard_normal(3), "p": 2.0}
    gx, gy = vjp_fn({"s": ct["s"], "p": np.float64(2.0)})
    np.testing.assert_allclose(np.asarray(gx), ct["s"] * np.cos(X3) * y + 2.0 * y)
    np.testing.assert_allclose(np.asarray(gy), ct["s"] * np.sin(X3) + 2.0 * X3)
    with pytest.raises(xlapy.XlapyError, match="cotangent"):
        vjp_fn({"s": np.ones(4), "p": np.float64(1.0)})


def test_integer_arguments_outside_argnums_and_in_vjp():
    def f(x, n, scale=1.0):
        return (x * lax.convert_element_type(n, x.dtype)).sum() * scale
    n = np.arange(3, dtype=np.int32)
    np.testing.assert_allclose(np.asarray(xlapy.grad(f)(X3, n, scale=2.0)), 2.0 * n)
    out, vjp_fn = xlapy.vjp(f, X3, n)
    gx, gn = vjp_fn(np.float64(1.0))
    np.testing.assert_allclose(np.asarray(gx), n)
    assert gn.dtype == np.int32 and not gn.any()      # JAX's float0 zero
    _, t = xlapy.jvp(f, (X3, n), (np.ones(3), n))
    np.testing.assert_allclose(float(t), n.sum())


def test_jvp_has_aux_and_exports():
    out, t, aux = xlapy.jvp(lambda x: (lax.sin(x), x * 2.0), (0.5,), (1.0,), has_aux=True)
    np.testing.assert_allclose([float(out), float(t), float(aux)], [np.sin(0.5), np.cos(0.5), 1.0])
    assert xlapy.stop_gradient is not None and {"grad", "value_and_grad", "vjp", "jvp"} <= set(xlapy.__all__)


def test_jvp_matches_finite_differences():
    def f(x, w):
        return lax.tanh(x @ w) * 2.0
    w, t_x, t_w = rng.standard_normal((3, 2)), rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    out, tangent = xlapy.jvp(f, (X23, w), (t_x, t_w))
    eps = 1e-6
    fd = (np.tanh((X23 + eps * t_x) @ (w + eps * t_w)) - np.tanh((X23 - eps * t_x) @ (w - eps * t_w))) / eps
    np.testing.assert_allclose(np.asarray(out), 2 * np.tanh(X23 @ w))
    np.testing.assert_allclose(np.asarray(tangent), fd, rtol=1e-6, atol=1e-8)
    with pytest.raises(xlapy.XlapyError, match="tangent"):
        xlapy.jvp(f, (X23, w), (t_x, t_w.astype(np.float32)))


def test_grad_under_jit_and_jit_of_grad_agree():
    params = {"w1": rng.standard_normal((3, 4)), "b1": np.zeros(4), "w2": rng.standard_normal((4, 5)),
              "b2": np.zeros(5)}
    x = rng.standard_normal((4, 3))
    eager = xlapy.grad(mlp_loss)(params, x, LABELS)
    jitted = xlapy.jit(xlapy.grad(mlp_loss))(params, x, LABELS)
    inside = xlapy.grad(xlapy.jit(mlp_loss))(params, x, LABELS)
    # equal up to reassociation: a compiled reduction or dot may sum in another order than op-by-op (as in JAX)
    for key in params:
        np.testing.assert_allclose(np.asarray(jitted[key]), np.asarray(eager[key]), rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(np.asarray(inside[key]), np.asarray(eager[key]), rtol=2e-6, atol=1e-7)
    text = xlapy.jit(xlapy.grad(mlp_loss)).lower(params, x, LABELS).compile().as_text()
    assert " call(" not in text      # the optimizer inlined the derived computation


def test_grad_inside_jit_closing_over_a_traced_value():
    @xlapy.jit
    def f(x, w):
        return xlapy.grad(lambda v: lax.tanh(v * w).sum())(x)
    np.testing.assert_allclose(np.asarray(f(X3, 2.0)), 2.0 * (1 - np.tanh(2.0 * X3) ** 2), rtol=1e-12)


SECOND_ORDER = [
    ("cube", lambda x: x ** 3, lambda x: 6 * x),
    ("sin", lax.sin, lambda x: -np.sin(x)),
    ("tanh", lax.tanh, lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    ("exp_x2", lambda x: lax.exp(x * x), lambda x: (2 + 4 * x * x) * np.exp(x * x)),
    ("vmap_cube", lambda x: xlapy.vmap(lambda v: v ** 3)(lax.broadcast(x, (2,))).sum() / 2.0, lambda x: 6 * x),
]


@pytest.mark.parametrize("name,f,d2", SECOND_ORDER, ids=[c[0] for c in SECOND_ORDER])
def test_grad_of_grad(name, f, d2):
    for x in (0.3, -1.2):
        np.testing.assert_allclose(float(xlapy.grad(xlapy.grad(f))(x)), d2(x), rtol=1e-12)
    np.testing.assert_allclose(float(xlapy.jit(xlapy.grad(xlapy.grad(f)))(0.7)), d2(0.7), rtol=1e-12)


def test_third_order_and_jvp_of_grad():
    f = lambda x: x ** 4      # noqa: E731
    assert float(xlapy.grad(xlapy.grad(xlapy.grad(f)))(2.0)) == 48.0
    _, t = xlapy.jvp(xlapy.grad(f), (2.0,), (1.0,))
    assert float(t) == 48.0


CONTROL_FLOW = [
    ("cond_true", lambda x: lax.cond(x > 0, lambda v: v * v, lambda v: -v, x), 3.0, 6.0),
    ("cond_false", lambda x: lax.cond(x > 0, lambda v: v * v, lambda v: -v, x), -3.0, -1.0),
    ("cond_closure", lambda x: lax.cond(True, lambda: lax.sin(x), lambda: x), 0.5, np.cos(0.5)),
    ("fori_loop", lambda x: lax.fori_loop(0, 4, lambda i, c: c * x, 1.0), 1.5, 4 * 1.5 ** 3),
    ("scan", lambda x: lax.scan(lambda c, w: (c * w + x, None), x, np.array([1.0, 2.0, 3.0]))[0], 0.7,
     1 * 2 * 3 + 2 * 3 + 3 + 1),
]


@pytest.mark.parametrize("name,f,x,expected", CONTROL_FLOW, ids=[c[0] for c in CONTROL_FLOW])
def test_grad_through_control_flow(name, f, x, expected):
    np.testing.assert_allclose(float(xlapy.grad(f)(x)), expected, rtol=1e-12)
    np.testing.assert_allclose(float(xlapy.jit(xlapy.grad(f))(x)), expected, rtol=1e-12)


def test_scan_over_an_array_argument():
    def f(xs):
        carry, ys = lax.scan(lambda c, x: (c * x, c * x), 1.0, xs)
        return carry + ys.sum()
    xs = np.array([1.5, -2.0, 0.5])
    np.testing.assert_allclose(np.asarray(xlapy.grad(f)(xs)), numerical_grad(f, xs), rtol=1e-6)


def test_while_loop_reverse_mode_raises_a_clear_error():
    def f(x):
        return lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)
    with pytest.raises(xlapy.XlapyError, match="while_loop"):
        xlapy.grad(f)(1.0)
    _, t = xlapy.jvp(f, (1.5,), (1.0,))     # forward mode handles any while loop
    assert float(t) == 8.0


def test_stop_gradient_gives_zero_gradient():
    assert float(xlapy.grad(lambda x: lax.stop_gradient(x) * 3.0)(2.0)) == 0.0
    np.testing.assert_allclose(np.asarray(xlapy.grad(lambda x: (x * lax.stop_gradient(x)).sum())(X3)), X3)
    # the cut survives into the derived computation: second derivative of x * sg(x) ** 2 is 0
    assert float(xlapy.grad(xlapy.grad(lambda x: x * lax.stop_gradient(x) ** 2))(2.0)) == 0.0
    _, t = xlapy.jvp(lambda x: lax.stop_gradient(x) * x, (3.0,), (1.0,))
    assert float(t) == 3.0
    f = xlapy.grad(lambda x: lax.stop_gradient(x * x) + x)
    assert float(xlapy.jit(f)(2.0)) == 1.0
    assert "bitcast-convert" not in xlapy.jit(f).lower(2.0).as_text()   # the marker is a copy again


ERRORS = [
    ("integer argnum", lambda: xlapy.grad(lambda x, n: x * n, argnums=1)(1.0, 3), r"s64\[\].*integer"),
    ("vector output", lambda: xlapy.grad(lambda x: x * 2.0)(X3), r"f64\[3\]"),
    ("integer output", lambda: xlapy.grad(lambda x: lax.convert_element_type(x, np.int32))(1.0), "s32"),
    ("tuple output", lambda: xlapy.grad(lambda x: (x, x))(1.0), "scalar"),
    ("bad argnums", lambda: xlapy.grad(lambda x: x, argnums=2)(1.0), "argnums"),
    ("has_aux not a pair", lambda: xlapy.grad(lambda x: x, has_aux=True)(1.0), "pair"),
    ("complex input", lambda: xlapy.grad(lambda z: lax.real(z * z))(np.complex128(1 + 2j)), "complex"),
    ("jvp structure", lambda: xlapy.jvp(lambda x, y: x * y, (1.0, 2.0), (1.0,)), "structure"),
]


@pytest.mark.parametrize("name,call,match", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors(name, call, match):
    with pytest.raises(xlapy.XlapyError, match=match):
        call()
