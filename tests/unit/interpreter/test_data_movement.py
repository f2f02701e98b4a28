"""Data-movement ops on the interpreter: each case is an HLO module, its inputs, and the numpy result."""
import ml_dtypes
import numpy as np
import pytest

import xlapy
from xlapy.testing import hlo_module

f32, s32 = np.float32, np.int32
A23 = np.arange(6, dtype=f32).reshape(2, 3)
A234 = np.arange(24, dtype=f32).reshape(2, 3, 4)


CASES = [
    # id, params (';'-separated shapes), body, args, expected
    ("constant", "", "  ROOT c = f32[2,2] constant({{1, 2}, {3, 4}})", [], np.array([[1, 2], [3, 4]], f32)),
    ("constant-scalar", "", "  ROOT c = s32[] constant(-7)", [], np.array(-7, s32)),
    ("iota-s32", "", "  ROOT i = s32[2,3] iota(), iota_dimension=1", [], np.array([[0, 1, 2], [0, 1, 2]], s32)),
    ("iota-u8-dim0", "", "  ROOT i = u8[3,2] iota(), iota_dimension=0", [],
     np.array([[0, 0], [1, 1], [2, 2]], np.uint8)),
    ("iota-f32", "", "  ROOT i = f32[4] iota(), iota_dimension=0", [], np.arange(4, dtype=f32)),
    ("iota-bf16-rounds", "", "  ROOT i = bf16[258] iota(), iota_dimension=0", [],
     np.arange(258).astype(ml_dtypes.bfloat16)),
    ("iota-s64", "", "  ROOT i = s64[3] iota(), iota_dimension=0", [], np.arange(3, dtype=np.int64)),
    ("broadcast-row", "f32[3]", "  ROOT b = f32[2,3] broadcast(p0), dimensions={1}", [np.arange(3, dtype=f32)],
     np.broadcast_to(np.arange(3, dtype=f32), (2, 3))),
    ("broadcast-scalar", "f32[]", "  ROOT b = f32[2,2] broadcast(p0), dimensions={}", [np.array(5, f32)],
     np.full((2, 2), 5, f32)),
    ("broadcast-permuted", "f32[2,3]", "  ROOT b = f32[3,4,2] broadcast(p0), dimensions={2,0}", [A23],
     np.broadcast_to(A23.T[:, None, :], (3, 4, 2))),
    ("reshape", "f32[2,3,4]", "  ROOT r = f32[4,6] reshape(p0)", [A234], A234.reshape(4, 6)),
    ("reshape-scalar", "f32[1,1]", "  ROOT r = f32[] reshape(p0)", [np.ones((1, 1), f32)], np.array(1, f32)),
    ("bitcast-row-major", "f32[2,3]", "  ROOT r = f32[3,2] bitcast(p0)", [A23], A23.reshape(3, 2)),
    ("bitcast-to-scalar", "u32[1]", "  ROOT r = u32[] bitcast(p0)", [np.array([7], np.uint32)],
     np.array(7, np.uint32)),
    ("transpose-scalar", "f32[]", "  ROOT t = f32[] transpose(p0), dimensions={}", [np.array(2, f32)], np.array(2, f32)),
    ("bitcast-layout-is-transpose", "f32[2,3]{0,1}", "  ROOT r = f32[3,2]{1,0} bitcast(p0)", [A23], A23.T),
    ("transpose", "f32[2,3,4]", "  ROOT t = f32[4,2,3] transpose(p0), dimensions={2,0,1}", [A234],
     A234.transpose(2, 0, 1)),
    ("slice-strided", "f32[2,3,4]", "  ROOT s = f32[1,2,2] slice(p0), slice={[1:2], [0:3:2], [1:4:2]}", [A234],
     A234[1:2, 0:3:2, 1:4:2]),
    ("concatenate", "f32[2,3];f32[2,1];f32[2,2]",
     "  ROOT c = f32[2,6] concatenate(p0, p1, p2), dimensions={1}",
     [A23, np.full((2, 1), 9, f32), np.full((2, 2), 7, f32)],
     np.concatenate([A23, np.full((2, 1), 9, f32), np.full((2, 2), 7, f32)], axis=1)),
    ("reverse", "f32[2,3]", "  ROOT r = f32[2,3] reverse(p0), dimensions={0,1}", [A23], A23[::-1, ::-1]),
    ("copy", "f32[2,3]", "  ROOT c = f32[2,3] copy(p0)", [A23], A23),
    ("get-tuple-element", "f32[2,3];s32[]",
     "  t = (f32[2,3], s32[]) tuple(p0, p1)\n  ROOT g = s32[] get-tuple-element(t), index=1",
     [A23, np.array(4, s32)], np.array(4, s32)),
]


