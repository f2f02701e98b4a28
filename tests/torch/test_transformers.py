"""A small GPT and nn.TransformerEncoder through torch.compile(backend="xlapy"): forward and backward against eager
PyTorch, eval and train, an optimizer step. (Without torchvision: these run in `make test`'s environment.)"""
from __future__ import annotations

import copy
import pathlib
import sys

import pytest

torch = pytest.importorskip("torch")

import xlapy.torch as xt  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _compare import assert_close_models, run_both  # noqa: E402
from models import GPT, encoder, gpt_inputs  # noqa: E402


def test_gpt_train_forward_backward_and_optimizer_step():
    torch.manual_seed(0)
    model = GPT()
    compiled, twin, loss, ref = run_both(model, gpt_inputs(), train=True)
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-5)
    assert_close_models(model, twin, rtol=1e-4)
    assert xt.report() == [] and xt.counts() == {"compiled": 2, "fallback": 0}
    # one SGD step on each, then the compiled forward again (the same graphs: no recompile)
    for m in (model, twin):
        torch.optim.SGD(m.parameters(), lr=0.5).step()
    idx, tgt = gpt_inputs()
    torch.testing.assert_close(compiled(idx, tgt), twin(idx, tgt), rtol=1e-5, atol=1e-5)
    assert xt.counts()["compiled"] == 2


def test_encoder_train_forward_backward():
    torch.manual_seed(0)
    model = encoder()
    _, twin, out, ref = run_both(model, (torch.randn(2, 8, 32),), train=True)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    assert_close_models(model, twin, rtol=1e-4)
    assert xt.report() == []


def test_encoder_eval_fast_path():
    """Under no_grad in eval mode nn.TransformerEncoderLayer takes its fused kernel,
    aten._transformer_encoder_layer_fwd: one rule of aten_attention.py."""
    torch.manual_seed(0)
    model = encoder().eval()
    x = torch.randn(2, 8, 32)
    with torch.no_grad():
        out = torch.compile(model, backend="xlapy")(x)
        ref = copy.deepcopy(model)(x)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    assert xt.report() == [] and xt.counts() == {"compiled": 1, "fallback": 0}
