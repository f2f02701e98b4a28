"""The README's examples run as written: every ```python block executes, every ```sh command exits 0
(except `make ...`, which is how these tests are run in the first place)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def _blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def _commands(block):
    joined = block.replace("\\\n", " ")
    return [ln.strip() for ln in joined.splitlines() if ln.strip() and not ln.strip().startswith(("#", "make "))]


SH = [c for b in _blocks("sh") for c in _commands(b)]
PY = _blocks("python")


@pytest.mark.parametrize("command", SH, ids=[c[:60] for c in SH])
def test_readme_shell_command(command, tmp_path):
    bin_dir = Path(sys.executable).parent
    # /tmp/ first: the venv itself may live under /tmp (a fresh clone there)
    command = command.replace("/tmp/", f"{tmp_path}/").replace(".venv/bin/", f"{bin_dir}/")
    proc = subprocess.run(["bash", "-c", command], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"


@pytest.mark.parametrize("code", PY, ids=[f"python-{i}" for i in range(len(PY))])
def test_readme_python_block(code, monkeypatch):
    monkeypatch.chdir(REPO)
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})


def test_readme_shows_the_two_commands_first():
    first = _blocks("sh")[0]
    assert "make demo" in first and "make test" in first
