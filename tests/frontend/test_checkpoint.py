"""checkpoint / remat: gradients equal the plain ones for every policy; the saved-residual choice shows in the
HLO (dots recomputed in the backward pass with nothing_saveable, not with dots_saveable / everything_saveable;
the number of values the forward call hands to the backward pass), prevent_cse, static_argnums, names."""
import re

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import checkpoint_policies as cp
from xlapy.ad_checkpoint import checkpoint_name

pytestmark = pytest.mark.usefixtures("x64")
rng = np.random.default_rng(3)
W1, W2, X = rng.standard_normal((5, 5)), rng.standard_normal((5, 5)), rng.standard_normal(5)


def net(w1, w2, x):
    h = xnp.tanh(w1 @ x)
    return xnp.sin(w2 @ h).sum()


def named_net(w1, w2, x):
    h = checkpoint_name(xnp.tanh(w1 @ x), "hidden")
    return xnp.sin(w2 @ h).sum()


POLICIES = {
    "default": None,
    "everything": cp.everything_saveable,
    "nothing": cp.nothing_saveable,
    "dots": cp.dots_saveable,
    "dots_no_batch": cp.dots_with_no_batch_dims_saveable,
    "only_hidden": cp.save_only_these_names("hidden"),
    "names_but_hidden": cp.save_any_names_but_these("hidden"),
    "except_hidden": cp.save_anything_except_these_names("hidden"),
    "both": cp.save_from_both_policies(cp.dots_saveable, cp.save_only_these_names("hidden")),
}


@pytest.mark.parametrize("name", list(POLICIES))
def test_gradients_match(name):
    ref = xlapy.grad(named_net, argnums=(0, 1, 2))(W1, W2, X)
    f = xlapy.checkpoint(named_net, policy=POLICIES[name])
    for wrap in (lambda g: g, xlapy.jit):
        got = wrap(xlapy.value_and_grad(f, argnums=(0, 1, 2)))(W1, W2, X)
        np.testing.assert_allclose(got[0], named_net(W1, W2, X), rtol=1e-12)
        for a, b in zip(got[1], ref):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _optimized_dots(policy) -> int:
    f = xlapy.remat(net, policy=policy)
    text = xlapy.jit(xlapy.value_and_grad(f, argnums=(0, 1))).lower(W1, W2, X).compile().as_text()
    return len(re.findall(r" dot\(", text))


def test_recomputation_shows_in_the_optimized_hlo():
    everything, nothing, dots = (_optimized_dots(p) for p in
                                 (cp.everything_saveable, cp.nothing_saveable, cp.dots_saveable))
    # forward 2 dots; backward: 2 for w2's and w1's cotangents, 1 for h's; nothing_saveable recomputes both
    # forward dots behind the opt-barrier (CSE cannot merge them with the forward's)
    assert everything == 5
    assert nothing == everything + 2
    assert dots == everything


def _forward_outputs(policy, fun=net) -> int:
    """How many values the forward call returns: the outputs plus the residuals the policy saves."""
    f = xlapy.checkpoint(fun, policy=policy)
    text = xlapy.jit(xlapy.grad(f)).lower(W1, W2, X).as_text()
    m = re.search(r"= \(([^)]*)\) call\([^\n]*remat_fwd", text)
    assert m, text
    return len(m.group(1).split(","))


def test_saved_residuals_are_the_policy_choice():
    assert _forward_outputs(cp.nothing_saveable) == 1                  # the loss only
    assert _forward_outputs(cp.dots_saveable) == 3                     # + both dots
    assert _forward_outputs(cp.save_only_these_names("hidden"), named_net) == 2
    assert _forward_outputs(cp.save_any_names_but_these("other"), named_net) == 2
    assert _forward_outputs(cp.save_any_names_but_these("hidden"), named_net) == 1
    # everything_saveable is the plain derivative: no forward call is made
    text = xlapy.jit(xlapy.grad(xlapy.checkpoint(net, policy=cp.everything_saveable))).lower(W1, W2, X).as_text()
    assert "remat_fwd" not in text


