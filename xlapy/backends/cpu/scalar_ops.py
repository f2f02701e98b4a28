"""Scalar code for every elementwise opcode, one rule per (opcode, element-type family), as the interpreter's
elementwise.py / convert.py define them: integer x/0 and INT_MIN/-1, shifts past the width, NaN-propagating
maximum/minimum, integer power, saturating float->int conversion, total-order compare.

A rule is `fn(b, pt, *xs) -> ir.Value`: `b` the IRBuilder, `pt` the operand's PrimitiveType, `xs` values in
the register types of types.py. Narrow float results are rounded by the caller (elemental.py). No fast-math
flags: results are IEEE-exact except for the transcendental functions, which call LLVM intrinsics / libm.
"""
from __future__ import annotations

import math
from typing import Callable

from llvmlite import ir

from ...hlo.shape import PrimitiveType
from . import scalar_complex, scalar_complex_math
from .irhelpers import F32, F64, I1, intrinsic, is_x86
from .types import call_libm, call_math, float_bits_type, round_value, value_type


def _c(ty: ir.Type, v) -> ir.Constant:
    return ir.Constant(ty, v)


def _signed(pt: PrimitiveType) -> bool:
    return pt.kind == "int"


# -- integers ----------------------------------------------------------------------------------------
def _int_divide(b, pt, x, y):
    ty = x.type
    zero = b.icmp_unsigned("==", y, _c(ty, 0))
    if _signed(pt):
        overflow = b.and_(b.icmp_signed("==", x, _c(ty, -(1 << (pt.bits - 1)))), b.icmp_signed("==", y, _c(ty, -1)))
        safe = b.select(b.or_(zero, overflow), _c(ty, 1), y)
        q = b.sdiv(x, safe)
        return b.select(zero, _c(ty, -1), b.select(overflow, x, q))
    q = b.udiv(x, b.select(zero, _c(ty, 1), y))
    return b.select(zero, _c(ty, (1 << pt.bits) - 1), q)


def _int_remainder(b, pt, x, y):
    ty = x.type
    zero = b.icmp_unsigned("==", y, _c(ty, 0))
    if _signed(pt):
        minus_one = b.icmp_signed("==", y, _c(ty, -1))
        safe = b.select(b.or_(zero, minus_one), _c(ty, 1), y)   # x % -1 == 0 == x % 1, INT_MIN % -1 included
        return b.select(zero, x, b.srem(x, safe))
    return b.select(zero, x, b.urem(x, b.select(zero, _c(ty, 1), y)))


def _int_power(b, pt, x, y):
    """Square-and-multiply over all pt.bits exponent bits, branch-free (wraps like the interpreter)."""
    ty = x.type
    acc, base, e = _c(ty, 1), x, y
    for _ in range(pt.bits):
        odd = b.trunc(e, I1)
        acc = b.select(odd, b.mul(acc, base), acc)
        base = b.mul(base, base)
        e = b.lshr(e, _c(ty, 1))
    if _signed(pt):   # x^-n is 1 for x == 1, else 0 (the interpreter's integer pow)
        one = b.zext(b.icmp_signed("==", x, _c(ty, 1)), ty)
        acc = b.select(b.icmp_signed("<", y, _c(ty, 0)), one, acc)
    return acc


def _shift(kind: str):
    def rule(b, pt, x, y):
        ty = x.type
        oob = b.icmp_unsigned(">=", y, _c(ty, pt.bits))
        amount = b.select(oob, _c(ty, 0), y)
        if kind == "shl":
            return b.select(oob, _c(ty, 0), b.shl(x, amount))
        if kind == "lshr":
            return b.select(oob, _c(ty, 0), b.lshr(x, amount))
        return b.select(oob, b.ashr(x, _c(ty, pt.bits - 1)), b.ashr(x, amount))
    return rule


def _int_max(b, pt, x, y):
    gt = b.icmp_signed(">", x, y) if _signed(pt) else b.icmp_unsigned(">", x, y)
    return b.select(gt, x, y)


def _int_min(b, pt, x, y):
    lt = b.icmp_signed("<", x, y) if _signed(pt) else b.icmp_unsigned("<", x, y)
    return b.select(lt, x, y)


def _int_abs(b, pt, x):
    return b.select(b.icmp_signed("<", x, _c(x.type, 0)), b.neg(x), x) if _signed(pt) else x


