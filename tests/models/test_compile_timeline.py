"""benchmarks/compile_timeline.py: one compile's phases and LLVM parts, on a small module (no jax needed)."""
from __future__ import annotations

from xlapy.testing import load_file

timeline = load_file("benchmarks/compile_timeline.py", "compile_timeline")


def test_prints_the_phases_and_the_parts(small_hlo, capsys):
    assert timeline.main([str(small_hlo)]) == 0
    out = capsys.readouterr().out
    assert "HLO passes" in out and "emission" in out and "LLVM parts:" in out and "of thread CPU" in out
    assert "cpu" in next(line for line in out.splitlines() if "HLO passes" in line)
    import os
    assert os.environ.get("XLAPY_CACHE_DIR") != "off"          # the cold compile left the test's cache setting


def test_a_missing_module_is_one_line_and_exit_2(capsys):
    assert timeline.main(["no/such"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no module 'no/such'" in err[0]
