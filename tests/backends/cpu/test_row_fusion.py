"""Row fusions on the CPU backend (row_emitter.py) against the interpreter: softmax, log-softmax, layernorm and
RMS norm over several row counts (not multiples of the thread chunk), element types, special values, a row
fusion with two outputs, and 1 or 4 threads. Each case first asserts that the pipeline made a row fusion."""
import ml_dtypes
import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.passes.pipelines import cpu_pipeline
from xlapy.testing import assert_same


def softmax(a):
    e = xnp.exp(a - xnp.max(a, axis=-1, keepdims=True))
    return e / xnp.sum(e, axis=-1, keepdims=True)


def log_softmax(a):
    s = a - xnp.max(a, axis=-1, keepdims=True)
    return s - xnp.log(xnp.sum(xnp.exp(s), axis=-1, keepdims=True))


def layernorm(a):
    mu = xnp.mean(a, axis=-1, keepdims=True)
    return (a - mu) / xnp.sqrt(xnp.mean((a - mu) ** 2, axis=-1, keepdims=True) + 1e-5)


def rms_norm(a):
    return a / xnp.sqrt(xnp.mean(a * a, axis=-1, keepdims=True) + 1e-6)


def softmax_and_max(a):
    m = xnp.max(a, axis=-1)
    e = xnp.exp(a - m[..., None])
    return e / xnp.sum(e, axis=-1, keepdims=True), m


FUNCTIONS = [softmax, log_softmax, layernorm, rms_norm, softmax_and_max]


def row_fusions(fn, x) -> int:
    m = xlapy.jit(fn).lower(x).module
    cpu_pipeline().run(m)
    return sum(1 for i in m.entry.instructions if i.opcode == "fusion" and i.attrs.get("kind") == "kCustom")


def compare(fn, x, num_threads=None, rtol=None):
    module = xlapy.jit(fn).lower(x).module
    cpu = xlapy.compile(module, backend="cpu", num_threads=num_threads)
    ref = xlapy.compile(xlapy.jit(fn).lower(x).module, backend="interpreter")
    got, want = cpu(x), ref(x)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert_same(g, w, rtol=rtol)


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(37, 33), (128, 256), (3, 17, 40)], ids=str)
def test_matches_interpreter(fn, shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 3
    assert row_fusions(fn, x) == 1
    compare(fn, x)


@pytest.mark.parametrize("threads", [1, 4])
def test_thread_counts(threads):
    x = np.random.default_rng(1).standard_normal((301, 64)).astype(np.float32)
    compare(softmax, x, num_threads=threads)
    compare(layernorm, x, num_threads=threads)


@pytest.mark.parametrize("dtype", [np.float64, ml_dtypes.bfloat16, np.float16], ids=lambda d: np.dtype(d).name)
def test_element_types(dtype, monkeypatch):
    from xlapy.frontend.dtypes import config
    monkeypatch.setattr(config, "enable_x64", True)
    x = (np.random.default_rng(2).standard_normal((40, 48)) * 2).astype(dtype)
    assert row_fusions(softmax, x) == 1
    compare(softmax, x)
    compare(layernorm, x)


def test_special_values_stay_in_their_rows():
    x = np.random.default_rng(3).standard_normal((24, 32)).astype(np.float32)
    x[2, 5] = np.nan
    x[7, :] = -np.inf
    x[9, 3] = np.inf
    x[11, :] = -0.0
    x[13, 1] = 1e-42            # a denormal
    compare(softmax, x)
    compare(log_softmax, x)
    compare(rms_norm, x)
    out = np.asarray(xlapy.jit(softmax, backend="cpu")(x))
    assert np.isnan(out[2]).all() and np.isnan(out[7]).all() and np.isfinite(np.delete(out, [2, 7, 9], 0)).all()


def test_max_reduction_keeps_nan_and_signed_zero():
    """The interleaved max/min accumulators (elemental_reduce.py) propagate NaN from any lane and agree with
    the interpreter on signed zeros."""
    x = np.full((16, 70), -0.0, np.float32)
    x[3, 69] = np.nan          # in the static tail
    x[4, 8] = np.nan           # in lane 0 of the second chunk
    x[5, :] = 0.0
    x[6, 1::2] = 0.0
    compare(lambda a: xnp.max(a, axis=1), x)
    compare(lambda a: xnp.min(a, axis=1), x)
    compare(lambda a: (xnp.max(a, axis=0), xnp.min(a, axis=(0, 1))), x)


def test_max_reduction_of_a_producer_with_a_long_tail():
    """A fused producer read chunk by chunk (elemental_reduce.py's buffer loop) with a tail of a full vector and a
    partial one (45 = 32 + 8 + 5): a NaN and denormals in the tail, the lane fold of each row's accumulators."""
    x = np.random.RandomState(1).randn(12, 45).astype(np.float32)
    x[2, 41] = np.nan          # the partial tail vector
    x[3, 33] = np.nan          # the full tail vector
    x[4, :] = -1e-39           # denormals: flushed as the interpreter does
    x[5, 44] = 1e30
    compare(lambda a: (xnp.max(a * 2.0, axis=1), xnp.min(a * 2.0, axis=1)), x)



def test_equal_row_fusions_share_one_kernel(monkeypatch):
    """Two softmaxes of one shape are one kernel: a row buffer is named by its member's opcode and place, not by
    its HLO name (renamed in the second fusion here); kernel replay's check mode emits both and fails when the
    second emission is not the first's kernel."""
    from xlapy.backends.cpu import kernel_replay
    monkeypatch.setattr(kernel_replay, "MODE", "check")
    a, b = (np.random.default_rng(s).standard_normal((40, 64)).astype(np.float32) for s in (0, 1))
    fn = lambda a, b: (softmax(a), softmax(b))
    module = xlapy.jit(fn).lower(a, b).module
    cpu_pipeline().run(module)
    rows = [i for i in module.entry.instructions if i.opcode == "fusion" and i.attrs.get("kind") == "kCustom"]
    assert len(rows) == 2
    for inst in rows[1].attrs["calls"].instructions:
        inst.name = "renamed_" + inst.name
    got = xlapy.compile(module, backend="cpu", run_pipeline=False, cache=False)(a, b)
    for g, x in zip(got, (a, b)):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        np.testing.assert_allclose(g, e / e.sum(axis=-1, keepdims=True), rtol=1e-5)
