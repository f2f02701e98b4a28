"""The benchmark cases (B1-B8), each written once per implementation. An implementation's `make()` does the
setup and returns a zero-argument function to time (or, for one-shot cases, the measured seconds)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

RNG = np.random.default_rng(0)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@dataclass
class Case:
    id: str
    title: str
    build: Callable[[dict], dict]
    one_shot: bool = False

    def impls(self, peers: dict) -> dict:
        return self.build(peers)


# -- B1: sum(x + y*z) on 16M f32 --------------------------------------------------------------------------
N1 = 16 * 1024 * 1024


def b1(peers):
    x, y, z = f32(N1), f32(N1), f32(N1)
    impls = {"numpy": lambda: (lambda: np.sum(x + y * z))}

    def xlapy_impl():
        import xlapy
        import xlapy.numpy as xnp
        f = xlapy.jit(lambda a, b, c: xnp.sum(a + b * c))
        xa, ya, za = xlapy.device_put(x), xlapy.device_put(y), xlapy.device_put(z)
        return lambda: f(xa, ya, za).block_until_ready()
    impls["xlapy"] = xlapy_impl
    if "jax" in peers:
        def jax_impl():
            jax = peers["jax"]
            f = jax.jit(lambda a, b, c: jax.numpy.sum(a + b * c))
            xa, ya, za = (jax.device_put(v) for v in (x, y, z))
            return lambda: f(xa, ya, za).block_until_ready()
        impls["jax"] = jax_impl
    if "torch" in peers:
        def torch_impl():
            torch = peers["torch"]
            f = torch.compile(lambda a, b, c: torch.sum(a + b * c))
            xa, ya, za = (torch.from_numpy(v) for v in (x, y, z))
            return lambda: f(xa, ya, za)
        impls["torch"] = torch_impl
    return impls


# -- B2/B3: row softmax and layernorm on 4096x1024 --------------------------------------------------------
def _rowwise(np_fn, xnp_fn, jax_fn, torch_fn):
    def build(peers):
        x = f32(4096, 1024)
        impls = {"numpy": lambda: (lambda: np_fn(np, x))}

        def xlapy_impl():
            import xlapy
            import xlapy.numpy as xnp
            f = xlapy.jit(lambda a: xnp_fn(xnp, a))
            xa = xlapy.device_put(x)
            return lambda: f(xa).block_until_ready()
        impls["xlapy"] = xlapy_impl
        if "jax" in peers:
            def jax_impl():
                jax = peers["jax"]
                f = jax.jit(lambda a: jax_fn(jax.numpy, a))
                xa = jax.device_put(x)
                return lambda: f(xa).block_until_ready()
            impls["jax"] = jax_impl
        if "torch" in peers:
            def torch_impl():
                torch = peers["torch"]
                f = torch.compile(lambda a: torch_fn(torch, a))
                xa = torch.from_numpy(x)
                return lambda: f(xa)
            impls["torch"] = torch_impl
        return impls
    return build


def _softmax(m, a):
    e = m.exp(a - m.max(a, axis=1, keepdims=True))
    return e / m.sum(e, axis=1, keepdims=True)


def _softmax_torch(torch, a):
    e = torch.exp(a - torch.amax(a, dim=1, keepdim=True))
    return e / torch.sum(e, dim=1, keepdim=True)


def _layernorm(m, a):
    mu = m.mean(a, axis=1, keepdims=True)
    var = m.mean((a - mu) ** 2, axis=1, keepdims=True)
    return (a - mu) / m.sqrt(var + 1e-5)


def _layernorm_torch(torch, a):
    mu = torch.mean(a, dim=1, keepdim=True)
    var = torch.mean((a - mu) ** 2, dim=1, keepdim=True)
    return (a - mu) / torch.sqrt(var + 1e-5)


# -- B4: matmul 1024^3 ------------------------------------------------------------------------------------
def b4(peers):
    a, b = f32(1024, 1024), f32(1024, 1024)
    impls = {"numpy": lambda: (lambda: a @ b)}

    def xlapy_impl():
        import xlapy
        import xlapy.numpy as xnp
        f = xlapy.jit(lambda p, q: xnp.matmul(p, q))
        xa, xb = xlapy.device_put(a), xlapy.device_put(b)
        return lambda: f(xa, xb).block_until_ready()
    impls["xlapy"] = xlapy_impl
    if "jax" in peers:
        def jax_impl():
            jax = peers["jax"]
            f = jax.jit(lambda p, q: p @ q)
            xa, xb = jax.device_put(a), jax.device_put(b)
            return lambda: f(xa, xb).block_until_ready()
        impls["jax"] = jax_impl
    if "torch" in peers:
        def torch_impl():
            torch = peers["torch"]
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            return lambda: ta @ tb
        impls["torch"] = torch_impl
    return impls


# -- B5/B7: MLP training step 784-512-512-10, batch 128 ---------------------------------------------------
SIZES = (784, 512, 512, 10)


def _mlp_params():
    return [(f32(i, o) * np.float32(np.sqrt(2.0 / i)), np.zeros(o, np.float32)) for i, o in zip(SIZES, SIZES[1:])]


def _mlp_data():
    x = f32(128, 784)
    y = np.eye(10, dtype=np.float32)[RNG.integers(0, 10, 128)]
    return x, y


def _numpy_mlp_step(params, x, y, lr=np.float32(0.01)):
    acts, h = [x], x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i < len(params) - 1:
            h = np.maximum(h, 0)
        acts.append(h)
    logits = acts[-1]
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    g = (p - y) / x.shape[0]
    new = []
    for i in range(len(params) - 1, -1, -1):
        w, b = params[i]
        gw, gb = acts[i].T @ g, g.sum(0)
        if i > 0:
            g = (g @ w.T) * (acts[i] > 0)
        new.append((w - lr * gw, b - lr * gb))
    return new[::-1]


def _mlp_loss(np_mod, nn_mod):
    """The B5 loss written once against a numpy-like module and an nn module (xlapy's or JAX's)."""
    def loss(params, x, y):
        h = x
        for i, (w, b) in enumerate(params):
            h = h @ w + b
            if i < len(params) - 1:
                h = nn_mod.relu(h)
        return -np_mod.mean(np_mod.sum(nn_mod.log_softmax(h) * y, axis=1))
    return loss


def _xlapy_mlp_step():
    import xlapy
    import xlapy.numpy as xnp
    loss = _mlp_loss(xnp, xlapy.nn)

    def step(params, x, y):
        grads = xlapy.grad(loss)(params, x, y)
        return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]
    return xlapy.jit(step)


def _jax_mlp_step(jax):
    loss = _mlp_loss(jax.numpy, jax.nn)
    return jax.jit(lambda p, x, y: jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, jax.grad(loss)(p, x, y)))


def b5(peers):
    params, (x, y) = _mlp_params(), _mlp_data()
    impls = {"numpy": lambda: (lambda: _numpy_mlp_step(params, x, y))}

    def xlapy_impl():
        import xlapy
        step = _xlapy_mlp_step()
        p = [(xlapy.device_put(w), xlapy.device_put(b)) for w, b in params]
        xa, ya = xlapy.device_put(x), xlapy.device_put(y)
        return lambda: step(p, xa, ya)[0][0].block_until_ready()
    impls["xlapy"] = xlapy_impl
    if "jax" in peers:
        def jax_impl():
            jax = peers["jax"]
            step = _jax_mlp_step(jax)
            p = jax.device_put(params)
            return lambda: jax.block_until_ready(step(p, x, y))
        impls["jax"] = jax_impl
    if "torch" in peers:
        def torch_impl():
            torch = peers["torch"]
            model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                        torch.nn.ReLU(), torch.nn.Linear(512, 10))
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            tx, ty = torch.from_numpy(x), torch.from_numpy(y.argmax(1))
            lossf = torch.nn.CrossEntropyLoss()

            @torch.compile
            def fwd_bwd():
                loss = lossf(model(tx), ty)
                loss.backward()
                return loss

            def step():
                opt.zero_grad()
                fwd_bwd()
                opt.step()
            return step
        impls["torch"] = torch_impl
    return impls


def b6(peers):
    x = np.ones(4, np.float32)
    impls = {"numpy": lambda: (lambda: x * 2 + 1)}

    def xlapy_impl():
        import xlapy
        f = xlapy.jit(lambda a: a * 2 + 1)
        xa = xlapy.device_put(x)
        return lambda: f(xa)
    impls["xlapy"] = xlapy_impl
    if "jax" in peers:
        def jax_impl():
            jax = peers["jax"]
            f = jax.jit(lambda a: a * 2 + 1)
            xa = jax.device_put(x)
            return lambda: f(xa)
        impls["jax"] = jax_impl
    if "torch" in peers:
        def torch_impl():
            torch = peers["torch"]
            f = torch.compile(lambda a: a * 2 + 1)
            xa = torch.from_numpy(x)
            return lambda: f(xa)
        impls["torch"] = torch_impl
    return impls


def b7(peers):
    """Compile time of B5's step: first call of a fresh jit (trace + optimize + codegen), in seconds."""
    params, (x, y) = _mlp_params(), _mlp_data()

    def xlapy_impl():
        import xlapy
        step = _xlapy_mlp_step()
        p = [(xlapy.device_put(w), xlapy.device_put(b)) for w, b in params]
        t0 = time.perf_counter()
        step(p, xlapy.device_put(x), xlapy.device_put(y))[0][0].block_until_ready()
        return time.perf_counter() - t0
    impls = {"xlapy": xlapy_impl}
    if "jax" in peers:
        def jax_impl():
            jax = peers["jax"]
            step = _jax_mlp_step(jax)
            t0 = time.perf_counter()
            jax.block_until_ready(step(params, x, y))
            return time.perf_counter() - t0
        impls["jax"] = jax_impl
    return impls


CASES = [
    Case("B1", "sum(x + y*z), 16M f32", b1),
    Case("B2", "row softmax 4096x1024", _rowwise(_softmax, _softmax, _softmax, _softmax_torch)),
    Case("B3", "layernorm 4096x1024", _rowwise(_layernorm, _layernorm, _layernorm, _layernorm_torch)),
    Case("B4", "matmul 1024^3 f32", b4),
    Case("B5", "MLP train step 784-512-512-10, b128", b5),
    Case("B6", "warm call of a tiny jitted fn", b6),
    Case("B7", "compile time of B5's step (s)", b7, one_shot=True),
]
