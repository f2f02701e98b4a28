"""torchvision's resnet18 and mobilenet_v3_small through torch.compile(backend="xlapy"), eval and train, forward and
backward against eager PyTorch. In float64 (xlapy's x64 mode): in float32 the batch norms over few samples and the
ReLU/max-pool decisions turn rounding differences of 1e-6 into gradient differences of percents, in eager PyTorch
against itself in float64 as much as in xlapy; float64 shows the translation exact to ~1e-12."""
from __future__ import annotations

import pathlib
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")

import xlapy.torch as xt  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _compare import assert_close_models, run_both  # noqa: E402
from models import vision  # noqa: E402


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small"])
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_vision_model(name, train, x64):
    torch.manual_seed(0)
    model = vision(name).double()
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0          # the random masks differ from eager's (test_backend.py tests dropout itself)
    x = torch.randn(2, 3, 32, 32, dtype=torch.float64)
    _, twin, out, ref = run_both(model, (x,), train=train)
    torch.testing.assert_close(out, ref, rtol=1e-9, atol=1e-9)
    assert_close_models(model, twin, rtol=1e-6)
    assert xt.report() == []
    assert xt.counts() == {"compiled": 2, "fallback": 0}
