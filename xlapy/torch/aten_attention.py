"""Attention: the backward of PyTorch's CPU flash attention, and the fused encoder layer of nn.TransformerEncoder's
inference fast path. Both are written over xlapy.numpy; the backward is the VJP of the math (xlapy's autodiff).
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .. import nn
from .. import numpy as jnp
from ..frontend.transforms import vjp
from .aten_nn import native_layer_norm
from .errors import TranslationError


def attention(q, k, v, attn_mask=None, is_causal=False, scale=None):
    """softmax(q k^T * scale + mask) v over the last two axes (q: ..., L, E; k, v: ..., S, E)."""
    e = jnp.shape(q)[-1]
    scale = 1.0 / math.sqrt(e) if scale is None else scale
    s = jnp.multiply(jnp.matmul(q, jnp.swapaxes(k, -1, -2)), scale)
    if is_causal:
        L, S = jnp.shape(q)[-2], jnp.shape(k)[-2]
        s = jnp.where(jnp.asarray(np.tril(np.ones((L, S), bool))), s, -np.inf)
    if attn_mask is not None:
        mask = jnp.asarray(attn_mask)
        s = jnp.where(mask, s, -np.inf) if mask.dtype == np.bool_ else jnp.add(s, mask)
    return jnp.matmul(nn.softmax(s, axis=-1), v)


def flash_attention_backward(grad, q, k, v, out, logsumexp, dropout_p, is_causal, attn_mask=None, scale=None):
    if dropout_p:
        raise TranslationError("aten._scaled_dot_product_flash_attention_for_cpu_backward.default",
                               "attention dropout (its mask is not an input of the backward)")
    _, pullback = vjp(lambda a, b, c: attention(a, b, c, attn_mask, is_causal, scale), q, k, v)
    return tuple(pullback(grad))


def _linear(x, w, b):
    out = jnp.matmul(x, jnp.transpose(w))
    return out if b is None else jnp.add(out, b)


def transformer_encoder_layer(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
                              norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2,
                              ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None, mask_type=None):
    if mask is not None:
        raise TranslationError("aten._transformer_encoder_layer_fwd.default", "an attention mask")
    if len(jnp.shape(src)) != 3:
        raise TranslationError("aten._transformer_encoder_layer_fwd.default", "an unbatched input")
    B, L, E = jnp.shape(src)
    D = E // num_heads

    def norm(x, w, b):
        return native_layer_norm(x, [E], w, b, eps)[0]

    def heads(t):
        return jnp.transpose(jnp.reshape(t, (B, L, num_heads, D)), (0, 2, 1, 3))

    x = src
    h = norm(x, norm_weight_1, norm_bias_1) if norm_first else x
    q, k, v = jnp.split(_linear(h, qkv_weight, qkv_bias), 3, axis=-1)
    a = attention(heads(q), heads(k), heads(v))
    a = _linear(jnp.reshape(jnp.transpose(a, (0, 2, 1, 3)), (B, L, E)), proj_weight, proj_bias)
    x = jnp.add(x, a)
    if not norm_first:
        x = norm(x, norm_weight_1, norm_bias_1)
    h = norm(x, norm_weight_2, norm_bias_2) if norm_first else x
    h = _linear(h, ffn_weight_1, ffn_bias_1)
    h = nn.gelu(h, approximate=False) if use_gelu else jnp.maximum(h, 0)
    x = jnp.add(x, _linear(h, ffn_weight_2, ffn_bias_2))
    if not norm_first:
        x = norm(x, norm_weight_2, norm_bias_2)
    return x


TABLE = {
    "aten._scaled_dot_product_flash_attention_for_cpu_backward.default": flash_attention_backward,
    "aten._transformer_encoder_layer_fwd.default": transformer_encoder_layer,
}
