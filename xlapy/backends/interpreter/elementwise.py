"""Elementwise ops: one table row per opcode, one numpy function per element-type family.

Families: pred, int (signed), uint, float, complex. Every rule runs on the compute form of its operands
(element_types.py: floats in f64 rounded through f32, c64 in c128, sub-byte ints in 8 bits) and its result is
cast to the instruction's element type. A rule is `fn(pt, *xs)`; `pt` is the operand's PrimitiveType (its
bit width matters for shifts, clz, ...). Corner cases follow XLA's HloEvaluator (integer x/0, INT_MIN/-1,
shifts past the width, NaN-propagating max/min, integer power with negative exponents) and XLA:CPU's
denormal flushing (element_types.FLUSH_DENORMALS). Conversions live in convert.py.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ...errors import ExecutionError
from ...hlo.shape import PrimitiveType
from .element_types import (NO_FLUSH, compute_form, flush_denormals, int_limits, ptype_of, signed_value, to_type,
                            unsigned_bits)


def _np(fn: Callable) -> Callable:
    """A rule that does not need the element type."""
    return lambda pt, *xs: fn(*xs)


# -- integer rules -----------------------------------------------------------------------------------
def _int_divide(pt, x, y):
    x, y = np.broadcast_arrays(x, y)
    lo, hi = int_limits(pt)
    zero = y == 0
    overflow = (x == lo) & (y == -1) if pt.kind == "int" else np.zeros(x.shape, bool)
    safe_y = np.where(zero | overflow, 1, y).astype(y.dtype)
    q = x // safe_y
    if pt.kind == "int":   # numpy floors; HLO truncates toward zero
        q = q + ((x % safe_y != 0) & ((x < 0) != (safe_y < 0))).astype(q.dtype)
    return np.where(zero, -1 if pt.kind == "int" else hi, np.where(overflow, x, q))


def _int_remainder(pt, x, y):
    x, y = np.broadcast_arrays(x, y)
    q = _int_divide(pt, x, np.where(y == 0, 1, y).astype(y.dtype))
    r = x - q * np.where(y == 0, 1, y).astype(y.dtype)
    lo, _ = int_limits(pt)
    if pt.kind == "int":
        r = np.where((x == lo) & (y == -1), 0, r)
    return np.where(y == 0, x, r)


def _int_power(pt, x, y):
    x, y = np.broadcast_arrays(x, y)
    base = unsigned_bits(pt, x)
    exp = unsigned_bits(pt, y)
    acc = np.ones(x.shape, np.uint64)
    with np.errstate(over="ignore"):
        while np.any(exp):
            acc = np.where(exp & np.uint64(1), acc * base, acc)
            base = base * base
            exp = exp >> np.uint64(1)
    out = signed_value(pt, acc) if pt.kind == "int" else acc
    if pt.kind == "int":   # x^-n: 1 for x == 1, else 0 (XLA's integer pow)
        out = np.where(y < 0, (x == 1).astype(np.int64), out)
    return out


def _shift_out_of_bounds(pt, y):
    return unsigned_bits(pt, y) >= np.uint64(pt.bits)


def _shift_amount(pt, y):
    return np.where(_shift_out_of_bounds(pt, y), np.uint64(0), unsigned_bits(pt, y))


def _shift_left(pt, x, y):
    return np.where(_shift_out_of_bounds(pt, y), np.uint64(0), unsigned_bits(pt, x) << _shift_amount(pt, y))


def _shift_right_logical(pt, x, y):
    return np.where(_shift_out_of_bounds(pt, y), np.uint64(0), unsigned_bits(pt, x) >> _shift_amount(pt, y))


def _shift_right_arithmetic(pt, x, y):
    s = signed_value(pt, x)
    filled = np.where(s < 0, np.int64(-1), np.int64(0))
    return np.where(_shift_out_of_bounds(pt, y), filled, s >> _shift_amount(pt, y).astype(np.int64))


def _bit_length(u: np.ndarray) -> np.ndarray:
    u = np.asarray(u, np.uint64)
    n = np.zeros(u.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = u >= np.uint64(1 << s)
        n += np.where(big, s, 0)
        u = np.where(big, u >> np.uint64(s), u)
    return n + (u > 0)


def _clz(pt, x):
    return pt.bits - _bit_length(unsigned_bits(pt, x))


def _popcnt(pt, x):
    return np.bitwise_count(unsigned_bits(pt, x)).astype(np.int64)


def _int_sign(pt, x):
    return (x > 0).astype(np.int8) - (x < 0).astype(np.int8)


def _int_max(pt, x, y):
    return np.maximum(x, y)


def _int_min(pt, x, y):
    return np.minimum(x, y)


# -- float rules -------------------------------------------------------------------------------------
def _float_sign(x):
    return np.where(np.isnan(x), x, np.copysign((x != 0).astype(x.dtype), x))


def _round_afz(x):
    t = np.trunc(x)
    frac = x - t
    return np.copysign(np.where(np.abs(frac) >= 0.5, t + np.sign(x), t), x)


def _logistic(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


_ERF = np.frompyfunc(math.erf, 1, 1)


def _erf(x):
    return np.asarray(_ERF(x), dtype=np.float64).reshape(np.shape(x))


def _joined_bits(x, y, join):
    """x and y (floats of one dtype) combined bit by bit with `join` (np.bitwise_and / np.bitwise_or)."""
    x, y = np.asarray(x), np.asarray(y)
    ity = np.dtype(f"i{x.dtype.itemsize}")
    return join(x.view(ity), y.view(ity)).view(x.dtype)


def _float_max(x, y):    # IEEE 754-2019 maximum, as XLA:CPU (llvm.maximum): NaN propagates, -0 < +0
    tie = _joined_bits(x, y, np.bitwise_and)            # +0 unless both are -0; equal values otherwise
    return np.where(np.isnan(x), x, np.where(np.isnan(y), y, np.where(x == y, tie, np.where(x < y, y, x))))


def _float_min(x, y):
    tie = _joined_bits(x, y, np.bitwise_or)             # -0 unless both are +0
    return np.where(np.isnan(x), x, np.where(np.isnan(y), y, np.where(x == y, tie, np.where(y < x, y, x))))


def _float_power(x, y):
    return np.where((x == 1) | (y == 0), 1.0, np.power(x, y))


# -- complex rules -----------------------------------------------------------------------------------
def _complex_sign(x):
    a = np.abs(x)
    return np.where(a == 0, 0, x / np.where(a == 0, 1, a))


def _complex_power(x, y):
    out = np.power(x, y)
    inf_base = np.isposinf(x.real) & (x.imag == 0) & (y.imag == 0)
    out = np.where(inf_base & (y.real > 0), x, np.where(inf_base & (y.real < 0), 0, out))
    return np.where((x == 1) | (y == 0), 1, out)


def _complex_atan2(y, x):
    i = 1j
    return -i * np.log((x + i * y) / np.sqrt(x * x + y * y))


def _make_complex(re, im):
    out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), np.complex128)
    out.real, out.imag = re, im
    return out


def _is_finite(x):
    return np.isfinite(x)


def _rsqrt(x):
    """1/sqrt(x); float32 correctly rounded (computed in float64, rounded once), as the CPU backend does."""
    if np.asarray(x).dtype == np.float32:
        with np.errstate(divide="ignore", invalid="ignore"):
            return (1 / np.sqrt(np.asarray(x, np.float64))).astype(np.float32)
    return 1 / np.sqrt(x)


# -- the tables --------------------------------------------------------------------------------------
# opcode -> {family: rule}. A family missing from a row means the op is not defined on it.
_FLOAT_AND_COMPLEX = {
    "exponential": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": _rsqrt,
    "tanh": np.tanh, "sine": np.sin, "cosine": np.cos, "tan": np.tan,
    "log-plus-one": np.log1p, "exponential-minus-one": np.expm1,
}

UNARY: dict[str, dict[str, Callable]] = {
    "abs": {"int": _np(np.abs), "uint": _np(lambda x: x), "float": _np(np.abs), "complex": _np(np.abs)},
    "negate": {"int": _np(np.negative), "uint": _np(np.negative), "float": _np(np.negative),
               "complex": _np(np.negative)},
    "sign": {"int": _int_sign, "uint": _int_sign, "float": _np(_float_sign), "complex": _np(_complex_sign)},
    "not": {"pred": _np(np.logical_not), "int": _np(np.invert), "uint": _np(np.invert)},
    "popcnt": {"int": _popcnt, "uint": _popcnt},
    "count-leading-zeros": {"int": _clz, "uint": _clz},
    "ceil": {"float": _np(np.ceil)},
    "floor": {"float": _np(np.floor)},
    "round-nearest-afz": {"float": _np(_round_afz)},
    "round-nearest-even": {"float": _np(np.rint)},
    "cbrt": {"float": _np(np.cbrt), "complex": _np(lambda x: np.power(x, 1 / 3))},
    "logistic": {"float": _np(_logistic), "complex": _np(lambda x: 1 / (1 + np.exp(-x)))},
    "erf": {"float": _np(_erf)},
    "is-finite": {"float": _np(_is_finite)},
    "real": {"float": _np(lambda x: x), "complex": _np(np.real)},
    "imag": {"float": _np(np.zeros_like), "complex": _np(np.imag)},
    **{op: {"float": _np(fn), "complex": _np(fn)} for op, fn in _FLOAT_AND_COMPLEX.items()},
}

_ARITH = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}
_BITWISE = {"and": (np.logical_and, np.bitwise_and), "or": (np.logical_or, np.bitwise_or),
            "xor": (np.logical_xor, np.bitwise_xor)}
_INTS = ("int", "uint")

BINARY: dict[str, dict[str, Callable]] = {
    **{op: {"int": _np(fn), "uint": _np(fn), "float": _np(fn), "complex": _np(fn)} for op, fn in _ARITH.items()},
    **{op: {"pred": _np(lg), "int": _np(bw), "uint": _np(bw)} for op, (lg, bw) in _BITWISE.items()},
    "divide": {"int": _int_divide, "uint": _int_divide, "float": _np(np.divide), "complex": _np(np.divide)},
    "remainder": {"int": _int_remainder, "uint": _int_remainder, "float": _np(np.fmod)},
    "power": {"int": _int_power, "uint": _int_power, "pred": _np(lambda x, y: x | ~y),
              "float": _np(_float_power), "complex": _np(_complex_power)},
    "maximum": {"pred": _np(np.logical_or), "int": _int_max, "uint": _int_max, "float": _np(_float_max)},
    "minimum": {"pred": _np(np.logical_and), "int": _int_min, "uint": _int_min, "float": _np(_float_min)},
    "atan2": {"float": _np(np.arctan2), "complex": _np(_complex_atan2)},
    "complex": {"float": _np(_make_complex)},
    "shift-left": {k: _shift_left for k in _INTS},
    "shift-right-logical": {k: _shift_right_logical for k in _INTS},
    "shift-right-arithmetic": {k: _shift_right_arithmetic for k in _INTS},
}


def _rule(table: dict, inst, pt: PrimitiveType) -> Callable:
    fn = table[inst.opcode].get(pt.kind)
    if fn is None:
        raise ExecutionError(f"{inst.opcode} is not defined for element type {pt.name} (instruction {inst.name})")
    return fn


def _unary(inst, args, ev):
    pt = ptype_of(args[0])
    flush = inst.opcode not in NO_FLUSH
    out = _rule(UNARY, inst, pt)(pt, compute_form(pt, args[0], flush))
    return to_type(_flush_result(inst, out) if flush else out, inst.shape.dtype)


def _binary(inst, args, ev):
    pt = ptype_of(args[0])
    flush = inst.opcode not in NO_FLUSH
    x, y = (compute_form(pt, a, flush) for a in args)
    out = _rule(BINARY, inst, pt)(pt, x, y)
    return to_type(_flush_result(inst, out) if flush else out, inst.shape.dtype)


def _flush_result(inst, out):
    rt = inst.shape.ptype
    return flush_denormals(rt, out) if rt.kind == "float" and out.dtype == np.float64 else out


# -- compare -----------------------------------------------------------------------------------------
_DIRECTIONS = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
               "GT": np.greater, "GE": np.greater_equal}


def _total_order_key(pt: PrimitiveType, x: np.ndarray) -> np.ndarray:
    """Float -> signed int with -NaN < -Inf < ... < -0 < +0 < ... < +Inf < NaN (XLA's ToSignMagnitude)."""
    bits = 64 if pt.bits == 64 else 32
    wide = np.asarray(x).astype(np.float64 if bits == 64 else np.float32)
    s = wide.view(np.int64 if bits == 64 else np.int32).astype(np.int64)
    mag_mask = np.int64((1 << (bits - 1)) - 1)
    return np.where(s < 0, s ^ mag_mask, s)


def _compare(inst, args, ev):
    x, y = args
    pt = ptype_of(x)
    direction = inst.attrs.get("direction")
    fn = _DIRECTIONS.get(direction)
    if fn is None:
        raise ExecutionError(f"compare {inst.name}: unknown direction {direction!r}")
    kind = inst.attrs.get("type")
    if pt.kind == "complex" and direction not in ("EQ", "NE"):
        raise ExecutionError(f"compare {inst.name}: direction {direction} is not defined for {pt.name}")
    if pt.kind == "float" and kind == "TOTALORDER":
        return np.asarray(fn(_total_order_key(pt, x), _total_order_key(pt, y)))
    if pt.kind in ("int", "uint") and kind in ("SIGNED", "UNSIGNED") and (kind == "SIGNED") != (pt.kind == "int"):
        conv = signed_value if kind == "SIGNED" else unsigned_bits
        return np.asarray(fn(conv(pt, x), conv(pt, y)))
    return np.asarray(fn(compute_form(pt, x), compute_form(pt, y)))


# -- select, clamp -----------------------------------------------------------------------------------
def _select(inst, args, ev):
    pred, on_true, on_false = args
    if isinstance(on_true, tuple):
        return on_true if bool(pred) else on_false
    return np.asarray(np.where(pred, on_true, on_false), dtype=inst.shape.dtype)


def _clamp(inst, args, ev):
    lo, x, hi = args
    pt = ptype_of(x)
    lo, x, hi = np.broadcast_arrays(*(compute_form(pt, a) for a in (lo, x, hi)))
    if pt.kind == "float":
        out = _float_min(hi, _float_max(x, lo))
        out = np.where(np.isnan(hi), hi, out)
        out = np.where(np.isnan(x), x, out)
        out = np.where(np.isnan(lo), lo, out)
    elif pt.kind == "complex":
        raise ExecutionError(f"clamp is not defined for element type {pt.name} (instruction {inst.name})")
    else:
        out = np.minimum(hi, np.maximum(x, lo))
    return to_type(out, inst.shape.dtype)


HANDLERS = {
    **{op: _unary for op in UNARY},
    **{op: _binary for op in BINARY},
    "compare": _compare,
    "select": _select,
    "clamp": _clamp,
}
