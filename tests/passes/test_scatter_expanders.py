"""ScatterExpander and SelectAndScatterExpander: scatter => while loop; select-and-scatter => variadic
reduce-window + scatter. Checked on text, on corner values, random and chosen inputs (check_rewrite), and on every
corpus module that uses them."""
import numpy as np
import pytest

import xlapy
from xlapy.passes import run_passes
from xlapy.passes.registry import make_pass
from xlapy.testing import CORPUS, argument_sets, assert_same, check_rewrite
from xlapy.tools import npz

SCATTER_ADD = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[6,3] parameter(0)
  i = s32[4,1] parameter(1)
  u = f32[4,3] parameter(2)
  ROOT r = f32[6,3] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
"""

MAX_POOL_GRAD = """HloModule m
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[5,6] parameter(0)
  g = f32[3,3] parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[5,6] select-and-scatter(x, g, z), window={size=2x2 stride=2x2 pad=0_1x0_0}, select=ge, scatter=add
}
"""

# A combiner that is not elementwise (it calls another computation): the expander must leave it alone.
SCATTER_WITH_CALL = """HloModule m
inner {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] call(a, b), to_apply=inner
}
ENTRY e {
  x = f32[6] parameter(0)
  i = s32[2,1] parameter(1)
  u = f32[2] parameter(2)
  ROOT r = f32[6] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
"""


def without_denormals(arg_sets):
    """Argument sets with float denormals made zeros of their sign. The interpreter's scatter combines with numpy
    ufuncs, which read a denormal as itself, where its add (like XLA:CPU's, under DAZ) reads it as zero: until
    the two agree, a scatter and the loop it expands to differ on denormal inputs."""
    def flushed(a):
        if a.dtype.kind != "f":
            return a
        return np.where(np.abs(a) < np.finfo(a.dtype).tiny, np.copysign(np.zeros_like(a), a), a)
    return [[flushed(a) for a in args] for args in arg_sets]


def test_scatter_becomes_a_loop_and_keeps_its_meaning():
    x = np.arange(18, dtype=np.float32).reshape(6, 3)
    idx = np.array([[1], [5], [1], [9]], np.int32)          # a duplicate, and one out of bounds (skipped)
    u = np.ones((4, 3), np.float32)
    check_rewrite(SCATTER_ADD, "scatter_expander,dce",
                  "CHECK-NOT: scatter(\nCHECK: dynamic-update-slice\nCHECK: ENTRY\nCHECK: while(",
                  args=without_denormals(argument_sets(SCATTER_ADD)) + [[x, idx, u]])


def test_select_and_scatter_becomes_reduce_window_and_scatter():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, (5, 6)).astype(np.float32)       # ties: the first maximum wins
    g = rng.standard_normal((3, 3)).astype(np.float32)
    check_rewrite(MAX_POOL_GRAD, "select-and-scatter-expander,dce",
                  "CHECK-NOT: select-and-scatter(\nCHECK: ENTRY\nCHECK: reduce-window(\nCHECK: scatter(",
                  args=argument_sets(MAX_POOL_GRAD) + [[x, g]])


def test_non_elementwise_combiner_is_left_alone():
    check_rewrite(SCATTER_WITH_CALL, "scatter_expander,dce", None)


def _corpus_with(op):
    return [pytest.param(p, id=p.stem) for p in sorted((CORPUS / "jax").glob("*.hlo")) if f" {op}(" in p.read_text()]


@pytest.mark.parametrize("path", _corpus_with("scatter") + _corpus_with("select-and-scatter"))
def test_corpus_modules_keep_xla_results(path):
    m = xlapy.hlo.parse(path.read_text())
    run_passes(m, [make_pass("select-and-scatter-expander"), make_pass("scatter_expander"), make_pass("dce")])
    assert " scatter(" not in m.to_text() and "select-and-scatter(" not in m.to_text()
    data = npz.load(path.with_suffix(".npz"))
    result = npz.flatten(xlapy.compile(m)(*npz.numbered(data, "arg")))
    for got, want in zip(result, npz.numbered(data, "out")):
        assert_same(got, want, where=path.name)
