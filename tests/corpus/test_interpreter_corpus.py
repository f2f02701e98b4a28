"""The interpreter against XLA: every corpus module, run on its recorded inputs, matches XLA's outputs.

tests/corpus/jax/       modules JAX lowered (before optimization), with NAME.npz = inputs + XLA's outputs
tests/corpus/jax_opt/   the same programs after XLA:CPU's optimizations (fusions, ...)
tests/corpus/hlo/       hand-written modules for forms JAX never emits, run through XLA
tests/corpus/tf/        expectations for the TensorFlow dump in ../shared/testdata
tests/corpus/xla_parser_cases/  expectations for the executable modules of XLA's parser tests (../shared)
"""
from pathlib import Path

import pytest

import xlapy
from xlapy.testing import CORPUS, assert_same, shared_path
from xlapy.tools import npz


def _unexecutable(folder: Path) -> set[str]:
    f = folder / "UNEXECUTABLE.txt"
    if not f.exists():
        return set()
    return {line.split()[0] for line in f.read_text().splitlines() if line.strip() and not line.startswith("#")}


def _cases():
    cases = []
    for sub in ("jax", "jax_opt", "hlo"):
        folder = CORPUS / sub
        skip = _unexecutable(folder)
        for hlo in sorted(folder.glob("*.hlo")):
            if hlo.stem not in skip and hlo.with_suffix(".npz").exists():
                cases.append(pytest.param(hlo, hlo.with_suffix(".npz"), id=f"{sub}/{hlo.stem}"))
    tf_npz = CORPUS / "tf" / "tf_mobilenet_cluster.npz"
    cases.append(pytest.param(shared_path("testdata", "tf_mobilenet_cluster.hlo"), tf_npz, id="tf/mobilenet"))
    for expected in sorted((CORPUS / "xla_parser_cases").glob("*.npz")):
        cases.append(pytest.param(shared_path("testdata", "xla_parser_cases", expected.stem + ".hlo"), expected,
                                  id=f"xla_parser_cases/{expected.stem}"))
    return cases


@pytest.mark.parametrize("hlo_path, npz_path", _cases())
def test_interpreter_matches_xla(hlo_path, npz_path):
    if hlo_path is None:
        pytest.skip("../shared/testdata is absent")
    if not npz_path.exists():
        pytest.skip(f"{npz_path.name} not generated")
    data = npz.load(npz_path)
    args, expected = npz.numbered(data, "arg"), npz.numbered(data, "out")
    module = xlapy.hlo.parse(hlo_path.read_text())
    result = npz.flatten(xlapy.compile(module, backend="interpreter")(*args))
    assert len(result) == len(expected), f"{len(result)} outputs, XLA gave {len(expected)}"
    for i, (got, want) in enumerate(zip(result, expected)):
        assert_same(got, want, where=f"{hlo_path.name} out{i}")


def test_corpus_is_large_enough():
    assert len(list((CORPUS / "jax").glob("*.hlo"))) >= 100
