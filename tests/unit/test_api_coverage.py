"""xlapy's coverage of JAX's public names never drops below the share recorded by tools/api_coverage.py
(tests/unit/api_names.json: JAX 0.10.2's names per module, written beside docs/api_coverage.md), and the
table in docs/api_coverage.md agrees with the recorded names. Needs no JAX."""
from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORD = json.loads((Path(__file__).parent / "api_names.json").read_text())
MODULES = RECORD["modules"]


def _resolve(path: str):
    try:
        return importlib.import_module(path)
    except ImportError:
        parent, _, attr = path.rpartition(".")
        return getattr(importlib.import_module(parent), attr)


@pytest.mark.parametrize("jax_module", sorted(MODULES))
def test_share_does_not_drop(jax_module):
    row = MODULES[jax_module]
    mine = _resolve(row["xlapy"])
    names = row["names"]
    missing = [n for n in names if not hasattr(mine, n)]
    share = (len(names) - len(missing)) / max(len(names), 1)
    assert share >= row["share"] - 1e-9, (f"{row['xlapy']} has {share:.1%} of {jax_module}'s names, the record says "
                                          f"{row['share']:.1%}; missing: {missing}")


def test_the_table_matches_the_record():
    text = (ROOT / "docs" / "api_coverage.md").read_text()
    assert f"JAX {RECORD['jax_version']}" in text
    for jax_module, row in MODULES.items():
        m = re.search(rf"^\| `{re.escape(jax_module)}` \| `{re.escape(row['xlapy'])}` \| (\d+) \| (\d+) \|", text,
                      re.MULTILINE)
        assert m, f"docs/api_coverage.md has no row for {jax_module}: run tools/api_coverage.py"
        n, have = int(m.group(1)), int(m.group(2))
        assert n == len(row["names"]) and abs(have / max(n, 1) - row["share"]) < 1e-3, jax_module
