"""jit: tracing, the compile cache, static arguments, pytrees, control flow, lowering and cost analysis."""
import re
import warnings

import numpy as np
import pytest

import xlapy
from xlapy import lax

x23 = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_seed_sum_matches_numpy_and_jax_hlo():
    f = xlapy.jit(lambda x, y, z: lax.reduce_sum(x + y * z, (0, 1)))
    y, z = x23 + 1, x23 * 2
    assert np.allclose(np.asarray(f(x23, y, z)), (x23 + y * z).sum())
    text = f.lower(x23, y, z).as_text()
    assert text.startswith("HloModule jit__lambda")
    ops = re.findall(r"= \S+ (\w[\w-]*)\(", text)
    # the same ops, in the same order, as tests/corpus/jax/seed_sum_xyz.hlo
    assert ops == ["parameter", "parameter", "add", "parameter", "parameter", "parameter", "multiply", "add",
                   "constant", "reduce"]
    assert "ENTRY %main" in text and "dimensions={0,1}, to_apply=%region_0" in text
    xlapy.hlo.verify(xlapy.hlo.parse(text))


def make_mse():
    traces = []

    def get_MSE(y, y_hat):
        traces.append(1)
        d = y - y_hat
        return lax.reduce_sum(d * d, (0,)) / y.shape[0]
    return xlapy.jit(get_MSE), traces


def test_mse_recompilation_behaviour():
    mse, traces = make_mse()
    a, b = np.ones(5, np.float32), np.zeros(5, np.float32)
    assert float(mse(a, b)) == pytest.approx(1.0)
    mse(a * 2, b)                                   # same shapes and dtypes: no retrace
    assert len(traces) == 1 and mse._cache_size() == 1
    mse(np.ones(7, np.float32), np.zeros(7, np.float32))   # new shape: retrace
    assert len(traces) == 2
    mse(np.ones(7, np.float16), np.zeros(7, np.float16))   # new dtype: retrace
    assert len(traces) == 3
    mse(np.ones(5, np.float32), np.zeros(5, np.float32))   # back to the first: cached
    assert len(traces) == 3


def test_static_argnums_and_argnames_retrace_on_change():
    traces = []

    def f(x, n, scale=1.0):
        traces.append(n)
        return x * n * scale
    g = xlapy.jit(f, static_argnums=1, static_argnames="scale")
    assert np.allclose(np.asarray(g(x23, 2)), x23 * 2)
    g(x23, 2)
    assert traces == [2]
    g(x23, 3)
    assert traces == [2, 3]
    g(x23, 3, scale=2.0)
    assert len(traces) == 3 and np.allclose(np.asarray(g(x23, 3, scale=2.0)), x23 * 6)
    # a static argnum passed by keyword is still static (a new call pattern traces once, like JAX)
    np.testing.assert_allclose(np.asarray(g(x23, n=4, scale=2.0)), x23 * 8)
    assert traces[-1] == 4


def test_explain_names_changed_argument():
    f = xlapy.jit(lambda x, y: x + y, explain=True)
    f(np.ones(3, np.float32), np.ones(3, np.float32))
    with pytest.warns(xlapy.frontend.RecompilationWarning, match=r"argument x: shape \(3,\) -> \(4,\)"):
        f(np.ones(4, np.float32), np.ones(3, np.float32)[:1])
    msg = xlapy.explain_recompile(f, np.ones(3, np.float32), np.ones(3, np.int32))
    assert "argument y: dtype float32 -> int32" in msg
    assert "no retrace" in xlapy.explain_recompile(f, np.ones(3, np.float32), np.ones(3, np.float32))


def test_pytrees_in_and_out():
    @xlapy.jit
    def step(params, batch):
        w, b = params["w"], params["b"]
        out = batch["x"] @ w + b
        return {"out": out, "none": None, "pair": (out.sum(), b)}

    params = {"w": np.ones((3, 2), np.float32), "b": np.array([1.0, 2.0], np.float32)}
    res = step(params, {"x": x23})
    assert set(res) == {"out", "none", "pair"} and res["none"] is None
    np.testing.assert_allclose(np.asarray(res["out"]), x23 @ params["w"] + params["b"])
    np.testing.assert_allclose(float(res["pair"][0]), (x23 @ params["w"] + params["b"]).sum())
    assert "parameter" in step.lower(params, {"x": x23}).as_text()


def test_weak_types_and_python_scalars():
    f = xlapy.jit(lambda x, s: x * s)
    out = f(np.ones(3, np.float16), 2.0)
    assert np.asarray(out).dtype == np.float16
    assert xlapy.jit(lambda x: x + 1)(np.int8(3)).dtype == np.int8
    assert xlapy.jit(lambda x: x + 1.5)(np.arange(3, dtype=np.int32)).dtype == np.float32


def test_while_loop_fori_loop_under_jit():
    def f(x, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5 + 1.0), (0, x))
    i, y = xlapy.jit(f)(np.ones(3, np.float32), np.int32(4))
    want = np.ones(3, np.float32)
    for _ in range(4):
        want = want * 1.5 + 1
    assert int(i) == 4 and np.allclose(np.asarray(y), want)
    text = xlapy.jit(f).lower(np.ones(3, np.float32), np.int32(4)).as_text()
    assert "while(" in text and "condition=" in text and "direction=LT" in text

    g = xlapy.jit(lambda x: lax.fori_loop(0, 7, lambda i, v: v * 0.9 + lax.sin(v + i), x))
    want = np.ones(4, np.float32)
    for i in range(7):
        want = want * np.float32(0.9) + np.sin(want + i)
    np.testing.assert_allclose(np.asarray(g(np.ones(4, np.float32))), want, rtol=1e-5)


