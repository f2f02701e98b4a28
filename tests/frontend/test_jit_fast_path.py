"""The warm-call path of jit (no timings): the per-signature function generated for pytree arguments, static and
donated arguments, Python scalars and numpy inputs gives the full path's results, and anything that differs from
the compiled signature (structure, dtype, shape, weak type, static value, backend, x64) takes the full path."""
from collections import namedtuple

import numpy as np
import pytest

import xlapy
import xlapy.numpy as jnp
from xlapy import tree_util as tu
from xlapy.errors import XlapyError
from xlapy.frontend.jit import Jitted

BACKENDS = ["interpreter", "cpu"]
Pair = namedtuple("Pair", "a b")


class _Slow:
    """Counts calls of Jitted._call_slow (the full path)."""

    def __init__(self, monkeypatch):
        self.calls = 0
        real = Jitted._call_slow

        def counted(jitted, args, kwargs):
            self.calls += 1
            return real(jitted, args, kwargs)
        monkeypatch.setattr(Jitted, "_call_slow", counted)


def _params():
    rng = np.random.default_rng(0)
    return [(xlapy.device_put(rng.standard_normal((3, 3)).astype(np.float32)),
             xlapy.device_put(np.zeros(3, np.float32))) for _ in range(3)]


def _step(params, x, y):
    h = x
    for w, b in params:
        h = h @ w + b
    loss = jnp.sum((h - y) ** 2)
    return [(w - 0.1 * loss, b + 1.0) for w, b in params], loss


def _assert_tree_equal(a, b):
    la, ta = tu.tree_flatten(a)
    lb, tb = tu.tree_flatten(b)
    assert ta == tb
    for u, v in zip(la, lb):
        assert type(u) is type(v) is xlapy.Array
        assert u.aval == v.aval
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


