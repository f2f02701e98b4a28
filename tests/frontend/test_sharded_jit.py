"""jit with in_shardings / out_shardings (the SPMD partitioner over a mesh), device_put with shardings,
with_sharding_constraint, Arrays that know their sharding: checked against the unsharded result on 1, 2, 4 and
8 devices; the dump flags print the partitioned module; bad input."""
from __future__ import annotations

import glob

import numpy as np
import pytest

import xlapy
import xlapy.numpy as jnp
from xlapy import lax
from xlapy.errors import XlapyError
from xlapy.sharding import NamedSharding, PartitionSpec as P

FLAGS = "--xla_force_host_platform_device_count=8"


@pytest.fixture(autouse=True)
def eight_devices(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", FLAGS)


@pytest.fixture
def backend(xlapy_backend):
    from xlapy.backends import registry
    if registry.get(xlapy_backend).missing(["all-reduce", "all-gather", "partition-id"]):
        pytest.skip(f"the {xlapy_backend} backend has no collectives yet")
    return xlapy_backend


rng = np.random.default_rng(0)
X = rng.standard_normal((16, 8)).astype(np.float32)
W1 = rng.standard_normal((8, 8)).astype(np.float32) / 3
W2 = rng.standard_normal((8, 4)).astype(np.float32) / 3


def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


def loss(params, x):
    w1, w2 = params
    return (mlp(x, w1, w2) ** 2).mean()


@pytest.mark.parametrize("shape", [(1, 1), (2, 1), (2, 2), (4, 2)])
def test_data_and_model_parallel_mlp_against_the_unsharded_result(shape, backend):
    mesh = xlapy.make_mesh(shape, ("data", "model"))
    s = lambda *spec: NamedSharding(mesh, P(*spec))
    f = xlapy.jit(mlp, in_shardings=(s("data", None), s(None, "model"), s("model", None)),
                  out_shardings=s("data", None), backend=backend)
    out = f(X, W1, W2)
    np.testing.assert_allclose(np.asarray(out), np.tanh(X @ W1) @ W2, rtol=1e-5, atol=1e-5)
    assert out.sharding == s("data", None)
    assert len(out.addressable_shards) == mesh.size and out.addressable_shards[-1].data.shape == (16 // shape[0], 4)


def test_grad_under_sharded_jit_and_the_propagated_output_sharding(backend):
    mesh = xlapy.make_mesh((4, 2), ("data", "model"))
    s = lambda *spec: NamedSharding(mesh, P(*spec))
    g = xlapy.jit(xlapy.grad(loss), in_shardings=((s(None, "model"), s("model", None)), s("data", None)),
                  backend=backend)
    g1, g2 = g((W1, W2), X)
    w1, w2 = xlapy.grad(loss)((W1, W2), X)
    np.testing.assert_allclose(np.asarray(g1), np.asarray(w1), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.asarray(g2), np.asarray(w2), rtol=1e-4, atol=1e-6)
    doubled = xlapy.jit(lambda x: x * 2, in_shardings=s("data", None), backend=backend)(X)
    assert doubled.sharding == s("data", None)         # read back from the partitioner's choice


def test_device_put_and_with_sharding_constraint(backend):
    mesh = xlapy.make_mesh((2, 4), ("x", "y"))
    x = xlapy.device_put(X, NamedSharding(mesh, P("x", "y")))
    assert x.sharding.spec == P("x", "y") and x.addressable_shards[5].data.shape == (8, 2)
    np.testing.assert_array_equal(np.asarray(x.addressable_shards[5].data), X[8:, 2:4])
    assert xlapy.numpy.ones(3).sharding.device.id == 0

    def f(a):
        return lax.with_sharding_constraint(a * 2, NamedSharding(mesh, P(None, "y"))).sum(0)
    out = xlapy.jit(f, out_shardings=NamedSharding(mesh, P()), backend=backend)(x)   # x keeps its sharding
    np.testing.assert_allclose(np.asarray(out), (X * 2).sum(0), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(xlapy.jit(f)(X)), (X * 2).sum(0), rtol=1e-5)   # unsharded: identity
    with mesh:
        y = lax.with_sharding_constraint(X, P("x"))          # eager: device_put, the mesh of `with mesh:`
    assert y.sharding == NamedSharding(mesh, P("x"))


def test_the_dump_flags_write_the_partitioned_module(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", f"{FLAGS} --xla_dump_to={tmp_path}")
    mesh = xlapy.make_mesh((2,), ("x",))
    f = xlapy.jit(lambda a, w: a @ w, in_shardings=(NamedSharding(mesh, P(None, "x")),
                                                    NamedSharding(mesh, P("x", None))), backend=backend)
    np.testing.assert_allclose(np.asarray(f(X, W1)), X @ W1, rtol=1e-5, atol=1e-5)
    dumped = glob.glob(str(tmp_path / "*spmd_after_optimizations.txt"))
    assert dumped, sorted(p.name for p in tmp_path.iterdir())
    text = open(dumped[0]).read()
    assert "num_partitions=2" in text and "f32[16,4] parameter(0)" in text and "all-reduce(" in text


def test_bad_input_gets_one_clear_error(backend):
    mesh = xlapy.make_mesh((2, 4), ("x", "y"))
    other = xlapy.make_mesh((4, 2), ("x", "y"))
    with pytest.raises(XlapyError, match="different meshes"):
        xlapy.jit(lambda a, b: a + b, in_shardings=(NamedSharding(mesh, P("x")), NamedSharding(other, P("x"))),
                  backend=backend)(X, X)
    with pytest.raises(XlapyError, match="not divisible by the 4 shards"):
        xlapy.device_put(np.ones((6, 2), np.float32), NamedSharding(mesh, P("y")))
    with pytest.raises(XlapyError, match="tree prefix"):
        xlapy.jit(lambda a: a, in_shardings=(NamedSharding(mesh, P("x")),) * 2, backend=backend)(X)
    with pytest.raises(XlapyError, match="does not divide into the 4 tiles"):
        xlapy.jit(lambda a: a, in_shardings=NamedSharding(mesh, P("y")), backend=backend)(np.ones((6, 2), np.float32))
    with pytest.raises(XlapyError, match="bare PartitionSpec"):
        xlapy.device_put(X, P("x"))


def test_loops_run_whole_with_their_sharding_marks_dropped(backend):
    mesh = xlapy.make_mesh((2, 2), ("x", "y"))
    s = NamedSharding(mesh, P("x"))

    def f(x):
        def body(c, _):
            c = lax.with_sharding_constraint(jnp.sin(c) * 0.9, s)
            return c, c.sum()
        return lax.scan(body, x, None, length=3)
    out = xlapy.jit(f, in_shardings=s, backend=backend)(X)
    want = f(X)
    np.testing.assert_allclose(np.asarray(out[0]), np.asarray(want[0]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out[1]), np.asarray(want[1]), rtol=1e-5)
