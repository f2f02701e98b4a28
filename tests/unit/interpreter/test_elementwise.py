"""Elementwise ops on the interpreter: tables of (op, element type, inputs, expected) through one harness."""
import math

import ml_dtypes
import numpy as np
import pytest

import xlapy

nan, inf = float("nan"), float("inf")
bf16, f16, f32, f64 = ml_dtypes.bfloat16, np.float16, np.float32, np.float64
I32_MIN, I32_MAX = -2**31, 2**31 - 1
DT = {"pred": np.bool_, "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4, "s8": np.int8, "s16": np.int16,
      "s32": np.int32, "s64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
      "f16": f16, "bf16": bf16, "f32": f32, "f64": f64, "c64": np.complex64, "c128": np.complex128}
INT_TYPES = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"]
BITS = {"s4": 4, "u4": 4, "s8": 8, "s16": 16, "s32": 32, "s64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


def arr(t, values):
    return np.array(values, dtype=DT[t])


# op, operand type, inputs, expected, result type (default: operand type)
UNARY = [
    ("abs", "s8", [-128, -3, 0, 5], [-128, 3, 0, 5], None),
    ("abs", "f32", [-0.0, -2.5, -inf, nan], [0.0, 2.5, inf, nan], None),
    ("abs", "c64", [3 + 4j, -1j], [5, 1], "f32"),
    ("negate", "s32", [I32_MIN, 5, 0], [I32_MIN, -5, 0], None),
    ("negate", "u8", [1, 0], [255, 0], None),
    ("negate", "f32", [0.0, -1.5], [-0.0, 1.5], None),
    ("negate", "c128", [1 - 2j], [-1 + 2j], None),
    ("sign", "f32", [-0.0, 0.0, nan, -3, 2, -inf], [-0.0, 0.0, nan, -1, 1, -1], None),
    ("sign", "bf16", [-0.0, -5, 7], [-0.0, -1, 1], None),
    ("sign", "s32", [-7, 0, 9, I32_MIN], [-1, 0, 1, -1], None),
    ("sign", "c64", [3 + 4j, 0], [0.6 + 0.8j, 0], None),
    ("not", "pred", [True, False], [False, True], None),
    ("not", "s8", [0, -1, 5], [-1, 0, -6], None),
    ("not", "u16", [0, 65535], [65535, 0], None),
    ("not", "s4", [0, 7], [-1, -8], None),
    ("ceil", "f32", [-1.5, 1.2, -0.2, inf], [-1, 2, -0.0, inf], None),
    ("floor", "f64", [-1.5, 1.2, 0.2, nan], [-2, 1, 0, nan], None),
    ("round-nearest-afz", "f32", [0.5, -0.5, 1.5, 2.5, -2.5, -0.3, 0.49999997, inf, nan],
     [1, -1, 2, 3, -3, -0.0, 0, inf, nan], None),
    ("round-nearest-afz", "bf16", [2.5, -0.5], [3, -1], None),
    ("round-nearest-even", "f32", [0.5, -0.5, 1.5, 2.5, -2.5, -0.3, 3.7], [0, -0.0, 2, 2, -2, -0.0, 4], None),
    ("is-finite", "f32", [1, inf, -inf, nan, -0.0], [True, False, False, False, True], "pred"),
    ("is-finite", "f16", [65504, inf], [True, False], "pred"),
    ("real", "c64", [1 + 2j], [1], "f32"),
    ("imag", "c128", [1 + 2j], [2], "f64"),
    ("cbrt", "f32", [-27, 8, -0.0, -inf], [-3, 2, -0.0, -inf], None),
    ("sqrt", "f32", [4, -1, -0.0, inf], [2, nan, -0.0, inf], None),
    ("rsqrt", "f32", [4, 0, inf], [0.5, inf, 0], None),
    ("logistic", "f32", [-1000, 0, 1000, nan], [0, 0.5, 1, nan], None),
    ("exponential", "f32", [0, -inf, 1000], [1, 0, inf], None),
    ("exponential-minus-one", "f32", [0, -inf, -0.0], [0, -1, -0.0], None),
    ("log", "f32", [1, 0, -1, inf], [0, -inf, nan, inf], None),
    ("log-plus-one", "f32", [0, -1, -0.0], [0, -inf, -0.0], None),
    ("tanh", "f32", [0, inf, -inf, -0.0], [0, 1, -1, -0.0], None),
    ("sine", "f32", [0, -0.0, inf], [0, -0.0, nan], None),
    ("cosine", "f32", [0], [1], None),
    ("tan", "f32", [0], [0], None),
    ("erf", "f32", [0, inf, -inf, -0.0], [0, 1, -1, -0.0], None),
    ("sqrt", "c64", [-4, 3 + 4j], [2j, 2 + 1j], None),
    ("log", "c128", [1, -1], [0, math.pi * 1j], None),
    ("exponential", "c64", [0, 1j * 0], [1, 1], None),
]
for _t in INT_TYPES:
    _all = -1 if _t[0] == "s" else 2**BITS[_t] - 1
    UNARY.append(("popcnt", _t, [_all, 0, 5], [BITS[_t], 0, 2], None))
    UNARY.append(("count-leading-zeros", _t, [0, 1, _all], [BITS[_t], BITS[_t] - 1, 0], None))
UNARY.append(("popcnt", "s4", [-1, 3], [4, 2], None))
UNARY.append(("count-leading-zeros", "u4", [0, 1, 15], [4, 3, 0], None))


@pytest.mark.parametrize("op, t, x, want, out", UNARY, ids=[f"{r[0]}-{r[1]}" for r in UNARY])
def test_unary(hlo, op, t, x, want, out):
    got = hlo.run_op(op, [arr(t, x)], out)
    hlo.assert_exact(got, arr(out or t, want))


BINARY = [
    ("divide", "s32", [7, -7, 7, -7, 5, I32_MIN, 0, -5], [2, 2, -2, -2, 0, -1, 0, 0], [3, -3, -3, 3, -1, I32_MIN, -1, -1]),
    ("divide", "s8", [-128, 100], [-1, 7], [-128, 14]),
    ("divide", "u32", [7, 9], [0, 2], [2**32 - 1, 4]),
    ("divide", "u8", [7], [0], [255]),
    ("divide", "f32", [1, -1, 0, 1], [0, 0, 0, -inf], [inf, -inf, nan, -0.0]),
    ("remainder", "s32", [7, -7, 7, -7, 5, I32_MIN, -5], [2, 2, -2, -2, 0, -1, 0], [1, -1, 1, -1, 5, 0, -5]),
    ("remainder", "u8", [7, 200], [0, 7], [7, 4]),
    ("remainder", "f32", [5.5, -5.5, 1, inf, -0.0], [2, 2, 0, 1, 3], [1.5, -1.5, nan, nan, -0.0]),
    ("power", "s32", [2, -1, 1, 0, 3, 2, -2, -1, 5], [10, -1, -5, 0, -2, 31, 3, 3, 0], [1024, 0, 1, 1, 0, I32_MIN, -8, -1, 1]),
    ("power", "u8", [2, 3, 0], [8, 2, 0], [0, 9, 1]),
    ("power", "s64", [3, -3], [39, 39], [3**39, -3**39]),
    ("power", "f32", [nan, 1, 2, -8, 0], [0, nan, -1, 1 / 3, -1], [1, 1, 0.5, nan, inf]),
    ("power", "f32", [-1e-30], [1e-42], [nan]),   # pow sees the denormal exponent (XLA:CPU calls powf)
    ("shift-left", "s32", [1, 1, 1, -1, 1], [31, 32, -1, 4, 0], [I32_MIN, 0, 0, -16, 1]),
    ("shift-left", "u8", [1, 3, 1], [7, 8, 255], [128, 0, 0]),
    ("shift-left", "s4", [1, 1], [3, 4], [-8, 0]),
    ("shift-right-arithmetic", "s32", [-16, -16, 16, -1, 16], [2, 40, -1, 31, 4], [-4, -1, 0, -1, 1]),
    ("shift-right-arithmetic", "u8", [0x80, 0x80, 0x40], [1, 9, 9], [0xC0, 0xFF, 0]),
    ("shift-right-arithmetic", "s64", [-2**63], [63], [-1]),
    ("shift-right-logical", "s32", [-16, -16, 16], [2, 40, 28], [0x3FFFFFFC, 0, 0]),
    ("shift-right-logical", "u64", [2**64 - 1, 5], [63, 64], [1, 0]),
    ("shift-right-logical", "s4", [-1], [1], [7]),
    # IEEE 754-2019 maximum/minimum, as XLA:CPU (llvm.maximum): NaN propagates, -0 < +0 whichever side it is on
    ("maximum", "f32", [1, nan, 2, -0.0, -inf, 0.0, -0.0], [nan, 1, 3, 0.0, 1, -0.0, -0.0],
     [nan, nan, 3, 0.0, 1, 0.0, -0.0]),
    ("maximum", "bf16", [1, nan, 2], [nan, 1, 3], [nan, nan, 3]),
    ("maximum", "f16", [nan, -1], [1, -2], [nan, -1]),
    ("maximum", "f64", [1], [nan], [nan]),
    ("minimum", "f32", [1, nan, 2, 0.0, -0.0, 0.0], [nan, 1, 3, -0.0, 0.0, 0.0], [nan, nan, 2, -0.0, -0.0, 0.0]),
    ("minimum", "bf16", [nan, 5], [1, 4], [nan, 4]),
    ("maximum", "s8", [-128, 5], [127, -3], [127, 5]),
    ("minimum", "u64", [2**64 - 1], [3], [3]),
    ("maximum", "pred", [True, False, False], [False, True, False], [True, True, False]),
    ("and", "pred", [True, True, False], [True, False, False], [True, False, False]),
    ("or", "s32", [0x0F, -1], [0xF0, 0], [0xFF, -1]),
    ("xor", "u8", [0xFF, 3], [0x0F, 3], [0xF0, 0]),
    ("xor", "pred", [True, True], [True, False], [False, True]),
    ("add", "s8", [127, -128], [1, -1], [-128, 127]),
    ("add", "u64", [2**64 - 1], [1], [0]),
    ("add", "s4", [7, -8], [1, -1], [-8, 7]),
    ("add", "u4", [15], [2], [1]),
    ("multiply", "s64", [2**62, -3], [4, 5], [0, -15]),
    ("multiply", "s16", [300], [300], [24464]),
    ("subtract", "u32", [0], [1], [2**32 - 1]),
    ("add", "bf16", [1, 1], [2**-8, 3 * 2**-8], [1, 1 + 2**-6]),
    ("add", "f16", [2048, 2048], [1, 3], [2048, 2052]),
    ("subtract", "f32", [0.0, -0.0], [0.0, 0.0], [0.0, -0.0]),
    ("multiply", "f32", [3e38, -0.0], [10, 5], [inf, -0.0]),
    ("atan2", "f32", [0, -0.0, 1, nan], [-1, -1, 0, 1], [np.float32(math.pi), -np.float32(math.pi),
                                                        np.float32(math.pi / 2), nan]),
    ("add", "c64", [1 + 2j], [3 - 1j], [4 + 1j]),
    ("multiply", "c128", [1 + 2j], [3 - 1j], [5 + 5j]),
    ("divide", "c64", [4 + 2j], [2j], [1 - 2j]),
    ("power", "c128", [2j, 5 + 1j], [2, 0], [-4 + 0j, 1]),
]


@pytest.mark.parametrize("op, t, x, y, want", BINARY, ids=[f"{r[0]}-{r[1]}" for r in BINARY])
def test_binary(hlo, op, t, x, y, want):
    hlo.assert_exact(hlo.run_op(op, [arr(t, x), arr(t, y)]), arr(t, want))


def test_complex_builds_from_parts(hlo):
    got = hlo.run_op("complex", [arr("f32", [1, 2]), arr("f32", [3, inf])], "c64")
    assert got.dtype == np.complex64 and got[0] == 1 + 3j and got[1].real == 2 and got[1].imag == inf


@pytest.mark.parametrize("t", INT_TYPES)
@pytest.mark.parametrize("op, fn", [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply)])
def test_integer_arithmetic_wraps_like_twos_complement(hlo, t, op, fn):
    rng = np.random.default_rng(0)
    info = np.iinfo(DT[t])
    x, y = (rng.integers(info.min, info.max, 64, dtype=DT[t], endpoint=True) for _ in range(2))
    hlo.assert_exact(hlo.run_op(op, [x, y]), fn(x, y))