def _int_sign(b, pt, x):
    ty = x.type
    if not _signed(pt):
        return b.zext(b.icmp_unsigned("!=", x, _c(ty, 0)), ty)
    return b.sub(b.zext(b.icmp_signed(">", x, _c(ty, 0)), ty), b.zext(b.icmp_signed("<", x, _c(ty, 0)), ty))


def _clz(b, pt, x):
    return intrinsic(b, f"llvm.ctlz.i{pt.bits}", x.type, [x, _c(I1, 0)])


def _popcnt(b, pt, x):
    return intrinsic(b, f"llvm.ctpop.i{pt.bits}", x.type, [x])


# -- floats ------------------------------------------------------------------------------------------
def _is_nan(b, x):
    return b.fcmp_unordered("uno", x, x)


_FLOAT_WIDTH = {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}


def float_constant(v) -> float | None:
    """The Python value of a scalar float constant (an element generator's literal), else None."""
    if isinstance(v, ir.Constant) and isinstance(v.type, (ir.HalfType, ir.FloatType, ir.DoubleType)) \
            and isinstance(v.constant, float):
        return v.constant
    return None


def not_nan_constant(v) -> bool:
    c = float_constant(v)
    return c is not None and not math.isnan(c)


# With one side a constant c that is not NaN, maximum/minimum is one compare and one select keeping x when
# the unordered compare holds (x NaN, or x beyond c); on equal values c is the answer, except for the zero whose
# join with either zero is the other operand (max with -0, min with +0), where x is kept on equality too.
_KEEP_X = {("maximum", False): ">", ("maximum", True): ">=", ("minimum", False): "<", ("minimum", True): "<="}


def ieee_max_min(b, op: str, x, y):
    """IEEE 754-2019 maximum / minimum of floats (scalars or vectors), as XLA:CPU emits them (llvm.maximum /
    llvm.minimum): a NaN on either side propagates (x's first), and -0 < +0. Equal values are joined bit by bit,
    which changes nothing unless they are zeros of both signs: AND of the bits gives +0 for max, OR -0 for min.
    Against a constant that is not NaN (ReLU's 0, ReLU6's 6) the same bits come from `_KEEP_X`'s two
    instructions (the operation is symmetric when only one side can be NaN)."""
    if not_nan_constant(x) and not not_nan_constant(y):
        x, y = y, x
    if not_nan_constant(y):
        c = y.constant
        joins_to_x = c == 0.0 and math.copysign(1.0, c) == (-1.0 if op == "maximum" else 1.0)
        return b.select(b.fcmp_unordered(_KEEP_X[op, joins_to_x], x, y), x, y)
    vector = isinstance(x.type, ir.VectorType)
    width = _FLOAT_WIDTH[type(x.type.element if vector else x.type)]
    ity = ir.VectorType(ir.IntType(width), x.type.count) if vector else ir.IntType(width)
    first, second = (x, y) if op == "maximum" else (y, x)
    pick = b.select(b.fcmp_ordered("<", first, second), y, x)
    join = b.and_ if op == "maximum" else b.or_
    tie = b.bitcast(join(b.bitcast(x, ity), b.bitcast(y, ity)), x.type)
    pick = b.select(b.fcmp_ordered("==", x, y), tie, pick)
    return b.select(_is_nan(b, x), x, b.select(_is_nan(b, y), y, pick))


def _float_max(b, pt, x, y):
    return ieee_max_min(b, "maximum", x, y)


def _float_min(b, pt, x, y):
    return ieee_max_min(b, "minimum", x, y)


def _float_power(b, pt, x, y):
    one = _c(x.type, 1.0)
    ity = float_bits_type(y.type)     # y == 0 tested on the bits: a denormal y is not zero here (no DAZ)
    y_zero = b.icmp_unsigned("==", b.and_(b.bitcast(y, ity), _c(ity, (1 << (ity.width - 1)) - 1)), _c(ity, 0))
    trivial = b.or_(b.fcmp_ordered("==", x, one), y_zero)
    # the C library call, not llvm.pow: the intrinsic is a pure node in code generation, free to move out from
    # between the MXCSR switches ieee_call places (pow of denormals came out flushed at O3)
    return b.select(trivial, one, ieee_call(b, lambda: call_libm(b, "pow", x, y)))


