"""Lazy eager mode (xlapy/frontend/lazy/): recording, every cut reason, the structural cache (compile counts, not
times), dead values, lazy gradients, agreement with eager and jit on both backends, errors."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.frontend import lazy
from xlapy.frontend.lazy import cut, grad as lazy_grad, state


@pytest.fixture(autouse=True)
def fresh():
    """Each test starts with no compiled clusters, nothing pending and structures compiled at their first cut
    (COMPILE_AT 1) unless it says otherwise."""
    was_on = xlapy.set_lazy(False)      # these tests switch lazy mode themselves (XLAPY_LAZY=1 runs too)
    lazy.sync()
    lazy.clear_lazy_cache()
    old = state.COMPILE_AT[0]
    state.COMPILE_AT[0] = 1
    try:
        yield
    finally:
        state.COMPILE_AT[0] = old
        lazy.sync()
        xlapy.set_lazy(was_on)


def stats_delta(before):
    after = lazy.lazy_stats()
    return {k: after[k] - before[k] for k in ("cuts", "compiles", "hits", "nodes_computed")}


def pending(x) -> bool:
    return lazy.is_pending(x)


def test_ops_record_until_a_value_is_read():
    x = xnp.arange(6.0, dtype=np.float32).reshape(2, 3)
    with xlapy.lazy():
        y = xnp.sin(x) * 2.0 + 1.0
        assert pending(y) and y.shape == (2, 3) and y.dtype == np.float32
        z = y.sum(axis=1)
        assert pending(z)
        np.testing.assert_allclose(np.asarray(z), (np.sin(np.asarray(x)) * 2 + 1).sum(axis=1), rtol=1e-6)
        assert not pending(y) and not pending(z)       # one cut computed both live values


READS = {
    "np.asarray": lambda v: np.asarray(v),
    "print / repr": repr,
    "print / str": str,
    ".item()": lambda v: v.item(),
    "bool() (a Python branch on a value)": lambda v: bool(v > 0),
    "float()": float,
    "int()": int,
    ".tolist()": lambda v: v.tolist(),
    "block_until_ready()": lambda v: v.block_until_ready(),
}


@pytest.mark.parametrize("read", sorted(READS))
def test_every_read_cuts_and_names_itself(read):
    sink = _Sink()
    state.graph().sinks.append(sink)
    try:
        with xlapy.lazy():
            v = xnp.sum(xnp.ones(3, np.float32) * 2.0)
            READS[read](v)
    finally:
        state.graph().sinks.remove(sink)
    assert not pending(v) and float(v) == 6.0
    (first,) = [c for c in sink.cuts if c.reason.read == read or read.startswith("bool") and "bool" in
                c.reason.read]
    assert first.reason.where.endswith(".py:" + first.reason.where.rsplit(":", 1)[1])
    assert "test_lazy.py" in first.reason.where


class _Sink:
    def __init__(self):
        self.cuts = []

    def module_name(self):
        return "lazy_test"

    def cut(self, record):
        self.cuts.append(record)


def test_named_cuts_sync_size_limit_end_of_block_and_jit():
    sink = _Sink()
    state.graph().sinks.append(sink)
    old = state.MAX_NODES[0]
    try:
        with xlapy.lazy():
            a = xnp.ones(2, np.float32) + 1.0
            xlapy.sync()
            assert not pending(a)
            state.MAX_NODES[0] = 5
            b = a
            for _ in range(7):
                b = b * 1.5
            assert not pending(a)
            state.MAX_NODES[0] = old
            c = xlapy.jit(lambda t: t * 2.0, donate_argnums=0)(a + 1.0)   # a donating jitted call reads it
            d = a - 1.0
        assert not pending(d)                               # leaving the block computes what is pending
    finally:
        state.MAX_NODES[0] = old
        state.graph().sinks.remove(sink)
    reads = [c.reason.read for c in sink.cuts]
    assert reads[0] == "xlapy.sync()"
    assert "size limit" in reads
    assert any(c.reason.api == "a jitted call" for c in sink.cuts)
    assert reads[-1] == "end of lazy block"
    np.testing.assert_allclose(np.asarray(c), [6.0, 6.0])
    np.testing.assert_allclose(np.asarray(b), 2.0 * 1.5 ** 7, rtol=1e-6)


def test_a_loop_compiles_its_body_once_and_replays_it():
    x = np.linspace(0, 1, 8, dtype=np.float32)
    w = xnp.asarray(np.ones(8, np.float32))
    before = lazy.lazy_stats()
    with xlapy.lazy():
        for _ in range(5):
            w = w - 0.1 * xnp.tanh(w * x)
            float(w.sum())
    delta = stats_delta(before)
    assert delta["cuts"] == 5 and delta["compiles"] == 1 and delta["hits"] == 4
    ref = np.ones(8, np.float32)
    for _ in range(5):
        ref = ref - np.float32(0.1) * np.tanh(ref * x)
    np.testing.assert_allclose(np.asarray(w), ref, rtol=1e-6)


def test_first_cut_of_a_structure_runs_op_by_op_then_compiles():
    state.COMPILE_AT[0] = 2
    before = lazy.lazy_stats()
    with xlapy.lazy():
        outs = [float(xnp.sum(xnp.cos(xnp.ones(4, np.float32) * i))) for i in range(3)]
    delta = stats_delta(before)
    assert delta["cuts"] == 3 and delta["compiles"] == 1 and delta["hits"] == 1
    np.testing.assert_allclose(outs, [4 * np.cos(i) for i in range(3)], rtol=1e-6)


def test_dead_values_are_never_computed():
    x = xnp.asarray(np.ones(4, np.float32))

    def computed(with_unused: bool) -> int:
        before = lazy.lazy_stats()
        with xlapy.lazy():
            if with_unused:
                unused = xnp.exp(x) * 3.0
                del unused
            y = x + 1.0
            xlapy.sync()
        np.testing.assert_allclose(np.asarray(y), 2.0)
        return stats_delta(before)["nodes_computed"]
    assert computed(True) == computed(False)


def test_leaves_are_released_after_the_cut():
    import gc
    import weakref
    with xlapy.lazy():
        big = xnp.ones(16, np.float32) * 1.0
        xlapy.sync()                        # a computed LazyArray: weakly referenceable
        ref = weakref.ref(big)
        y = big * 2.0
        del big
        gc.collect()
        assert ref() is not None            # the pending node still reads it
        xlapy.sync()
    gc.collect()
    assert ref() is None and float(y[0]) == 2.0


def _mixed(x, y):
    a = xnp.where(x > 0.5, xnp.exp(-x), x * y)
    b = xnp.matmul(a.reshape(3, 4), y.reshape(4, 3))
    c = xnp.concatenate([b, xnp.cumsum(b, axis=0)], axis=1)
    return xnp.max(c, axis=0) + xnp.argmax(c, axis=1).astype(np.float32).sum(), c.T[::2]


def test_lazy_agrees_with_eager_and_jit(xlapy_backend):
    rng = np.random.default_rng(0)
    x, y = rng.random(12, dtype=np.float32), rng.random(12, dtype=np.float32)
    eager = _mixed(x, y)
    jitted = xlapy.jit(_mixed)(x, y)
    with xlapy.lazy():
        lazy_out = _mixed(x, y)
        assert all(pending(o) for o in lazy_out)
    for e, j, lz in zip(eager, jitted, lazy_out):
        np.testing.assert_allclose(np.asarray(lz), np.asarray(e), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(lz), np.asarray(j), rtol=1e-5)


def test_multi_result_ops_and_weak_types():
    with xlapy.lazy():
        x = xnp.asarray(np.array([3.0, 1.0, 2.0], np.float32))
        vals, idx = xlapy.lax.sort_key_val(x, xnp.arange(3))
        s = xnp.asarray(2.0) * 1          # weak types survive recording
        assert pending(vals) and pending(idx)
    np.testing.assert_array_equal(np.asarray(vals), [1, 2, 3])
    np.testing.assert_array_equal(np.asarray(idx), [1, 2, 0])
    assert float(s) == 2.0


def _loss(params, x):
    h = xnp.tanh(x @ params["w"] + params["b"])
    return xnp.mean(h ** 2)


def test_lazy_grad_is_derived_once_per_structure(xlapy_backend):
    rng = np.random.default_rng(1)
    params = {"w": rng.standard_normal((4, 3)).astype(np.float32), "b": np.zeros(3, np.float32)}
    x = rng.standard_normal((5, 4)).astype(np.float32)
    ref_value, ref_grads = xlapy.value_and_grad(_loss)(params, x)
    before = dict(lazy_grad.STATS)
    p = params
    with xlapy.lazy():
        for i in range(3):
            value, grads = xlapy.value_and_grad(_loss)(p, x)
            assert pending(value) and pending(grads["w"])
            if i == 0:
                np.testing.assert_allclose(float(value), float(ref_value), rtol=1e-5)
                np.testing.assert_allclose(np.asarray(grads["w"]), np.asarray(ref_grads["w"]), rtol=1e-5, atol=1e-6)
            p = xlapy.tree_util.tree_map(lambda a, g: a - 0.1 * g, p, grads)
        xlapy.sync()
    assert lazy_grad.STATS["derived"] - before["derived"] == 1
    assert lazy_grad.STATS["reused"] - before["reused"] == 2


def test_lazy_grad_falls_back_to_tracing_for_custom_rules_and_reads():
    @xlapy.custom_jvp
    def f(x):
        return xnp.sin(x)
    f.defjvp(lambda primals, tangents: (xnp.sin(primals[0]), 10.0 * tangents[0]))   # a deliberately odd rule

    with xlapy.lazy():
        g = xlapy.grad(lambda x: f(x).sum())(xnp.ones(3, np.float32))
        np.testing.assert_allclose(np.asarray(g), 10.0)           # the custom rule, not cos(1)

        def reads(x):
            return x.sum() * float(x[0])
        with pytest.raises(xlapy.ConcretizationError):
            xlapy.grad(reads)(xnp.ones(3, np.float32))
        with pytest.raises(xlapy.XlapyError, match="real scalar output"):
            xlapy.grad(lambda x: x * 2)(xnp.ones(3, np.float32))


def test_shape_errors_are_raised_at_the_op():
    with xlapy.lazy():
        with pytest.raises(xlapy.XlapyError, match=r"test_lazy\.py:\d+"):
            xnp.ones((2, 3), np.float32) @ xnp.ones((2, 3), np.float32)


def test_an_error_at_the_cut_names_the_pending_ops_and_the_read(monkeypatch):
    def failing_compile(module, backend):
        raise xlapy.XlapyError("backend failure")
    monkeypatch.setattr(cut, "_compile", failing_compile)
    with xlapy.lazy():
        y = xnp.tanh(xnp.ones(2, np.float32))
        with pytest.raises(xlapy.XlapyError, match=r"(?s)backend failure.*np\.asarray at .*test_lazy\.py:\d+.*tanh"):
            np.asarray(y)
    monkeypatch.undo()
    np.testing.assert_allclose(np.asarray(y), np.tanh(1.0), rtol=1e-6)     # still pending: computed now


def test_values_read_from_another_thread():
    with xlapy.lazy():
        y = xnp.ones(3, np.float32) * 4.0
    # leaving the block computed it; record again in a thread and read it here
    box = {}

    def work():
        with xlapy.lazy():
            box["v"] = xnp.arange(3.0, dtype=np.float32) + 1.0
            box["pending"] = pending(box["v"])
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not box["pending"] or not pending(box["v"])      # the thread's block end computed it
    np.testing.assert_allclose(np.asarray(box["v"]), [1, 2, 3])
    assert float(y[1]) == 4.0


def test_deleted_and_switch():
    assert not lazy.enabled()
    previous = xlapy.set_lazy(True)
    try:
        assert lazy.enabled()
        y = xnp.ones(2, np.float32) + 1.0
        assert pending(y)
        y.delete()
        assert y.is_deleted()
        with pytest.raises(xlapy.XlapyError, match="deleted"):
            np.asarray(y)
        with xlapy.lazy(False):
            assert not pending(xnp.ones(2, np.float32) + 1.0)
    finally:
        xlapy.set_lazy(previous)
    assert not lazy.enabled()


def test_an_op_with_an_unkeyable_attribute_runs_eagerly():
    from xlapy.frontend.tracer import bind

    class Opaque:                   # identity-hashed: no value-hashable form
        __hash__ = object.__hash__
    with xlapy.lazy():
        x = xnp.ones(3, np.float32) * 2.0
        assert pending(x)
        key = lazy.op_key("negate", [x], [x.aval], {"frontend_attributes": Opaque()}, None, None, "cpu")
        assert key is None
        y = bind("negate", [x])
        assert pending(y)
    np.testing.assert_allclose(np.asarray(y), -2.0)


def test_a_jitted_call_on_pending_values_joins_the_graph(xlapy_backend):
    f = xlapy.jit(lambda t, s: (xnp.sin(t) * s, xnp.sum(t)))
    x = np.linspace(0, 1, 5, dtype=np.float32)
    want = f(x, 3.0)
    before = lazy.lazy_stats()
    with xlapy.lazy():
        t = xnp.asarray(x) * 1.0
        out = f(t, 3.0)                                     # inlined: a call node, nothing computed yet
        assert pending(out[0]) and pending(out[1]) and out[0].weak_type == want[0].weak_type
        total = out[1] + 1.0
        xlapy.sync()
    assert stats_delta(before)["cuts"] == 1 and f.trace_count == 1
    np.testing.assert_allclose(np.asarray(out[0]), np.asarray(want[0]), rtol=1e-6)
    np.testing.assert_allclose(float(total), float(want[1]) + 1.0, rtol=1e-6)
