"""An MNIST-style training step: a 784-32-10 MLP (relu, log-softmax cross-entropy) on random data, its
gradient and an SGD update under one jit; the loss must go down over 20 steps."""
import numpy as np
import pytest

import xlapy
from xlapy import lax

BATCH, IN, HIDDEN, OUT = 64, 784, 32, 10
LEARNING_RATE = 0.05


def init_params(rng):
    return {"w1": (rng.standard_normal((IN, HIDDEN)) / np.sqrt(IN)).astype(np.float32),
            "b1": np.zeros(HIDDEN, np.float32),
            "w2": (rng.standard_normal((HIDDEN, OUT)) / np.sqrt(HIDDEN)).astype(np.float32),
            "b2": np.zeros(OUT, np.float32)}


def log_softmax(z):
    shifted = z - lax.stop_gradient(z.max(axis=-1, keepdims=True))
    return shifted - lax.log(lax.exp(shifted).sum(axis=-1, keepdims=True))


def loss_fn(params, images, labels):
    h = lax.max(images @ params["w1"] + params["b1"], 0.0)
    logits = h @ params["w2"] + params["b2"]
    return -(labels * log_softmax(logits)).sum() / images.shape[0]


def train_step(params, images, labels):
    loss, grads = xlapy.value_and_grad(loss_fn)(params, images, labels)
    new = xlapy.tree_util.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)
    return new, loss


def reference_grads(params, images, labels):
    """The same gradients by hand in numpy."""
    pre = images @ params["w1"] + params["b1"]
    h = np.maximum(pre, 0)
    logits = h @ params["w2"] + params["b2"]
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dlogits = (p - labels) / images.shape[0]
    dh = dlogits @ params["w2"].T * (pre > 0)
    return {"w1": images.T @ dh, "b1": dh.sum(0), "w2": h.T @ dlogits, "b2": dlogits.sum(0)}


def reference_loss(params, images, labels):
    h = np.maximum(images @ params["w1"] + params["b1"], 0)
    logits = h @ params["w2"] + params["b2"]
    z = logits - logits.max(-1, keepdims=True)
    return float(-(labels * (z - np.log(np.exp(z).sum(-1, keepdims=True)))).sum() / images.shape[0])


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    images = rng.random((BATCH, IN), dtype=np.float32)
    labels = np.eye(OUT, dtype=np.float32)[rng.integers(0, OUT, BATCH)]
    return init_params(rng), images, labels


def test_gradients_match_the_hand_written_backward_pass(data):
    params, images, labels = data
    grads = xlapy.jit(xlapy.grad(loss_fn))(params, images, labels)
    expected = reference_grads(params, images, labels)
    for key in params:
        assert grads[key].dtype == np.float32 and grads[key].shape == params[key].shape
        np.testing.assert_allclose(np.asarray(grads[key]), expected[key], rtol=1e-3, atol=1e-5, err_msg=key)


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_loss_decreases_over_20_sgd_steps(data, backend):
    params, images, labels = data
    step = xlapy.jit(train_step, backend=backend)
    losses = []
    for _ in range(20):
        params, loss = step(params, images, labels)
        losses.append(float(loss))
    assert step.trace_count == 1
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.85 * losses[0], losses
    np.testing.assert_allclose(float(loss_fn(params, images, labels)), reference_loss(params, images, labels),
                               rtol=1e-5)