# XLA:CPU calls the C library's pow with the caller's floating-point environment: no denormal flushing.
# The functions that install FTZ/DAZ (the entry, pool workers: enter_ftz) record (saved_slot, ftz_slot), i32 allocas
# holding MXCSR values (the one found on entry, and it with FTZ/DAZ); ieee_call derives the MXCSR without FTZ/DAZ
# where it calls (only pow does: the other functions carry no code for it). A kernel (kernels.py) runs under its
# caller's FTZ/DAZ and has none: ieee_call saves and restores MXCSR around the call itself there.
MXCSR_SLOTS: dict[int, tuple] = {}


_MXCSR_FTZ_DAZ = 0x8040


def enter_ftz(b) -> ir.Value:
    """Install FTZ/DAZ in b's function (the entry, or a worker thread's task) and record its MXCSR_SLOTS;
    returns the slot holding the previous MXCSR, to restore on the way out."""
    from .irhelpers import I8P, I32, VOID, alloca_once
    saved = alloca_once(b, I32, "mxcsr.saved")
    intrinsic(b, "llvm.x86.sse.stmxcsr", VOID, [b.bitcast(saved, I8P)])
    flushed = alloca_once(b, I32, "mxcsr.ftz")
    b.store(b.or_(b.load(saved), ir.Constant(I32, _MXCSR_FTZ_DAZ)), flushed)
    intrinsic(b, "llvm.x86.sse.ldmxcsr", VOID, [b.bitcast(flushed, I8P)])
    MXCSR_SLOTS[id(b.function)] = (saved, flushed)
    return saved


def ieee_call(b, call):
    """call() with FTZ/DAZ off (x86), restored after."""
    if not is_x86(b.module):
        return call()
    from .irhelpers import I8P, I32, alloca_once
    slots = MXCSR_SLOTS.get(id(b.function))
    if slots is None:                   # a kernel: the MXCSR of the moment, without FTZ/DAZ
        ftz = alloca_once(b, I32, "mxcsr.now")
        intrinsic(b, "llvm.x86.sse.stmxcsr", ir.VoidType(), [b.bitcast(ftz, I8P)])
        before = ftz
    else:
        before, ftz = slots
    ieee = alloca_once(b, I32, "mxcsr.ieee")
    b.store(b.and_(b.load(before), ir.Constant(I32, ~_MXCSR_FTZ_DAZ & 0xFFFFFFFF)), ieee)
    intrinsic(b, "llvm.x86.sse.ldmxcsr", ir.VoidType(), [b.bitcast(ieee, ir.IntType(8).as_pointer())])
    value = call()
    intrinsic(b, "llvm.x86.sse.ldmxcsr", ir.VoidType(), [b.bitcast(ftz, ir.IntType(8).as_pointer())])
    return value


def _float_sign(b, pt, x):
    ty = x.type
    nonzero = b.uitofp(b.fcmp_unordered("!=", x, _c(ty, 0.0)), ty)
    return b.select(_is_nan(b, x), x, call_math(b, "copysign", nonzero, x))


def _logistic(b, pt, x):
    ty = x.type
    e = call_math(b, "exp", b.fneg(call_math(b, "fabs", x)))
    one_plus = b.fadd(_c(ty, 1.0), e)
    return b.select(b.fcmp_ordered(">=", x, _c(ty, 0.0)), b.fdiv(_c(ty, 1.0), one_plus), b.fdiv(e, one_plus))


def _is_finite(b, pt, x):
    return b.fcmp_ordered("<", call_math(b, "fabs", x), _c(x.type, float("inf")))


def _math(name):
    return lambda b, pt, *xs: call_math(b, name, *xs)


def _libm(name):
    return lambda b, pt, *xs: call_libm(b, name, *xs)


def _instruction(method: str) -> Callable:
    """The rule that is one IRBuilder instruction, e.g. `b.fadd(x, y)`."""
    return lambda b, pt, *xs: getattr(b, method)(*xs)


# Float opcodes that are one math function: an LLVM intrinsic (call_math) or a C library call (call_libm).
_FLOAT_INTRINSIC = {"ceil": "ceil", "floor": "floor", "round-nearest-afz": "round", "round-nearest-even": "roundeven",
                    "exponential": "exp", "log": "log", "sqrt": "sqrt", "sine": "sin", "cosine": "cos"}
