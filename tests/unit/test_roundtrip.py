"""Exact round trips of XLA's own parser test modules, and parse->print fixed points of real dumps."""
from __future__ import annotations

from pathlib import Path

import pytest

from xlapy.hlo import parse

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
CASES = SHARED / "testdata" / "xla_parser_cases"
TF_DUMP = SHARED / "testdata" / "tf_mobilenet_cluster.hlo"


def _cases(lo: int, hi: int) -> list:
    if not CASES.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{CASES} is absent"))]
    files = sorted(f for f in CASES.glob("*.hlo") if lo <= int(f.name[:3]) <= hi)
    return [pytest.param(f, id=f.stem) for f in files]


def _corpus() -> list:
    files = [TF_DUMP] if TF_DUMP.exists() else []
    for sub in ("jax", "jax_opt"):
        files += sorted((REPO / "tests" / "corpus" / sub).glob("*.hlo"))
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no corpus modules"))]
    return [pytest.param(f, id=f"{f.parent.name}/{f.stem}") for f in files]


@pytest.mark.parametrize("path", _cases(1, 105))
def test_default_printing_round_trips_exactly(path):
    text = path.read_text()
    assert parse(text).to_text().rstrip("\n") == text.rstrip("\n")


@pytest.mark.parametrize("path", _cases(106, 166))
def test_short_parsable_printing_round_trips_exactly(path):
    text = path.read_text()
    assert parse(text).to_text(short_parsable=True).rstrip("\n") == text.rstrip("\n")


@pytest.mark.parametrize("path", _cases(1, 171))
def test_print_is_a_fixed_point(path):
    once = parse(path.read_text()).to_text()
    assert parse(once).to_text() == once
    short = parse(once).to_text(short_parsable=True)
    assert parse(short).to_text(short_parsable=True) == short


@pytest.mark.parametrize("path", _corpus())
def test_corpus_module_prints_to_a_fixed_point(path):
    once = parse(path.read_text()).to_text()
    assert parse(once).to_text() == once


def test_module_clone_is_exact():
    text = (CASES / "050_SelectAndScatter.hlo") if CASES.is_dir() else None
    if text is None:
        pytest.skip("parser cases absent")
    module = parse(text.read_text())
    assert module.clone().to_text() == module.to_text()
