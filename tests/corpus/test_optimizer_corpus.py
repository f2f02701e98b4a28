"""The optimizer preserves meaning: for every corpus module, the interpreter's result on the optimized module
(the whole CPU pipeline, and each pass alone) matches XLA's recorded outputs."""

import pytest

import xlapy
from xlapy.passes import Pipeline
from xlapy.passes.pipelines import cpu_pipeline
from xlapy.passes.registry import PASSES, available, make_pass
from xlapy.testing import CORPUS, assert_same
from xlapy.tools import npz

from xlapy import debug

NO_DUMPS = debug.DebugOptions()


def _modules():
    out = []
    for sub in ("jax", "hlo"):
        for hlo in sorted((CORPUS / sub).glob("*.hlo")):
            if hlo.with_suffix(".npz").exists():
                out.append(pytest.param(hlo, id=f"{sub}/{hlo.stem}"))
    return out


def _check(module, hlo_path):
    data = npz.load(hlo_path.with_suffix(".npz"))
    args, expected = npz.numbered(data, "arg"), npz.numbered(data, "out")
    result = npz.flatten(xlapy.compile(module, backend="interpreter")(*args))
    assert len(result) == len(expected)
    for i, (got, want) in enumerate(zip(result, expected)):
        assert_same(got, want, where=f"{hlo_path.name} out{i}")


@pytest.mark.parametrize("hlo_path", _modules())
def test_cpu_pipeline_preserves_meaning(hlo_path):
    module = xlapy.hlo.parse(hlo_path.read_text())
    cpu_pipeline(check_invariants=True).run(module, NO_DUMPS)
    _check(module, hlo_path)
    # the whole pipeline is idempotent on its own output where XLA's is: a second run keeps the meaning
    again = xlapy.hlo.parse(module.to_text())
    cpu_pipeline(check_invariants=True).run(again, NO_DUMPS)
    _check(again, hlo_path)


@pytest.mark.parametrize("hlo_path", _modules())
def test_each_pass_alone_preserves_meaning(hlo_path):
    text = hlo_path.read_text()
    reference = xlapy.hlo.parse(text).to_text()
    for name in sorted(PASSES):
        if not available(name):
            continue
        module = xlapy.hlo.parse(text)
        if not Pipeline(name, [make_pass(name)], check_invariants=True).run(module, NO_DUMPS):
            assert module.to_text() == reference, f"pass {name} reported no change but changed the module"
            continue
        try:
            _check(module, hlo_path)
        except AssertionError as e:
            raise AssertionError(f"after pass {name} alone: {e}") from None


@pytest.mark.parametrize("hlo_path", _modules())
def test_simplification_fixed_point_is_idempotent(hlo_path):
    from xlapy.passes import FixedPoint
    from xlapy.passes.pipelines import SIMPLIFICATION
    module = xlapy.hlo.parse(hlo_path.read_text())
    FixedPoint("simplification", [make_pass(n) for n in SIMPLIFICATION]).run(module, NO_DUMPS)
    text = module.to_text()
    again = FixedPoint("simplification", [make_pass(n) for n in SIMPLIFICATION])
    assert not again.run(module, NO_DUMPS), f"{again.iterations_run} more iterations changed the module"
    assert module.to_text() == text
