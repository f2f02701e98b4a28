"""Mesh, PartitionSpec, NamedSharding and shard_map: programs checked against the unsharded result on meshes of
1, 2, 4 and 8 devices, on the devices (top level) and emulated inside jit and grad; sharding attributes as XLA
writes them; bad input."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy import lax
from xlapy.errors import XlapyError
from xlapy.filecheck import filecheck
from xlapy.sharding import Mesh, NamedSharding, PartitionSpec as P


@pytest.fixture(autouse=True)
def eight_devices(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8")


@pytest.fixture
def backend(xlapy_backend):
    from xlapy.backends import registry
    if registry.get(xlapy_backend).missing(["all-reduce", "all-gather", "partition-id"]):
        pytest.skip(f"the {xlapy_backend} backend has no collectives yet")
    return xlapy_backend


A = np.arange(64, dtype=np.float32).reshape(8, 8) / 10
B = np.arange(32, dtype=np.float32).reshape(8, 4) / 10


def _matmul(mesh, backend):
    """a row- and column-split matmul: partial products summed over 'y' (a contracting split)."""
    return xlapy.shard_map(lambda a, b: lax.psum(a @ b, "y"), mesh=mesh, in_specs=(P("x", "y"), P("y", None)),
                           out_specs=P("x", None), backend=backend)


@pytest.mark.parametrize("shape", [(1, 1), (2, 1), (2, 2), (2, 4)])
def test_matmul_on_meshes_of_1_2_4_8_devices(shape, backend):
    mesh = xlapy.make_mesh(shape, ("x", "y"))
    f = _matmul(mesh, backend)
    np.testing.assert_allclose(np.asarray(f(A, B)), A @ B, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(xlapy.jit(f)(A, B)), A @ B, rtol=1e-5)     # emulated inside jit


def test_collectives_over_mesh_axes_and_replicated_outputs(backend):
    mesh = xlapy.make_mesh((2, 4), ("x", "y"))

    def f(a):
        return lax.all_gather(a, "x", tiled=True), lax.axis_index("y") * 1.0 + a, lax.pmean(a.sum(), ("x", "y"))
    g = xlapy.shard_map(f, mesh=mesh, in_specs=P("x", "y"), out_specs=(P(None, "y"), P("x", "y"), P()),
                        backend=backend)
    cols = np.repeat(np.arange(4, dtype=np.float32), 2)
    for out in (g(A), xlapy.jit(g)(A)):
        np.testing.assert_allclose(np.asarray(out[0]), A)
        np.testing.assert_allclose(np.asarray(out[1]), A + cols, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(out[2]), A.sum() / 8, rtol=1e-5)


def test_grad_through_shard_map_and_the_experimental_module(backend):
    from xlapy.experimental.shard_map import shard_map
    mesh = Mesh(np.array(xlapy.devices()[:4]).reshape(2, 2), ("x", "y"))
    f = shard_map(lambda a, b: lax.psum(a @ b, "y"), mesh, in_specs=(P("x", "y"), P("y", None)),
                  out_specs=P("x", None))
    g = xlapy.grad(lambda a: (f(a, B) ** 2).sum())(A)
    np.testing.assert_allclose(np.asarray(g), 2 * (A @ B) @ B.T, rtol=1e-4)


def test_named_sharding_attributes_and_shards():
    mesh = xlapy.make_mesh((2, 4), ("x", "y"))
    assert NamedSharding(mesh, P("x", "y")).hlo_text(2) == "{devices=[2,4]0,1,2,3,4,5,6,7}"
    assert NamedSharding(mesh, P("y")).hlo_text(2) == "{devices=[4,1,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}"
    assert NamedSharding(mesh, P(("x", "y"))).hlo_text(1) == "{devices=[8]0,1,2,3,4,5,6,7}"
    assert NamedSharding(mesh, P()).hlo_text(2) == "{replicated}"
    s = NamedSharding(mesh, P(None, "y"))
    assert s.shard_shape((8, 8)) == (8, 2) and s.indices((8, 8))[5] == (slice(0, 8), slice(2, 4))


def test_bad_input_gets_one_clear_error(backend):
    mesh = xlapy.make_mesh((2, 4), ("x", "y"))
    with pytest.raises(XlapyError, match="does not have"):
        xlapy.shard_map(lambda a: a, mesh=mesh, in_specs=P("z"), out_specs=P())(A)
    with pytest.raises(XlapyError, match="not divisible by the 4 shards"):
        xlapy.shard_map(lambda a: a, mesh=mesh, in_specs=P("y"), out_specs=P("y"))(np.ones((6, 2), np.float32))
    with pytest.raises(XlapyError, match="in_specs.*3 entries for an array of rank 2"):
        xlapy.shard_map(lambda a: a, mesh=mesh, in_specs=P("x", None, None), out_specs=P())(A)
    with pytest.raises(XlapyError, match="needs 16 devices, but only 8"):
        xlapy.make_mesh((4, 4), ("x", "y"))
    with pytest.raises(XlapyError, match="tree prefix"):
        xlapy.shard_map(lambda a, b: a, mesh=mesh, in_specs=(P("x"), P(), P()), out_specs=P())(A, B)


def test_smap_over_one_axis_of_the_current_mesh(backend):
    mesh = xlapy.make_mesh((4,), ("d",))
    with xlapy.set_mesh(mesh):
        f = xlapy.smap(lambda v: v - lax.pmean(v, "d"), in_axes=0, out_axes=0, axis_name="d")
        np.testing.assert_allclose(np.asarray(f(A[:4])), A[:4] - A[:4].mean(0), rtol=1e-5, atol=1e-6)
        assert xlapy.sharding.get_abstract_mesh().shape == {"d": 4}


def test_shard_map_inside_sharded_jit_is_partitioned_onto_the_mesh(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", f"--xla_force_host_platform_device_count=8 --xla_dump_to={tmp_path}")
    mesh = xlapy.make_mesh((2, 2), ("x", "y"))
    whole = NamedSharding(mesh, P())
    f = xlapy.jit(_matmul(mesh, backend), in_shardings=(whole, whole), out_shardings=whole, backend=backend)
    np.testing.assert_allclose(np.asarray(f(A, B)), A @ B, rtol=1e-5)
    import glob
    text = open(glob.glob(str(tmp_path / "*spmd_after_optimizations.txt"))[0]).read()
    filecheck(text, """
        CHECK: num_partitions=4
        CHECK: f32[1,1,4,4] dot(
        CHECK: all-reduce({{.*}}replica_groups={{[{][{]0,1[}],[{]2,3[}][}]}}
    """)
