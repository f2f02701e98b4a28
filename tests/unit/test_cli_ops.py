"""`xlapy ops [OPCODE]`: each layer's rule as file:line (the line really defines it) or its reason; the matrix;
an unknown opcode is one line and exit status 2."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from xlapy.hlo.opcodes import OPCODES
from xlapy.tools import op_coverage as cov
from xlapy.tools.cli import main

REPO = Path(__file__).resolve().parents[2]
LOCATION = re.compile(r"(xlapy/\S+\.py):(\d+) (\S+)")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _layer_rows(out: str) -> dict[str, str]:
    """layer name -> the text of its row (continuation lines joined)."""
    rows: dict[str, str] = {}
    current = None
    for line in out.splitlines()[1:]:
        head = line.split()[0] if line.strip() else ""
        if line.startswith("  ") and head in {ly.name for ly in cov.LAYERS}:
            current = head
            rows[current] = line.strip()[len(head):].strip()
        elif current is not None:
            rows[current] += "\n" + line.strip()
    return rows


def test_ops_dot_prints_each_layer_rule_as_file_line(capsys):
    code, out, err = run(capsys, "ops", "dot")
    assert code == 0, err
    assert out.startswith("dot: arity 2")
    rows = _layer_rows(out)
    assert list(rows) == [ly.name for ly in cov.LAYERS]
    for name in ("shape", "interpreter", "cpu", "jvp", "vjp", "batching"):
        locations = LOCATION.findall(rows[name])
        assert locations, (name, rows[name])
        for path, line, qualname in locations:
            source = (REPO / path).read_text().splitlines()[int(line) - 1]
            assert f"def {qualname.split('.')[-1]}" in source, (name, path, line, source)
    assert len(LOCATION.findall(rows["cpu"])) == 2      # the BLAS/loop handler and the element generator
    assert "xlapy/frontend/batching/rules_linalg.py:" in rows["batching"]


def test_ops_gives_the_reason_where_a_layer_has_no_rule(capsys):
    code, out, _ = run(capsys, "ops", "batch-norm-training")
    rows = _layer_rows(out)
    assert code == 0 and rows["cpu"].startswith("expanded by pass batchnorm_expander")
    assert "xlapy/passes/batchnorm_expander.py:" in rows["cpu"]
    code, out, _ = run(capsys, "ops", "compare")
    assert code == 0 and _layer_rows(out)["vjp"].startswith("not differentiable")
    code, out, _ = run(capsys, "ops", "parameter")
    assert code == 0 and "xlapy/backends/interpreter/evaluator.py:" in _layer_rows(out)["interpreter"]


def test_ops_without_opcode_prints_the_matrix(capsys):
    code, out, err = run(capsys, "ops")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["opcode", "shape", "interpreter", "cpu", "jvp", "vjp", "batching"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:1 + len(OPCODES)]}
    assert list(rows) == list(OPCODES)
    assert rows["dot"] == ["+"] * 6
    assert rows["batch-norm-grad"][2] == "E" and rows["infeed"][1] == "U" and rows["and"][3] == "N"
    assert "no batching layer" not in out


@pytest.mark.parametrize("opcode, fragment", [("dott", "did you mean dot"), ("frobnicate", "unknown opcode")])
def test_unknown_opcode_is_one_line_and_exit_2(capsys, opcode, fragment):
    code, out, err = run(capsys, "ops", opcode)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlapy: error:") and fragment in lines[0], err
