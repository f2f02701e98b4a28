"""pure_callback: a host Python function called from compiled code on both backends (the interpreter calls it,
the CPU backend through its ctypes trampoline), eagerly, under jit and vmap (each vmap_method), with pytrees;
JAX's errors (grad, bad results, bad vmap_method)."""
import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy import ShapeDtypeStruct

CALLS = []


def host_sin(x):
    CALLS.append(x.shape)
    return np.sin(x)


def sds(x):
    return ShapeDtypeStruct(x.shape, x.dtype)


X = np.arange(6, dtype=np.float32).reshape(2, 3) / 4


def test_eager_and_jit():
    f = lambda x: 2.0 * xlapy.pure_callback(host_sin, sds(x), x)
    np.testing.assert_allclose(f(X), 2 * np.sin(X), rtol=1e-6)
    np.testing.assert_allclose(xlapy.jit(f)(X), 2 * np.sin(X), rtol=1e-6)
    text = xlapy.jit(f).lower(X).as_text()
    assert 'custom_call_target="xlapy_host_callback"' in text


def test_pytrees_and_kwargs():
    def host(d, scale=1.0):
        return {"s": (d["a"] + d["b"]) * scale, "n": np.array(d["a"].size, np.int32)}
    res = {"s": ShapeDtypeStruct((3,), np.float32), "n": ShapeDtypeStruct((), np.int32)}

    @xlapy.jit
    def f(a, b):
        return xlapy.pure_callback(host, res, {"a": a, "b": b}, scale=np.float32(2.0))
    out = f(np.ones(3, np.float32), np.arange(3, dtype=np.float32))
    np.testing.assert_allclose(out["s"], [2, 4, 6])
    assert int(out["n"]) == 3


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all"])
def test_vmap_methods(method):
    f = lambda x, y: xlapy.pure_callback(lambda a, b: np.sin(a) + b, sds(x), x, y, vmap_method=method)
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.float32(0.5) * np.ones(3, np.float32)
    want = np.sin(xs) + y
    np.testing.assert_allclose(xlapy.vmap(f, in_axes=(0, None))(xs, y), want, rtol=1e-6)
    np.testing.assert_allclose(xlapy.jit(xlapy.vmap(f, in_axes=(0, None)))(xs, y), want, rtol=1e-6)
    seen = []

    def record(a, b):
        seen.append((a.shape, b.shape))
        return np.sin(a) + b
    g = lambda x, y: xlapy.pure_callback(record, sds(x), x, y, vmap_method=method)
    xlapy.jit(xlapy.vmap(g, in_axes=(0, None)))(xs, y)
    expected = {"sequential": ((3,), (3,)), "sequential_unrolled": ((3,), (3,)),
                "expand_dims": ((4, 3), (1, 3)), "broadcast_all": ((4, 3), (4, 3))}[method]
    assert seen and all(s == expected for s in seen)


def test_vmap_without_method_raises():
    f = lambda x: xlapy.pure_callback(np.sin, sds(x), x)
    with pytest.raises(NotImplementedError, match="vmap_method"):
        xlapy.vmap(f)(X)


def test_grad_raises():
    f = lambda x: xlapy.pure_callback(np.sin, sds(x), x).sum()
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        xlapy.grad(f)(X)


def test_custom_jvp_around_a_callback():
    @xlapy.custom_jvp
    def s(x):
        return xlapy.pure_callback(np.sin, sds(x), x)

    @s.defjvp
    def _(p, t):
        return s(p[0]), xlapy.pure_callback(np.cos, sds(p[0]), p[0]) * t[0]
    np.testing.assert_allclose(xlapy.jit(xlapy.grad(lambda x: s(x).sum()))(X), np.cos(X), rtol=1e-6)


def test_bad_inputs():
    with pytest.raises(ValueError, match="vmap_method must be on of"):
        xlapy.pure_callback(np.sin, sds(X), X, vmap_method="bogus")
    with pytest.raises(ValueError, match="64-bit"):
        xlapy.pure_callback(np.sin, ShapeDtypeStruct((3,), np.float64), X)
    with pytest.raises(TypeError, match="shape"):
        xlapy.pure_callback(np.sin, 3, X)
    with pytest.raises(xlapy.ExecutionError, match="Incorrect output shape"):
        xlapy.pure_callback(lambda x: np.zeros(2, np.float32), sds(X), X)
    with pytest.raises(xlapy.ExecutionError, match="Incorrect output dtype"):
        xlapy.pure_callback(lambda x: np.zeros(X.shape, np.int32), sds(X), X)


def test_error_in_callback_under_jit():
    # the CPU trampoline cannot unwind through machine code: it records the error, which the call then raises
    def boom(x):
        raise RuntimeError("boom")
    f = xlapy.jit(lambda x: xlapy.pure_callback(boom, sds(x), x) + 1)
    for _ in range(2):          # the first call and a warm one
        with pytest.raises(xlapy.ExecutionError, match="RuntimeError: boom"):
            f(X)
    ok = xlapy.jit(lambda x: xlapy.pure_callback(np.cos, sds(x), x))
    np.testing.assert_allclose(ok(X), np.cos(X), rtol=1e-6)     # nothing left pending


def test_results_canonicalized():
    out = xlapy.jit(lambda x: xlapy.pure_callback(lambda x: np.sin(x.astype(np.float64)), sds(x), x))(X)
    assert out.dtype == np.float32
    assert xnp is not None
