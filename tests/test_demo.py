"""Smoke test of `make demo` (examples/digits_demo.py): one epoch of each model on a 400-image subset runs,
beats chance, and writes the plot, the HLO before/after optimization, the HTML graph and a profile of the step.

It runs on the interpreter with the reshape max-pool so that it stays fast whatever state the cpu backend's
compile times are in; the cpu backend and lax.reduce_window are covered by their own tests."""
import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("tqdm")
pytest.importorskip("matplotlib")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_demo():
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec = importlib.util.spec_from_file_location("digits_demo", EXAMPLES / "digits_demo.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["digits_demo"] = module          # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(EXAMPLES))


def test_one_epoch_on_a_subset_trains_and_writes_every_output(tmp_path, capsys):
    demo = load_demo()
    out = tmp_path / "demo_out"
    summary = demo.main(["--out", str(out), "--limit", "400", "--mlp-epochs", "1", "--cnn-epochs", "1",
                         "--backend", "interpreter", "--pool", "reshape", "--timing-steps", "3", "--no-progress"])
    printed = capsys.readouterr().out

    for result in summary["results"]:
        assert result["accuracy"] > 0.3, (result["name"], result["accuracy"])   # chance is 0.1
        assert result["retraces"] == 0, result["name"]
    assert [label for label, _, _ in summary["timing"]][0].startswith("xlapy jit")
    assert all(seconds > 0 for _, seconds, _ in summary["timing"])
    assert [label for label, _, _ in summary["timing"]][3].startswith("xlapy lazy op-by-op")

    names = {p.name for p in out.iterdir()}
    for model in ("mlp", "cnn"):
        assert {f"{model}_train_step.before_optimizations.txt", f"{model}_train_step.after_optimizations.txt",
                f"{model}_train_step.after_optimizations.html"} <= names
    assert (out / "training.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "HloModule" in (out / "mlp_train_step.after_optimizations.txt").read_text()
    assert "fusion" in (out / "mlp_train_step.after_optimizations.txt").read_text()
    assert "<svg" in (out / "mlp_train_step.after_optimizations.html").read_text()
    assert str(out) in printed and "total demo time" in printed
    assert "compilation cache " in printed and "modules loaded" in printed
    traces = list((out / "profile" / "plugins" / "profile").glob("*/*.trace.json.gz"))
    assert len(traces) == 1 and (traces[0].parent / "profile.txt").read_text().startswith("3 compiled calls")
    assert "where the MLP step's time goes" in printed and "ui.perfetto.dev" in printed
    assert "mlp_train_step.profile.html" in names
