"""Reverse mode through long static loops (fori_loop / scan of any length): a taped forward loop and a
reverse loop (xlapy/frontend/autodiff/loops.py), checked against central finite differences in f64 and
against the unrolled derivative, eagerly and under jit, to second order."""
import re

import numpy as np
import pytest

import xlapy
from xlapy import lax
from xlapy.frontend.autodiff import vjp as vjp_driver
from xlapy.testing import numerical_grad

rng = np.random.default_rng(3)
H, D = 4, 3
W = rng.standard_normal((H, H)) * 0.4
U = rng.standard_normal((H, D)) * 0.5


pytestmark = pytest.mark.usefixtures("x64")      # the conftest fixture, for every test here


@pytest.fixture
def always_taped(monkeypatch):
    """Send every static loop through the taped path, however short."""
    monkeypatch.setattr(vjp_driver, "MAX_UNROLL", 0)


def fori_loss(n):
    def f(x):
        def body(i, c):
            return 0.98 * c + 0.05 * lax.sin(c * x + lax.convert_element_type(i, np.float64) * 0.01)
        return (lax.fori_loop(0, n, body, x) ** 2).sum()
    return f


def rnn_loss(n):
    """h = tanh(W h + U x_t) over n steps; loss = sum of all outputs h_t."""
    def f(h0, xs, w):
        def step(h, x):
            h = lax.tanh(w @ h + U @ x)
            return h, h
        _, hs = lax.scan(step, h0, xs[:n])
        return hs.sum()
    return f


H0 = rng.standard_normal(H) * 0.5
XS = rng.standard_normal((150, D))
X3 = np.array([0.3, -0.7, 1.1])


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_fori_loop_of_200_steps_matches_finite_differences(jit):
    f = fori_loss(200)
    g = xlapy.grad(f)
    g = xlapy.jit(g) if jit else g
    np.testing.assert_allclose(g(X3), numerical_grad(f, X3), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_scan_rnn_of_150_steps_matches_finite_differences(jit):
    f = rnn_loss(150)
    g = xlapy.grad(f, argnums=(0, 1, 2))
    g = xlapy.jit(g) if jit else g
    grads = g(H0, XS, W)
    # one central difference along a random direction in (h0, xs, w) checks all three gradients at once
    dirs = [rng.standard_normal(a.shape) for a in (H0, XS, W)]
    f_jit, eps = xlapy.jit(f), 1e-6
    plus = f_jit(*[a + eps * d for a, d in zip((H0, XS, W), dirs)])
    minus = f_jit(*[a - eps * d for a, d in zip((H0, XS, W), dirs)])
    fd = (float(plus) - float(minus)) / (2 * eps)
    np.testing.assert_allclose(sum(float((gi * d).sum()) for gi, d in zip(grads, dirs)), fd, rtol=1e-7)
    # and one row of xs in the middle of the sequence entry by entry
    def f_row(x_r):
        return f(H0, lax.dynamic_update_index_in_dim(XS, x_r, 77, 0), W)
    np.testing.assert_allclose(grads[1][77], numerical_grad(f_row, XS[77]), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_taped_loop_agrees_with_the_unrolled_loop(jit, monkeypatch):
    def grads():
        g1 = xlapy.grad(fori_loss(30))
        g2 = xlapy.grad(rnn_loss(30), argnums=(0, 1, 2))
        if jit:
            g1, g2 = xlapy.jit(g1), xlapy.jit(g2)
        return [g1(X3), *g2(H0, XS, W)]
    unrolled = grads()
    monkeypatch.setattr(vjp_driver, "MAX_UNROLL", 0)
    taped = grads()
    for a, b in zip(unrolled, taped):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)


def test_taped_loop_keeps_the_loop_and_tapes_only_the_carry():
    text = xlapy.jit(xlapy.grad(rnn_loss(150), argnums=(0, 1, 2))).lower(H0, XS, W).as_text()
    assert text.count("while(") == 2                   # forward (taped) and reverse loop, nothing unrolled
    # the tape is 150 x the carry; xs (f64[150,3], loop invariant) and ys (f64[150,4], write-only) are not
    # saved per step, so no f64[150,150,...] buffer exists
    assert "f64[150,4]" in text
    assert not re.search(r"f64\[150,150", text)


def test_fori_loop_with_a_nonzero_start_and_an_integer_carry(always_taped):
    def f(x):
        def body(i, c):
            k, v = c
            return k + i % 3, v * lax.cos(v + lax.convert_element_type(k, np.float64) * 0.1)
        return lax.fori_loop(5, 17, body, (np.int64(1), x))[1].sum()
    np.testing.assert_allclose(xlapy.grad(f)(X3), numerical_grad(f, X3), rtol=1e-6, atol=1e-9)


def test_nested_taped_loops(always_taped):
    def f(x):
        def outer(i, c):
            return lax.fori_loop(0, 4, lambda j, d: d * 0.9 + 0.1 * lax.cos(d * x), c) * 1.01
        return lax.fori_loop(0, 5, outer, x).sum()
    np.testing.assert_allclose(xlapy.grad(f)(X3), numerical_grad(f, X3), rtol=1e-6, atol=1e-9)


def test_second_order_through_a_taped_loop(monkeypatch):
    def f(x):
        return lax.fori_loop(0, 6, lambda i, c: c * lax.sin(c) + x, x)
    unrolled = xlapy.grad(xlapy.grad(f))(0.4)
    monkeypatch.setattr(vjp_driver, "MAX_UNROLL", 0)
    df = xlapy.grad(f)
    d2 = xlapy.grad(df)(0.4)
    np.testing.assert_allclose(d2, unrolled, rtol=1e-12)
    fd = (df(0.4 + 1e-6) - df(0.4 - 1e-6)) / 2e-6   # the third derivative is large: small eps
    np.testing.assert_allclose(d2, fd, rtol=1e-6)


def test_data_dependent_while_loop_still_raises():
    def f(x):
        return lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)
    with pytest.raises(xlapy.XlapyError, match="reverse-mode differentiation of while_loop is not supported; "
                                               "use fori_loop with static bounds or scan"):
        xlapy.grad(f)(1.5)
