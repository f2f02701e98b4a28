"""The backend's contract on small functions: registration, unsupported ops (eager fallback, reported by name),
recompiles and dynamic shapes, dtypes at the boundary, dropout seeded from torch, batch norm's running stats,
bad inputs."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import xlapy.torch as xt  # noqa: E402
from xlapy.torch.translate import graph_function  # noqa: E402


def test_registered_as_a_dynamo_backend():
    assert "xlapy" in torch._dynamo.list_backends()
    assert torch._dynamo.lookup_backend("xlapy") is xt.backend


def test_unsupported_op_falls_back_to_eager_and_is_reported():
    def f(x):
        return torch.cumprod(x, 0) * 2 + 1       # aten.cumprod has no row in xlapy's tables
    x = torch.rand(5, 3) + 0.5
    with pytest.warns(xt.TorchFallbackWarning, match="aten.cumprod"):
        out = torch.compile(f, backend="xlapy")(x)
    torch.testing.assert_close(out, f(x))
    assert [(r.op, r.graph) for r in xt.report()] == [("aten.cumprod.default", "inference")]
    assert xt.counts() == {"compiled": 1, "fallback": 1}     # the ops after cumprod are one xlapy part


def test_unsupported_op_in_training_splits_forward_and_backward():
    def f(x, w):
        return (torch.cumprod(torch.tanh(x @ w), 1) * 3).sum()
    x, w = torch.rand(4, 3, requires_grad=True), torch.rand(3, 5, requires_grad=True)
    with pytest.warns(xt.TorchFallbackWarning, match="cumprod"):
        torch.compile(f, backend="xlapy")(x, w).backward()
    gx, gw = x.grad, w.grad
    x.grad = w.grad = None
    f(x, w).backward()
    torch.testing.assert_close(gx, x.grad)
    torch.testing.assert_close(gw, w.grad)
    assert {r.graph for r in xt.report()} >= {"forward"}
    assert xt.counts()["compiled"] >= 2


def test_new_shapes_recompile_and_stay_correct():
    def f(x, w):
        return torch.tanh(x @ w).sum(-1)
    c = torch.compile(f, backend="xlapy")
    for rows in (3, 5, 7):
        x, w = torch.randn(rows, 4), torch.randn(4, 2)
        torch.testing.assert_close(c(x, w), f(x, w))
    assert xt.report() == []
    assert xt.counts()["compiled"] == 3          # one static compile per shape, dynamic graphs specialized


def test_mark_dynamic_is_specialized_per_shape():
    def f(x):
        return torch.relu(x).mean(0)
    c = torch.compile(f, backend="xlapy")
    for rows in (4, 6):
        x = torch.randn(rows, 3)
        torch._dynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(c(x), f(x))
    assert xt.report() == [] and xt.counts()["compiled"] == 2


def test_integer_outputs_keep_torch_dtypes():
    def f(x, idx):
        return x.argmax(-1), torch.nn.functional.embedding(idx, x), (idx > 2).sum()
    x, idx = torch.randn(6, 4), torch.tensor([[0, 5], [3, 2]])
    out = torch.compile(f, backend="xlapy")(x, idx)
    for a, b in zip(out, f(x, idx)):
        assert a.dtype == b.dtype
        torch.testing.assert_close(a, b)


def test_float64_without_x64_falls_back_with_a_clear_message():
    x = torch.randn(3, dtype=torch.float64)
    with pytest.warns(xt.TorchFallbackWarning, match="x64"):
        out = torch.compile(lambda t: t * 2, backend="xlapy")(x)
    assert out.dtype == torch.float64 and torch.equal(out, x * 2)


def test_bfloat16_inputs_fall_back():
    x = torch.randn(3).to(torch.bfloat16)
    with pytest.warns(xt.TorchFallbackWarning, match="bfloat16"):
        out = torch.compile(lambda t: t + 1, backend="xlapy")(x)
    assert torch.equal(out, x + 1)


def test_backend_options_are_rejected():
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    with pytest.raises(TypeError, match="no options"):
        xt.backend(gm, [torch.randn(2)], mode="fast")


def test_graph_without_shapes_is_a_translation_error():
    gm = torch.fx.symbolic_trace(lambda x: torch.ops.aten.add.Tensor(x, 1))   # no fake-tensor metadata
    with pytest.raises(xt.TranslationError, match="not a tensor"):
        graph_function(gm)


def test_dropout_is_seeded_by_torch_manual_seed():
    def f(x):
        return torch.nn.functional.dropout(x, 0.25, training=True)
    c = torch.compile(f, backend="xlapy")
    x = torch.ones(64, 64)
    torch.manual_seed(3)
    a = c(x)
    torch.manual_seed(3)
    b = c(x)
    c2 = c(x)
    assert torch.equal(a, b) and not torch.equal(a, c2)
    values = set(np.unique(a.numpy()).tolist())
    assert values <= {0.0, np.float32(1 / 0.75)}
    assert abs(float((a == 0).float().mean()) - 0.25) < 0.05
    assert xt.report() == []


def test_batch_norm_running_stats_are_updated():
    torch.manual_seed(0)
    bn, ref = torch.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    c = torch.compile(bn, backend="xlapy")
    for _ in range(2):
        x = torch.randn(4, 3, 5, 5)
        torch.testing.assert_close(c(x), ref(x), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(bn.running_mean, ref.running_mean)
    torch.testing.assert_close(bn.running_var, ref.running_var)
    assert int(bn.num_batches_tracked) == 2


def test_in_place_ops_are_functionalized():
    def f(x, y):
        y = y.clone()
        y.add_(x).mul_(2)
        x.relu_()
        return y
    x, y = torch.randn(4), torch.randn(4)
    x_ref, y_ref = x.clone(), y.clone()
    out = torch.compile(f, backend="xlapy")(x, y)
    torch.testing.assert_close(out, f(x_ref, y_ref))
    torch.testing.assert_close(x, x_ref)          # the input's in-place relu happened too
    assert xt.report() == []


def test_results_cross_without_copies():
    """The output tensor views the memory of xlapy's result array (DLPack), the input is read in place."""
    from xlapy.torch.runtime import CompiledGraph
    from torch._functorch.aot_autograd import aot_module_simplified
    graphs = []

    def backend(gm, example_inputs):
        def compiler(g, _):
            graphs.append(CompiledGraph(g))
            return graphs[-1]
        return aot_module_simplified(gm, example_inputs, fw_compiler=compiler)

    out = torch.compile(lambda t: t * 3, backend=backend)(torch.ones(8))
    assert torch.equal(out, torch.full((8,), 3.0))
    assert "multiply" in graphs[0].as_text()
    assert out.data_ptr() % 16 == 0 and out.is_contiguous()


def test_updated_convolution_weights_are_seen():
    """The permuted copy of a weight (runtime.py) is reused only while the weight's version is unchanged."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3).eval()
    c = torch.compile(conv, backend="xlapy")
    x = torch.randn(1, 3, 6, 6)
    with torch.no_grad():
        torch.testing.assert_close(c(x), conv(x))
        conv.weight.mul_(-2.0)
        torch.testing.assert_close(c(x), conv(x))