_FLOAT_LIBM = {"tan": "tan", "tanh": "tanh", "log-plus-one": "log1p", "exponential-minus-one": "expm1",
               "cbrt": "cbrt", "erf": "erf"}


def _with_complex(rules: dict[str, dict[str, Callable]], complex_rules: dict[str, Callable]):
    """`rules` with scalar_complex's rules added under the "complex" family."""
    for opcode, rule in complex_rules.items():
        rules[opcode]["complex"] = rule
    return rules


# opcode -> {family: rule}; families are pred, int, uint, float, complex (scalar_complex.py).
UNARY: dict[str, dict[str, Callable]] = _with_complex({
    "abs": {"int": _int_abs, "uint": _int_abs, "float": _math("fabs")},
    "negate": {"int": _instruction("neg"), "uint": _instruction("neg"), "float": _instruction("fneg")},
    "sign": {"int": _int_sign, "uint": _int_sign, "float": _float_sign},
    "not": {"pred": _instruction("not_"), "int": _instruction("not_"), "uint": _instruction("not_")},
    "popcnt": {"int": _popcnt, "uint": _popcnt},
    "count-leading-zeros": {"int": _clz, "uint": _clz},
    **{opcode: {"float": _math(name)} for opcode, name in _FLOAT_INTRINSIC.items()},
    **{opcode: {"float": _libm(name)} for opcode, name in _FLOAT_LIBM.items()},
    "rsqrt": {"float": lambda b, pt, x: b.fdiv(_c(x.type, 1.0), call_math(b, "sqrt", x))},
    "logistic": {"float": _logistic},
    "is-finite": {"float": _is_finite},
    "real": {"float": lambda b, pt, x: x},
    "imag": {"float": lambda b, pt, x: _c(x.type, 0.0)},
}, {**scalar_complex.UNARY, **scalar_complex_math.UNARY})

BINARY: dict[str, dict[str, Callable]] = _with_complex({
    "add": {"int": _instruction("add"), "uint": _instruction("add"), "float": _instruction("fadd")},
    "subtract": {"int": _instruction("sub"), "uint": _instruction("sub"), "float": _instruction("fsub")},
    "multiply": {"int": _instruction("mul"), "uint": _instruction("mul"), "float": _instruction("fmul")},
    "divide": {"int": _int_divide, "uint": _int_divide, "float": _instruction("fdiv")},
    "remainder": {"int": _int_remainder, "uint": _int_remainder, "float": _instruction("frem")},
    "power": {"int": _int_power, "uint": _int_power, "float": _float_power,
              "pred": lambda b, pt, x, y: b.or_(x, b.not_(y))},
    "maximum": {"pred": _instruction("or_"), "int": _int_max, "uint": _int_max, "float": _float_max},
    "minimum": {"pred": _instruction("and_"), "int": _int_min, "uint": _int_min, "float": _float_min},
    "and": {"pred": _instruction("and_"), "int": _instruction("and_"), "uint": _instruction("and_")},
    "or": {"pred": _instruction("or_"), "int": _instruction("or_"), "uint": _instruction("or_")},
    "xor": {"pred": _instruction("xor"), "int": _instruction("xor"), "uint": _instruction("xor")},
    "atan2": {"float": _libm("atan2")},
    "shift-left": {"int": _shift("shl"), "uint": _shift("shl")},
    "shift-right-logical": {"int": _shift("lshr"), "uint": _shift("lshr")},
    "shift-right-arithmetic": {"int": _shift("ashr"), "uint": _shift("ashr")},
    "complex": {"float": scalar_complex._complex},
}, {**scalar_complex.BINARY, **scalar_complex_math.BINARY})


# -- compare -----------------------------------------------------------------------------------------
_ORDERED = {"EQ": "==", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}
_SIGNS = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}


def _total_order_key(b, x):
    """Float -> signed int with -NaN < -Inf < ... < -0 < +0 < ... < +Inf < NaN (XLA's ToSignMagnitude)."""
    ity = float_bits_type(x.type)
    s = b.bitcast(x, ity)
    mag = _c(ity, (1 << (ity.width - 1)) - 1)
    return b.select(b.icmp_signed("<", s, _c(ity, 0)), b.xor(s, mag), s)


