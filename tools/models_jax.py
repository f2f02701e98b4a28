"""The JAX half of the real-model suite: models written with the libraries' own layers, each as a forward
program and a training step (loss, gradients, an optax update). tools/gen_models.py lowers them to HLO.

- resnet50 (flax.linen): ResNet-50 (3-4-6-3 bottlenecks), BatchNorm with running statistics; training step
  with batch statistics, SGD Nesterov momentum and weight decay.
- vit (flax.nnx): patch convolution, 6 pre-LN blocks with nnx.MultiHeadAttention; clip_by_global_norm + AdamW.
- gpt2 (flax.linen): a GPT-2-shaped decoder; forward = sampling: a fori_loop over decode steps with the KV
  cache of MultiHeadDotProductAttention(decode=True) and categorical sampling; training step: next-token
  cross-entropy, clip + AdamW.
- unet (equinox): a diffusion U-Net (GroupNorm, Conv2d, ConvTranspose2d, time embedding, skips) predicting the
  noise; denoising loss, Adam.
- lstm (flax.linen): a bidirectional LSTM classifier (nn.RNN + OptimizedLSTMCell, ragged lengths); Adam.
- gnn (flax.linen + jax.ops): message passing with embeddings, gathers by sender and segment_sum by receiver
  and by graph; regression loss, Adam.

Sizes are scaled down (batch, width, resolution) so XLA:CPU runs each program in 5-500 ms on 2 cores; the
architectures keep their real structure. A program's arguments are a pytree: leaves that are arrays are the
library's initial values (tools/gen_models.py draws the committed inputs from their statistics); `Data`
leaves are data inputs with an explicit distribution.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable


@dataclass(frozen=True)
class Data:
    """A data input: shape, dtype and how to draw it (an inputs.py init spec)."""
    shape: tuple
    dtype: str
    init: dict


@dataclass
class Program:
    module_id: str            # "model/kind"
    library: str
    description: str
    fn: Callable
    args: tuple               # pytree of init values and Data leaves


def _image(*shape):
    return Data(shape, "float32", {"kind": "normal", "mean": 0.0, "scale": 1.0})


def _ints(shape, lo, hi, dtype="int32"):
    return Data(shape, dtype, {"kind": "int", "lo": lo, "hi": hi})


def _cross_entropy(logits, labels):
    import optax
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def _optax_step(loss_fn, tx):
    """A training step over (params, opt_state, *batch): value_and_grad, the optimizer's update, apply."""
    import jax
    import optax

    def step(params, opt_state, *batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss
    return step


# ---------------------------------------------------------------- ResNet-50 (flax.linen)

def resnet50() -> list[Program]:
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax

    class Bottleneck(nn.Module):
        filters: int
        strides: tuple

        @nn.compact
        def __call__(self, x, train: bool):
            norm = partial(nn.BatchNorm, use_running_average=not train, momentum=0.9, epsilon=1e-5)
            y = nn.relu(norm()(nn.Conv(self.filters, (1, 1), use_bias=False)(x)))
            y = nn.relu(norm()(nn.Conv(self.filters, (3, 3), self.strides, use_bias=False)(y)))
            # zero-initialized last scale (the residual branch starts at 0), as Flax's own ImageNet ResNet does
            y = norm(scale_init=nn.initializers.zeros_init())(nn.Conv(self.filters * 4, (1, 1), use_bias=False)(y))
            if x.shape != y.shape:
                x = norm()(nn.Conv(self.filters * 4, (1, 1), self.strides, use_bias=False)(x))
            return nn.relu(x + y)

    class ResNet50(nn.Module):
        width: int = 16
        classes: int = 100

        @nn.compact
        def __call__(self, x, train: bool):
            x = nn.Conv(self.width, (7, 7), (2, 2), padding=[(3, 3), (3, 3)], use_bias=False)(x)
            x = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9, epsilon=1e-5)(x))
            x = nn.max_pool(x, (3, 3), (2, 2), padding="SAME")
            for stage, blocks in enumerate((3, 4, 6, 3)):
                for b in range(blocks):
                    strides = (2, 2) if stage > 0 and b == 0 else (1, 1)
                    x = Bottleneck(self.width * 2 ** stage, strides)(x, train)
            return nn.Dense(self.classes)(jnp.mean(x, axis=(1, 2)))

    model = ResNet50()
    batch, hw = 8, 64
    variables = model.init(jax.random.PRNGKey(0), jnp.zeros((1, hw, hw, 3)), train=False)
    params, stats = variables["params"], variables["batch_stats"]
    tx = optax.chain(optax.add_decayed_weights(1e-4), optax.sgd(0.1, momentum=0.9, nesterov=True))

    def forward(params, stats, images):
        return model.apply({"params": params, "batch_stats": stats}, images, train=False)

    def train_step(params, stats, opt_state, images, labels):
        def loss_fn(p):
            logits, new = model.apply({"params": p, "batch_stats": stats}, images, train=True,
                                      mutable=["batch_stats"])
            return _cross_entropy(logits, labels), new["batch_stats"]
        (loss, new_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), new_stats, opt_state, loss

    images, labels = _image(batch, hw, hw, 3), _ints((batch,), 0, model.classes - 1)
    return [Program("resnet50/fwd", "flax.linen", f"ResNet-50 inference, batch {batch}, {hw}x{hw}, width 16",
                    forward, (params, stats, images)),
            Program("resnet50/train", "flax.linen + optax", "ResNet-50 training step (SGD Nesterov, wd)",
                    train_step, (params, stats, tx.init(params), images, labels))]


