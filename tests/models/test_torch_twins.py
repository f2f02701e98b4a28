"""benchmarks/models/torch_twins.py: each PyTorch twin has exactly the corpus module's parameters (the same
layers at the same sizes, counted element by element), and its steps run; run_models' torch table."""
from __future__ import annotations

import math

import pytest

from xlapy.testing import load_file

inputs = load_file("benchmarks/models/inputs.py", "model_corpus_inputs")
run_models = load_file("benchmarks/run_models.py", "run_models")
torch = pytest.importorskip("torch")
twins = load_file("benchmarks/models/torch_twins.py", "model_corpus_torch_twins")

_PARAMETERS = ("params/", "trainable/")     # Flax's params collection, Keras' trainable variables


@pytest.mark.parametrize("module_id", sorted(twins.TWINS))
def test_twin_has_the_corpus_modules_parameters(module_id):
    entry = inputs.load_entry(module_id)
    shapes = [tuple(s["shape"]) for s in entry["inputs"] if s["name"].startswith(_PARAMETERS)]
    # element for element: a layer left out, an extra bias or another width would change the total (the
    # tensors themselves may be cut differently: PyTorch packs attention's q, k, v and a GRU's gates)
    assert sum(map(math.prod, shapes)) == twins.parameter_count(module_id)


@pytest.mark.parametrize("module_id", ["gru/train", "vit/fwd"])
def test_twin_steps_run(module_id):
    torch.set_num_threads(1)
    eager, _ = twins.make(module_id)
    first, second = eager().detach(), eager().detach()
    assert torch.isfinite(first).all() and torch.isfinite(second).all()
    if module_id.endswith("train"):
        assert first.ndim == 0 and float(second) != float(first)       # the optimizer stepped


def test_torch_table():
    rows = [{"module": "vit/fwd", "xlapy": "ok", "torch": "ok", "xlapy_compile_s": 0.5, "torch_compile_s": 20.0,
             "xlapy_run_s": 0.008, "torch_run_s": 0.016, "torch_compiled_run_s": 0.010},
            {"module": "gnn/fwd", "xlapy": "ok"},                                      # no twin: no row
            {"module": "gru/fwd", "xlapy": "ok", "torch": "error: Unsupported: x", "xlapy_compile_s": 0.4,
             "xlapy_run_s": 0.006}]
    text = run_models.torch_table(rows)
    assert "| vit/fwd | 20.00 s | 500 ms | 0.03× | 16 ms | 10 ms | 8 ms | 0.80× | 0.50× |" in text
    assert "gnn/fwd" not in text and "gru/fwd (error: Unsupported: x)" in text
    assert text.splitlines()[-1].startswith("| geometric mean | | | 0.03× (1) |")
