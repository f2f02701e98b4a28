"""row_emitter splits its row loop over threads by the bytes its members evaluate, not by its parameters' whole
sizes: a layernorm of a ViT's class tokens (rows sliced from [8, 65, 128]) stays on one thread (no pool
dispatch for ~3,000 elements), while a softmax whose rows are its whole 512 KiB input is split as before.
One compile holds both."""
import re

import numpy as np

import xlapy
import xlapy.numpy as xnp
from xlapy.testing import assert_same


def _both(x, y, z):
    a = (x + y)[:, 0, :]
    mu = xnp.mean(a, axis=-1, keepdims=True)
    norm = (a - mu) / xnp.sqrt(xnp.mean(a * a, axis=-1, keepdims=True) - mu * mu + 1e-5)
    e = xnp.exp(z - xnp.max(z, axis=-1, keepdims=True))
    return norm, e / xnp.sum(e, axis=-1, keepdims=True)


def _row_kernels(exe):
    """{kernel name: whether it calls the pool} for the row fusions' kernels"""
    out = {}
    for f in re.split(r"\ndefine ", exe.llvm_ir):
        m = re.match(r"[^@]*@\"?xlapy_kernel\.(row_fusion[\w.]*)\"?\(", f)
        if m:
            out[m.group(1)] = "xlapy_pool_run" in f
    return out


def test_row_loops_split_by_their_own_work():
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((8, 65, 128)).astype(np.float32) for _ in range(2))
    z = rng.standard_normal((256, 512)).astype(np.float32)
    exe = xlapy.compile(xlapy.jit(_both).lower(x, y, z).module, backend="cpu", num_threads=2, cache=False)
    ref = xlapy.compile(xlapy.jit(_both).lower(x, y, z).module, backend="interpreter")
    for g, w in zip(exe(x, y, z), ref(x, y, z), strict=True):
        assert_same(g, w, rtol=1e-5)
    assert sorted(_row_kernels(exe).values()) == [False, True], _row_kernels(exe)
