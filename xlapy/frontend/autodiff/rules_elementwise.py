"""Derivative rules of the elementwise ops: both modes from one table of partial derivatives.

For a unary op `y = f(x)`, DERIVATIVES[op](b, x, y) is dy/dx as an HLO value (None: zero, as for floor);
JVP is `t * dy/dx`, VJP is `ct * dy/dx`. Binary ops list one partial per operand. Ops that are linear
in their operands (add, subtract, negate) have direct rules that emit no multiplications.

Complex values follow JAX's convention: a VJP is the linear transpose, not conjugated, so the holomorphic
partials above serve complex operands unchanged. The ops between real and complex have their own rules:
real (VJP complex(ct, 0)), imag (VJP complex(0, -ct)), complex (VJP real(ct), -imag(ct)) and abs of a
complex x (JVP real(t conj(x) / |x|), VJP ct conj(x) / |x|, with |x| = 0 read as 1, as JAX does).
"""
from __future__ import annotations

import math

from ...hlo import Instruction
from .rules_common import Emitter


def _c(b: Emitter, v: float, like: Instruction) -> Instruction:
    return b.full_like(like, v)


def _recip(b: Emitter, x: Instruction) -> Instruction:
    return b.div(_c(b, 1.0, x), x)


# -- unary: dy/dx from (x, y) -------------------------------------------------------------------------------
UNARY = {
    "exponential": lambda b, x, y: y,
    "exponential-minus-one": lambda b, x, y: b.add(y, _c(b, 1.0, y)),
    "log": lambda b, x, y: _recip(b, x),
    "log-plus-one": lambda b, x, y: _recip(b, b.add(x, _c(b, 1.0, x))),
    "tanh": lambda b, x, y: b.sub(_c(b, 1.0, y), b.mul(y, y)),
    "logistic": lambda b, x, y: b.mul(y, b.sub(_c(b, 1.0, y), y)),
    "sqrt": lambda b, x, y: b.div(_c(b, 0.5, y), y),
    "rsqrt": lambda b, x, y: b.mul(_c(b, -0.5, y), b.div(y, x)),
    "cbrt": lambda b, x, y: b.div(_c(b, 1.0 / 3.0, y), b.mul(y, y)),
    "sine": lambda b, x, y: b.emit("cosine", [x]),
    "cosine": lambda b, x, y: b.neg(b.emit("sine", [x])),
    "tan": lambda b, x, y: b.add(_c(b, 1.0, y), b.mul(y, y)),
    "abs": lambda b, x, y: b.emit("sign", [x]),
    "erf": lambda b, x, y: b.mul(_c(b, 2.0 / math.sqrt(math.pi), x), b.emit("exponential", [b.neg(b.mul(x, x))])),
    # piecewise constant: derivative zero almost everywhere
    "sign": None, "floor": None, "ceil": None, "round-nearest-afz": None, "round-nearest-even": None,
}


def _balanced_eq(b: Emitter, x, z, y):
    """JAX's max/min partial: 1 where x is the result alone, 0.5 on ties, 0 elsewhere."""
    one, half, zero = _c(b, 1.0, z), _c(b, 0.5, z), _c(b, 0.0, z)
    return b.select(b.compare(x, z, "EQ"), b.select(b.compare(y, z, "EQ"), half, one), zero)


def _pow_dx(b, x, y, out):
    # y * x^(y-1), zero where y == 0 (so 0^0 has derivative 0, as in JAX)
    jac = b.mul(y, b.emit("power", [x, b.sub(y, _c(b, 1.0, y))]))
    return b.select(b.compare(y, _c(b, 0.0, y), "EQ"), _c(b, 0.0, y), jac)


def _pow_dy(b, x, y, out):
    # out * log(x), with log(0) replaced by log(1) = 0
    safe = b.select(b.compare(x, _c(b, 0.0, x), "EQ"), _c(b, 1.0, x), x)
    return b.mul(out, b.emit("log", [safe]))


def _atan2_den(b, x, y):
    return b.add(b.mul(x, x), b.mul(y, y))


# -- binary: (d/da, d/db) from (a, b, out) -------------------------------------------------------------------
BINARY = {
    "multiply": (lambda b, x, y, out: y, lambda b, x, y, out: x),
    "divide": (lambda b, x, y, out: _recip(b, y), lambda b, x, y, out: b.neg(b.div(out, y))),
    "power": (_pow_dx, _pow_dy),
    "maximum": (lambda b, x, y, out: _balanced_eq(b, x, out, y), lambda b, x, y, out: _balanced_eq(b, y, out, x)),
    "minimum": (lambda b, x, y, out: _balanced_eq(b, x, out, y), lambda b, x, y, out: _balanced_eq(b, y, out, x)),
    "atan2": (lambda b, x, y, out: b.div(y, _atan2_den(b, x, y)),
              lambda b, x, y, out: b.neg(b.div(x, _atan2_den(b, x, y)))),
    "remainder": (lambda b, x, y, out: _c(b, 1.0, x), lambda b, x, y, out: _rem_dy(b, x, y)),
}


