"""benchmarks/llvm_functions.py: every function of one compile's LLVM parts compiled alone, on a small module."""
from __future__ import annotations

import os

from xlapy.testing import load_file

functions = load_file("benchmarks/llvm_functions.py", "llvm_functions")


def test_ranks_every_function_of_the_parts(small_hlo, capsys):
    assert functions.main([str(small_hlo), "--rounds", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "functions alone" in lines[0]
    times = [float(line.split()[0]) for line in lines[1:]]
    assert times and times == sorted(times, reverse=True)
    assert any(line.rstrip().endswith("xlapy_entry") for line in lines[1:])
    assert os.environ.get("XLAPY_CACHE_DIR") != "off"          # the cold compile left the test's cache setting


def test_a_missing_module_is_one_line_and_exit_2(capsys):
    assert functions.main(["no/such"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no module 'no/such'" in err[0]
