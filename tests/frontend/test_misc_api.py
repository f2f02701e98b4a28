"""eval_shape, ShapeDtypeStruct, make_jaxpr (HLO), disable_jit, ensure_compile_time_eval, block_until_ready, the
device queries and default_backend; every name of the new API is exported at xlapy.* and in __all__."""
import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp

NEW_NAMES = ["custom_gradient", "closure_convert", "jacfwd", "jacrev", "jacobian", "hessian", "linearize", "linear_transpose", "custom_jvp", "custom_vjp",
             "checkpoint", "remat", "checkpoint_policies", "ad_checkpoint", "eval_shape", "ShapeDtypeStruct",
             "make_jaxpr", "disable_jit", "ensure_compile_time_eval", "block_until_ready", "devices",
             "device_count", "local_devices", "local_device_count", "process_index", "process_count",
             "default_backend", "pure_callback", "tree_util", "tree"]


def test_exports():
    assert [n for n in NEW_NAMES if n not in xlapy.__all__ or not hasattr(xlapy, n)] == []
    from xlapy.ad_checkpoint import checkpoint, checkpoint_name, checkpoint_policies  # noqa: F401
    assert xlapy.remat is xlapy.checkpoint


def test_shape_dtype_struct():
    s = xlapy.ShapeDtypeStruct((2, 3), np.float32)
    assert s.shape == (2, 3) and s.dtype == np.float32 and s.ndim == 2 and s.size == 6 and len(s) == 2
    assert s == xlapy.ShapeDtypeStruct([2, 3], "float32") and hash(s) == hash(xlapy.ShapeDtypeStruct((2, 3), "f4"))
    assert "shape=(2, 3)" in repr(s)
    # jit lowers on abstract arguments
    text = xlapy.jit(lambda x: x * 2).lower(s).as_text()
    assert "f32[2,3]" in text


def test_eval_shape():
    out = xlapy.eval_shape(lambda x, y: {"m": x @ y, "s": (x.sum(), 1)}, xlapy.ShapeDtypeStruct((2, 3), np.float32),
                           np.ones((3, 4), np.float32))
    assert out["m"] == xlapy.ShapeDtypeStruct((2, 4), np.float32)
    assert out["s"][0].shape == () and out["s"][1].weak_type
    # nothing runs: a callback inside is never called
    calls = []
    xlapy.eval_shape(lambda x: xlapy.pure_callback(lambda v: calls.append(1) or v, x, x),
                     xlapy.ShapeDtypeStruct((3,), np.float32))
    assert calls == []
    with pytest.raises(xlapy.XlapyError):
        xlapy.eval_shape(lambda x, y: x @ y, xlapy.ShapeDtypeStruct((2, 3), np.float32), np.ones((4,), np.float32))


def test_make_jaxpr_is_hlo():
    j = xlapy.make_jaxpr(lambda x: xnp.sin(x) * 2)(np.ones(3, np.float32))
    text = str(j)
    assert text.startswith("HloModule") and "sine(" in text and "ENTRY" in text
    assert [a.shape for a in j.in_avals] == [(3,)] and [a.shape for a in j.out_avals] == [(3,)]
    assert any(e.opcode == "sine" for e in j.eqns) and j.jaxpr is j and j.consts == []
    j2, shape = xlapy.make_jaxpr(lambda x, n: x * n, static_argnums=1, return_shape=True)(np.ones(2), 3)
    assert shape.shape == (2,) and "constant(3)" in str(j2)


def test_disable_jit():
    seen = []

    @xlapy.jit
    def f(x):
        seen.append(type(x).__name__)
        return x + 1
    x = np.ones(2, np.float32)
    f(x)
    f(x)
    assert seen == ["Tracer"]
    with xlapy.disable_jit():
        np.testing.assert_allclose(f(x), 2 * x)
        np.testing.assert_allclose(f(x), 2 * x)
    assert seen == ["Tracer", "ndarray", "ndarray"]
    f(x)            # compiled again: the cached executable, no retrace
    assert seen == ["Tracer", "ndarray", "ndarray"]
    with xlapy.disable_jit(False):
        f(x)
    assert len(seen) == 3