def test_cond_and_switch_under_jit():
    f = xlapy.jit(lambda p, x: lax.cond(p, lambda v: lax.sin(v) * 2.0, lambda v: v - 1.0, x))
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(f(True, x)), np.sin(x) * 2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(f(False, x)), x - 1)
    text = f.lower(True, x).as_text()
    assert "conditional(" in text and "branch_computations" in text

    branches = [lambda v: v + 1.0, lambda v: v * 2.0, lambda v: -v]
    s = xlapy.jit(lambda i, v: lax.switch(i, branches, v))
    for i, want in [(0, x + 1), (1, x * 2), (2, -x), (7, -x), (-3, x + 1)]:
        np.testing.assert_allclose(np.asarray(s(np.int32(i), x)), want)


def test_cond_captures_outer_values_and_multiple_outputs():
    def f(p, x, y):
        return lax.cond(p, lambda: (x + y, y), lambda: (x - y, y * 2.0))
    a, b = np.ones(2, np.float32), np.full(2, 3.0, np.float32)
    r = xlapy.jit(f)(True, a, b)
    np.testing.assert_allclose(np.asarray(r[0]), a + b)
    r = xlapy.jit(f)(False, a, b)
    np.testing.assert_allclose(np.asarray(r[1]), b * 2)


def test_scan_under_jit_and_eagerly():
    def f(xs, c0):
        return lax.scan(lambda c, x: (c * 0.5 + x, c + x * x), c0, xs)
    xs, c0 = np.arange(18, dtype=np.float32).reshape(6, 3), np.ones(3, np.float32)
    c, ys = c0.copy(), []
    for x in xs:
        c, y = c * 0.5 + x, c + x * x
        ys.append(y)
    for fn in (xlapy.jit(f), f):
        carry, out = fn(xs, c0)
        np.testing.assert_allclose(np.asarray(carry), c, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(out), np.stack(ys), rtol=1e-6)
    text = xlapy.jit(f).lower(xs, c0).as_text()
    assert "dynamic-slice" in text and "dynamic-update-slice" in text and "while(" in text

    rev = xlapy.jit(lambda xs: lax.scan(lambda c, x: (c + x, c), 0.0, xs, reverse=True))
    carry, ys = rev(np.arange(4, dtype=np.float32))
    assert float(carry) == 6.0 and np.allclose(np.asarray(ys), [6, 5, 3, 0])


def test_map_and_nested_loops_capture():
    def f(xs, w):
        def body(i, acc):
            return lax.fori_loop(0, 2, lambda j, a: a + w * i, acc)
        return lax.map(lambda x: x * w, xs), lax.fori_loop(0, 3, body, np.zeros(2, np.float32))
    xs, w = np.ones((3, 2), np.float32), np.array([1.0, 2.0], np.float32)
    m, acc = xlapy.jit(f)(xs, w)
    np.testing.assert_allclose(np.asarray(m), xs * w)
    np.testing.assert_allclose(np.asarray(acc), w * 2 * (0 + 1 + 2))


def test_lower_compile_and_cost_analysis():
    f = xlapy.jit(lambda a, b: lax.exp(a @ b))
    a, b = np.ones((4, 8), np.float32), np.ones((8, 5), np.float32)
    lowered = f.lower(a, b)
    assert "dot(" in lowered.as_text()
    compiled = lowered.compile()
    assert "HloModule" in compiled.as_text()
    np.testing.assert_allclose(np.asarray(compiled(a, b)), np.exp(a @ b), rtol=1e-5)
    cost = lowered.cost_analysis()
    assert cost["flops"] == 2 * 4 * 8 * 5 + 4 * 5
    assert cost["bytes accessed"] == (4 * 8 + 8 * 5 + 4 * 5) * 4 + (4 * 5) * 4 * 2
    assert compiled.cost_analysis()["flops"] == cost["flops"]


def test_backend_is_a_parameter_and_part_of_the_key():
    f = xlapy.jit(lambda x: x * 2, backend="interpreter")
    assert np.allclose(np.asarray(f(x23)), x23 * 2)
    with pytest.raises(xlapy.XlapyError, match="unknown backend"):
        xlapy.jit(lambda x: x, backend="nope")(x23)


def test_closure_constants_and_nested_jit():
    c = np.array([1.0, 2.0, 3.0], np.float32)
    inner = xlapy.jit(lambda v: v * c)
    outer = xlapy.jit(lambda v: inner(v) + 1.0)
    np.testing.assert_allclose(np.asarray(outer(c)), c * c + 1)


def test_no_outputs_and_passthrough():
    assert xlapy.jit(lambda x: None)(x23) is None
    out = xlapy.jit(lambda x, y: (y, x))(x23, 2.0)
    assert float(out[0]) == 2.0 and np.array_equal(np.asarray(out[1]), x23)
