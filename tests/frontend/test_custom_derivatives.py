"""custom_jvp / custom_vjp: the user's rule is what grad, vjp and jvp use (rules deliberately different from the true
derivative show it), eagerly, under jit, nested (grad of grad differentiates the rule), with nondiff_argnums, pytree
residuals, closures over traced values, under vmap; JAX's errors for bad rules."""
from functools import partial

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import lax

pytestmark = pytest.mark.usefixtures("x64")
X = np.array([0.3, -0.7, 1.1])


# -- custom_jvp ---------------------------------------------------------------------------------------------
@xlapy.custom_jvp
def f(x):
    return xnp.sin(x)


@f.defjvp
def f_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return f(x), 3.0 * xnp.cos(x) * t          # 3x the true derivative: shows the rule is used


def test_custom_jvp_primal_eager_and_jit():
    np.testing.assert_allclose(f(X), np.sin(X))
    np.testing.assert_allclose(xlapy.jit(f)(X), np.sin(X))


@pytest.mark.parametrize("wrap", [lambda g: g, xlapy.jit], ids=["eager", "jit"])
def test_custom_jvp_rule_used(wrap):
    np.testing.assert_allclose(wrap(xlapy.grad(lambda x: f(x).sum()))(X), 3 * np.cos(X), rtol=1e-12)
    out, t = xlapy.jvp(f, (X,), (np.ones(3),))
    np.testing.assert_allclose(t, 3 * np.cos(X))
    _, pull = xlapy.vjp(f, X)
    np.testing.assert_allclose(pull(np.ones(3))[0], 3 * np.cos(X))


def test_custom_jvp_second_order_differentiates_the_rule():
    d2 = xlapy.grad(xlapy.grad(lambda x: f(x)))(0.4)
    np.testing.assert_allclose(d2, -3 * np.sin(0.4), rtol=1e-12)
    # forward over reverse
    h = xlapy.jacfwd(xlapy.grad(lambda x: f(x).sum()))(X)
    np.testing.assert_allclose(h, np.diag(-3 * np.sin(X)), rtol=1e-12)


def test_custom_jvp_vmap():
    g = xlapy.vmap(xlapy.grad(lambda x: f(x)))(X)
    np.testing.assert_allclose(g, 3 * np.cos(X))
    np.testing.assert_allclose(xlapy.vmap(f)(X), np.sin(X))


def test_custom_jvp_stable_log1pexp():
    @xlapy.custom_jvp
    def log1pexp(x):
        return xnp.log(1.0 + xnp.exp(x))

    @log1pexp.defjvp
    def _(primals, tangents):
        x, = primals
        t, = tangents
        return log1pexp(x), t * (1.0 - 1.0 / (1.0 + xnp.exp(x)))
    g = xlapy.jit(xlapy.grad(log1pexp))(100.0)
    assert np.isfinite(g) and abs(g - 1.0) < 1e-12


def test_defjvps_and_pytrees():
    @xlapy.custom_jvp
    def g(x, y):
        return x * y

    g.defjvps(lambda xt, ans, x, y: 2.0 * xt * y, lambda yt, ans, x, y: x * yt)
    gx, gy = xlapy.grad(lambda x, y: g(x, y).sum(), argnums=(0, 1))(X, 2 * X)
    np.testing.assert_allclose(gx, 2 * 2 * X)
    np.testing.assert_allclose(gy, X)

    @xlapy.custom_jvp
    def h(d):
        return {"s": d["a"] * d["b"]}

    @h.defjvp
    def _(primals, tangents):
        d, = primals
        t, = tangents
        return h(d), {"s": t["a"] * d["b"] + d["a"] * t["b"]}
    grads = xlapy.grad(lambda d: h(d)["s"].sum())({"a": X, "b": 3 * X})
    np.testing.assert_allclose(grads["a"], 3 * X)
    np.testing.assert_allclose(grads["b"], X)


