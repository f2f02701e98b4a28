"""algsimp's dot_gather rules: a dot of gathered rows multiplies the table, then gathers (HLO text in, CHECK lines
out, the interpreter's results before and after compared); the cases it must leave alone; a GNN message step
compiled by the CPU backend against numpy, out-of-bounds and negative indices included."""
import numpy as np
import pytest

import xlapy
from xlapy.testing import check_rewrite, hlo_module

SIMPLIFY = ["algsimp", "dce"]
CLOSE = dict(rtol=1e-5, atol=1e-5)      # the product's rows are summed by another GEMM call (other blocking)

# a 6-row table gathered for 16 edges, times a 4 x 3 weight
GATHER = """
x = f32[6,4] parameter(0)
i = s32[16,1] parameter(1)
w = f32[4,3] parameter(2)
g = f32[16,4] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
"""
# jnp.take's default mode: rows whose index is out of range are NaN
FILLED = GATHER + """
ok = pred[16] parameter(3)
okb = pred[16,4] broadcast(ok), dimensions={0}
nan = f32[] constant(nan)
nanb = f32[16,4] broadcast(nan), dimensions={}
t = f32[16,4] select(okb, g, nanb)
"""

CASES = [
    ("row_gather", hlo_module(GATHER + """
ROOT d = f32[16,3] dot(g, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""),
     "CHECK: dot(f32[6,4] %x, f32[4,3] %w)\nCHECK: ROOT\nCHECK-SAME: gather(\nCHECK-SAME: slice_sizes={1,3}"),
    ("nan_filled_row_gather", hlo_module(FILLED + """
ROOT d = f32[16,3] dot(t, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""),
     "CHECK: dot(f32[6,4] %x, f32[4,3] %w)\nCHECK: gather(\nCHECK: ROOT\nCHECK-SAME: select("),
    ("concat_with_gathered_rows", hlo_module(GATHER + """
e = f32[16,2] parameter(3)
c = f32[16,6] concatenate(g, e), dimensions={1}
w2 = f32[6,3] parameter(4)
ROOT d = f32[16,3] dot(c, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""),
     "CHECK-NOT: concatenate\nCHECK-DAG: slice={[0:4], [0:3]}\nCHECK-DAG: slice={[4:6], [0:3]}\n"
     "CHECK-DAG: dot(f32[16,2] %e\nCHECK-DAG: dot(f32[6,4] %x\nCHECK: gather(\nCHECK: ROOT\nCHECK-SAME: add("),
]

UNCHANGED = [
    # as many gathered rows as the table has: multiplying the table first saves nothing
    ("table_not_smaller", hlo_module("""
x = f32[16,4] parameter(0)
i = s32[16,1] parameter(1)
w = f32[4,3] parameter(2)
g = f32[16,4] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
ROOT d = f32[16,3] dot(g, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}""")),
    # part of a row: the product of the table's rows is not the product of the gathered slices
    ("partial_rows", hlo_module("""
x = f32[6,8] parameter(0)
i = s32[16,2] parameter(1)
w = f32[4,3] parameter(2)
g = f32[16,4] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,4}
ROOT d = f32[16,3] dot(g, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}""")),
    # a zero fill: 0 * inf is NaN, so the zero cannot be selected after the product
    ("zero_fill", hlo_module(GATHER + """
ok = pred[16] parameter(3)
okb = pred[16,4] broadcast(ok), dimensions={0}
z = f32[] constant(0)
zb = f32[16,4] broadcast(z), dimensions={}
t = f32[16,4] select(okb, g, zb)
ROOT d = f32[16,3] dot(t, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}""")),
    # the gathered rows are contracted (a weight gradient): another identity, not this one
    ("gathered_dim_contracted", hlo_module(GATHER + """
y = f32[16,3] parameter(3)
ROOT d = f32[4,3] dot(g, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}""")),
    # no piece of the concatenate is a row gather: splitting K would only add a pass over the output
    ("concat_without_gather", hlo_module("""
a = f32[16,4] parameter(0)
b = f32[16,2] parameter(1)
c = f32[16,6] concatenate(a, b), dimensions={1}
w = f32[6,3] parameter(2)
ROOT d = f32[16,3] dot(c, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}""")),
]


@pytest.mark.parametrize("name, text, checks", CASES, ids=[c[0] for c in CASES])
def test_rewrite(name, text, checks):
    check_rewrite(text, SIMPLIFY, checks, fixed_point=True, corners=False, **CLOSE)


@pytest.mark.parametrize("name, text", UNCHANGED, ids=[c[0] for c in UNCHANGED])
def test_left_alone(name, text):
    check_rewrite(text, SIMPLIFY, None, fixed_point=True)


def test_message_step_on_cpu_matches_numpy():
    # concat(h[src], take(e, etype)) . W + b, as a GNN edge MLP writes it; indices past either end clamp (the
    # gather) or fill with NaN (take's mask), negative ones too
    text = hlo_module("""
h = f32[5,4] parameter(0)
src = s32[12,1] parameter(1)
e = f32[3,2] parameter(2)
et = s32[12,1] parameter(3)
ok = pred[12] parameter(4)
w = f32[6,3] parameter(5)
g = f32[12,4] gather(h, src), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
ge = f32[12,2] gather(e, et), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}
okb = pred[12,2] broadcast(ok), dimensions={0}
nan = f32[] constant(nan)
nanb = f32[12,2] broadcast(nan), dimensions={}
t = f32[12,2] select(okb, ge, nanb)
c = f32[12,6] concatenate(g, t), dimensions={1}
ROOT d = f32[12,3] dot(c, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}""")
    rng = np.random.default_rng(0)
    h = rng.standard_normal((5, 4)).astype(np.float32)
    e = rng.standard_normal((3, 2)).astype(np.float32)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    src = np.array([0, 4, 2, -1, 7, 3, 1, 1, 0, 9, 2, 4], np.int32).reshape(12, 1)
    et = np.array([0, 2, 1, 5, -2, 0, 1, 2, 2, 0, 1, 3], np.int32).reshape(12, 1)
    ok = (et[:, 0] >= 0) & (et[:, 0] < 3)
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu")
    assert "f32[5,3]" in exe.as_text()      # the table's product: the rule ran
    got = np.asarray(exe(h, src, e, et, ok, w))
    rows = np.concatenate([h[np.clip(src[:, 0], 0, 4)], np.where(ok[:, None], e[np.clip(et[:, 0], 0, 2)], np.nan)],
                          axis=1)
    want = rows.astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert np.isnan(got[~ok]).all() and not np.isnan(got[ok]).any()
