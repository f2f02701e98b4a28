"""Op coverage as data (tools/op_coverage.py): for every opcode and every layer, the layer has a rule or the table
says why not, and never both. An opcode that gains a rule, or loses one, fails here until the table says so."""
from __future__ import annotations

import inspect

import pytest

from xlapy.hlo.opcodes import OPCODES
from xlapy.hlo.tables import DuplicateRuleError, merge_rule_tables
from xlapy.passes.pipelines import CPU_PIPELINE
from xlapy.passes.registry import PASSES, available
from xlapy.tools import op_coverage as cov
from xlapy.tools.ops import MARKS, source_location

LAYERS = [ly for ly in cov.LAYERS if not ly.absent]
AUTODIFF = {"jvp", "vjp"}


def _cpu_pipeline_passes() -> set[str]:
    return {e[0] if isinstance(e, tuple) else e for _, _, names in CPU_PIPELINE for e in names}


@pytest.mark.parametrize("layer", LAYERS, ids=lambda ly: ly.name)
def test_every_opcode_has_a_rule_or_a_reason(layer):
    covered = layer.covered()
    lost = sorted(set(OPCODES) - covered - set(layer.no_rule))
    assert not lost, f"{layer.name}: no rule and no reason for {lost}: add a reason to tools/op_coverage.py"


@pytest.mark.parametrize("layer", LAYERS, ids=lambda ly: ly.name)
def test_no_reason_for_an_opcode_that_has_a_rule(layer):
    gained = sorted(layer.covered() & set(layer.no_rule))
    assert not gained, f"{layer.name} now has rules for {gained}: drop their reasons from tools/op_coverage.py"


@pytest.mark.parametrize("layer", LAYERS, ids=lambda ly: ly.name)
def test_tables_and_reasons_name_only_real_opcodes(layer):
    for label, table in layer.tables():
        assert not set(table) - set(OPCODES), (label, sorted(set(table) - set(OPCODES)))
    assert not set(layer.no_rule) - set(OPCODES), sorted(set(layer.no_rule) - set(OPCODES))


@pytest.mark.parametrize("layer", LAYERS, ids=lambda ly: ly.name)
def test_reasons_are_of_the_closed_set_and_point_somewhere_real(layer):
    for opcode, reason in layer.no_rule.items():
        where = (layer.name, opcode, reason)
        assert reason.kind in cov.KINDS, where
        if reason.kind == cov.EXPANDED:
            assert reason.target in PASSES and available(reason.target), where
            if layer.name == "cpu":        # the pass must run before the CPU emitters see the module
                assert reason.target in _cpu_pipeline_passes(), where
        elif reason.kind == cov.BY_DRIVER:
            assert inspect.isfunction(cov.resolve(reason.target)), where
        else:
            assert reason.note, where
        if reason.kind == cov.NOT_DIFFERENTIABLE:
            assert layer.name in AUTODIFF, where


def test_every_rule_has_a_source_location():
    for layer in LAYERS:
        for label, table in layer.tables():
            for opcode, rule in table.items():
                loc = source_location(rule)
                assert not loc.startswith("(no source)") and ".py:" in loc, (layer.name, label, opcode, loc)


def test_every_layer_exists_batching_included():
    assert not [ly.name for ly in cov.LAYERS if ly.absent]
    assert "batching" in {ly.name for ly in LAYERS}


def test_matrix_marks_cover_every_kind():
    assert set(MARKS) == {"rule", *cov.KINDS}
    assert len(set(MARKS.values())) == len(MARKS)


def test_merge_rule_tables_refuses_a_second_rule_naming_both_sources():
    merged = merge_rule_tables("test rules", ("a.RULES", {"add": 1}), ("b.RULES", {"negate": 2}))
    assert merged == {"add": 1, "negate": 2}
    with pytest.raises(DuplicateRuleError, match=r"two test rules for opcode 'add': one in a\.RULES, one in b\.RULES"):
        merge_rule_tables("test rules", ("a.RULES", {"add": 1}), ("b.RULES", {"add": 2}))