# ---------------------------------------------------------------- ViT (flax.nnx)

def vit() -> list[Program]:
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    class Block(nnx.Module):
        def __init__(self, d, heads, hidden, rngs):
            self.ln1 = nnx.LayerNorm(d, rngs=rngs)
            self.attn = nnx.MultiHeadAttention(num_heads=heads, in_features=d, decode=False, rngs=rngs)
            self.ln2 = nnx.LayerNorm(d, rngs=rngs)
            self.fc1 = nnx.Linear(d, hidden, rngs=rngs)
            self.fc2 = nnx.Linear(hidden, d, rngs=rngs)

        def __call__(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(nnx.gelu(self.fc1(self.ln2(x))))

    class ViT(nnx.Module):
        def __init__(self, image=32, patch=4, d=128, depth=6, heads=4, hidden=256, classes=10, *, rngs):
            self.embed = nnx.Conv(3, d, kernel_size=(patch, patch), strides=(patch, patch), rngs=rngs)
            tokens = (image // patch) ** 2 + 1
            self.cls = nnx.Param(jnp.zeros((1, 1, d)))
            self.pos = nnx.Param(jax.random.normal(rngs.params(), (1, tokens, d)) * 0.02)
            self.blocks = nnx.List([Block(d, heads, hidden, rngs) for _ in range(depth)])
            self.norm = nnx.LayerNorm(d, rngs=rngs)
            self.head = nnx.Linear(d, classes, rngs=rngs)

        def __call__(self, images):
            x = self.embed(images)
            x = x.reshape(x.shape[0], -1, x.shape[-1])
            x = jnp.concatenate([jnp.broadcast_to(self.cls[...], (x.shape[0], 1, x.shape[-1])), x], axis=1)
            x = x + self.pos[...]
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x[:, 0]))

    graphdef, params = nnx.split(ViT(rngs=nnx.Rngs(0)), nnx.Param)
    batch = 8
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3, weight_decay=0.05))

    def forward(params, images):
        return nnx.merge(graphdef, params)(images)

    def loss_fn(params, images, labels):
        return _cross_entropy(forward(params, images), labels)

    images, labels = _image(batch, 32, 32, 3), _ints((batch,), 0, 9)
    return [Program("vit/fwd", "flax.nnx", f"ViT (6 blocks, d=128, 4 heads, 32x32 / patch 4), batch {batch}",
                    forward, (params, images)),
            Program("vit/train", "flax.nnx + optax", "ViT training step (clip + AdamW)",
                    _optax_step(loss_fn, tx), (params, tx.init(params), images, labels))]


# ---------------------------------------------------------------- GPT-2-shaped decoder (flax.linen)

