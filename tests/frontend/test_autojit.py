"""autojit (auto-clustering): every op that breaks jit splits the function instead; clusters are cached by
structure (compile counts asserted), reported with the breaking op and the user's line, dumped with XLA_FLAGS;
warm calls replay the recorded clusters, host ops and guards without running f's Python (how often its body
runs is counted, not timed); results agree with eager, jit (on what jit can run) and numpy, on both backends."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.frontend import lazy
from xlapy.frontend.lazy import state


@pytest.fixture(autouse=True)
def fresh():
    was_on = xlapy.set_lazy(False)      # these tests switch lazy mode themselves (XLAPY_LAZY=1 runs too)
    lazy.clear_lazy_cache()
    old = state.COMPILE_AT[0]
    state.COMPILE_AT[0] = 1
    try:
        yield
    finally:
        state.COMPILE_AT[0] = old
        xlapy.set_lazy(was_on)


def line_of(fun, text: str) -> int:
    import inspect
    lines, start = inspect.getsourcelines(fun)
    return start + next(i for i, line in enumerate(lines) if text in line)


def with_unique(x):
    y = xnp.round(xnp.tanh(x) * 3.0)
    u = xnp.unique(y)
    return xnp.sum(u * 2.0) + xnp.max(x)


def with_nonzero(x):
    idx = xnp.nonzero(x > 0.2)[0]
    return xnp.sum(x[idx] ** 2)


def with_mask(x):
    return xnp.mean(xnp.exp(x)[x > 0.5])


def with_branch(x):
    s = xnp.sum(x)
    if s > 2.0:
        return xnp.sin(x) * s
    return xnp.cos(x) - s


def with_int(x):
    n = int(xnp.argmax(x))
    return xnp.cumsum(x)[n] + x[0].item()


def with_host_function(x):
    h = np.asarray(x * 2.0)                  # a host computation on the value, in the middle
    return xnp.asarray(np.sort(h)) + x


CASES = {
    "unique": (with_unique, lambda x: np.sum(np.unique(np.round(np.tanh(x) * 3.0)) * 2.0) + x.max(), "xnp.unique"),
    "nonzero": (with_nonzero, lambda x: np.sum(x[x > 0.2] ** 2), "xnp.nonzero"),
    "mask": (with_mask, lambda x: np.mean(np.exp(x)[x > 0.5]), "x > 0.5"),
    "branch": (with_branch, lambda x: np.sin(x) * x.sum() if x.sum() > 2.0 else np.cos(x) - x.sum(), "if s"),
    "int": (with_int, lambda x: np.cumsum(x)[np.argmax(x)] + x[0], "n = int("),
    "host function": (with_host_function, lambda x: np.sort(x * 2.0) + x, "np.asarray"),
}
X = np.array([0.1, 0.9, 0.4, 0.7, 0.3, 0.8], np.float32)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_break_splits_and_agrees_with_numpy(case, xlapy_backend):
    fun, reference, marker = CASES[case]
    with pytest.raises(xlapy.ConcretizationError):
        xlapy.jit(fun)(X)                   # must-compile cannot run it
    auto = xlapy.autojit(fun)
    np.testing.assert_allclose(np.asarray(auto(X)), reference(X), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(auto(X)), np.asarray(fun(X)), rtol=1e-6)     # eager
    clusters = auto.clusters()
    assert len(clusters) >= 2 and all(c.compiles == 1 and c.runs == 2 for c in clusters)
    first = clusters[0]
    assert first.ended_by.where.endswith(f"test_autojit.py:{line_of(fun, marker)}"), first.ended_by


def counted(fun):
    """fun, and a list whose length is how often its Python body ran."""
    runs = []

    def body(*args):
        runs.append(1)
        return fun(*args)
    body.__name__ = fun.__name__
    return body, runs


def test_warm_calls_replay_without_running_the_python():
    body, runs = counted(with_unique)
    auto = xlapy.autojit(body)
    auto(X)
    before = xlapy.lazy_stats()
    for x in (X[::-1].copy(), X + 0.01, np.roll(X, 2)):      # new values, the same unique count: same shapes
        np.testing.assert_allclose(float(auto(x)), CASES["unique"][1](x), rtol=1e-5)
    after = xlapy.lazy_stats()
    assert after["compiles"] == before["compiles"] and after["cuts"] == before["cuts"]
    assert len(runs) == 1 and auto.stats == {"recorded": 1, "replayed": 3, "misses": 0}
    assert auto.calls == 4 and [c.runs for c in auto.clusters()] == [4, 4]


def test_a_new_unique_length_records_its_continuation_once():
    body, runs = counted(with_unique)
    auto = xlapy.autojit(body)
    four = np.array([0.1, 0.9, 0.4, 0.7, 0.3, 2.0], np.float32)       # round(tanh(x) * 3): 4 distinct values
    three = np.array([0.1, 0.9, 0.4, 0.7, 0.5, 0.8], np.float32)      # 3 distinct values
    for x in (four, three, four, three, three * 0.99, four):
        np.testing.assert_allclose(float(auto(x)), CASES["unique"][1](x), rtol=1e-5)
    assert len(runs) == 2                               # one recording per unique length; the rest replayed
    assert auto.stats["replayed"] == 4 and auto.stats["misses"] == 1
    assert [c.compiles for c in auto.clusters()] == [1, 1, 1]     # the prefix, one continuation per length


# per case: a second input, how often f's Python runs over (X, other, X, other, other * 1.01)
GUARDED = {
    "branch": (X * 0.1, 2),             # the branch goes the other way: its own continuation
    "int": (X[::-1].copy(), 3),         # argmax moves: int() reads another value (x 1.01 too: x[0].item())
    "nonzero": (X[::-1].copy(), 1),     # a host op: rerun on the new values, the same count of hits
    "mask": (X[::-1].copy(), 1),        # a boolean mask's indices: a host op, rerun on the new mask
    "host function": (X[::-1].copy(), 3),   # np.asarray(x * 2.0): the whole value is the guard
}


@pytest.mark.parametrize("case", sorted(GUARDED))
def test_guards_on_values_read(case):
    """A value Python reads is a guard: the same outcome replays, another records; results always agree."""
    fun, reference, _ = CASES[case]
    other, recordings = GUARDED[case]
    body, runs = counted(fun)
    auto = xlapy.autojit(body)
    for x in (X, other, X, other, other * 1.01):
        np.testing.assert_allclose(np.asarray(auto(x)), reference(x), rtol=1e-5)
    assert len(runs) == recordings, auto.stats
    assert auto.stats["recorded"] == recordings and auto.stats["replayed"] == 5 - recordings


def test_branch_outcome_selects_the_cached_continuation():
    auto = xlapy.autojit(with_branch)
    high, low = np.full(4, 1.0, np.float32), np.full(4, 0.1, np.float32)
    for x in (high, low, high, low):
        np.testing.assert_allclose(np.asarray(auto(x)), CASES["branch"][1](x), rtol=1e-6)
    clusters = auto.clusters()
    assert len(clusters) == 3                       # the prefix, and one continuation per branch
    assert [c.compiles for c in clusters] == [1, 1, 1]
    assert sorted(c.runs for c in clusters) == [2, 2, 4]
    assert "bool() (a Python branch on a value)" in str(clusters[0].ended_by)


def test_report_lists_clusters_reasons_sizes_and_counts():
    auto = xlapy.autojit(with_unique)
    auto(X)
    auto(X)
    text = auto.report()
    assert text.startswith("autojit(with_unique): 2 call(s), 2 cluster(s), 2 compile(s)")
    assert f"xlapy.numpy.unique: np.asarray at {__file__}:{line_of(with_unique, 'xnp.unique')}" in text
    assert "compiled 1x, run 2x" in text and "ops," in text and "the return of with_unique" in text


@pytest.mark.backends("cpu", reason="the CPU compiler writes the dumps (the interpreter runs modules as given)")
def test_clusters_are_dumped_with_xla_dump_to(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", f"--xla_dump_to={tmp_path}")
    xlapy.autojit(with_nonzero)(X)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert any("autojit_with_nonzero_1" in n for n in names), names
    assert any("autojit_with_nonzero_2" in n for n in names), names


def test_under_jit_it_is_traced_and_autojit_in_lazy_mode_returns_values():
    def f(x):
        return xnp.sum(x * 2.0)
    auto = xlapy.autojit(f)
    assert float(xlapy.jit(lambda x: auto(x) + 1.0)(X)) == pytest.approx(float(np.sum(X * 2.0)) + 1.0)
    out = auto(X)
    assert not lazy.is_pending(out)


def test_bad_inputs():
    with pytest.raises(xlapy.XlapyError, match="autojit expects a function"):
        xlapy.autojit(3)

    def failing(x):
        u = xnp.unique(x * 2.0)
        return xnp.zeros(int(u[0]) - 10)     # a host op that raises: a negative size
    with pytest.raises(Exception) as info:
        xlapy.autojit(failing)(X)
    notes = "".join(getattr(info.value, "__notes__", []))
    assert "autojit(failing) after cluster 2" in notes and "int()" in notes
    assert f"test_autojit.py:{line_of(failing, 'int(u[0])')}" in notes


def test_replay_keys_python_values_and_pytrees_and_forgets_at_clear_caches():
    def fun(params, x, scale):
        u = xnp.unique(xnp.round(x * scale))
        return {"n": u.shape[0], "s": xnp.sum(u) * params["w"], "x": x}
    body, runs = counted(fun)
    auto = xlapy.autojit(body)
    w = np.float32(0.5)
    for scale in (2.0, 2.0, 3.0, 3.0, 2.0):             # a Python scalar argument is keyed by its value
        out = auto({"w": w}, X, scale)
        u = np.unique(np.round(X * scale))
        assert out["n"] == len(u) and float(out["s"]) == pytest.approx(float(np.sum(u) * w))
        np.testing.assert_array_equal(np.asarray(out["x"]), X)
    assert len(runs) == 2 and auto.stats["replayed"] == 3
    xlapy.clear_caches()                                # its executables are forgotten: recorded again
    auto({"w": w}, X, 2.0)
    assert len(runs) == 3


def test_an_error_is_raised_by_the_recording_and_not_recorded():
    def fun(x):
        if float(xnp.sum(x)) > 100.0:
            raise ValueError("too big")
        return x + 1.0
    body, runs = counted(fun)
    auto = xlapy.autojit(body)
    auto(X)
    for _ in range(2):
        with pytest.raises(ValueError, match="too big"):
            auto(X * 1000.0)                            # a guard miss: recorded again, which raises
    np.testing.assert_allclose(np.asarray(auto(X)), X + 1.0)
    assert len(runs) == 3 and auto.stats["replayed"] == 1


def test_a_donating_jit_inside_reads_its_argument_and_outputs_are_fresh_arrays():
    double = xlapy.jit(lambda a: a * 2.0, donate_argnums=0)
    body, runs = counted(lambda x: double(x + 1.0))
    auto = xlapy.autojit(body)
    outs = [auto(X) for _ in range(3)]
    assert len(runs) == 1 and outs[1] is not outs[2]        # replayed; each call its own Array
    outs[1].delete()
    np.testing.assert_allclose(np.asarray(auto(X)), (X + 1.0) * 2.0)
    np.testing.assert_allclose(np.asarray(auto(X[::-1].copy())), (X[::-1] + 1.0) * 2.0)


def test_a_guard_that_keeps_missing_stops_replay_attempts():
    def fun(x):
        return x * float(xnp.sum(x))              # a float read: a guard on its value, new at every call
    body, runs = counted(fun)
    auto = xlapy.autojit(body)
    for k in range(6):
        x = X + k
        np.testing.assert_allclose(np.asarray(auto(x)), x * np.sum(x), rtol=1e-6)
    assert len(runs) == 6 and auto.stats == {"recorded": 6, "replayed": 0, "misses": 4}
    assert [c.compiles for c in auto.clusters()] == [1, 1]      # the value is a leaf: one structure
