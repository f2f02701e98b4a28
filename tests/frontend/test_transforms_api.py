"""jacfwd, jacrev, jacobian, hessian, linearize, linear_transpose against JAX's outputs (transform_data/, from
tools/gen_transform_data.py) and finite differences; order-2 combinations (fwd-over-rev, rev-over-fwd, ...);
pytrees in and out, argnums, has_aux; JAX's errors."""
from pathlib import Path

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.testing import numerical_grad

pytestmark = pytest.mark.usefixtures("x64")
REF = np.load(Path(__file__).parent / "transform_data" / "jax_transforms.npz")
X = np.linspace(-1.0, 1.2, 6).reshape(2, 3)
Y = np.array([0.5, -1.5, 2.0])


def f_vec(x, y):
    return xnp.tanh(x @ y) * xnp.sum(x ** 2, axis=1)


def f_tree(p):
    h = xnp.sin(p["w"]).sum(0) + p["b"] ** 3
    return h, xnp.sum(h * p["b"])


def f_scalar(x):
    return xnp.sum(xnp.exp(-x ** 2) * xnp.cos(3.0 * x))


JACS = {"jacfwd": xlapy.jacfwd, "jacrev": xlapy.jacrev}


@pytest.mark.parametrize("name", list(JACS))
@pytest.mark.parametrize("wrap", [lambda g: g, xlapy.jit], ids=["eager", "jit"])
def test_jacobians_against_jax(name, wrap):
    jac = JACS[name]
    jx, jy = wrap(jac(f_vec, argnums=(0, 1)))(X, Y)
    np.testing.assert_allclose(jx, REF[f"{name}_vec_x"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(jy, REF[f"{name}_vec_y"], rtol=1e-12, atol=1e-14)
    h, s = wrap(jac(f_tree))({"w": X, "b": Y})
    assert set(h) == {"w", "b"} and set(s) == {"w", "b"}
    for key, got in (("hw", h["w"]), ("hb", h["b"]), ("sw", s["w"]), ("sb", s["b"])):
        np.testing.assert_allclose(got, REF[f"{name}_tree_{key}"], rtol=1e-12, atol=1e-14)


def test_jacobian_is_jacrev_and_int_argnums_shape():
    assert xlapy.jacobian is xlapy.jacrev
    j = xlapy.jacrev(f_vec)(X, Y)
    assert j.shape == (2, 2, 3)
    j = xlapy.jacfwd(f_vec, argnums=1)(X, Y)
    assert j.shape == (2, 3)


def test_hessian_against_jax():
    np.testing.assert_allclose(xlapy.hessian(f_scalar)(X), REF["hessian_scalar"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(xlapy.jit(xlapy.hessian(lambda y: f_vec(X, y).sum()))(Y), REF["hessian_vec_y"],
                               rtol=1e-12, atol=1e-14)


def test_order_two_combinations_by_finite_differences():
    g = lambda y: f_vec(X, y).sum()
    fd = np.stack([numerical_grad(lambda y, i=i: xlapy.grad(g)(y)[i], Y) for i in range(3)])
    for name, h in (("fwd-over-rev", xlapy.jacfwd(xlapy.jacrev(g))), ("rev-over-fwd", xlapy.jacrev(xlapy.jacfwd(g))),
                    ("rev-over-rev", xlapy.jacrev(xlapy.grad(g))), ("fwd-over-fwd", xlapy.jacfwd(xlapy.jacfwd(g)))):
        np.testing.assert_allclose(h(Y), fd, rtol=1e-6, atol=1e-8, err_msg=name)


def test_has_aux():
    jac, aux = xlapy.jacfwd(lambda x: (xnp.sin(x), {"n": x.sum()}), has_aux=True)(Y)
    np.testing.assert_allclose(jac, np.diag(np.cos(Y)))
    np.testing.assert_allclose(aux["n"], Y.sum())
    jac, aux = xlapy.jacrev(lambda x: (xnp.sin(x), x * 2), has_aux=True)(Y)
    np.testing.assert_allclose(jac, np.diag(np.cos(Y)))
    np.testing.assert_allclose(aux, 2 * Y)
    hess, aux = xlapy.hessian(lambda x: ((x ** 3).sum(), x), has_aux=True)(Y)
    np.testing.assert_allclose(hess, np.diag(6 * Y))


def test_jacobian_errors():
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
        xlapy.jacfwd(lambda x: x * 2)(np.arange(3))
    with pytest.raises(TypeError, match="jacrev requires real-valued inputs"):
        xlapy.jacrev(lambda x: x * 2)(np.arange(3))
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
        xlapy.jacrev(lambda x: (x > 0).astype(np.int32))(Y)
    with pytest.raises(xlapy.XlapyError, match="argnums"):
        xlapy.jacfwd(f_vec, argnums=3)(X, Y)


def test_linearize_against_jax():
    y, f_jvp = xlapy.linearize(f_vec, X, Y)
    np.testing.assert_allclose(y, REF["linearize_out"], rtol=1e-12)
    np.testing.assert_allclose(f_jvp(np.ones_like(X), Y), REF["linearize_t"], rtol=1e-12)
    np.testing.assert_allclose(xlapy.jit(f_jvp)(np.ones_like(X), Y), REF["linearize_t"], rtol=1e-12)
    with pytest.raises(ValueError, match="inconsistent with the original primal"):
        f_jvp(np.ones(3), Y)
    y, f_jvp, aux = xlapy.linearize(lambda x: (xnp.sin(x), x.sum()), Y, has_aux=True)
    np.testing.assert_allclose(f_jvp(np.ones(3)), np.cos(Y))
    np.testing.assert_allclose(aux, Y.sum())


def test_linear_transpose_against_jax():
    lt = xlapy.linear_transpose(lambda x: (2.0 * x[:, ::-1]).sum(0), X)
    (got,) = lt(Y)
    np.testing.assert_allclose(got, REF["linear_transpose"])
    lt2 = xlapy.linear_transpose(lambda a, b: a @ b, xlapy.ShapeDtypeStruct((2, 3), np.float64), Y)
    ga, gb = lt2(np.array([1.0, 2.0]))
    np.testing.assert_allclose(ga, np.zeros((2, 3)) + np.outer([1.0, 2.0], np.zeros(3)))  # b = 0: a's part is 0
    with pytest.raises(TypeError, match="cotangent"):
        lt(np.ones(4))
    with pytest.raises(TypeError, match="linear_transpose only supports"):
        xlapy.linear_transpose(lambda x: x, np.arange(3))


def test_custom_rules_against_jax():
    @xlapy.custom_jvp
    def soft(x):
        return xnp.log1p(xnp.exp(x))

    @soft.defjvp
    def _(p, t):
        x, = p
        return soft(x), t[0] * xlapy.nn.sigmoid(x) * 2.0
    np.testing.assert_allclose(xlapy.grad(lambda x: soft(x).sum())(X), REF["custom_jvp_grad"], rtol=1e-12)
    np.testing.assert_allclose(xlapy.hessian(lambda y: soft(y).sum())(Y), REF["custom_jvp_hess"], rtol=1e-12)

    @xlapy.custom_vjp
    def clip(x):
        return x

    clip.defvjp(lambda x: (x, None), lambda _, g: (xnp.clip(g, -0.5, 0.5),))
    np.testing.assert_allclose(xlapy.grad(lambda x: (clip(x) * Y * 3.0).sum())(X), REF["custom_vjp_grad"])
    g = xlapy.grad(xlapy.checkpoint(f_scalar, policy=xlapy.checkpoint_policies.dots_saveable))(X)
    np.testing.assert_allclose(g, REF["checkpoint_grad"], rtol=1e-12)


def test_jacobians_through_loops():
    # jacfwd is vmap of jvp: the JVP of a loop keeps a flat carry (carry..., tangents...) that vmap can batch
    def loop(x):
        return xlapy.lax.fori_loop(0, 5, lambda i, v: xnp.sin(v) * 1.1 + i, x)

    def scan_sum(x):
        c, ys = xlapy.lax.scan(lambda c, w: (xnp.tanh(c * w), c), x, np.array([0.5, 1.5, -1.0]))
        return c + ys.sum(0)
    for f in (loop, scan_sum):
        jf, jr = xlapy.jacfwd(f)(Y), xlapy.jacrev(f)(Y)
        np.testing.assert_allclose(jf, jr, rtol=1e-10, atol=1e-12)
        fd = np.stack([numerical_grad(lambda y, i=i: f(y)[i], Y) for i in range(3)])
        np.testing.assert_allclose(jf, fd, rtol=1e-6, atol=1e-8)
    h = xlapy.hessian(lambda x: loop(x).sum())(Y)
    np.testing.assert_allclose(h, h.T, rtol=1e-10, atol=1e-12)
