"""lax collectives, pmap, and their derivatives: HLO text of the lowering, values on 1, 2, 4 and 8 devices
against numpy and against the same program under vmap, grad through pmap and pmap of grad, bad input.

The device programs run on the interpreter (backend="interpreter") and, where the CPU backend has the
collectives, on the CPU; devices come from XLA_FLAGS=--xla_force_host_platform_device_count=8 (a fixture)."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy import lax
from xlapy.errors import XlapyError
from xlapy.filecheck import filecheck
from xlapy.frontend.eager import build_module
from xlapy.frontend.parallel.axis_env import AxisFrame, AxisNameError, axis_frames
from xlapy.frontend.pytree import tree_structure
from xlapy.frontend.tracer import ShapedArray, trace_function



@pytest.fixture(autouse=True)
def eight_devices(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8")


@pytest.fixture
def backend(xlapy_backend):
    """The test's backend, when it runs collectives (the CPU backend once it has them)."""
    from xlapy.backends import registry
    if registry.get(xlapy_backend).missing(["all-reduce", "all-gather", "collective-permute", "partition-id"]):
        pytest.skip(f"the {xlapy_backend} backend has no collectives yet")
    return xlapy_backend


def _lowered(fn, shape, frames) -> str:
    with axis_frames(frames):
        trace, outs, _ = trace_function(fn, [ShapedArray(shape, np.dtype("float32"))], tree_structure((0,)))
    return build_module("m", trace.finish(outs)).to_text()


MESH = [AxisFrame("i", 2, "device"), AxisFrame("j", 2, "device")]


@pytest.mark.backends("interpreter", reason="HLO text only: one backend is enough")
def test_collectives_lower_to_hlo_collectives_with_the_axis_groups():
    text = _lowered(lambda x: (lax.psum(x, "i"), lax.pmax(x, "j"), lax.pmean(x, ("i", "j")),
                               lax.all_gather(x, "i"), lax.psum_scatter(x, "j", tiled=True),
                               lax.ppermute(x, "j", [(0, 1), (1, 0)]), lax.all_to_all(x, "i", 0, 1, tiled=True),
                               lax.axis_index("i")), (4, 6), MESH)
    filecheck(text, """
        CHECK: all-reduce(f32[4,6] [[X:%Arg_0[.0-9]*]]), channel_id=1, replica_groups={{[{][{]0,2[}],[{]1,3[}][}]}}, use_global_device_ids=true, to_apply=%region_0
        CHECK-SAME: frontend_attributes={xlapy_axes="i"}
        CHECK: all-reduce({{.*}}replica_groups={{[{][{]0,1[}],[{]2,3[}][}]}}{{.*}}xlapy_axes="j"
        CHECK: replica_groups={{[{][{]0,1,2,3[}][}]}}
        CHECK: divide(
        CHECK: f32[1,4,6] reshape(f32[4,6] [[X]])
        CHECK-NEXT: f32[2,4,6] all-gather({{.*}}dimensions={0}
        CHECK: f32[2,6] reduce-scatter(f32[4,6] [[X]]), channel_id=1, replica_groups={{[{][{]0,1[}],[{]2,3[}][}]}}, use_global_device_ids=true, dimensions={0}
        CHECK: collective-permute(f32[4,6] [[X]]), channel_id=1, source_target_pairs={{[{][{]0,1[}],[{]1,0[}],[{]2,3[}],[{]3,2[}][}]}}
        CHECK: f32[2,2,6] all-to-all(f32[2,2,6] {{.*}}dimensions={0}
        CHECK: f32[2,12] reshape(
        CHECK: partition-id()
        CHECK: divide(
        CHECK: remainder(
        CHECK: s32[] convert(
    """)


def test_an_unbound_axis_name_raises_naming_it(backend):
    with pytest.raises(AxisNameError, match="psum: unbound axis name: 'k'.*no axis is bound"):
        lax.psum(np.ones(3, np.float32), "k")
    with pytest.raises(AxisNameError, match="unbound axis name: 'k' \\(the bound axes are \\['i'\\]"):
        xlapy.pmap(lambda x: lax.psum(x, "k"), axis_name="i", backend=backend)(np.ones((2, 3), np.float32))