def test_custom_jvp_nondiff_argnums():
    @partial(xlapy.custom_jvp, nondiff_argnums=(0,))
    def scale(n, x):
        return x * n

    def rule(n, primals, tangents):
        return scale(n, primals[0]), tangents[0] * (n + 1)
    scale.defjvp(rule)
    np.testing.assert_allclose(xlapy.grad(lambda x: scale(2.0, x).sum())(X), np.full(3, 3.0))


def test_custom_jvp_closure_over_tracer():
    def outer(x, y):
        @xlapy.custom_jvp
        def g(x):
            return x * y

        @g.defjvp
        def _(p, t):
            return g(p[0]), t[0] * y * 2.0
        return xlapy.grad(lambda x: g(x).sum())(x)
    np.testing.assert_allclose(xlapy.jit(outer)(X, 5.0), np.full(3, 10.0))


def test_custom_jvp_errors():
    @xlapy.custom_jvp
    def nojvp(x):
        return x
    with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function nojvp"):
        xlapy.jit(nojvp)(1.0)

    @xlapy.custom_jvp
    def bad(x):
        return x

    bad.defjvp(lambda p, t: (p[0], (t[0], t[0])))
    with pytest.raises(xlapy.XlapyError, match="equal container"):
        xlapy.grad(bad)(1.0)

    bad.defjvp(lambda p, t: p[0])
    with pytest.raises(xlapy.XlapyError, match="must produce a pair"):
        xlapy.grad(bad)(1.0)


# -- custom_vjp ---------------------------------------------------------------------------------------------
@xlapy.custom_vjp
def clip_grad(x, bound):
    return x


def _clip_fwd(x, bound):
    return x, {"bound": bound, "x": x}            # pytree residuals


def _clip_bwd(res, g):
    return (xnp.clip(g, -res["bound"], res["bound"]), None)


clip_grad.defvjp(_clip_fwd, _clip_bwd)


@pytest.mark.parametrize("wrap", [lambda g: g, xlapy.jit], ids=["eager", "jit"])
def test_custom_vjp_rule_used(wrap):
    loss = lambda x: (100.0 * clip_grad(x, 1.5)).sum()
    np.testing.assert_allclose(wrap(xlapy.grad(loss))(X), np.full(3, 1.5))
    np.testing.assert_allclose(clip_grad(X, 1.5), X)
    _, pull = xlapy.vjp(lambda x: clip_grad(x, 0.5), X)
    np.testing.assert_allclose(pull(np.array([2.0, -2.0, 0.1]))[0], [0.5, -0.5, 0.1])


def test_custom_vjp_fwd_calls_function_and_residual_math():
    @xlapy.custom_vjp
    def sq(x):
        return x * x

    def fwd(x):
        return sq(x), (x, xnp.cos(x))

    def bwd(res, g):
        x, c = res
        return (g * (2 * x + c),)
    sq.defvjp(fwd, bwd)
    np.testing.assert_allclose(xlapy.grad(lambda x: sq(x).sum())(X), 2 * X + np.cos(X))
    np.testing.assert_allclose(xlapy.vmap(xlapy.grad(sq))(X), 2 * X + np.cos(X))
    # grad of grad differentiates bwd: d/dx (2x + cos x) = 2 - sin x
    np.testing.assert_allclose(xlapy.grad(xlapy.grad(sq))(0.4), 2 - np.sin(0.4), rtol=1e-12)


def test_custom_vjp_nondiff_argnums_and_jvp_error():
    @partial(xlapy.custom_vjp, nondiff_argnums=(0,))
    def power(n, x):
        return x ** n
    power.defvjp(lambda n, x: (power(n, x), x), lambda n, x, g: (g * n * x ** (n - 1) * 10.0,))
    np.testing.assert_allclose(xlapy.grad(lambda x: power(3, x))(2.0), 120.0)
    with pytest.raises(xlapy.XlapyError, match="can't apply forward-mode autodiff"):
        xlapy.jvp(lambda x: power(3, x), (2.0,), (1.0,))


