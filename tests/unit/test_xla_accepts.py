"""XLA's own parser (jaxlib, through tools/xla_check.py) accepts the text we print."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from xlapy.hlo import parse

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
JAX_PYTHON = REPO / ".venv-jax" / "bin" / "python"
XLA_CHECK = REPO / "tools" / "xla_check.py"


def _sources() -> list[Path]:
    files = sorted((SHARED / "testdata" / "xla_parser_cases").glob("*.hlo"))
    files += [SHARED / "testdata" / "tf_mobilenet_cluster.hlo"]
    for sub in ("jax", "jax_opt"):
        files += sorted((REPO / "tests" / "corpus" / sub).glob("*.hlo"))
    return [f for f in files if f.exists()]


@pytest.mark.skipif(not (JAX_PYTHON.exists() and XLA_CHECK.exists()), reason="no .venv-jax / tools/xla_check.py")
@pytest.mark.parametrize("short", [False, True], ids=["default", "short_parsable"])
def test_xla_accepts_our_printed_text(tmp_path, short):
    sources = _sources()
    if not sources:
        pytest.skip("no HLO modules to check")
    written = []
    for i, src in enumerate(sources):
        out = tmp_path / f"{i:04d}_{src.parent.name}_{src.name}"
        out.write_text(parse(src.read_text()).to_text(short_parsable=short))
        written.append(str(out))
    proc = subprocess.run([str(JAX_PYTHON), str(XLA_CHECK), "accept", *written],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