@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("op, fn", [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
                                    ("divide", np.divide)])
def test_float_arithmetic_rounds_once_from_f32(hlo, t, op, fn):
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal(64).astype(DT[t]) for _ in range(2))
    wide = f64 if t == "f64" else f32
    hlo.assert_exact(hlo.run_op(op, [x, y]), fn(x.astype(wide), y.astype(wide)).astype(DT[t]))


TRANSCENDENTAL = {"exponential": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "sine": np.sin,
                  "cosine": np.cos, "tan": np.tan, "log-plus-one": np.log1p, "exponential-minus-one": np.expm1,
                  "logistic": lambda x: 1 / (1 + np.exp(-x)), "rsqrt": lambda x: 1 / np.sqrt(x),
                  "cbrt": np.cbrt, "erf": np.vectorize(math.erf)}
RTOL = {"f16": 1e-3, "bf16": 8e-3, "f32": 1.2e-7, "f64": 1e-15}


@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("op", sorted(TRANSCENDENTAL))
def test_transcendental_accuracy(hlo, t, op):
    x = np.linspace(0.05, 3.0, 97).astype(DT[t])
    got = hlo.run_op(op, [x])
    assert got.dtype == DT[t]
    np.testing.assert_allclose(got.astype(f64), TRANSCENDENTAL[op](x.astype(f64)), rtol=RTOL[t], atol=0)


