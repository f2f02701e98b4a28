"""lax.psend / lax.precv and lax.ragged_all_to_all (frontend/parallel/point_to_point.py) under shard_map on 2 and
4 devices (the HLO ragged-all-to-all op), inside jit and under vmap with an axis name (composed from all_gather /
all_to_all), against a numpy model of JAX's definition (its docstring's pseudo-code; XLA:CPU itself has no
ragged-all-to-all and JAX's psend / precv run on GPUs only); bad input."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy import lax
from xlapy.sharding import PartitionSpec as P


@pytest.fixture(autouse=True)
def eight_devices(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8")


def ragged_reference(operands, outputs, in_off, send, out_off):
    """jax.lax.ragged_all_to_all's docstring: sender s's slice i goes to member i // k at its out_off[s, i]."""
    n, length = in_off.shape
    k = length // n
    result = outputs.copy()
    for s in range(n):
        for i in range(length):
            size = send[s, i]
            result[i // k, out_off[s, i]:out_off[s, i] + size] = operands[s, in_off[s, i]:in_off[s, i] + size]
    return result


def _ragged_case(n: int = 4, k: int = 2, rows: int = 6, out_rows: int = 12, seed: int = 0):
    rng = np.random.default_rng(seed)
    operands = rng.integers(1, 100, (n, rows, 3)).astype(np.float32)
    send = rng.integers(0, 3, (n, n * k)).astype(np.int32)
    in_off = rng.integers(0, rows - 2, (n, n * k)).astype(np.int32)
    recv, out_off = np.zeros_like(send), np.zeros_like(send)
    for s in range(n):
        for i in range(n * k):
            d, j = divmod(i, k)
            recv[d, s * k + j] = send[s, i]
            out_off[s, i] = (s * k + j) * 3 % (out_rows - 2)
    outputs = np.full((n, out_rows, 3), -1, np.float32)
    return (operands, outputs, in_off, send, out_off, recv), ragged_reference(operands, outputs, in_off, send, out_off)


def _per_device(*args):
    return lax.ragged_all_to_all(*(a[0] for a in args), axis_name="x")[None]


def test_ragged_all_to_all_docstring_example(xlapy_backend):
    a = lambda *rows: np.asarray(rows, np.int32)      # noqa: E731
    args = (a([1, 2, 2], [3, 4, 0]), np.zeros((2, 4), np.int32), a([0, 1], [0, 1]), a([1, 2], [1, 1]),
            a([0, 0], [1, 2]), a([1, 1], [2, 1]))
    g = xlapy.shard_map(_per_device, mesh=xlapy.make_mesh((2,), ("x",)), in_specs=(P("x"),) * 6, out_specs=P("x"),
                        backend=xlapy_backend)
    np.testing.assert_array_equal(np.asarray(g(*args)), [[1, 3, 0, 0], [2, 2, 4, 0]])
    pm = xlapy.pmap(lambda *v: lax.ragged_all_to_all(*v, axis_name="x"), axis_name="x", backend=xlapy_backend)
    np.testing.assert_array_equal(np.asarray(pm(*args)), [[1, 3, 0, 0], [2, 2, 4, 0]])


def test_ragged_all_to_all_gradient(xlapy_backend):
    # under grad the shard_map is emulated (the composition): each sent row gets its cotangent once, a row of
    # `output` that a received slice overwrites gets none
    a = lambda *rows: np.asarray(rows, np.int32)      # noqa: E731
    idx = (a([0, 1], [0, 1]), a([1, 2], [1, 1]), a([0, 0], [1, 2]), a([1, 1], [2, 1]))
    g = xlapy.shard_map(_per_device, mesh=xlapy.make_mesh((2,), ("x",)), in_specs=(P("x"),) * 6, out_specs=P("x"),
                        backend=xlapy_backend)
    operand = np.array([[1, 2, 2], [3, 4, 0]], np.float32)
    grads = xlapy.grad(lambda o, out: g(o, out, *idx).sum(), argnums=(0, 1))(operand, np.zeros((2, 4), np.float32))
    np.testing.assert_array_equal(np.asarray(grads[0]), [[1, 1, 1], [1, 1, 0]])
    np.testing.assert_array_equal(np.asarray(grads[1]), [[0, 0, 1, 1], [0, 0, 0, 1]])


def test_ragged_all_to_all_on_four_devices_inside_jit_and_under_vmap(xlapy_backend):
    args, want = _ragged_case()
    g = xlapy.shard_map(_per_device, mesh=xlapy.make_mesh((4,), ("x",)), in_specs=(P("x"),) * 6, out_specs=P("x"),
                        backend=xlapy_backend)
    np.testing.assert_array_equal(np.asarray(g(*args)), want)              # the HLO op, one program per device
    np.testing.assert_array_equal(np.asarray(xlapy.jit(g)(*args)), want)   # emulated: the composition
    vm = xlapy.vmap(lambda *a: lax.ragged_all_to_all(*a, axis_name="x"), axis_name="x")
    np.testing.assert_array_equal(np.asarray(vm(*args)), want)


def test_ragged_all_to_all_bad_input():
    args, _ = _ragged_case(n=2)
    ops, outs, in_off, send, out_off, recv = (a[0] for a in args)
    vm = lambda f, *a: xlapy.vmap(f, axis_name="x")(*(np.stack([v, v]) for v in a))   # noqa: E731
    with pytest.raises(ValueError, match="input_offsets must be integer type"):
        vm(lambda *a: lax.ragged_all_to_all(*a, axis_name="x"), ops, outs, in_off.astype(np.float32), send,
           out_off, recv)
    with pytest.raises(ValueError, match="send_sizes must be rank 1"):
        vm(lambda *a: lax.ragged_all_to_all(*a, axis_name="x"), ops, outs, in_off, send[None], out_off, recv)
    with pytest.raises(xlapy.XlapyError, match="must be a multiple of the size 2"):
        vm(lambda *a: lax.ragged_all_to_all(*a, axis_name="x"), ops, outs, in_off[:3], send[:3], out_off[:3],
           recv[:3])
    with pytest.raises(xlapy.XlapyError, match="one dtype and differ only in their leading dimension"):
        vm(lambda *a: lax.ragged_all_to_all(*a, axis_name="x"), ops, outs[:, :2], in_off, send, out_off, recv)
    with pytest.raises(xlapy.XlapyError, match="axis"):
        lax.ragged_all_to_all(ops, outs, in_off, send, out_off, recv, axis_name="x")


RING = [(0, 1), (1, 2), (2, 3), (3, 0)]


def _exchange(x):
    token = lax.psend(x, "x", RING)
    return lax.precv(token, xlapy.ShapeDtypeStruct(x.shape, x.dtype), "x", RING)


def _exchange_by_created_token(x):
    lax.psend(x * 2, "x", [(0, 3)])
    return lax.precv(lax.create_token(), xlapy.ShapeDtypeStruct(x.shape, x.dtype), "x", [(0, 3)])


def test_psend_precv_is_a_permute(xlapy_backend):
    mesh = xlapy.make_mesh((4,), ("x",))
    x = np.arange(8, dtype=np.float32)
    g = xlapy.shard_map(_exchange, mesh=mesh, in_specs=P("x"), out_specs=P("x"), backend=xlapy_backend)
    want = np.roll(x.reshape(4, 2), 1, axis=0).reshape(-1)
    np.testing.assert_array_equal(np.asarray(g(x)), want)
    np.testing.assert_array_equal(np.asarray(xlapy.jit(g)(x)), want)
    h = xlapy.shard_map(_exchange_by_created_token, mesh=mesh, in_specs=P("x"), out_specs=P("x"), backend=xlapy_backend)
    np.testing.assert_array_equal(np.asarray(h(x)), [0, 0, 0, 0, 0, 0, 0, 2])    # only device 3 receives


def test_psend_precv_bad_input():
    x = np.ones((2, 3), np.float32)

    def mismatched(v):
        token = lax.psend(v, "x", RING[:2])
        return lax.precv(token, xlapy.ShapeDtypeStruct(v.shape, v.dtype), "x", RING)

    def unmatched(v):
        return lax.precv(lax.create_token(), xlapy.ShapeDtypeStruct(v.shape, v.dtype), "x", RING)

    def twice(v):
        token = lax.psend(v, "x", RING)
        lax.precv(token, xlapy.ShapeDtypeStruct(v.shape, v.dtype), "x", RING)
        return lax.precv(token, xlapy.ShapeDtypeStruct(v.shape, v.dtype), "x", RING)

    for fn, match in ((mismatched, "this precv expects"), (unmatched, "no psend of float32"),
                      (twice, "received already")):
        with pytest.raises(xlapy.XlapyError, match=match):
            xlapy.vmap(fn, axis_name="x")(np.stack([x] * 4))
    with pytest.raises(xlapy.XlapyError, match="perm"):
        xlapy.vmap(lambda v: lax.psend(v, "x", [(0, 9)]), axis_name="x")(np.stack([x] * 4))
    with pytest.raises(xlapy.XlapyError, match="axis"):
        lax.psend(x, "x", RING)
