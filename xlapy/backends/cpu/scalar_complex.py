"""Scalar code for complex numbers: c64 / c128 values are LLVM structs {float, float} / {double, double}
(the memory layout of numpy's complex64 / complex128 too, so they load and store as they are).

Rules have scalar_ops' shape `fn(b, pt, *xs)`, pt the operand's type; scalar_ops registers them under the
"complex" family. divide is Smith's algorithm (numpy's, which the interpreter uses), abs is hypot, exp/log/
sqrt are the principal branches as in C99 / numpy.
"""
from __future__ import annotations

from llvmlite import ir

from ...hlo.shape import PrimitiveType, primitive_type
from .types import call_libm, call_math


def part_type(pt: PrimitiveType) -> PrimitiveType:
    """The float type of a complex type's parts."""
    return primitive_type("f64" if pt.bits == 128 else "f32")


def parts(b: ir.IRBuilder, z: ir.Value) -> tuple[ir.Value, ir.Value]:
    return b.extract_value(z, 0), b.extract_value(z, 1)


def make(b: ir.IRBuilder, re: ir.Value, im: ir.Value) -> ir.Value:
    z = ir.Constant(ir.LiteralStructType([re.type, re.type]), ir.Undefined)
    return b.insert_value(b.insert_value(z, re, 0), im, 1)


def _zero(ty: ir.Type) -> ir.Constant:
    return ir.Constant(ty, 0.0)


def _componentwise(method: str):
    def rule(b, pt, x, y):
        (a, c), (d, e) = parts(b, x), parts(b, y)
        return make(b, getattr(b, method)(a, d), getattr(b, method)(c, e))
    return rule


def _multiply(b, pt, x, y):
    (a, c), (d, e) = parts(b, x), parts(b, y)
    return make(b, b.fsub(b.fmul(a, d), b.fmul(c, e)), b.fadd(b.fmul(a, e), b.fmul(c, d)))


def _divide(b, pt, x, y):
    """(a + ci) / (d + ei) by Smith's algorithm: scale by the larger of |d|, |e| to avoid overflow."""
    (a, c), (d, e) = parts(b, x), parts(b, y)
    d_bigger = b.fcmp_ordered(">=", call_math(b, "fabs", d), call_math(b, "fabs", e))
    # |d| >= |e|: r = e/d, den = d + e r; re = (a + c r)/den, im = (c - a r)/den
    r1 = b.fdiv(e, d)
    den1 = b.fadd(d, b.fmul(e, r1))
    re1 = b.fdiv(b.fadd(a, b.fmul(c, r1)), den1)
    im1 = b.fdiv(b.fsub(c, b.fmul(a, r1)), den1)
    # otherwise: r = d/e, den = e + d r; re = (a r + c)/den, im = (c r - a)/den
    r2 = b.fdiv(d, e)
    den2 = b.fadd(e, b.fmul(d, r2))
    re2 = b.fdiv(b.fadd(b.fmul(a, r2), c), den2)
    im2 = b.fdiv(b.fsub(b.fmul(c, r2), a), den2)
    # division by exactly zero: numpy gives (a/0, c/0) componentwise
    zero = b.and_(b.fcmp_ordered("==", d, _zero(d.type)), b.fcmp_ordered("==", e, _zero(e.type)))
    re = b.select(zero, b.fdiv(a, call_math(b, "fabs", d)), b.select(d_bigger, re1, re2))
    im = b.select(zero, b.fdiv(c, call_math(b, "fabs", d)), b.select(d_bigger, im1, im2))
    return make(b, re, im)


def _negate(b, pt, x):
    a, c = parts(b, x)
    return make(b, b.fneg(a), b.fneg(c))


def _abs(b, pt, x):
    a, c = parts(b, x)
    return call_libm(b, "hypot", a, c)


def exp_times(b, a, f1, f2):
    """e^a f1 and e^a f2, finite where the products are representable (e^(a/2) twice once e^a may overflow)."""
    ty = a.type
    scaled = b.fcmp_ordered(">=", a, ir.Constant(ty, 700.0 if isinstance(ty, ir.DoubleType) else 85.0))
    h = call_math(b, "exp", b.fmul(a, ir.Constant(ty, 0.5)))
    m = call_math(b, "exp", a)
    return (b.select(scaled, b.fmul(b.fmul(h, f1), h), b.fmul(m, f1)),
            b.select(scaled, b.fmul(b.fmul(h, f2), h), b.fmul(m, f2)))


