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


# ---------------------------------------------------------------------------------------------------------
# random dimension numbers against a per-element reference written from operation_semantics.md
# ---------------------------------------------------------------------------------------------------------
def _ints(v):
    return "{" + ",".join(map(str, v)) + "}"


def _random_dnums(rng, operand_shape):
    """Batching dim 0 (sometimes), an index map over some other dims, random index_vector_dim."""
    rank = len(operand_shape)
    batching = (0,) if rng.random() < 0.5 else ()
    free = [d for d in range(rank) if d not in batching]
    index_map = tuple(int(d) for d in rng.permutation(free)[:rng.integers(1, len(free) + 1)])
    n_batch = int(rng.integers(1, 3))
    batch_shape = [int(rng.integers(1, 4)) for _ in range(n_batch)]
    indices_batching = ()
    if batching:
        indices_batching_pos = int(rng.integers(0, n_batch))
        batch_shape[indices_batching_pos] = operand_shape[0]
    ivd = int(rng.integers(0, n_batch + 1))
    idx_shape = batch_shape[:ivd] + [len(index_map)] + batch_shape[ivd:]
    if batching:
        indices_batching = (indices_batching_pos if indices_batching_pos < ivd else indices_batching_pos + 1,)
    return batching, index_map, ivd, idx_shape, batch_shape, indices_batching


def _batch_pos(ib, ivd):
    return ib if ib < ivd else ib - 1


def reference_gather(x, idx, offset_dims, collapsed, index_map, batching, indices_batching, ivd, sizes, out_shape):
    out = np.empty(out_shape, x.dtype)
    kept = [d for d in range(x.ndim) if d not in collapsed and d not in batching]
    for o in np.ndindex(*out_shape):
        g = [o[d] for d in range(len(out_shape)) if d not in offset_dims]
        vec = [idx[tuple(g[:ivd]) + (k,) + tuple(g[ivd:])] for k in range(len(index_map))]
        start = [0] * x.ndim
        for k, d in enumerate(index_map):
            start[d] = min(max(int(vec[k]), 0), x.shape[d] - sizes[d])
        for d, ib in zip(batching, indices_batching):
            start[d] = g[_batch_pos(ib, ivd)]
        for k, d in enumerate(kept):
            start[d] += o[offset_dims[k]]
        out[o] = x[tuple(start)]
    return out


@pytest.mark.parametrize("seed", range(12))
def test_gather_random_dimension_numbers(seed):
    rng = np.random.default_rng(seed)
    shape = (3, 5, 4)
    batching, index_map, ivd, idx_shape, batch_shape, indices_batching = _random_dnums(rng, shape)
    collapsed = tuple(sorted(d for d in index_map if rng.random() < 0.5))
    sizes = [1 if d in collapsed or d in batching else int(rng.integers(1, shape[d] + 1)) for d in range(3)]
    kept = [sizes[d] for d in range(3) if d not in collapsed and d not in batching]
    out_rank = len(batch_shape) + len(kept)
    offset_dims = tuple(sorted(int(d) for d in rng.permutation(out_rank)[:len(kept)]))
    out_shape, it_b, it_k = [], iter(batch_shape), iter(kept)
    for d in range(out_rank):
        out_shape.append(next(it_k) if d in offset_dims else next(it_b))
    x = rng.standard_normal(shape).astype(np.float32)
    idx = rng.integers(-2, 7, idx_shape).astype(np.int32)
    dnums = (f"offset_dims={_ints(offset_dims)}, collapsed_slice_dims={_ints(collapsed)}, "
             f"start_index_map={_ints(index_map)}, operand_batching_dims={_ints(batching)}, "
             f"start_indices_batching_dims={_ints(indices_batching)}, index_vector_dim={ivd}, "
             f"slice_sizes={_ints(sizes)}")
    text = gather_module("f32[3,5,4]", f"s32[{','.join(map(str, idx_shape))}]",
                         f"f32[{','.join(map(str, out_shape))}]", dnums)
    expected = reference_gather(x, idx, offset_dims, collapsed, index_map, batching, indices_batching, ivd, sizes,
                                tuple(out_shape))
    assert_same(run(text, x, idx), expected, dnums)