@pytest.mark.parametrize("backend", BACKENDS)
def test_pytree_warm_call_matches_the_full_path(backend, monkeypatch):
    params = _params()
    x, y = xlapy.device_put(np.ones((2, 3), np.float32)), xlapy.device_put(np.ones((2, 3), np.float32))
    f = xlapy.jit(_step, backend=backend)
    first = f(params, x, y)
    slow = _Slow(monkeypatch)
    warm = f(params, x, y)
    assert slow.calls == 0 and f.trace_count == 1
    _assert_tree_equal(first, warm)
    assert isinstance(warm[0], list) and isinstance(warm[0][0], tuple)
    again = f(warm[0], x, y)              # outputs fed back in: the same signature
    assert slow.calls == 0 and f.trace_count == 1
    expected = xlapy.jit(_step, backend=backend)(warm[0], x, y)
    _assert_tree_equal(again, expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dicts_namedtuples_none_kwargs_and_registered_nodes(backend, monkeypatch):
    class Box:
        def __init__(self, items, label):
            self.items, self.label = items, label

    tu.register_pytree_node(Box, lambda b: (b.items, b.label), lambda label, ch: Box(list(ch), label))

    def fun(d, p, box, nothing, *, scale):
        assert nothing is None
        return {"z": d["b"] * scale, "a": Pair(p[0] + 1, p[1])}, Box([box.items[0] * 2], box.label), None

    v = xlapy.device_put(np.arange(3, dtype=np.float32))
    args = ({"b": v, "a": v + 1}, Pair(v, v * 2), Box([v], "L"), None)
    f = xlapy.jit(fun, backend=backend)
    first = f(*args, scale=v)
    slow = _Slow(monkeypatch)
    out, box, none = f(*args, scale=v)
    assert slow.calls == 0 and f.trace_count == 1 and none is None
    assert list(out) == ["a", "z"] and type(out["a"]) is Pair and box.label == "L"
    np.testing.assert_array_equal(np.asarray(out["z"]), np.asarray(first[0]["z"]))
    np.testing.assert_array_equal(np.asarray(box.items[0]), [0, 2, 4])
    # a different dict key set, aux data, namedtuple type or kwarg name is a new structure
    f({"b": v, "c": v + 1}, *args[1:], scale=v)
    f(args[0], (v, v * 2), *args[2:], scale=v)
    f(*args[:2], Box([v], "M"), None, scale=v)
    assert f.trace_count == 4 and slow.calls == 3
    with pytest.raises(TypeError):
        f(*args, scales=v)


@pytest.mark.parametrize("backend", BACKENDS)
def test_new_structure_dtype_shape_or_weak_type_retraces(backend):
    f = xlapy.jit(lambda p: [a * 2 for a in p] if isinstance(p, list) else p[0] * 2, backend=backend)
    a = jnp.ones(3)
    f([a, a])
    f([a, a])
    assert f.trace_count == 1
    f((a, a))                                            # tuple instead of list
    f([a, a, a])                                         # another length
    f([a, jnp.ones(4)])                                  # shape
    f([a, jnp.ones(3, dtype=np.int32)])                  # dtype
    assert f.trace_count == 5
    out = f([a, jnp.asarray(1.0) * 1.0])                 # a weak-typed leaf
    assert f.trace_count == 6 and out[1].weak_type
    assert not f([a, jnp.ones(())])[1].weak_type
    assert f.trace_count == 7
    for p in ([a, a], (a, a), [a, a, a]):                # all still cached
        f(p)
    assert f.trace_count == 7


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_scalars_and_numpy_inputs(backend, monkeypatch):
    f = xlapy.jit(lambda x, s: x * s, backend=backend)
    xn = np.arange(3, dtype=np.float64)                  # canonicalized to float32 (x64 off)
    r1 = f(xn, 2.0)
    slow = _Slow(monkeypatch)
    r2 = f(xn, 3.0)
    assert slow.calls == 0 and f.trace_count == 1
    assert r2.dtype == np.float32 and not r2.weak_type
    np.testing.assert_array_equal(np.asarray(r2), [0, 3, 6])
    np.testing.assert_array_equal(np.asarray(r1), [0, 2, 4])
    f(xn, 2)                                             # int scalar: another weak type
    f(np.arange(3, dtype=np.float32), 2.0)               # same aval, other numpy dtype: cached signature
    f(xn[::2], 2.0)                                      # another shape
    assert f.trace_count == 3
    np.testing.assert_array_equal(np.asarray(f(np.arange(6.0)[::2], 1.0)), [0, 2, 4])   # non-contiguous
    g = xlapy.jit(lambda s: s + 1, backend=backend)
    assert g(1.5).weak_type and float(g(2.5)) == 3.5 and g.trace_count == 1
    assert float(g(np.float32(2.5))) == 3.5 and not g(np.float32(2.5)).weak_type and g.trace_count == 2


def test_enable_x64_toggle_is_a_new_signature_for_scalars():
    f = xlapy.jit(lambda s: s * 2)
    assert f(1.5).dtype == np.float32
    before = xlapy.config.enable_x64
    try:
        xlapy.config.update("jax_enable_x64", True)
        assert f(1.5).dtype == np.float64
    finally:
        xlapy.config.update("jax_enable_x64", before)
    assert f(1.5).dtype == np.float32


@pytest.mark.parametrize("backend", BACKENDS)
def test_static_arguments_on_the_warm_path(backend, monkeypatch):
    f = xlapy.jit(lambda x, n, *, mode: x * n if mode == "mul" else x + n, static_argnums=1,
                  static_argnames="mode", backend=backend)
    x = jnp.ones(2)
    assert float(f(x, 3, mode="mul")[0]) == 3
    slow = _Slow(monkeypatch)
    assert float(f(x, 3, mode="mul")[0]) == 3 and slow.calls == 0
    assert float(f(x, 3, mode="add")[0]) == 4
    assert float(f(x, 5, mode="add")[0]) == 6
    assert f.trace_count == 3
    assert float(f(x, 3, mode="mul")[0]) == 3 and float(f(x, 5, mode="add")[0]) == 6 and f.trace_count == 3
    with pytest.raises(XlapyError, match="hashable"):
        f(x, [3], mode="mul")
    g = xlapy.jit(lambda x, n: x * n, static_argnames="n", backend=backend)
    assert float(g(x, 2)[0]) == 2 and float(g(x, n=2)[0]) == 2 and float(g(x, n=2)[0]) == 2
    assert float(g(x, n=4)[0]) == 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_donation_on_the_warm_path(backend, monkeypatch):
    f = xlapy.jit(lambda p, x: ([w + x for w in p], x * 2), donate_argnums=0, backend=backend)
    x = jnp.ones(2)
    p = [jnp.zeros(2), jnp.ones(2)]
    slow = _Slow(monkeypatch)
    for step in range(3):
        old = p
        p, x2 = f(old, x)
        assert all(w.is_deleted() for w in old) and not x.is_deleted() and not x2.is_deleted()
        np.testing.assert_array_equal(np.asarray(p[1]), [step + 2] * 2)
    assert f.trace_count == 1 and slow.calls == 1
    with pytest.raises(XlapyError, match="deleted"):
        f([jnp.zeros(2), old[1]], x)
    numpy_params = [np.zeros(2, np.float32), np.ones(2, np.float32)]
    f(numpy_params, x)
    f(numpy_params, x)
    np.testing.assert_array_equal(numpy_params[1], [1, 1])          # numpy arrays are copied, never deleted
    g = xlapy.jit(lambda a, b: a + b, donate_argnames="b", backend=backend)
    a = jnp.ones(2)
    for _ in range(2):
        b = jnp.ones(2)
        g(a, b=b)
        assert b.is_deleted() and not a.is_deleted()


@pytest.mark.parametrize("backend", BACKENDS)
def test_wrong_arguments_still_raise_clear_errors(backend):
    f = xlapy.jit(lambda p: p["w"] * 2, backend=backend)
    w = jnp.ones(2)
    f({"w": w})
    f({"w": w})
    with pytest.raises(XlapyError, match=r"argument p\['w'\] of type str"):
        f({"w": "text"})
    with pytest.raises(TypeError):
        f({"w": w}, 1)
    d = jnp.ones(2)
    xlapy.jit(lambda a: a, donate_argnums=0, backend=backend)(d)
    with pytest.raises(XlapyError, match="deleted"):
        f({"w": d})


def test_many_signatures_stay_correct_past_the_warm_function_limit():
    f = xlapy.jit(lambda x: x.sum())
    arrays = [jnp.ones(n) for n in range(1, 25)]
    for _ in range(2):
        for n, a in enumerate(arrays, 1):
            assert float(f(a)) == n
    assert f.trace_count == len(arrays)
    f.clear_cache()
    assert float(f(arrays[0])) == 1 and f.trace_count == len(arrays) + 1


def test_jit_inside_jit_with_pytrees_inlines():
    inner = xlapy.jit(lambda p: {"y": p["x"] * 3})
    x = jnp.ones(2)
    inner({"x": x})
    inner({"x": x})
    outer = xlapy.jit(lambda a: inner({"x": a})["y"] + 1)
    np.testing.assert_array_equal(np.asarray(outer(x)), [4, 4])
    assert outer.lower(x).as_text().count("multiply") == 1


def test_arrays_of_one_signature_share_their_aval():
    a, b = jnp.ones((2, 3)), xlapy.device_put(np.zeros((2, 3), np.float32))
    assert a.aval is b.aval
    f = xlapy.jit(lambda x: x + 1, backend="cpu")
    assert f(a).aval is a.aval
    assert xlapy.Array(np.ones(2), weak_type=True).aval is not xlapy.Array(np.ones(2)).aval


def test_x64_flag_is_part_of_the_signature(monkeypatch):
    """As in JAX, switching jax_enable_x64 retraces even when every argument is an Array."""
    import xlapy.numpy as xnp
    from xlapy.frontend.dtypes import config
    f = xlapy.jit(lambda a: a + xnp.arange(3))
    x = xlapy.device_put(np.ones(3, np.int32))
    assert f(x).dtype == np.int32
    monkeypatch.setattr(config, "enable_x64", True)
    assert f(x).dtype == np.int64          # retraced: arange is int64 now
    monkeypatch.setattr(config, "enable_x64", False)
    assert f(x).dtype == np.int32
