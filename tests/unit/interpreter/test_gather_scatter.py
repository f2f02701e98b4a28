"""Interpreter: gather and scatter with full dimension numbers. HLO text in, numpy expectations out."""
import numpy as np
import pytest

import xlapy
from xlapy.testing import assert_same

RNG = np.random.default_rng(1)


def run(text, *args):
    return xlapy.compile(xlapy.hlo.parse(text), backend="interpreter", verify=False)(*args)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------------------
# gather
# ---------------------------------------------------------------------------------------------------------
def gather_module(operand, indices, out, dnums):
    return f"""HloModule m
ENTRY e {{
  x = {operand} parameter(0)
  i = {indices} parameter(1)
  ROOT g = {out} gather(x, i), {dnums}
}}
"""


X53 = f32(5, 3)
X45 = f32(4, 5)
X35 = f32(3, 5)
X362 = f32(3, 6, 2)
X86 = f32(8, 6)
X64 = f32(6, 4)

TAKE = "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}"
FANCY = "offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1}"
ALONG_AXIS = ("offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, "
              "start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1}")
VMAP_BATCHED = ("offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, "
                "start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,2}")
WINDOWS = "offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={3,4}"
VECTOR_DIM_0 = "offset_dims={0,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=0, slice_sizes={2,4}"


def _take_along(x, idx):
    return np.take_along_axis(x, np.clip(idx, 0, x.shape[1] - 1), axis=1)


def _windows(x, starts):
    out = []
    for r, c in starts:
        r, c = min(max(r, 0), 8 - 3), min(max(c, 0), 6 - 4)
        out.append(x[r:r + 3, c:c + 4])
    return np.stack(out)


def _vector_dim_0(x, idx):
    starts = np.clip(idx[0], 0, 6 - 2)
    return np.stack([x[s:s + 2] for s in starts], axis=1)   # [2, 3, 4]: offset, batch, offset


IDX_TAKE = np.array([4, 0, 2, 2], np.int32)
IDX_OOB = np.array([7, -3, 1], np.int32)
IDX_FANCY = np.array([[3, 4], [0, 0], [2, 1]], np.int32)
IDX_ALONG = RNG.integers(0, 5, (3, 4, 1)).astype(np.int32)
IDX_VMAP = RNG.integers(0, 6, (3, 4, 1)).astype(np.int32)
IDX_WIN = np.array([[6, 5], [1, 0], [-2, 3]], np.int32)
IDX_VD0 = np.array([[0, 5, 3]], np.int32)
IDX_U8 = np.array([255, 1], np.uint8)
IDX_S64 = np.array([2, -9, 4], np.int64)

GATHER_CASES = [
    # name, operand text, indices text, result text, dnums, x, indices, expected
    ("take", "f32[5,3]", "s32[4]", "f32[4,3]", TAKE, X53, IDX_TAKE, X53[IDX_TAKE]),
    ("take_clamps_oob", "f32[5,3]", "s32[3]", "f32[3,3]", TAKE, X53, IDX_OOB, X53[np.clip(IDX_OOB, 0, 4)]),
    ("fancy_2d", "f32[4,5]", "s32[3,2]", "f32[3]", FANCY, X45, IDX_FANCY, X45[IDX_FANCY[:, 0], IDX_FANCY[:, 1]]),
    ("take_along_axis", "f32[3,5]", "s32[3,4,1]", "f32[3,4]", ALONG_AXIS, X35, IDX_ALONG,
     _take_along(X35, IDX_ALONG[..., 0])),
    ("vmap_batched", "f32[3,6,2]", "s32[3,4,1]", "f32[3,4,2]", VMAP_BATCHED, X362, IDX_VMAP,
     np.stack([X362[b, IDX_VMAP[b, :, 0]] for b in range(3)])),
    ("windows_clamped", "f32[8,6]", "s32[3,2]", "f32[3,3,4]", WINDOWS, X86, IDX_WIN, _windows(X86, IDX_WIN)),
    ("index_vector_dim_0", "f32[6,4]", "s32[1,3]", "f32[2,3,4]", VECTOR_DIM_0, X64, IDX_VD0,
     _vector_dim_0(X64, IDX_VD0)),
    ("u8_indices", "f32[5,3]", "u8[2]", "f32[2,3]", TAKE, X53, IDX_U8, X53[[4, 1]]),
    ("s64_indices", "f32[5,3]", "s64[3]", "f32[3,3]", TAKE, X53, IDX_S64, X53[[2, 0, 4]]),
]


@pytest.mark.parametrize("name,op,ix,out,dnums,x,idx,expected", GATHER_CASES, ids=[c[0] for c in GATHER_CASES])
def test_gather(name, op, ix, out, dnums, x, idx, expected):
    assert_same(run(gather_module(op, ix, out, dnums), x, idx), expected, name)