def _exp(b, pt, x):
    """C99's cexp: exp(x + 0i) = exp(x) + 0i (x = inf too); exp(-inf + i(inf|NaN)) = 0 + 0i;
    exp(inf + i(inf|NaN)) = inf + NaN i."""
    a, c = parts(b, x)
    ty = a.type
    m = call_math(b, "exp", a)
    re, im = exp_times(b, a, call_math(b, "cos", c), call_math(b, "sin", c))
    real_only = b.fcmp_ordered("==", c, _zero(ty))
    c_finite = b.fcmp_ordered("<", call_math(b, "fabs", c), ir.Constant(ty, float("inf")))
    a_inf = b.fcmp_ordered("==", call_math(b, "fabs", a), ir.Constant(ty, float("inf")))
    at_inf = b.and_(a_inf, b.not_(c_finite))
    inf_re = b.select(b.fcmp_ordered(">", a, _zero(ty)), a, _zero(ty))
    inf_im = b.select(b.fcmp_ordered(">", a, _zero(ty)), b.fsub(c, c), call_math(b, "copysign", _zero(ty), c))
    re = b.select(real_only, m, b.select(at_inf, inf_re, re))
    im = b.select(real_only, c, b.select(at_inf, inf_im, im))
    return make(b, re, im)


def _log(b, pt, x):
    a, c = parts(b, x)
    return make(b, call_math(b, "log", call_libm(b, "hypot", a, c)), call_libm(b, "atan2", c, a))


def _sqrt(b, pt, x):
    """Principal square root: t = sqrt((|z| + |a|) / 2); a >= 0: (t, c / 2t), else (|c| / 2t, copysign(t, c))."""
    a, c = parts(b, x)
    ty = a.type
    t = call_math(b, "sqrt", b.fmul(b.fadd(call_libm(b, "hypot", a, c), call_math(b, "fabs", a)),
                                     ir.Constant(ty, 0.5)))
    two_t = b.fmul(t, ir.Constant(ty, 2.0))
    nonneg = b.fcmp_ordered(">=", a, _zero(ty))
    re = b.select(nonneg, t, b.fdiv(call_math(b, "fabs", c), two_t))
    im = b.select(nonneg, b.fdiv(c, two_t), call_math(b, "copysign", t, c))
    is_zero = b.fcmp_ordered("==", t, _zero(ty))
    re, im = b.select(is_zero, _zero(ty), re), b.select(is_zero, c, im)
    # C99's csqrt: an infinite imaginary part gives inf + i c whatever a is; a = -inf gives
    # NaN-or-0 + i copysign(inf, c); a = +inf gives inf + i (copysign(0, c) or NaN)
    inf = ir.Constant(ty, float("inf"))
    c_inf = b.fcmp_ordered("==", call_math(b, "fabs", c), inf)
    c_nan = b.fcmp_unordered("uno", c, c)
    a_neg_inf, a_pos_inf = b.fcmp_ordered("==", a, b.fneg(inf)), b.fcmp_ordered("==", a, inf)
    re = b.select(c_inf, inf, b.select(a_neg_inf, b.select(c_nan, c, _zero(ty)), b.select(a_pos_inf, a, re)))
    pos_inf_im = b.select(c_nan, c, call_math(b, "copysign", _zero(ty), c))
    im = b.select(c_inf, c, b.select(a_neg_inf, call_math(b, "copysign", inf, c), b.select(a_pos_inf, pos_inf_im, im)))
    return make(b, re, im)


def _sign(b, pt, x):
    a, c = parts(b, x)
    m = call_libm(b, "hypot", a, c)
    zero = b.fcmp_ordered("==", m, _zero(m.type))
    return make(b, b.select(zero, a, b.fdiv(a, m)), b.select(zero, c, b.fdiv(c, m)))


def _real(b, pt, x):
    return b.extract_value(x, 0)


def _imag(b, pt, x):
    return b.extract_value(x, 1)


def _complex(b, pt, re, im):
    return make(b, re, im)


def compare(b, direction: str, x, y) -> ir.Value:
    """EQ / NE (the only complex comparisons HLO has): both parts equal / either part unequal or NaN."""
    (a, c), (d, e) = parts(b, x), parts(b, y)
    if direction == "EQ":
        return b.and_(b.fcmp_ordered("==", a, d), b.fcmp_ordered("==", c, e))
    return b.or_(b.fcmp_unordered("!=", a, d), b.fcmp_unordered("!=", c, e))


def constant(pt: PrimitiveType, value) -> ir.Constant:
    from .types import value_type
    z = complex(value)
    return ir.Constant(value_type(pt), [z.real, z.imag])


UNARY = {"negate": _negate, "abs": _abs, "exponential": _exp, "log": _log, "sqrt": _sqrt, "sign": _sign,
         "real": _real, "imag": _imag}
BINARY = {"add": _componentwise("fadd"), "subtract": _componentwise("fsub"), "multiply": _multiply,
          "divide": _divide}