@pytest.mark.parametrize("name, params, body, args, want", CASES, ids=[c[0] for c in CASES])
def test_data_movement(hlo, name, params, body, args, want):
    text = hlo_module(body, params=[p for p in params.split(";") if p])
    hlo.assert_exact(hlo.run_text(text, *args), want)


def _pad_reference(x, value, pads):
    """Output position o along an axis reads input (o - low) / (interior + 1) when that is a whole index."""
    out = x
    for axis, (lo, hi, interior) in enumerate(pads):
        n = out.shape[axis]
        size = lo + hi + n + max(n - 1, 0) * interior
        src, rem = np.divmod(np.arange(size) - lo, interior + 1)
        valid = (rem == 0) & (src >= 0) & (src < n)
        taken = np.take(out, np.clip(src, 0, n - 1), axis=axis)
        out = np.where(valid.reshape([-1 if a == axis else 1 for a in range(out.ndim)]), taken, value)
    return out.astype(x.dtype)


@pytest.mark.parametrize("padding, pads", [
    ("1_2x0_1", [(1, 2, 0), (0, 1, 0)]),
    ("0_0_1x2_1_2", [(0, 0, 1), (2, 1, 2)]),
    ("-1_2_1x1_-1", [(-1, 2, 1), (1, -1, 0)]),
    ("-1_-1x0_0_3", [(-1, -1, 0), (0, 0, 3)]),
])
def test_pad(hlo, padding, pads):
    want = _pad_reference(A23, f32(-1), pads)
    dims = ",".join(str(d) for d in want.shape)
    text = hlo_module(f"ROOT p = f32[{dims}] pad(p0, p1), padding={padding}", params=["f32[2,3]", "f32[]"])
    hlo.assert_exact(hlo.run_text(text, A23, np.array(-1, f32)), want)


DS = hlo_module("ROOT d = f32[2,3] dynamic-slice(p0, p1, p2), dynamic_slice_sizes={2,3}",
                params=["f32[4,5]", "s32[]", "s32[]"])
X45 = np.arange(20, dtype=f32).reshape(4, 5)


@pytest.mark.parametrize("i, j, oi, oj", [(1, 1, 1, 1), (3, 4, 2, 2), (-5, 1, 0, 1), (100, -100, 2, 0)])
def test_dynamic_slice_clamps_starts(hlo, i, j, oi, oj):
    got = hlo.run_text(DS, X45, np.array(i, s32), np.array(j, s32))
    hlo.assert_exact(got, X45[oi:oi + 2, oj:oj + 3])


def test_dynamic_slice_unsigned_starts(hlo):
    text = hlo_module("ROOT d = f32[2,3] dynamic-slice(p0, p1, p2), dynamic_slice_sizes={2,3}",
                      params=["f32[4,5]", "u32[]", "u32[]"])
    got = hlo.run_text(text, X45, np.array(2**32 - 1, np.uint32), np.array(1, np.uint32))
    hlo.assert_exact(got, X45[2:4, 1:4])


@pytest.mark.parametrize("i, j, oi, oj", [(1, 1, 1, 1), (3, 4, 2, 2), (-1, -1, 0, 0)])
def test_dynamic_update_slice_clamps_starts(hlo, i, j, oi, oj):
    text = hlo_module("ROOT d = f32[4,5] dynamic-update-slice(p0, p1, p2, p3)",
                      params=["f32[4,5]", "f32[2,3]", "s64[]", "s64[]"])
    update = -np.ones((2, 3), f32)
    want = X45.copy()
    want[oi:oi + 2, oj:oj + 3] = update
    got = hlo.run_text(text, X45, update, np.array(i, np.int64), np.array(j, np.int64))
    hlo.assert_exact(got, want)
    assert X45[0, 0] == 0   # the operand is not modified


def test_tuple_result_is_a_python_tuple(hlo):
    text = hlo_module("ROOT t = (f32[2,3], s32[]) tuple(p0, p1)", params=["f32[2,3]", "s32[]"])
    got = hlo.run_text(text, A23, np.array(3, s32))
    assert isinstance(got, tuple) and len(got) == 2
    hlo.assert_exact(got[0], A23)
    hlo.assert_exact(got[1], np.array(3, s32))


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_elided_constant_raises_saying_how_to_dump_it_again(backend):
    module = xlapy.hlo.parse(hlo_module("ROOT c = f32[3] constant({...})"))
    with pytest.raises(xlapy.ExecutionError, match=r"constant c \(f32\[3\](\{0\})?\) has its values elided .*"
                                                   r"--xla_dump_large_constants"):
        xlapy.compile(module, backend=backend)()
