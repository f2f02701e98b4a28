"""Regenerate the FORWARD (loss) modules whose JAX gradients the corpus records.

    .venv-jax/bin/python tests/frontend/autodiff_data/gen_forward.py

For each corpus gradient program NAME (tests/corpus/jax/NAME.{hlo,npz}: JAX's own gradient, inputs `arg*`
and XLA's outputs `out*`), this writes NAME.fwd.hlo: the unoptimized HLO JAX emits for the loss being
differentiated, with the same parameters; and copies NAME.npz next to it (so the test does not depend on
the corpus being present). The loss functions are those of tools/gen_corpus.py. Tests never import JAX.
"""
import shutil
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parents[1] / "corpus" / "jax"


def conv(x, w, strides=(1, 1), pad="SAME"):
    return lax.conv_general_dilated(x, w, strides, pad, dimension_numbers=("NHWC", "HWIO", "NHWC"))


def mlp_loss(w1, b1, w2, b2, x, y):
    h = jax.nn.relu(x @ w1 + b1)
    logits = h @ w2 + b2
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))


def cnn_loss(w1, b1, w2, x, y):
    h = jax.nn.relu(conv(x, w1) + b1)
    h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = h.reshape(h.shape[0], -1)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ w2) * y, axis=-1))


def attention(q, k, v):
    s = jnp.einsum("bqd,bkd->bqk", q, k) / np.sqrt(q.shape[-1]).astype(np.float32)
    return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, axis=-1), v)


def layernorm(x, g, b):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


# corpus name -> (loss, number of its parameters)
LOSSES = {
    "mlp_train_step": mlp_loss,
    "cnn_fwd_bwd": cnn_loss,
    "conv2d_grads": lambda a, b: jnp.sum(jnp.tanh(conv(a, b, (2, 2), "SAME"))),
    "max_pool_grad": lambda y: jnp.sum(lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") ** 2),
    "avg_pool_grad": lambda y: jnp.sum(jnp.sin(lax.reduce_window(y, 0.0, lax.add, (2, 2), (1, 1), "VALID"))),
    "attention_grad": lambda a, b, c: jnp.sum(attention(a, b, c) ** 2),
    "layernorm_grad": lambda *a: jnp.sum(layernorm(*a) ** 3),
}


def main() -> None:
    for name, loss in LOSSES.items():
        src = Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS
        z = np.load(src / f"{name}.npz")
        args = [z[f"arg{i}"] for i in range(sum(k.startswith("arg") for k in z.files))]
        text = jax.jit(loss).lower(*args).as_text(dialect="hlo")
        (HERE / f"{name}.fwd.hlo").write_text(text)
        shutil.copyfile(src / f"{name}.npz", HERE / f"{name}.npz")
        print(name, "ok")


if __name__ == "__main__":
    main()