def test_custom_vjp_errors():
    @xlapy.custom_vjp
    def g(x, y):
        return x * y
    with pytest.raises(AttributeError, match="No VJP defined"):
        xlapy.jit(g)(1.0, 2.0)
    g.defvjp(lambda x, y: (x * y, (x, y)), lambda res, ct: (ct,))
    with pytest.raises(xlapy.XlapyError, match="must produce a tuple of length equal"):
        xlapy.grad(g)(1.0, 2.0)
    g.defvjp(lambda x, y: (x * y, (x, y)), lambda res, ct: (ct, np.ones(3)))
    with pytest.raises(xlapy.XlapyError, match="same shape/dtypes"):
        xlapy.grad(g)(1.0, 2.0)
    g.defvjp(lambda x, y: x * y, lambda res, ct: (ct, ct))
    with pytest.raises(xlapy.XlapyError, match="must produce a pair"):
        xlapy.grad(g)(1.0, 2.0)


def test_marked_call_is_a_plain_call_for_backends():
    text = xlapy.jit(xlapy.grad(lambda x: f(x).sum())).lower(X).as_text()
    assert "custom-call" not in text
    compiled = xlapy.jit(xlapy.grad(lambda x: f(x).sum())).lower(X).compile().as_text()
    assert "xlapy_rule" not in compiled or " call(" not in compiled
    assert lax is not None


def test_rules_survive_vmap():
    # the derivative is taken after vmap: vmap keeps the marked call, with batched rule computations
    np.testing.assert_allclose(xlapy.grad(lambda x: xlapy.vmap(f)(x).sum())(X), 3 * np.cos(X))
    np.testing.assert_allclose(xlapy.jit(xlapy.grad(lambda x: xlapy.vmap(f)(x).sum()))(X), 3 * np.cos(X))
    np.testing.assert_allclose(xlapy.jvp(xlapy.vmap(f), (X,), (np.ones(3),))[1], 3 * np.cos(X))

    @xlapy.custom_vjp
    def g(x, w):
        return x * w

    g.defvjp(lambda x, w: (g(x, w), (x, w)), lambda r, ct: (ct * r[1] * 10.0, ct * r[0]))
    gx, gw = xlapy.grad(lambda x, w: xlapy.vmap(g, in_axes=(0, None))(x, w).sum(), argnums=(0, 1))(X, 2.0)
    np.testing.assert_allclose(gx, np.full(3, 20.0))
    np.testing.assert_allclose(gw, X.sum())


def test_eager_loops_do_not_grow_the_registry_or_recompile():
    from xlapy.frontend.autodiff.custom_rules import RULES
    from xlapy.frontend.eager import eager_stats
    loss = lambda x: f(x).sum()
    ck = xlapy.checkpoint(lambda x: xnp.sin(xnp.sin(x)).sum())
    for _ in range(2):                                  # warm up
        xlapy.grad(loss)(X), xlapy.grad(ck)(X), xlapy.vmap(f)(X), xlapy.jvp(f, (X,), (X,))
    before, compiles = len(RULES), eager_stats()["compiles"]
    for _ in range(3):
        np.testing.assert_allclose(xlapy.grad(loss)(X), 3 * np.cos(X))
        xlapy.grad(ck)(X), xlapy.vmap(f)(X), xlapy.jvp(f, (X,), (X,))
    assert len(RULES) == before
    assert eager_stats()["compiles"] == compiles


def test_custom_gradient():
    @xlapy.custom_gradient
    def g(x):
        y = xnp.sin(x)
        return y, lambda ct: (ct * xnp.cos(x) * 2.0,)
    np.testing.assert_allclose(g(X), np.sin(X))
    for wrap in (lambda h: h, xlapy.jit):
        np.testing.assert_allclose(wrap(xlapy.grad(lambda x: g(x).sum()))(X), 2 * np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(xlapy.vmap(xlapy.grad(g))(X), 2 * np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(xlapy.grad(lambda x: xlapy.vmap(g)(x).sum())(X), 2 * np.cos(X), rtol=1e-12)
