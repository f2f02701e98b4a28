"""Suite-wide pytest hooks. The summary says once what was skipped because an optional input is missing
(../shared/testdata beside the repository, .venv-jax from `make corpus`) and why, rather than leaving
dozens of skips for the reader to add up."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# The persistent compilation cache (xlapy/backends/compilation_cache.py) is on, as for users, but in a directory of
# this run's own: a run starts cold, never reads a developer's ~/.cache/xlapy, and its subprocesses share it.
if "XLAPY_CACHE_DIR" not in os.environ:
    os.environ["XLAPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="xlapy-test-cache-")
    atexit.register(shutil.rmtree, os.environ["XLAPY_CACHE_DIR"], True)

# optional input -> (where it is looked for, what it holds and how to get it, words that mark its skips' reasons)
OPTIONAL_INPUTS = {
    "../shared/testdata": (REPO.parent / "shared" / "testdata",
                           "XLA's parser-test modules and a TensorFlow dump, checked out beside the repository",
                           ("shared/testdata", "../shared", "parser cases absent")),
    ".venv-jax": (REPO / ".venv-jax", "JAX in its own environment, made by `make corpus`, checks that XLA "
                  "accepts what xlapy prints", (".venv-jax",)),
}


def _reason(report) -> str:
    longrepr = report.longrepr
    return str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


def _where(report) -> str:
    return report.nodeid.split("::")[0]


def skipped_for_missing_inputs(skipped: list) -> dict[str, Counter]:
    """Missing optional input -> skipped tests per file, for the inputs that are absent."""
    out = {}
    for name, (path, _, words) in OPTIONAL_INPUTS.items():
        if path.exists():
            continue
        files = Counter(_where(r) for r in skipped if any(w in _reason(r) for w in words))
        if files:
            out[name] = files
    return out


def pytest_terminal_summary(terminalreporter) -> None:
    for name, files in skipped_for_missing_inputs(terminalreporter.stats.get("skipped", [])).items():
        detail = ", ".join(f"{f} {n}" for f, n in files.most_common())
        terminalreporter.write_line(f"{sum(files.values())} tests skipped because {name} is absent "
                                    f"({OPTIONAL_INPUTS[name][1]}): {detail}", yellow=True)