def gpt2() -> list[Program]:
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax
    from jax import lax

    vocab, d, heads, layers = 2048, 192, 6, 6

    class Block(nn.Module):
        decode: bool

        @nn.compact
        def __call__(self, x, mask):
            x = x + nn.MultiHeadDotProductAttention(num_heads=heads, decode=self.decode)(nn.LayerNorm()(x), mask=mask)
            h = nn.Dense(d)(nn.gelu(nn.Dense(4 * d)(nn.LayerNorm()(x))))
            return x + h

    class GPT(nn.Module):
        max_len: int
        decode: bool = False

        @nn.compact
        def __call__(self, tokens, positions):
            embed = nn.Embed(vocab, d, embedding_init=nn.initializers.normal(0.02))
            pos = self.param("pos_embedding", nn.initializers.normal(0.02), (self.max_len, d))
            x = embed(tokens) + pos[positions]
            mask = None if self.decode else nn.make_causal_mask(tokens)
            for _ in range(layers):
                x = Block(self.decode)(x, mask)
            return embed.attend(nn.LayerNorm()(x))          # tied input/output embedding, as GPT-2

    train_batch, train_len = 4, 64
    model = GPT(max_len=train_len)
    params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, train_len), jnp.int32),
                        jnp.arange(train_len)[None])["params"]
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(3e-4, weight_decay=0.1))

    def loss_fn(params, tokens):
        positions = jnp.broadcast_to(jnp.arange(tokens.shape[1]), tokens.shape)
        logits = model.apply({"params": params}, tokens, positions)
        return _cross_entropy(logits[:, :-1], tokens[:, 1:])

    sample_batch, prompt_len, total_len = 2, 8, 32
    decoder = GPT(max_len=train_len, decode=True)
    full = jnp.zeros((sample_batch, total_len), jnp.int32)
    cache_shapes = jax.eval_shape(lambda: decoder.init(jax.random.PRNGKey(0), full, full)["cache"])

    def sample(params, prompt, key):
        """Temperature sampling with the KV cache: one token per fori_loop step (the prompt is fed token by
        token through the same step, as Flax's own decoding examples do)."""
        cache = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), cache_shapes)
        tokens = jnp.zeros((sample_batch, total_len), jnp.int32).at[:, :prompt_len].set(prompt)

        def step(i, carry):
            cache, tokens, key = carry
            token = lax.dynamic_slice(tokens, (0, i), (sample_batch, 1))
            logits, new = decoder.apply({"params": params, "cache": cache}, token,
                                        jnp.full((sample_batch, 1), i), mutable=["cache"])
            key, sub = jax.random.split(key)
            sampled = jax.random.categorical(sub, logits[:, -1] / 0.8).astype(jnp.int32)
            given = lax.dynamic_slice(tokens, (0, i + 1), (sample_batch, 1))[:, 0]
            chosen = jnp.where(i + 1 < prompt_len, given, sampled)
            return new["cache"], lax.dynamic_update_slice(tokens, chosen[:, None], (0, i + 1)), key
        return lax.fori_loop(0, total_len - 1, step, (cache, tokens, key))[1]

    key = Data((2,), "uint32", {"kind": "int", "lo": 0, "hi": 2 ** 32 - 1})
    return [Program("gpt2/sample", "flax.linen", f"GPT-2-shaped decoder ({layers} layers, d={d}, {heads} heads, "
                    f"vocab {vocab}): KV-cache sampling of {total_len} tokens, batch {sample_batch}",
                    sample, (params, _ints((sample_batch, prompt_len), 0, vocab - 1), key)),
            Program("gpt2/train", "flax.linen + optax", f"GPT training step, batch {train_batch} x {train_len} "
                    "tokens (clip + AdamW)", _optax_step(loss_fn, tx),
                    (params, tx.init(params), _ints((train_batch, train_len), 0, vocab - 1)))]


# ---------------------------------------------------------------- U-Net (equinox)