def compare(b, pt: PrimitiveType, direction: str, kind: str | None, x, y) -> ir.Value:
    if pt.kind == "complex":
        return scalar_complex.compare(b, direction, x, y)
    if pt.kind == "float":
        if kind == "TOTALORDER":
            return b.icmp_signed(_SIGNS[direction], _total_order_key(b, x), _total_order_key(b, y))
        if direction == "NE":
            return b.fcmp_unordered("!=", x, y)
        return b.fcmp_ordered(_ORDERED[direction], x, y)
    signed = pt.kind == "int"
    if kind in ("SIGNED", "UNSIGNED"):
        signed = kind == "SIGNED"
    if pt.kind == "pred":
        signed = False
    return (b.icmp_signed if signed else b.icmp_unsigned)(_SIGNS[direction], x, y)


# -- convert -----------------------------------------------------------------------------------------
_F32_TINY = 1.1754943508222875e-38
_F64_TINY = 2.2250738585072014e-308


def flush_denormal(b, pt: PrimitiveType, x):
    """x with f32/f64-denormal values replaced by zeros of the same sign (XLA:CPU's DAZ on conversions)."""
    tiny = _F64_TINY if pt.bits == 64 else _F32_TINY
    c = float_constant(x)
    if c is not None:                                  # a literal is flushed here, not by two instructions
        return _c(x.type, math.copysign(0.0, c)) if abs(c) < tiny else x
    small = b.fcmp_ordered("<", call_math(b, "fabs", x), _c(x.type, tiny))
    return b.select(small, call_math(b, "copysign", _c(x.type, 0.0), x), x)


def convert(b, src: PrimitiveType, dst: PrimitiveType, x, flush: bool = True) -> ir.Value:
    if src.name == dst.name:
        return x
    if src.kind == "complex" or dst.kind == "complex":
        return _convert_complex(b, src, dst, x, flush)
    if src.kind == "float" and flush:
        x = flush_denormal(b, src, x)
    dty = value_type(dst)
    if dst.kind == "pred":
        if src.kind == "float":
            return b.fcmp_unordered("!=", x, _c(x.type, 0.0))
        return b.icmp_unsigned("!=", x, _c(x.type, 0))
    if src.kind == "float" and dst.kind in ("int", "uint"):
        sat = "fptosi" if dst.kind == "int" else "fptoui"
        fsuffix = "f64" if isinstance(x.type, ir.DoubleType) else "f32"
        return intrinsic(b, f"llvm.{sat}.sat.i{dst.bits}.{fsuffix}", dty, [x])
    if src.kind == "float" and dst.kind == "float":
        if isinstance(x.type, ir.DoubleType) and not isinstance(dty, ir.DoubleType):
            x = b.fptrunc(x, F32)     # f64 -> 16-bit types go through f32, as XLA does
        elif isinstance(dty, ir.DoubleType) and not isinstance(x.type, ir.DoubleType):
            x = b.fpext(x, F64)
        return round_value(b, dst, x)
    if dst.kind == "float":
        f = b.sitofp(x, dty) if src.kind == "int" else b.uitofp(x, dty)
        return round_value(b, dst, f)
    # integer/pred -> integer
    sw, dw = x.type.width, dty.width
    if sw == dw:
        return x
    if sw > dw:
        return b.trunc(x, dty)
    return b.sext(x, dty) if src.kind == "int" else b.zext(x, dty)


def _convert_complex(b, src: PrimitiveType, dst: PrimitiveType, x, flush: bool) -> ir.Value:
    """complex -> complex part by part; complex -> pred is x != 0; complex -> real keeps the real part;
    real -> complex has a zero imaginary part."""
    if src.kind == "complex":
        re, im = scalar_complex.parts(b, x)
        sp = scalar_complex.part_type(src)
        if dst.kind == "complex":
            dp = scalar_complex.part_type(dst)
            return scalar_complex.make(b, convert(b, sp, dp, re, flush), convert(b, sp, dp, im, flush))
        if dst.kind == "pred":
            zero = _c(re.type, 0.0)
            return b.or_(b.fcmp_unordered("!=", re, zero), b.fcmp_unordered("!=", im, zero))
        return convert(b, sp, dst, re, flush)
    dp = scalar_complex.part_type(dst)
    re = convert(b, src, dp, x, flush)
    return scalar_complex.make(b, re, _c(re.type, 0.0))
