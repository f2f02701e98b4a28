"""Many Python threads at once: jit (cold and warm), grad, vjp, eager ops and lax control flow give the results of
one thread (issue 12). Each trace is per thread, concurrent first calls of one signature compile once, and
compiles of different functions overlap.

Functions under test sleep while they are traced (time.sleep releases the GIL), so the threads' traces are
certainly open at the same time: on a shared trace stack these tests fail every time, not by chance. Each test is
bounded (a few seconds with 8 threads on 2 cores): small shapes, few calls.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import xlapy
import xlapy.numpy as xnp
from xlapy import lax
from xlapy.testing import CORPUS
from xlapy.tools import npz

THREADS = 8
X = np.arange(8, dtype=np.float32) / 8


def run_together(fn, n: int = THREADS) -> list:
    """fn(i) on n threads released together; every result (an exception is re-raised here)."""
    barrier = threading.Barrier(n)

    def start(i):
        barrier.wait()
        return fn(i)
    with ThreadPoolExecutor(n) as pool:
        futures = [pool.submit(start, i) for i in range(n)]
        return [f.result() for f in futures]


def assert_concrete(out, expected, rtol=1e-6) -> None:
    assert xlapy.frontend.is_concrete_array(out), f"expected a concrete Array, got {out!r}"
    np.testing.assert_allclose(np.asarray(out), expected, rtol=rtol, atol=1e-6)


def test_first_calls_of_one_jitted_function_compile_once():
    traces = []

    def f(x):
        traces.append(threading.get_ident())
        time.sleep(0.05)                 # the others arrive while this trace is open
        return xnp.sin(x) * 2 + 1
    g = xlapy.jit(f)

    def calls(i):
        return [g(X + i) for _ in range(20)]           # one cold call (for one thread), then warm ones
    for i, outs in enumerate(run_together(calls)):
        for out in outs:
            assert_concrete(out, np.sin(X + i) * 2 + 1)
    assert len(traces) == 1 and g.trace_count == 1


def test_different_functions_trace_and_compile_side_by_side():
    def make(k):
        def f(x):
            time.sleep(0.3)
            return x * k + lax.reduce_sum(x, (0,))
        return xlapy.jit(f)
    fns = [make(k) for k in range(THREADS)]
    start = time.perf_counter()
    results = run_together(lambda i: [fns[i](X) for _ in range(10)])
    elapsed = time.perf_counter() - start
    for k, outs in enumerate(results):
        for out in outs:
            assert_concrete(out, X * k + X.sum(), rtol=1e-5)
    assert all(f.trace_count == 1 for f in fns)
    assert elapsed < 0.3 * THREADS * 0.75, f"the traces ran one after another ({elapsed:.2f} s)"


def test_new_signatures_from_threads():
    f = xlapy.jit(lambda x: xnp.cumsum(x) - x)

    def calls(i):
        x = np.arange(i + 1, dtype=np.float32)
        return x, [f(x) for _ in range(5)]
    for x, outs in run_together(calls):
        for out in outs:
            assert_concrete(out, np.cumsum(x) - x)
    assert f.trace_count == THREADS


def test_grad_and_vjp_without_jit():
    def loss(w):
        time.sleep(0.002)
        return xnp.sum(xnp.sin(w) ** 2)
    g = xlapy.grad(loss)

    def calls(i):
        w = X + i
        out = []
        for _ in range(5):
            out.append(g(w))
            y, pullback = xlapy.vjp(lambda v: xnp.tanh(v) * v, w)
            out.append(pullback(xnp.ones_like(y))[0])
        return w, out
    for w, outs in run_together(calls):
        for k, out in enumerate(outs):
            t = np.tanh(w)
            expected = 2 * np.sin(w) * np.cos(w) if k % 2 == 0 else t + w * (1 - t * t)
            assert_concrete(out, expected, rtol=1e-5)


def test_eager_ops_while_another_thread_traces():
    eager_threads = 3
    finished = []           # one entry per eager thread done; the tracer stops when all are

    def tracer():
        n = 0
        while n == 0 or len(finished) < eager_threads:
            def slow(x):
                time.sleep(0.01)         # the eager ops of the other threads run while this trace is open
                return x + 1
            assert_concrete(xlapy.jit(slow)(X), X + 1)
            n += 1
        return n

    def eager(i):
        try:
            out = []
            for _ in range(30):
                a = xnp.asarray(X) * (i + 1)
                out.append(xnp.exp(a) - a)
            return i, out
        finally:
            finished.append(i)
    results = run_together(lambda i: tracer() if i == 0 else eager(i), eager_threads + 1)
    assert results[0] >= 1
    for i, outs in results[1:]:
        for out in outs:
            assert_concrete(out, np.exp(X * (i + 1)) - X * (i + 1), rtol=1e-5)


def test_control_flow_in_threads():
    def body(x):
        time.sleep(0.002)
        c = lax.cond(x[0] > 0.5, lambda v: v * 2, lambda v: v - 1, x)
        w = lax.while_loop(lambda s: s[0] < 5, lambda s: (s[0] + 1, s[1] * 1.5), (0, c))[1]
        return lax.scan(lambda carry, v: (carry + v, carry * v), 0.0, w)
    jitted = xlapy.jit(body)

    def expected(x):
        c = x * 2 if x[0] > 0.5 else x - 1
        w = c * 1.5 ** 5
        carry, ys = 0.0, []
        for v in w:
            ys.append(carry * v)
            carry += v
        return carry, np.array(ys)

    def calls(i):
        x = (X + i / 4).astype(np.float32)
        return x, [body(x), jitted(x), jitted(x)]
    for x, outs in run_together(calls):
        carry, ys = expected(x)
        for out_carry, out_ys in outs:
            assert_concrete(out_carry, carry, rtol=1e-5)
            assert_concrete(out_ys, ys, rtol=1e-5)


def test_compile_corpus_modules_from_threads(xlapy_backend):
    names = ["seed_sum_xyz", "softmax", "mlp_forward", "layernorm"]
    cases = []
    for name in names:
        hlo = CORPUS / "jax" / f"{name}.hlo"
        if hlo.exists():
            data = npz.load(hlo.with_suffix(".npz"))
            cases.append((hlo.read_text(), npz.numbered(data, "arg"), npz.numbered(data, "out")))
    assert len(cases) >= 3

    def compile_and_run(i):
        text, args, expected = cases[i % len(cases)]
        exe = xlapy.compile(xlapy.hlo.parse(text), backend=xlapy_backend)
        return [(npz.flatten(exe(*args)), expected) for _ in range(3)]
    for runs in run_together(compile_and_run):
        for got, expected in runs:
            assert len(got) == len(expected)
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, rtol=2e-5, atol=1e-6)