def unet() -> list[Program]:
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import optax

    class ResBlock(eqx.Module):
        norm1: eqx.nn.GroupNorm
        conv1: eqx.nn.Conv2d
        time: eqx.nn.Linear
        norm2: eqx.nn.GroupNorm
        conv2: eqx.nn.Conv2d
        skip: Any

        def __init__(self, cin, cout, tdim, key):
            k = jax.random.split(key, 4)
            self.norm1 = eqx.nn.GroupNorm(min(8, cin), cin)
            self.conv1 = eqx.nn.Conv2d(cin, cout, 3, padding=1, key=k[0])
            self.time = eqx.nn.Linear(tdim, cout, key=k[1])
            self.norm2 = eqx.nn.GroupNorm(8, cout)
            self.conv2 = eqx.nn.Conv2d(cout, cout, 3, padding=1, key=k[2])
            self.skip = eqx.nn.Conv2d(cin, cout, 1, key=k[3]) if cin != cout else None

        def __call__(self, x, t):
            h = self.conv1(jax.nn.silu(self.norm1(x)))
            h = h + self.time(jax.nn.silu(t))[:, None, None]
            h = self.conv2(jax.nn.silu(self.norm2(h)))
            return (x if self.skip is None else self.skip(x)) + h

    class UNet(eqx.Module):
        time1: eqx.nn.Linear
        time2: eqx.nn.Linear
        stem: eqx.nn.Conv2d
        down: list
        downsample: list
        mid: list
        upsample: list
        up: list
        out_norm: eqx.nn.GroupNorm
        out: eqx.nn.Conv2d
        tdim: int = eqx.field(static=True)

        def __init__(self, widths=(32, 64, 128), tdim=64, *, key):
            keys = iter(jax.random.split(key, 32))
            self.tdim = tdim
            self.time1 = eqx.nn.Linear(tdim, 4 * tdim, key=next(keys))
            self.time2 = eqx.nn.Linear(4 * tdim, 4 * tdim, key=next(keys))
            self.stem = eqx.nn.Conv2d(3, widths[0], 3, padding=1, key=next(keys))
            self.down, self.downsample, self.upsample, self.up = [], [], [], []
            cin = widths[0]
            for w in widths:
                self.down.append(ResBlock(cin, w, 4 * tdim, next(keys)))
                self.downsample.append(eqx.nn.Conv2d(w, w, 3, stride=2, padding=1, key=next(keys)))
                cin = w
            self.mid = [ResBlock(cin, cin, 4 * tdim, next(keys)), ResBlock(cin, cin, 4 * tdim, next(keys))]
            for w in reversed(widths):
                self.upsample.append(eqx.nn.ConvTranspose2d(cin, cin, 4, stride=2, padding=1, key=next(keys)))
                self.up.append(ResBlock(cin + w, w, 4 * tdim, next(keys)))
                cin = w
            self.out_norm = eqx.nn.GroupNorm(8, cin)
            self.out = eqx.nn.Conv2d(cin, 3, 3, padding=1, key=next(keys))

        def __call__(self, x, t):
            half = self.tdim // 2
            freqs = jnp.exp(-math.log(10000.0) * jnp.arange(half) / half)
            emb = jnp.concatenate([jnp.sin(1000.0 * t * freqs), jnp.cos(1000.0 * t * freqs)])
            temb = self.time2(jax.nn.silu(self.time1(emb)))
            h, skips = self.stem(x), []
            for block, down in zip(self.down, self.downsample):
                h = block(h, temb)
                skips.append(h)
                h = down(h)
            for block in self.mid:
                h = block(h, temb)
            for up, block, skip in zip(self.upsample, self.up, reversed(skips)):
                h = block(jnp.concatenate([up(h), skip]), temb)
            return self.out(jax.nn.silu(self.out_norm(h)))

    params, static = eqx.partition(UNet(key=jax.random.PRNGKey(0)), eqx.is_array)
    batch, hw = 4, 32
    tx = optax.adam(2e-4)

    def predict_noise(params, images, noise, t):
        x_t = (jnp.cos(t * jnp.pi / 2)[:, None, None, None] * images
               + jnp.sin(t * jnp.pi / 2)[:, None, None, None] * noise)
        return jax.vmap(eqx.combine(params, static))(x_t, t)

    def loss_fn(params, images, noise, t):
        return jnp.mean((predict_noise(params, images, noise, t) - noise) ** 2)

    data = (_image(batch, 3, hw, hw), _image(batch, 3, hw, hw),
            Data((batch,), "float32", {"kind": "uniform", "lo": 0.02, "hi": 0.98}))
    return [Program("unet/fwd", "equinox", f"diffusion U-Net noise prediction (widths 32-64-128), batch {batch}, "
                    f"3x{hw}x{hw}", predict_noise, (params, *data)),
            Program("unet/train", "equinox + optax", "U-Net denoising training step (Adam)",
                    _optax_step(loss_fn, tx), (params, tx.init(params), *data))]


# ---------------------------------------------------------------- bidirectional LSTM (flax.linen)