def test_gather_operation_semantics_example():
    # operation_semantics.md: gather rows of a [3,3] matrix; index vector is the trailing dim.
    x = np.arange(9, dtype=np.int32).reshape(3, 3)
    idx = np.array([[0], [2]], np.int32)
    text = gather_module("s32[3,3]", "s32[2,1]", "s32[2,3]",
                         "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
                         "slice_sizes={1,3}")
    assert_same(run(text, x, idx), np.array([[0, 1, 2], [6, 7, 8]], np.int32))


# ---------------------------------------------------------------------------------------------------------
# scatter
# ---------------------------------------------------------------------------------------------------------
def combiner(op, ty="f32"):
    if op == "assign":
        return f"comb {{\n  a = {ty}[] parameter(0)\n  ROOT b = {ty}[] parameter(1)\n}}\n"
    return f"comb {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  ROOT r = {ty}[] {op}(a, b)\n}}\n"


def scatter_module(comb, operand, indices, updates, dnums):
    return f"""HloModule m
{comb}ENTRY e {{
  x = {operand} parameter(0)
  i = {indices} parameter(1)
  u = {updates} parameter(2)
  ROOT s = {operand} scatter(x, i, u), {dnums}, to_apply=comb
}}
"""


POINTS = "update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1"
ROWS = "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1"
BLOCKS = "update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1"
BATCHED = ("update_window_dims={}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, "
           "input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=2")


def reference_scatter(x, targets, values, fn):
    """Apply fn(old, new) in order; targets are tuples (or None to skip)."""
    out = x.copy()
    for t, v in zip(targets, values):
        if t is not None:
            out[t] = fn(out[t], v)
    return out


X6 = f32(6)
DUP_IDX = np.array([[1], [3], [1], [5], [1]], np.int32)
U5 = f32(5)
OOB_IDX = np.array([[-1], [2], [6], [0], [2]], np.int32)


def _points(idx):
    return [(int(i),) if 0 <= i < 6 else None for i in idx[:, 0]]


X53S = f32(5, 3)
ROW_IDX = np.array([[4], [0], [4]], np.int32)
U33 = f32(3, 3)
X64S = f32(6, 4)
BLOCK_IDX = np.array([[5, 0], [4, 2], [-1, 0], [0, 3], [1, 1]], np.int32)
U522 = f32(5, 2, 2)


def _blocks(x, idx, u):
    out = x.copy()
    for (r, c), w in zip(idx, u):
        if 0 <= r <= 6 - 2 and 0 <= c <= 4 - 2:
            out[r:r + 2, c:c + 2] += w
    return out


X36 = f32(3, 6)
BATCH_IDX = RNG.integers(0, 6, (3, 4, 1)).astype(np.int32)
U34 = f32(3, 4)


def _batched(x, idx, u):
    out = x.copy()
    for b in range(3):
        np.add.at(out[b], idx[b, :, 0], u[b])
    return out


SCATTER_CASES = [
    # name, combiner, operand, indices, updates, dnums, x, idx, u, expected
    ("add_duplicates", "add", "f32[6]", "s32[5,1]", "f32[5]", POINTS, X6, DUP_IDX, U5,
     reference_scatter(X6, _points(DUP_IDX), U5, np.add)),
    ("set_last_wins", "assign", "f32[6]", "s32[5,1]", "f32[5]", POINTS, X6, DUP_IDX, U5,
     reference_scatter(X6, _points(DUP_IDX), U5, lambda a, b: b)),
    ("add_skips_oob", "add", "f32[6]", "s32[5,1]", "f32[5]", POINTS, X6, OOB_IDX, U5,
     reference_scatter(X6, _points(OOB_IDX), U5, np.add)),
    ("multiply", "multiply", "f32[6]", "s32[5,1]", "f32[5]", POINTS, X6, DUP_IDX, U5,
     reference_scatter(X6, _points(DUP_IDX), U5, np.multiply)),
    ("minimum", "minimum", "f32[6]", "s32[5,1]", "f32[5]", POINTS, X6, DUP_IDX, U5,
     reference_scatter(X6, _points(DUP_IDX), U5, np.minimum)),
    ("maximum", "maximum", "f32[6]", "s32[5,1]", "f32[5]", POINTS, X6, DUP_IDX, U5,
     reference_scatter(X6, _points(DUP_IDX), U5, np.maximum)),
    ("rows", "add", "f32[5,3]", "s32[3,1]", "f32[3,3]", ROWS, X53S, ROW_IDX, U33,
     reference_scatter(X53S, [(4,), (0,), (4,)], U33, np.add)),
    ("blocks_skip_partial_windows", "add", "f32[6,4]", "s32[5,2]", "f32[5,2,2]", BLOCKS, X64S, BLOCK_IDX, U522,
     _blocks(X64S, BLOCK_IDX, U522)),
    ("batching_dims", "add", "f32[3,6]", "s32[3,4,1]", "f32[3,4]", BATCHED, X36, BATCH_IDX, U34,
     _batched(X36, BATCH_IDX, U34)),
    ("u32_indices_int_add", "add", "s32[6]", "u32[5,1]", "s32[5]", POINTS, np.arange(6, dtype=np.int32),
     np.array([[0], [5], [4294967295], [0], [3]], np.uint32), np.arange(1, 6, dtype=np.int32),
     np.array([0 + 1 + 4, 1, 2, 3 + 5, 4, 5 + 2], np.int32)),
]