def test_erf_is_within_an_ulp_of_math_erf(hlo):
    x = np.linspace(-5, 5, 2001).astype(f32)
    want = np.array([math.erf(float(v)) for v in x], f32)
    got = hlo.run_op("erf", [x])
    assert np.max(np.abs(got.view(np.int32) - want.view(np.int32))) <= 1


CMP_IN = {"x": [-1.0, 0.0, -0.0, nan, 1.0, -inf], "y": [1.0, -0.0, 0.0, nan, nan, -nan]}
COMPARE = [
    ("f32", "EQ", "FLOAT", [False, True, True, False, False, False]),
    ("f32", "NE", "FLOAT", [True, False, False, True, True, True]),
    ("f32", "LT", "FLOAT", [True, False, False, False, False, False]),
    ("f32", "GE", "FLOAT", [False, True, True, False, False, False]),
    ("f32", "EQ", "TOTALORDER", [False, False, False, True, False, False]),
    ("f32", "LT", "TOTALORDER", [True, False, True, False, True, False]),
    ("f64", "GT", "TOTALORDER", [False, True, False, False, False, True]),
    ("bf16", "LE", "TOTALORDER", [True, False, True, True, True, False]),
]


@pytest.mark.parametrize("t, direction, kind, want", COMPARE)
def test_compare_floats(hlo, t, direction, kind, want):
    x, y = arr(t, CMP_IN["x"]), arr(t, CMP_IN["y"])
    got = hlo.run_op("compare", [x, y], "pred", f"direction={direction}, type={kind}")
    hlo.assert_exact(got, np.array(want))


