"""Element type conversions on the interpreter: convert, bitcast-convert, reduce-precision, stochastic-convert."""
import ml_dtypes
import numpy as np
import pytest

import xlapy

nan, inf = float("nan"), float("inf")
bf16, f16, f32, f64 = ml_dtypes.bfloat16, np.float16, np.float32, np.float64
DT = {"pred": np.bool_, "s4": ml_dtypes.int4, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": f16, "bf16": bf16,
      "f32": f32, "f64": f64, "c64": np.complex64, "c128": np.complex128, "f8e4m3fn": ml_dtypes.float8_e4m3fn}

CONVERT = [
    # from, to, inputs, expected
    ("f32", "s32", [nan, 1e10, -1e10, -2.7, 2.7, inf, -inf, -0.0], [0, 2**31 - 1, -2**31, -2, 2, 2**31 - 1, -2**31, 0]),
    ("f32", "u8", [-3.0, 300, inf, 255.9, nan], [0, 255, 255, 255, 0]),
    ("f64", "s64", [9.3e18, -9.3e18, 2.0**63, -2.0**63], [2**63 - 1, -2**63, 2**63 - 1, -2**63]),
    ("f64", "u64", [2.0**64, 2.0**63, -1], [2**64 - 1, 2**63, 0]),
    ("bf16", "s8", [200, -200, 3.5], [127, -128, 3]),
    ("f32", "s4", [100, -100, 5.9], [7, -8, 5]),
    ("f32", "pred", [0.0, nan, -0.0, 2], [False, True, False, True]),
    ("s32", "pred", [0, -5], [False, True]),
    ("pred", "f32", [True, False], [1, 0]),
    ("s32", "f32", [16777217, -16777219], [16777216, -16777220]),
    ("s64", "bf16", [257, 2**62], [256, 2.0**62]),
    ("f32", "bf16", [1 + 2**-8, 1 + 3 * 2**-8, 3.4e38, nan], [1, 1 + 2**-6, inf, nan]),
    ("f64", "f16", [65520.0, 1e-8], [inf, 0]),
    ("f32", "f8e4m3fn", [1.0625, 448], [1.0, 448]),
    ("u32", "s32", [2**32 - 1], [-1]),
    ("s32", "u8", [257, -1], [1, 255]),
    ("s8", "u64", [-1], [2**64 - 1]),
    ("f32", "c64", [1.5], [1.5 + 0j]),
    ("c64", "c128", [1 + 2j], [1 + 2j]),
]


@pytest.mark.parametrize("src, dst, x, want", CONVERT, ids=[f"{r[0]}-{r[1]}" for r in CONVERT])
def test_convert(hlo, src, dst, x, want):
    got = hlo.run_op("convert", [np.array(x, DT[src])], dst)
    hlo.assert_exact(got, np.array(want, DT[dst]))


@pytest.mark.parametrize("t", sorted(set(DT) - {"s4"}))
def test_convert_round_trips_small_values_for_every_type(hlo, t):
    x = np.array([0, 1, 2], f32) if t != "pred" else np.array([0, 1, 1], f32)
    there = hlo.run_op("convert", [x], t)
    assert there.dtype == DT[t]
    hlo.assert_exact(hlo.run_op("convert", [there], "f32"), x)


@pytest.mark.parametrize("x, out, dims, want", [
    (np.array([1.0, 2.0], f32), "u8", (2, 4), np.array([[0, 0, 128, 63], [0, 0, 0, 64]], np.uint8)),
    (np.array([[0, 0, 128, 63]], np.uint8), "f32", (1,), np.array([1.0], f32)),
    (np.array([-1.0, 0.5], f32), "s32", (2,), np.array([-1082130432, 1056964608], np.int32)),
    (np.array([1.0], bf16), "u16", (1,), np.array([0x3F80], np.uint16)),
    (np.array(1.0, f64), "u32", (2,), np.array([0, 0x3FF00000], np.uint32)),
    (np.array([0, 0x3FF00000], np.uint32), "f64", (), np.array(1.0, f64)),
])
def test_bitcast_convert(hlo, x, out, dims, want):
    hlo.assert_exact(hlo.run_op("bitcast-convert", [x], out, dims=dims), want)


def test_reduce_precision_to_f16_and_bf16_matches_the_real_types(hlo):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(500) * 100).astype(f32)
    got = hlo.run_op("reduce-precision", [x], attrs="exponent_bits=5, mantissa_bits=10")
    hlo.assert_exact(got, x.astype(f16).astype(f32))
    x = np.concatenate([x, np.array([3.4e38, -1e-42, nan, -inf], f32)])
    got = hlo.run_op("reduce-precision", [x], attrs="exponent_bits=8, mantissa_bits=7")
    hlo.assert_exact(got, x.astype(bf16).astype(f32))


def test_reduce_precision_overflow_underflow_nan(hlo):
    x = np.array([1e20, -1e20, 1e-20, -1e-20, nan, 1.0 + 2**-11, 1.0 + 3 * 2**-11], f32)
    got = hlo.run_op("reduce-precision", [x], attrs="exponent_bits=5, mantissa_bits=10")
    hlo.assert_exact(got, np.array([inf, -inf, 0, -0.0, nan, 1.0, 1.0 + 2**-9], f32))
    got = hlo.run_op("reduce-precision", [np.array([nan, 1.5], f64)], attrs="exponent_bits=11, mantissa_bits=0")
    hlo.assert_exact(got, np.array([inf, 2.0], f64))   # no mantissa: NaN becomes inf (as XLA)
    got = hlo.run_op("reduce-precision", [np.array([1 + 2**-4 + 2**-5], bf16)], attrs="exponent_bits=8, mantissa_bits=3")
    hlo.assert_exact(got, np.array([1.125], bf16))


def test_stochastic_convert(hlo):
    x = np.array([1.5, -1.5, 1.5, nan, 1e20, -inf, 2.0], f32)
    r = np.array([0, 0, 2**31 + 1, 0, 0, 0, 5], np.uint32)
    got = hlo.run_op("stochastic-convert", [x, r], "s32")
    hlo.assert_exact(got, np.array([2, -2, 1, 0, 2**31 - 1, -2**31, 2], np.int32))


def test_bad_arguments_raise(hlo):
    text = hlo.one_op_module("negate", [np.zeros(3, f32)], "f32[3]")
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="interpreter")
    with pytest.raises(xlapy.XlapyError, match="takes 1 arguments"):
        exe()
    with pytest.raises(xlapy.XlapyError, match="shape"):
        exe(np.zeros(4, f32))
    with pytest.raises(xlapy.XlapyError, match="dtype"):
        exe(np.zeros(3, f64))
