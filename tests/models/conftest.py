"""Registers the `models` marker of tests/models (the real-model suite of benchmarks/models): select or
deselect it with `-m models` / `-m "not models"`; `small_hlo`, a small module file for the compile tools' tests."""
import pytest

SMALL_MODULE = """HloModule t
ENTRY e {
  p = f32[64,64] parameter(0)
  q = f32[64,64] parameter(1)
  d = f32[64,64] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[64,64] exponential(d)
  ROOT t = f32[64,64] transpose(e), dimensions={1,0}
}
"""


@pytest.fixture
def small_hlo(tmp_path):
    """A .hlo file of a dot, an exponential and a transpose: a GEMM, a loop and a tiled transpose to compile."""
    path = tmp_path / "t.hlo"
    path.write_text(SMALL_MODULE)
    return path


def pytest_configure(config):
    config.addinivalue_line("markers", "models: a real-model module of benchmarks/models run on the CPU backend "
                                       "against XLA's recorded outputs (size-gated, see test_models.py)")