def _collectives(x):
    n = lax.axis_size("i")
    perm = [(k, (k + 1) % n) for k in range(n)]
    return {"psum": lax.psum(x, "i"), "pmean": lax.pmean(x, "i"), "pmax": lax.pmax(x, "i"), "pmin": lax.pmin(x, "i"),
            "gather": lax.all_gather(x, "i"), "gather1": lax.all_gather(x, "i", axis=1, tiled=True),
            "scatter": lax.psum_scatter(lax.all_gather(x, "i"), "i"),
            "permute": lax.ppermute(x, "i", perm), "index": lax.axis_index("i"),
            "a2a": lax.all_to_all(lax.all_gather(x, "i"), "i", 0, 0),
            "bcast": lax.pbroadcast(x, "i", n - 1)}


def _expected(xs):
    n = xs.shape[0]
    total = xs.sum(0)
    g = np.broadcast_to(xs, (n,) + xs.shape)
    return {"psum": np.broadcast_to(total, xs.shape), "pmean": np.broadcast_to(total / n, xs.shape),
            "pmax": np.broadcast_to(xs.max(0), xs.shape), "pmin": np.broadcast_to(xs.min(0), xs.shape),
            "gather": g, "gather1": np.broadcast_to(np.concatenate(list(xs), axis=1), (n, 2, 3 * n)),
            "scatter": n * xs, "permute": np.roll(xs, 1, axis=0), "index": np.arange(n),
            "a2a": np.broadcast_to(xs[:, None], (n,) + xs.shape), "bcast": np.broadcast_to(xs[-1], xs.shape)}


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_every_collective_on_n_devices_against_numpy_and_vmap(n, backend):
    xs = np.random.default_rng(n).standard_normal((n, 2, 3)).astype(np.float32)
    want = _expected(xs)
    on_devices = xlapy.pmap(_collectives, axis_name="i", backend=backend)(xs)
    vmapped = xlapy.vmap(_collectives, axis_name="i")(xs)
    for k, v in want.items():
        np.testing.assert_allclose(np.asarray(on_devices[k]), v, rtol=1e-6, atol=1e-6, err_msg=k)
        np.testing.assert_allclose(np.asarray(vmapped[k]), v, rtol=1e-6, atol=1e-6, err_msg=f"vmap {k}")


def test_lower_gives_the_per_device_program(backend):
    text = xlapy.pmap(lambda x: lax.psum(x, "i"), axis_name="i", backend=backend).lower(
        np.ones((4, 3), np.float32)).as_text()
    filecheck(text, """
        CHECK: HloModule {{.*}}num_partitions=4
        CHECK: f32[3] all-reduce({{.*}}replica_groups={{[{][{]0,1,2,3[}][}]}}, use_global_device_ids=true
    """)


def test_in_axes_out_axes_static_args_and_nested_pmap(backend):
    xs = np.arange(24, dtype=np.float32).reshape(3, 4, 2)      # mapped along axis 1 (size 4)
    f = xlapy.pmap(lambda x, y, scale: (x * scale + y, lax.psum(x, "i")), axis_name="i", in_axes=(1, None, None),
                   out_axes=(1, None), static_broadcasted_argnums=2, backend=backend)
    a, s = f(xs, np.float32(1), 2.0)
    np.testing.assert_allclose(np.asarray(a), xs * 2 + 1)
    np.testing.assert_allclose(np.asarray(s), xs.sum(1))
    inner = xlapy.pmap(lambda x: lax.psum(x, "j") + lax.psum(x, "i"), axis_name="j")
    nested = xlapy.pmap(inner, axis_name="i", backend=backend)(np.ones((2, 3, 5), np.float32))
    np.testing.assert_allclose(np.asarray(nested), np.full((2, 3, 5), 5.0))


