"""The CPU backend against XLA on the corpus: every tests/corpus/jax module whose ops the backend supports
must compile and match XLA's recorded outputs; the others must raise UnimplementedError naming the op (they
are xfailed with that reason, so the list of missing ops is visible in the test report)."""
from pathlib import Path

import pytest

import xlapy
from xlapy.errors import UnimplementedError
from xlapy.testing import CORPUS, assert_same
from xlapy.tools import npz

CASES = [pytest.param(p, id=p.stem) for p in sorted((CORPUS / "jax").glob("*.hlo")) if p.with_suffix(".npz").exists()]


@pytest.mark.parametrize("hlo_path", CASES)
def test_cpu_matches_xla(hlo_path: Path):
    data = npz.load(hlo_path.with_suffix(".npz"))
    args, expected = npz.numbered(data, "arg"), npz.numbered(data, "out")
    module = xlapy.hlo.parse(hlo_path.read_text())
    try:
        exe = xlapy.compile(module, backend="cpu")
    except UnimplementedError as e:
        assert "cpu backend:" in str(e)
        pytest.xfail(str(e))
    result = npz.flatten(exe(*args))
    assert len(result) == len(expected), f"{len(result)} outputs, XLA gave {len(expected)}"
    for i, (got, want) in enumerate(zip(result, expected)):
        assert_same(got, want, where=f"{hlo_path.name} out{i}")


def test_seed_sum_is_one_fused_loop():
    """sum(x + y*z): after the pipeline the entry is one fusion, and the native code matches XLA."""
    path = CORPUS / "jax" / "seed_sum_xyz.hlo"
    exe = xlapy.compile(xlapy.hlo.parse(path.read_text()), backend="cpu")
    entry = exe.module.entry
    if not any(i.opcode == "fusion" for i in entry.instructions):
        pytest.skip("the fusion pass is not available in this checkout")
    assert [i.opcode for i in entry.instructions if i.opcode != "parameter"] == ["fusion"]
    data = npz.load(path.with_suffix(".npz"))
    assert_same(exe(*npz.numbered(data, "arg")), npz.numbered(data, "out")[0])
    assert "xlapy_entry" in exe.llvm_ir
