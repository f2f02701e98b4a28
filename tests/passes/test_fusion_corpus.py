"""Fusion preserves semantics: every JAX corpus module, after [algsimp, cse, dce]* -> fusion -> fusion_merger ->
multi_output_fusion -> dce (verified after each pass), still matches XLA's recorded outputs on the interpreter.
A second run of the fusion passes changes nothing (idempotence)."""

import pytest

import xlapy
from xlapy.errors import XlapyError
from xlapy.passes import FixedPoint, Pipeline
from xlapy.passes.algsimp import AlgebraicSimplifier
from xlapy.passes.cse import HloCSE
from xlapy.passes.dce import HloDCE
from xlapy.passes.fusion import cpu_fusion_passes
from xlapy.testing import CORPUS, assert_same
from xlapy.tools import npz


def optimize(module):
    simplify = FixedPoint("simplification", [AlgebraicSimplifier(), HloCSE(), HloDCE()])
    Pipeline("fusion-test", [simplify, *cpu_fusion_passes(), HloDCE()], check_invariants=True).run(module)
    return module


def run(module, args):
    return npz.flatten(xlapy.compile(module, backend="interpreter")(*args))


@pytest.mark.parametrize("path", sorted((CORPUS / "jax").glob("*.hlo")), ids=lambda p: p.stem)
def test_fusion_preserves_xla_outputs(path):
    data = npz.load(path.with_suffix(".npz"))
    args, expected = npz.numbered(data, "arg"), npz.numbered(data, "out")
    try:
        run(xlapy.hlo.parse(path.read_text()), args)
    except XlapyError as e:
        pytest.skip(f"the interpreter cannot run the unfused module: {e}")
    module = optimize(xlapy.hlo.parse(path.read_text()))
    result = run(module, args)
    assert len(result) == len(expected)
    for i, (got, want) in enumerate(zip(result, expected)):
        assert_same(got, want, where=f"{path.stem} out{i} after fusion")
    text = module.to_text()
    assert not Pipeline("again", cpu_fusion_passes()).run(module), f"second fusion run changed {path.stem}"
    assert module.to_text() == text
    assert xlapy.hlo.parse(text).to_text() == text      # fused modules print and parse back exactly
