"""The models, data and training step of `make demo` (examples/digits_demo.py), written as JAX code is.

Everything here is JAX's API with `jax` spelled `xlapy`: the same file runs under JAX by changing the
imports. The models take NHWC images (batch, 8, 8, 1) of scikit-learn's handwritten digits:

  mlp: flatten -> dense 64x128 -> relu -> dense 128x10            (softmax cross-entropy)
  cnn: conv 3x3 (SAME, 1->C) -> relu -> max-pool 2x2 -> flatten -> dense (16*C)x10
       (the max-pool is lax.reduce_window; `max_pool_2x2_by_reshape` is the same function for backends
       that still run reduce_window's gradient, select-and-scatter, slowly)

The training step is one pure function
`step(params, velocity, images, labels, learning_rate) -> (params, velocity, loss)`: value_and_grad of the
loss, then SGD with momentum (the learning rate is an argument so a schedule does not retrace). `numpy_mlp_step` is the same MLP step by hand in numpy
(forward and backward), the baseline of the timing table.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import xlapy
import xlapy.nn as nn
import xlapy.numpy as xnp
from xlapy import lax

NUM_CLASSES = 10
Params = dict[str, Any]


# -- data -------------------------------------------------------------------------------------------

def load_digits_split(test_fraction: float = 0.2, seed: int = 0, limit: int | None = None):
    """scikit-learn's 8x8 digits as NHWC float32 in [0, 1] and int32 labels, split at random (fixed seed)
    into (train_images, train_labels, test_images, test_labels). `limit` keeps a random subset first."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[..., None]
    labels = digits.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(images))
    if limit is not None:
        order = order[:limit]
    n_test = int(round(test_fraction * len(order)))
    test, train = order[:n_test], order[n_test:]
    return images[train], labels[train], images[test], labels[test]


# -- parameters ---------------------------------------------------------------------------------------

def _normal_sampler(seed: int) -> tuple[Callable[[tuple[int, ...]], np.ndarray], str]:
    """A function shape -> standard normal float32 samples, from xlapy.random when it works, else numpy."""
    try:
        import xlapy.random as xrandom
        keys = [xrandom.PRNGKey(seed)]

        def sample(shape):
            keys[0], sub = xrandom.split(keys[0])
            return np.asarray(xrandom.normal(sub, shape, np.float32))
        sample((2,))
        return sample, "xlapy.random (threefry)"
    except Exception as e:  # noqa: BLE001 -- any failure of a module still being written: say it, go on
        rng = np.random.default_rng(seed)
        return (lambda shape: rng.standard_normal(shape).astype(np.float32),
                f"numpy (xlapy.random failed: {type(e).__name__}: {e})")


def init_mlp(seed: int = 0, hidden: int = 128) -> tuple[Params, str]:
    """He-initialised 64-hidden-10 MLP; returns (params, which generator made them)."""
    normal, source = _normal_sampler(seed)
    return {"w1": normal((64, hidden)) * np.float32(np.sqrt(2 / 64)), "b1": np.zeros(hidden, np.float32),
            "w2": normal((hidden, NUM_CLASSES)) * np.float32(np.sqrt(1 / hidden)),
            "b2": np.zeros(NUM_CLASSES, np.float32)}, source


def init_cnn(seed: int = 0, channels: int = 16) -> tuple[Params, str]:
    """He-initialised conv(3x3x1xC, HWIO) + dense(16C x 10); returns (params, which generator made them)."""
    normal, source = _normal_sampler(seed)
    flat = 4 * 4 * channels
    return {"kernel": normal((3, 3, 1, channels)) * np.float32(np.sqrt(2 / 9)),
            "conv_bias": np.zeros(channels, np.float32),
            "w": normal((flat, NUM_CLASSES)) * np.float32(np.sqrt(1 / flat)),
            "b": np.zeros(NUM_CLASSES, np.float32)}, source


# -- models ------------------------------------------------------------------------------------------

def mlp_logits(params: Params, images):
    x = images.reshape((images.shape[0], 64))
    hidden = nn.relu(x @ params["w1"] + params["b1"])
    return hidden @ params["w2"] + params["b2"]