def lstm() -> list[Program]:
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax

    vocab, embed, hidden, classes = 1000, 64, 128, 5

    class BiLSTMClassifier(nn.Module):
        @nn.compact
        def __call__(self, tokens, lengths):
            x = nn.Embed(vocab, embed)(tokens)
            x = nn.Bidirectional(nn.RNN(nn.OptimizedLSTMCell(hidden)), nn.RNN(nn.OptimizedLSTMCell(hidden)))(
                x, seq_lengths=lengths)
            mask = (jnp.arange(tokens.shape[1])[None, :] < lengths[:, None])[..., None]
            pooled = jnp.sum(x * mask, axis=1) / lengths[:, None]
            return nn.Dense(classes)(nn.relu(nn.Dense(hidden)(pooled)))

    model = BiLSTMClassifier()
    batch, steps = 16, 64
    params = model.init(jax.random.PRNGKey(0), jnp.zeros((batch, steps), jnp.int32),
                        jnp.full((batch,), steps))["params"]
    tx = optax.adam(1e-3)

    def forward(params, tokens, lengths):
        return model.apply({"params": params}, tokens, lengths)

    def loss_fn(params, tokens, lengths, labels):
        return _cross_entropy(forward(params, tokens, lengths), labels)

    data = (_ints((batch, steps), 0, vocab - 1), _ints((batch,), steps // 2, steps))
    return [Program("lstm/fwd", "flax.linen", f"bidirectional LSTM classifier (hidden {hidden}), batch {batch} x "
                    f"{steps} steps, ragged lengths", forward, (params, *data)),
            Program("lstm/train", "flax.linen + optax", "BiLSTM training step (Adam)", _optax_step(loss_fn, tx),
                    (params, tx.init(params), *data, _ints((batch,), 0, classes - 1)))]


# ---------------------------------------------------------------- message-passing GNN (flax.linen + jax.ops)

def gnn() -> list[Program]:
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax

    nodes, edges, graphs, d, node_types, edge_types, features = 4096, 16384, 16, 64, 32, 8, 16

    class MessagePassing(nn.Module):
        @nn.compact
        def __call__(self, node_type, node_feat, senders, receivers, edge_type, graph_id):
            h = nn.Embed(node_types, d)(node_type) + nn.Dense(d)(node_feat)
            e = nn.Embed(edge_types, d)(edge_type)
            degree = jax.ops.segment_sum(jnp.ones((edges,)), receivers, nodes)
            for _ in range(3):
                messages = nn.Dense(d)(jnp.concatenate([h[senders], e], axis=-1))
                incoming = jax.ops.segment_sum(messages, receivers, nodes) / jnp.maximum(degree, 1.0)[:, None]
                h = nn.LayerNorm()(h + nn.relu(nn.Dense(d)(jnp.concatenate([h, incoming], axis=-1))))
            pooled = jax.ops.segment_sum(h, graph_id, graphs)
            return nn.Dense(1)(nn.relu(nn.Dense(d)(pooled)))[:, 0]

    model = MessagePassing()
    data = (_ints((nodes,), 0, node_types - 1), _image(nodes, features), _ints((edges,), 0, nodes - 1),
            _ints((edges,), 0, nodes - 1), _ints((edges,), 0, edge_types - 1), _ints((nodes,), 0, graphs - 1))
    params = model.init(jax.random.PRNGKey(0), *[jnp.zeros(x.shape, x.dtype) for x in data])["params"]
    tx = optax.adam(1e-3)

    def forward(params, *graph):
        return model.apply({"params": params}, *graph)

    def loss_fn(params, *graph_and_target):
        *graph, target = graph_and_target
        return jnp.mean((forward(params, *graph) - target) ** 2)

    return [Program("gnn/fwd", "flax.linen + jax.ops", f"message passing over {nodes} nodes / {edges} edges / "
                    f"{graphs} graphs (embeddings, gathers, segment_sum)", forward, (params, *data)),
            Program("gnn/train", "flax.linen + optax", "GNN training step (Adam)", _optax_step(loss_fn, tx),
                    (params, tx.init(params), *data, _image(graphs)))]


MODELS = {"resnet50": resnet50, "vit": vit, "gpt2": gpt2, "unet": unet, "lstm": lstm, "gnn": gnn}