def _rem_dy(b, x, y):
    # x - y * trunc(x / y): d/dy = -trunc(x / y)
    q = b.div(x, y)
    return b.neg(b.mul(b.emit("sign", [q]), b.emit("floor", [b.emit("abs", [q])])))


# -- rules ----------------------------------------------------------------------------------------------------
def _unary_jvp(b, inst, ts):
    d = UNARY[inst.opcode]
    if d is None:
        return None
    return b.mul(ts[0], d(b, inst.operands[0], inst))


def _unary_vjp(b, inst, ct):
    d = UNARY[inst.opcode]
    if d is None:
        return [None]
    return [b.mul(ct, d(b, inst.operands[0], inst))]


def _partial(b, inst, k):
    x, y = inst.operands
    return BINARY[inst.opcode][k](b, x, y, inst)


def _binary_jvp(b, inst, ts):
    out = None
    for k, t in enumerate(ts):
        if t is not None:
            term = b.mul(t, _partial(b, inst, k))
            out = term if out is None else b.add(out, term)
    return out


def _binary_vjp(b, inst, ct):
    return [b.mul(ct, _partial(b, inst, k)) for k in range(2)]


def _add_jvp(b, inst, ts):
    a, c = ts
    return a if c is None else c if a is None else b.add(a, c)


def _sub_jvp(b, inst, ts):
    a, c = ts
    return b.neg(c) if a is None else a if c is None else b.sub(a, c)


def _mul_jvp(b, inst, ts):
    # bilinear: t_a * b + a * t_b
    x, y = inst.operands
    terms = [b.mul(ts[0], y) if ts[0] is not None else None, b.mul(x, ts[1]) if ts[1] is not None else None]
    terms = [t for t in terms if t is not None]
    return terms[0] if len(terms) == 1 else b.add(*terms)


# -- between real and complex --------------------------------------------------------------------------------
def _is_complex(x: Instruction) -> bool:
    return x.shape.ptype.is_complex


def _conj(b: Emitter, x: Instruction) -> Instruction:
    return b.emit("complex", [b.emit("real", [x]), b.neg(b.emit("imag", [x]))])


def _as_complex(b: Emitter, re: Instruction | None, im: Instruction | None) -> Instruction:
    """complex(re, im), a None part being zero (at least one part is given)."""
    like = re if re is not None else im
    re = re if re is not None else b.zeros(like.shape)
    im = im if im is not None else b.zeros(like.shape)
    return b.emit("complex", [re, im])


def _abs_unit(b: Emitter, x: Instruction, y: Instruction) -> Instruction:
    """conj(x) / |x| for a complex x with |x| = y (|x| = 0 replaced by 1, so the result is 0 there)."""
    safe = b.select(b.compare(y, _c(b, 0.0, y), "EQ"), _c(b, 1.0, y), y)
    return b.div(_conj(b, x), b.emit("complex", [safe, b.zeros(y.shape)]))


def _abs_jvp(b, inst, ts):
    x = inst.operands[0]
    if not _is_complex(x):
        return _unary_jvp(b, inst, ts)
    return b.emit("real", [b.mul(ts[0], _abs_unit(b, x, inst))])


def _abs_vjp(b, inst, ct):
    x = inst.operands[0]
    if not _is_complex(x):
        return _unary_vjp(b, inst, ct)
    return [b.mul(_as_complex(b, ct, None), _abs_unit(b, x, inst))]


def _real_vjp(b, inst, ct):
    return [_as_complex(b, ct, None) if _is_complex(inst.operands[0]) else ct]


def _imag_vjp(b, inst, ct):
    return [_as_complex(b, None, b.neg(ct)) if _is_complex(inst.operands[0]) else None]


def _complex_jvp(b, inst, ts):
    return _as_complex(b, *ts)


def _complex_vjp(b, inst, ct):
    return [b.emit("real", [ct]), b.neg(b.emit("imag", [ct]))]


JVP = {op: _unary_jvp for op in UNARY}
JVP.update({op: _binary_jvp for op in BINARY})
JVP.update({
    "add": _add_jvp,
    "subtract": _sub_jvp,
    "multiply": _mul_jvp,
    "negate": lambda b, inst, ts: b.neg(ts[0]),
    "abs": _abs_jvp,
    "real": lambda b, inst, ts: b.emit("real", [ts[0]]),
    "imag": lambda b, inst, ts: b.emit("imag", [ts[0]]),
    "complex": _complex_jvp,
})

# Random numbers are constants to differentiation (their float operands are distribution parameters).
NON_DIFFERENTIABLE = ("rng",)
JVP.update({op: (lambda b, inst, ts: None) for op in NON_DIFFERENTIABLE})

VJP = {op: _unary_vjp for op in UNARY}
VJP.update({op: _binary_vjp for op in BINARY})
VJP.update({
    "add": lambda b, inst, ct: [ct, ct],
    "subtract": lambda b, inst, ct: [ct, b.neg(ct)],
    "negate": lambda b, inst, ct: [b.neg(ct)],
    "abs": _abs_vjp,
    "real": _real_vjp,
    "imag": _imag_vjp,
    "complex": _complex_vjp,
})
VJP.update({op: (lambda b, inst, ct: [None] * len(inst.operands)) for op in NON_DIFFERENTIABLE})