@pytest.mark.parametrize("name,op,operand,ix,ux,dnums,x,idx,u,expected", SCATTER_CASES,
                         ids=[c[0] for c in SCATTER_CASES])
def test_scatter(name, op, operand, ix, ux, dnums, x, idx, u, expected):
    ty = operand.split("[")[0]
    assert_same(run(scatter_module(combiner(op, ty), operand, ix, ux, dnums), x, idx, u), expected, name)


def test_scatter_implicit_index_vector_dim():
    # index_vector_dim == rank of the indices: each index is a scalar (an implicit trailing 1).
    dnums = "update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1"
    idx = np.array([1, 3, 1], np.int32)
    u = f32(3)
    out = run(scatter_module(combiner("add"), "f32[6]", "s32[3]", "f32[3]", dnums), X6, idx, u)
    assert_same(out, reference_scatter(X6, [(1,), (3,), (1,)], u, np.add))


GENERIC_COMBINER = """HloModule m
comb {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  bb = f32[] multiply(b, b)
  ROOT r = f32[] add(a, bb)
}
ENTRY e {
  x = f32[6] parameter(0)
  i = s32[5,1] parameter(1)
  u = f32[5] parameter(2)
  ROOT s = f32[6] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
}
"""

NON_ELEMENTWISE_COMBINER = GENERIC_COMBINER.replace("bb = f32[] multiply(b, b)", "bb = f32[] reshape(b)")

VARIADIC = """HloModule m
comb {
  a0 = f32[] parameter(0)
  a1 = s32[] parameter(1)
  b0 = f32[] parameter(2)
  b1 = s32[] parameter(3)
  s = f32[] add(a0, b0)
  m = s32[] maximum(a1, b1)
  ROOT t = (f32[], s32[]) tuple(s, m)
}
ENTRY e {
  x0 = f32[6] parameter(0)
  x1 = s32[6] parameter(1)
  i = s32[5,1] parameter(2)
  u0 = f32[5] parameter(3)
  u1 = s32[5] parameter(4)
  ROOT s = (f32[6], s32[6]) scatter(x0, x1, i, u0, u1), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
}
"""


def test_scatter_generic_combiner_in_order():
    expected = reference_scatter(X6, _points(DUP_IDX), U5, lambda a, b: a + b * b)
    assert_same(run(GENERIC_COMBINER, X6, DUP_IDX, U5), expected)


def test_scatter_non_elementwise_combiner():
    expected = reference_scatter(X6, _points(OOB_IDX), U5, np.add)
    assert_same(run(NON_ELEMENTWISE_COMBINER, X6, OOB_IDX, U5), expected)


def test_scatter_variadic():
    x1 = np.zeros(6, np.int32)
    u1 = np.array([7, -2, 9, 4, 3], np.int32)
    s, m = run(VARIADIC, X6, x1, OOB_IDX, U5, u1)
    assert_same(s, reference_scatter(X6, _points(OOB_IDX), U5, np.add))
    assert_same(m, reference_scatter(x1, _points(OOB_IDX), u1, np.maximum))


def test_scatter_rows_assign_last_wins():
    text = scatter_module(combiner("assign"), "f32[5,3]", "s32[3,1]", "f32[3,3]", ROWS)
    assert_same(run(text, X53S, ROW_IDX, U33), reference_scatter(X53S, [(4,), (0,), (4,)], U33, lambda a, b: b))


def test_scatter_add_bf16():
    import ml_dtypes
    x = np.zeros(6, ml_dtypes.bfloat16)
    u = np.array([1.5, 2, 0.25, 4, 8], ml_dtypes.bfloat16)
    out = run(scatter_module(combiner("add", "bf16"), "bf16[6]", "s32[5,1]", "bf16[5]", POINTS), x, DUP_IDX, u)
    assert_same(out, np.array([0, 1.5 + 0.25 + 8, 0, 2, 0, 4], ml_dtypes.bfloat16))


def test_gather_empty_batch():
    out = run(gather_module("f32[5,3]", "s32[0]", "f32[0,3]", TAKE), X53, np.zeros(0, np.int32))
    assert_same(out, np.zeros((0, 3), np.float32))