def test_prevent_cse_false_lets_the_optimizer_merge():
    text_on = xlapy.jit(xlapy.grad(xlapy.checkpoint(net))).lower(W1, W2, X).as_text()
    text_off = xlapy.jit(xlapy.grad(xlapy.checkpoint(net, prevent_cse=False))).lower(W1, W2, X).as_text()
    assert "opt-barrier" in text_on and "opt-barrier" not in text_off
    # the barrier holds the inputs and the output cotangent: the recomputation waits for the backward pass
    assert re.search(r"opt-barrier\(\(f64\[5,5\], f64\[5,5\], f64\[5\], f64\[\]\)", text_on), text_on
    got = xlapy.jit(xlapy.grad(xlapy.checkpoint(net, prevent_cse=False)))(W1, W2, X)
    np.testing.assert_allclose(got, xlapy.grad(net)(W1, W2, X), rtol=1e-10)


def test_static_argnums_and_decorator():
    @xlapy.checkpoint
    def layer(x):
        return xnp.sin(xnp.sin(x))

    def f(x, n):
        for _ in range(n):
            x = layer(x)
        return x.sum()
    g = xlapy.grad(lambda x: f(x, 3))(X)
    np.testing.assert_allclose(g, _fd(lambda x: f(x, 3), X), rtol=1e-6)

    def powered(x, n):
        return (x ** n).sum()
    h = xlapy.checkpoint(powered, static_argnums=(1,))
    np.testing.assert_allclose(xlapy.grad(lambda x: h(x, 3))(X), 3 * X ** 2)
    np.testing.assert_allclose(h(X, 2), (X ** 2).sum())


def _fd(f, x, eps=1e-6):
    from xlapy.testing import numerical_grad
    return numerical_grad(f, x, eps)


def test_second_order_and_vmap():
    f = xlapy.checkpoint(lambda x: xnp.sin(x) * x)
    np.testing.assert_allclose(xlapy.grad(xlapy.grad(f))(0.5), 2 * np.cos(0.5) - 0.5 * np.sin(0.5), rtol=1e-12)
    np.testing.assert_allclose(xlapy.vmap(xlapy.grad(f))(X), np.cos(X) * X + np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(xlapy.grad(lambda x: xlapy.vmap(f)(x).sum())(X), np.cos(X) * X + np.sin(X),
                               rtol=1e-12)
    out, t = xlapy.jvp(f, (X,), (np.ones(5),))
    np.testing.assert_allclose(t, np.cos(X) * X + np.sin(X), rtol=1e-12)


def test_checkpoint_through_scan():
    def body(c, w):
        return xnp.tanh(c * w), None

    def loss(ws, c0):
        c, _ = xlapy.lax.scan(xlapy.checkpoint(body), c0, ws)
        return c.sum()
    ws = rng.standard_normal((4, 3))
    c0 = rng.standard_normal(3)
    plain = xlapy.grad(lambda ws, c: xlapy.lax.scan(body, c, ws)[0].sum())(ws, c0)
    np.testing.assert_allclose(xlapy.jit(xlapy.grad(loss))(ws, c0), plain, rtol=1e-10)


def test_bad_inputs():
    with pytest.raises(TypeError, match="callable"):
        xlapy.checkpoint(3)
    with pytest.raises(xlapy.XlapyError, match="static"):
        xlapy.jit(xlapy.checkpoint(net, static_argnums=(7,)))(W1, W2, X)


def test_remat_survives_vmap():
    c = xlapy.checkpoint(lambda x: xnp.sin(xnp.sin(x)))
    loss = lambda x: xlapy.vmap(c)(x).sum()
    np.testing.assert_allclose(xlapy.grad(loss)(X), np.cos(np.sin(X)) * np.cos(X), rtol=1e-12)
    assert "remat_fwd" in xlapy.jit(xlapy.grad(loss)).lower(X).as_text()


def test_static_argnames_and_offload_policies():
    f = xlapy.checkpoint(lambda x, mode="a": xnp.sin(x) if mode == "a" else xnp.cos(x), static_argnames="mode")
    np.testing.assert_allclose(xlapy.grad(lambda x: f(x, mode="b").sum())(X), -np.sin(X), rtol=1e-12)
    assert cp.offload_dot_with_no_batch_dims("device", "pinned_host") is cp.dots_with_no_batch_dims_saveable
    pol = cp.save_and_offload_only_these_names(names_which_can_be_saved=["hidden"],
                                               names_which_can_be_offloaded=[], offload_src="device",
                                               offload_dst="pinned_host")
    assert _forward_outputs(pol, named_net) == 2
    g = xlapy.checkpoint(net, prevent_cse=(True, False, False))
    np.testing.assert_allclose(xlapy.grad(g)(W1, W2, X), xlapy.grad(net)(W1, W2, X), rtol=1e-10)