def max_pool_2x2(x):
    """2x2 max pooling, stride 2, of an NHWC batch: lax.reduce_window (its gradient is select-and-scatter)."""
    return lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def max_pool_2x2_by_reshape(x):
    """The same pooling as a reshape and a max reduction (its gradient is elementwise): the demo's fallback
    where the backends still run select-and-scatter slowly."""
    b, h, w, c = x.shape
    return x.reshape((b, h // 2, 2, w // 2, 2, c)).max(axis=(2, 4))


POOLINGS = {"lax.reduce_window": max_pool_2x2, "reshape+max": max_pool_2x2_by_reshape}


def make_cnn_logits(pool: Callable = max_pool_2x2) -> Callable:
    def cnn_logits(params: Params, images):
        x = lax.conv_general_dilated(images, params["kernel"], (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        x = pool(nn.relu(x + params["conv_bias"]))
        x = x.reshape((images.shape[0], -1))
        return x @ params["w"] + params["b"]
    return cnn_logits


cnn_logits = make_cnn_logits()

# model name -> (init, {variant name: logits function}); the first variant is the one the demo is about
MODELS = {"mlp": (init_mlp, {"dense": mlp_logits}),
          "cnn": (init_cnn, {f"max-pool by {name}": make_cnn_logits(pool) for name, pool in POOLINGS.items()})}


# -- training ------------------------------------------------------------------------------------------

def cross_entropy(logits, labels):
    """Mean softmax cross-entropy of int labels."""
    return -xnp.mean(xnp.sum(nn.one_hot(labels, NUM_CLASSES) * nn.log_softmax(logits), axis=-1))


def make_step(logits_fn: Callable, momentum: float = 0.9) -> Callable:
    """step(params, velocity, images, labels, learning_rate) -> (params, velocity, loss): one SGD-with-momentum
    update. The learning rate is an argument (a traced scalar), so a schedule does not retrace."""
    def loss_fn(params, images, labels):
        return cross_entropy(logits_fn(params, images), labels)

    def step(params, velocity, images, labels, learning_rate):
        loss, grads = xlapy.value_and_grad(loss_fn)(params, images, labels)
        velocity = xlapy.tree_util.tree_map(lambda v, g: momentum * v + g, velocity, grads)
        params = xlapy.tree_util.tree_map(lambda p, v: p - learning_rate * v, params, velocity)
        return params, velocity, loss
    step.__name__ = "train_step"
    return step


def zeros_like_tree(params: Params) -> Params:
    return {k: np.zeros_like(np.asarray(v)) for k, v in params.items()}


def numpy_mlp_step(momentum: float = 0.9) -> Callable:
    """The MLP training step by hand in numpy (forward, backward, momentum update): the baseline."""
    def step(params, velocity, images, labels, learning_rate):
        x = images.reshape(images.shape[0], 64)
        pre = x @ params["w1"] + params["b1"]
        hidden = np.maximum(pre, 0)
        logits = hidden @ params["w2"] + params["b2"]
        shifted = logits - logits.max(axis=-1, keepdims=True)
        exp = np.exp(shifted)
        log_probs = shifted - np.log(exp.sum(axis=-1, keepdims=True))
        one_hot = np.eye(NUM_CLASSES, dtype=np.float32)[labels]
        loss = -(one_hot * log_probs).sum(axis=-1).mean()
        d_logits = (exp / exp.sum(axis=-1, keepdims=True) - one_hot) / np.float32(x.shape[0])
        d_hidden = (d_logits @ params["w2"].T) * (pre > 0)
        grads = {"w1": x.T @ d_hidden, "b1": d_hidden.sum(0), "w2": hidden.T @ d_logits, "b2": d_logits.sum(0)}
        velocity = {k: np.float32(momentum) * velocity[k] + grads[k] for k in params}
        params = {k: params[k] - np.float32(learning_rate) * velocity[k] for k in params}
        return params, velocity, loss
    return step


def cosine_learning_rate(base: float, step: int, total: int) -> np.float32:
    """Cosine decay from `base` to 0 over `total` steps: the last epochs settle instead of jumping around."""
    return np.float32(base * 0.5 * (1 + np.cos(np.pi * min(step, total) / max(total, 1))))


def accuracy(predict: Callable, params: Params, images: np.ndarray, labels: np.ndarray) -> float:
    return float((np.asarray(predict(params, images)).argmax(axis=-1) == labels).mean())