def test_ensure_compile_time_eval():
    @xlapy.jit
    def f(x):
        with xlapy.ensure_compile_time_eval():
            n = xnp.arange(4).sum()
            assert isinstance(n, xlapy.Array) and int(n) == 6
            y = xnp.sin(x)          # depends on the argument: still traced
            assert not isinstance(y, xlapy.Array) or isinstance(y, xlapy.frontend.Tracer)
        return y * int(n)
    np.testing.assert_allclose(f(np.ones(2, np.float32)), 6 * np.sin(np.ones(2)), rtol=1e-6)


def test_block_until_ready_and_devices():
    tree = {"a": xnp.ones(2), "b": [np.zeros(1), 3]}
    assert xlapy.block_until_ready(tree) is tree
    assert xlapy.device_count() == 1 and xlapy.local_device_count() == 1
    assert xlapy.process_index() == 0 and xlapy.process_count() == 1
    (d,) = xlapy.devices()
    assert d.id == 0 and d.platform == xlapy.default_backend() and xlapy.local_devices() == [d]
    assert xlapy.devices("interpreter")[0].platform == "interpreter"
    with pytest.raises(xlapy.XlapyError):
        xlapy.devices("no-such-backend")
    assert xlapy.default_backend() in ("cpu", "interpreter")


def test_small_top_level_names():
    assert xlapy.host_count() == 1 and xlapy.host_id() == 0 and xlapy.host_ids() == [0]
    assert xlapy.process_indices() == [0]
    assert xlapy.effects_barrier() is None
    assert xlapy.typeof(np.ones((2, 3), np.float32)).shape == (2, 3)
    assert xlapy.float0.itemsize == 0
    f = lambda x: x + 1
    assert xlapy.named_call(f, name="g") is f
    with xlapy.named_scope("block"):
        np.testing.assert_allclose(xlapy.jit(f)(np.ones(2)), 2 * np.ones(2))
    with pytest.raises(TypeError, match="must be a string"):
        with xlapy.named_scope(3):
            pass
    assert "xlapy" in xlapy.print_environment_info(return_string=True)


def test_closure_convert():
    def outer(x, y):
        g = lambda a: a * y + 1.0
        conv, consts = xlapy.closure_convert(g, x)
        assert len(consts) == 1         # y, a tracer of outer's trace
        return conv(x, *consts)
    np.testing.assert_allclose(xlapy.jit(outer)(np.ones(2), 3.0), [4.0, 4.0])
    conv, consts = xlapy.closure_convert(lambda a: a * 2, np.ones(2))
    assert consts == [] and np.allclose(conv(np.ones(2)), 2)


def test_fwd_and_bwd():
    def f(x, w):
        return xnp.tanh(x @ w)
    x, w, ct = np.ones((2, 3)) / 3, np.arange(12.0).reshape(3, 4) / 10, np.ones((2, 4))
    fwd, bwd = xlapy.fwd_and_bwd(f, argnums=(0, 1))
    y, res = fwd(x, w)
    gx, gw = bwd(res, ct)
    _, pull = xlapy.vjp(f, x, w)
    ex, ew = pull(np.asarray(ct, np.float32))
    np.testing.assert_allclose(y, f(x, w), rtol=1e-6)
    np.testing.assert_allclose(gx, ex, rtol=1e-5)
    np.testing.assert_allclose(gw, ew, rtol=1e-5)
    fwd, bwd = xlapy.fwd_and_bwd(lambda x: (xnp.sin(x), x.sum()), argnums=0, has_aux=True, jitted=False)
    y, res, aux = fwd(np.ones(3, np.float32))
    np.testing.assert_allclose(bwd(res, np.ones(3, np.float32)), np.cos(np.ones(3)), rtol=1e-6)


def test_one_device_array_helpers():
    a = xlapy.make_array_from_callback((2, 3), None, lambda idx: np.arange(6.0, dtype=np.float32).reshape(2, 3)[idx])
    np.testing.assert_allclose(a, np.arange(6.0).reshape(2, 3))
    b = xlapy.make_array_from_single_device_arrays((2,), None, [np.ones(2, np.float32)])
    np.testing.assert_allclose(b, [1, 1])
    with pytest.raises(ValueError):
        xlapy.make_array_from_single_device_arrays((3,), None, [np.ones(2)])
    c = xlapy.make_array_from_process_local_data(None, np.zeros(4, np.float32), (4,))
    assert c.shape == (4,)
    with xlapy.transfer_guard("disallow"), xlapy.checking_leaks():
        assert xlapy.live_arrays() == [] and xlapy.copy_to_host_async(c) is None
    with pytest.raises(ValueError):
        with xlapy.transfer_guard("bogus"):
            pass