@pytest.mark.parametrize("t, direction, kind, x, y, want", [
    ("s32", "LT", "SIGNED", [-1, 3, 5], [1, 3, 4], [True, False, False]),
    ("u32", "GT", "UNSIGNED", [2**32 - 1, 0], [1, 0], [True, False]),
    ("s8", "LE", "SIGNED", [-128, 127], [127, -128], [True, False]),
    ("pred", "EQ", "UNSIGNED", [True, False], [True, True], [True, False]),
    ("c64", "NE", "FLOAT", [1 + 1j, 2], [1 + 1j, 2j], [False, True]),
])
def test_compare_other_types(hlo, t, direction, kind, x, y, want):
    got = hlo.run_op("compare", [arr(t, x), arr(t, y)], "pred", f"direction={direction}, type={kind}")
    hlo.assert_exact(got, np.array(want))


def test_select_and_clamp(hlo):
    got = hlo.run_op("select", [np.array([True, False, True]), arr("s32", [1, 2, 3]), arr("s32", [4, 5, 6])], "s32")
    hlo.assert_exact(got, arr("s32", [1, 5, 3]))
    got = hlo.run_op("clamp", [arr("f32", [0, 0, 0, nan]), arr("f32", [-1, 0.5, 2, 1]), arr("f32", [1, 1, 1, 1])])
    hlo.assert_exact(got, arr("f32", [0, 0.5, 1, nan]))
    got = hlo.run_op("clamp", [arr("f32", 0), arr("f32", [-1, nan, 7]), arr("f32", 5)], dims=(3,))
    hlo.assert_exact(got, arr("f32", [0, nan, 5]))
    got = hlo.run_op("clamp", [arr("s32", [-5] * 3), arr("s32", [-9, 0, 9]), arr("s32", [5] * 3)])
    hlo.assert_exact(got, arr("s32", [-5, 0, 5]))


DENORMAL = 1e-42   # an f32 denormal: XLA:CPU runs with denormals-are-zero / flush-to-zero


@pytest.mark.parametrize("op, x, want, out", [
    ("ceil", [DENORMAL, -DENORMAL], [0, -0.0], None),
    ("log", [DENORMAL], [-inf], None),
    ("sign", [DENORMAL, -DENORMAL], [0, -0.0], None),
    ("rsqrt", [DENORMAL], [inf], None),
    ("abs", [-DENORMAL], [DENORMAL], None),          # a bit operation: no flushing
    ("convert", [DENORMAL, 1.0], [False, True], "pred"),
])
def test_denormal_operands_read_as_zero(hlo, op, x, want, out):
    hlo.assert_exact(hlo.run_op(op, [arr("f32", x)], out), arr(out or "f32", want))


def test_denormal_results_flush_to_zero(hlo):
    got = hlo.run_op("multiply", [arr("f32", [1e-20, -1e-20]), arr("f32", [1e-20, 1e-20])])
    hlo.assert_exact(got, arr("f32", [0, -0.0]))
    got = hlo.run_op("compare", [arr("f32", [DENORMAL]), arr("f32", [0])], "pred", "direction=EQ")
    hlo.assert_exact(got, np.array([True]))