def test_pmap_inside_jit_and_grad_through_pmap(backend):
    xs = np.arange(4, dtype=np.float32)
    f = xlapy.pmap(lambda y: lax.psum(y * y, "i"), axis_name="i", backend=backend)
    np.testing.assert_allclose(np.asarray(xlapy.jit(f)(xs)), np.full(4, 14.0))
    g = xlapy.grad(lambda x: f(x).sum())(xs)          # JAX: [0, 8, 16, 24]
    np.testing.assert_allclose(np.asarray(g), 8 * xs)


def test_pmap_of_grad_with_psum_and_pmean_as_in_data_parallel_training(backend):
    w = np.float32(0.5)
    xs = np.arange(8, dtype=np.float32).reshape(4, 2)

    def step(w, x):
        loss = lambda w: lax.pmean(((w * x - 1.0) ** 2).sum(), "i")
        g = xlapy.grad(loss)(w)
        return g, lax.psum(xlapy.grad(lambda w: ((w * x - 1.0) ** 2).sum())(w), "i")
    g_mean, g_sum = xlapy.pmap(step, axis_name="i", in_axes=(None, 0), backend=backend)(w, xs)
    local = 2 * ((w * xs - 1.0) * xs).sum(1)
    np.testing.assert_allclose(np.asarray(g_mean), local, rtol=1e-6)    # JAX's: [-1, 3, 23, 59] (psum -> psum)
    np.testing.assert_allclose(np.asarray(g_sum), np.full(4, local.sum()), rtol=1e-6)
    psum_grad = xlapy.pmap(xlapy.grad(lambda x: lax.psum(x, "i")), axis_name="i", backend=backend)(np.ones(4, np.float32))
    np.testing.assert_allclose(np.asarray(psum_grad), np.full(4, 4.0))       # JAX: psum transposes to psum


def test_bad_input_gets_one_clear_error(backend):
    with pytest.raises(XlapyError, match="needs 16 devices, but only 8 are available.*device_count=16"):
        xlapy.pmap(lambda x: x, backend=backend)(np.ones((16, 2), np.float32))
    with pytest.raises(XlapyError, match="devices= lists 2 devices"):
        xlapy.pmap(lambda x: x, devices=xlapy.devices()[:2], backend=backend)(np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match="inconsistent sizes|different sizes|size"):
        xlapy.pmap(lambda x, y: x + y, backend=backend)(np.ones((4, 2)), np.ones((2, 2)))
    with pytest.raises(XlapyError, match="ppermute: perm must be"):
        xlapy.vmap(lambda x: lax.ppermute(x, "i", [(0, 1), (1, 1)]), axis_name="i")(np.ones((2, 2), np.float32))
    with pytest.raises(XlapyError, match="psum_scatter: dimension 0 .* must be equal to the axis size 4"):
        xlapy.vmap(lambda x: lax.psum_scatter(x, "i"), axis_name="i")(np.ones((4, 3), np.float32))


def test_vmap_inside_pmap_mixes_device_and_batch_axes(backend):
    xs = np.random.default_rng(0).standard_normal((4, 3, 2)).astype(np.float32)

    def inner(v):
        return (lax.psum(v, "i"), lax.psum(v, "j"), lax.all_gather(v, "i"), lax.psum(v, ("i", "j")),
                lax.axis_index("i") + 10 * lax.axis_index("j"), lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
                lax.psum_scatter(lax.all_gather(v, "i"), "i"))
    want = [np.broadcast_to(xs.sum(0), xs.shape), np.broadcast_to(xs.sum(1, keepdims=True), xs.shape),
            np.broadcast_to(np.moveaxis(xs, 0, 1)[None], (4, 3, 4, 2)), np.broadcast_to(xs.sum((0, 1)), xs.shape),
            np.arange(4)[:, None] + 10 * np.arange(3)[None], np.roll(xs, 1, 0), 4 * xs]
    for got in (xlapy.pmap(xlapy.vmap(inner, axis_name="j"), axis_name="i", backend=backend)(xs),
                xlapy.vmap(xlapy.vmap(inner, axis_name="j"), axis_name="i")(xs)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)