def reference_scatter_add(x, idx, u, window_dims, inserted, index_map, batching, indices_batching, ivd):
    out = x.copy()
    scatter_dims = [d for d in range(u.ndim) if d not in window_dims]
    window_operand = [d for d in range(x.ndim) if d not in inserted and d not in batching]
    window_shape = [u.shape[d] for d in window_dims]
    for s in np.ndindex(*[u.shape[d] for d in scatter_dims]):
        vec = [idx[tuple(s[:ivd]) + (k,) + tuple(s[ivd:])] for k in range(len(index_map))]
        start = [0] * x.ndim
        for k, d in enumerate(index_map):
            start[d] = int(vec[k])
        for d, ib in zip(batching, indices_batching):
            start[d] = s[_batch_pos(ib, ivd)]
        size = [window_shape[window_operand.index(d)] if d in window_operand else 1 for d in range(x.ndim)]
        if any(st < 0 or st > x.shape[d] - size[d] for d, st in enumerate(start)):
            continue
        for w in np.ndindex(*window_shape):
            target = list(start)
            for k, d in enumerate(window_operand):
                target[d] += w[k]
            u_index = [0] * u.ndim
            for k, d in enumerate(scatter_dims):
                u_index[d] = s[k]
            for k, d in enumerate(window_dims):
                u_index[d] = w[k]
            out[tuple(target)] += u[tuple(u_index)]
    return out


@pytest.mark.parametrize("seed", range(16))
def test_scatter_random_dimension_numbers(seed):
    rng = np.random.default_rng(100 + seed)
    shape = (3, 5, 4)
    batching, index_map, ivd, idx_shape, batch_shape, indices_batching = _random_dnums(rng, shape)
    inserted = tuple(sorted(d for d in index_map if rng.random() < 0.5))
    window_operand = [d for d in range(3) if d not in inserted and d not in batching]
    window_shape = [int(rng.integers(1, shape[d] // 2 + 2)) for d in window_operand]
    u_rank = len(batch_shape) + len(window_shape)
    window_dims = tuple(sorted(int(d) for d in rng.permutation(u_rank)[:len(window_shape)]))
    u_shape, it_b, it_w = [], iter(batch_shape), iter(window_shape)
    for d in range(u_rank):
        u_shape.append(next(it_w) if d in window_dims else next(it_b))
    x = rng.standard_normal(shape).astype(np.float32)
    idx = rng.integers(-1, 4, idx_shape).astype(np.int32)
    u = rng.standard_normal(u_shape).astype(np.float32)
    dnums = (f"update_window_dims={_ints(window_dims)}, inserted_window_dims={_ints(inserted)}, "
             f"scatter_dims_to_operand_dims={_ints(index_map)}, input_batching_dims={_ints(batching)}, "
             f"scatter_indices_batching_dims={_ints(indices_batching)}, index_vector_dim={ivd}")
    text = scatter_module(combiner("add"), "f32[3,5,4]", f"s32[{','.join(map(str, idx_shape))}]",
                          f"f32[{','.join(map(str, u_shape))}]", dnums)
    expected = reference_scatter_add(x, idx, u, window_dims, inserted, index_map, batching, indices_batching, ivd)
    assert_same(run(text, x, idx, u), expected, dnums)


def test_rank0_gather_result_stays_rank0():
    # regression: np.ascontiguousarray made the f32[] result an f32[1]
    import numpy as np
    import xlapy
    m = xlapy.hlo.parse("""HloModule m
ENTRY e {
  x = f32[6] parameter(0)
  i = s32[1] parameter(1)
  ROOT g = f32[] gather(x, i), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=0, slice_sizes={1}
}""")
    out = xlapy.compile(m)(np.arange(6, dtype=np.float32), np.array([4], np.int32))
    assert out.shape == () and out == 4
