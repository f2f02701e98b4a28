"""ATen's random ops over xlapy.random. Each rule takes a key first: the translator gives every random node its own
key, folded from one key per call that the runtime draws from torch's default generator (so `torch.manual_seed`
makes a compiled model's dropout reproducible, though its masks differ from eager PyTorch's)."""
from __future__ import annotations

import numpy as np

from .. import numpy as jnp
from .. import random


def _uniform_like(key, x, dtype=None):
    x = jnp.asarray(x)
    return random.uniform(key, jnp.shape(x), dtype=dtype or x.dtype)


def native_dropout(key, x, p, train):
    x = jnp.asarray(x)
    if train is False or p == 0:
        return x, jnp.ones(jnp.shape(x), dtype=np.bool_)
    if p >= 1:
        return jnp.zeros_like(x), jnp.zeros(jnp.shape(x), dtype=np.bool_)
    keep = jnp.greater_equal(random.uniform(key, jnp.shape(x), dtype=x.dtype), p)
    return jnp.where(keep, jnp.multiply(x, 1.0 / (1.0 - p)), 0), keep


def bernoulli_p(key, x, p=0.5, generator=None):
    return jnp.less(_uniform_like(key, x), p).astype(jnp.asarray(x).dtype)


def bernoulli(key, x, generator=None):
    return jnp.less(_uniform_like(key, x), x).astype(jnp.asarray(x).dtype)


def rand(key, size, dtype=None, **_):
    return random.uniform(key, tuple(size), dtype=dtype or np.float32)


def randn(key, size, dtype=None, **_):
    return random.normal(key, tuple(size), dtype=dtype or np.float32)


TABLE = {
    "aten.native_dropout.default": native_dropout,
    "aten.bernoulli.p": bernoulli_p,
    "aten.bernoulli.default": bernoulli,
    "aten.rand.default": rand,
    "aten.randn.default": randn,
    "aten.rand_like.default": lambda key, x, dtype=None, **_: _uniform_like(key, x, dtype),
    "aten.randn_like.default": lambda key, x, dtype=None, **_: random.normal(key, jnp.shape(x),
                                                                             dtype=dtype or jnp.asarray(x).dtype),
}
