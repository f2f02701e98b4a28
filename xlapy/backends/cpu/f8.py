"""8-bit floats (f8e5m2, f8e4m3fn, f8e4m3, f8e3m4): stored as i8 bits, carried in registers as f32 holding a
representable value, like f16 / bf16 (compute in f32, round after every op).

Decoding is a 256-entry f32 table (built from ml_dtypes, so it is exact by construction). Encoding rounds to
nearest even on the f32 bits, with ml_dtypes' (and XLA's) non-saturating overflow: to infinity for the types
that have one, to NaN for f8e4m3fn (whose only non-finite codes are NaN). Values below the smallest normal
are rounded on the subnormal grid by scaling to integers and roundeven.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from ...hlo.shape import primitive_type
from .irhelpers import F32, I8, I32, I64, intrinsic


@dataclass(frozen=True)
class F8Format:
    exponent_bits: int
    mantissa_bits: int
    bias: int
    top_code: int          # the largest magnitude code: inf (IEEE-like types) or NaN (fn types)
    nan_code: int


FORMATS = {
    "f8e5m2": F8Format(5, 2, 15, 0x7C, 0x7E),
    "f8e4m3fn": F8Format(4, 3, 7, 0x7F, 0x7F),
    "f8e4m3": F8Format(4, 3, 7, 0x78, 0x7C),
    "f8e3m4": F8Format(3, 4, 3, 0x70, 0x78),
}


def _table(b: ir.IRBuilder, name: str) -> ir.Value:
    module = b.module
    gname = f"xlapy.{name}.decode"
    g = module.globals.get(gname)
    if g is None:
        values = np.arange(256, dtype=np.uint8).view(primitive_type(name).dtype).astype(np.float32)
        ty = ir.ArrayType(F32, 256)
        g = ir.GlobalVariable(module, ty, name=gname)
        g.global_constant = True
        g.linkage = "private"
        g.initializer = ir.Constant(ty, [float(v) for v in values])
    return g


def decode(b: ir.IRBuilder, name: str, bits: ir.Value) -> ir.Value:
    """The f32 value of the i8 code `bits`."""
    return b.load(b.gep(_table(b, name), [ir.Constant(I32, 0), b.zext(bits, I64)], inbounds=True))


def encode(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    """The i8 code nearest to the f32 value x (ties to even)."""
    f = FORMATS[name]
    m = f.mantissa_bits
    bits = b.bitcast(x, I32)
    sign = b.trunc(b.lshr(bits, ir.Constant(I32, 24)), I8)
    sign = b.and_(sign, ir.Constant(I8, 0x80))
    mag_bits = b.and_(bits, ir.Constant(I32, 0x7FFFFFFF))
    mag = b.bitcast(mag_bits, F32)
    # normal range: round the f32 mantissa to m bits, then rebias the exponent
    shift = 23 - m
    lsb = b.and_(b.lshr(mag_bits, ir.Constant(I32, shift)), ir.Constant(I32, 1))
    rounded = b.add(mag_bits, b.add(ir.Constant(I32, (1 << (shift - 1)) - 1), lsb))
    normal = b.sub(b.lshr(rounded, ir.Constant(I32, shift)), ir.Constant(I32, (127 - f.bias) << m))
    # subnormal range: the value in units of the smallest subnormal, rounded to an integer
    emin = 1 - f.bias
    units = b.fmul(mag, ir.Constant(F32, float(2.0 ** (m - emin))))
    sub = b.fptoui(intrinsic(b, "llvm.roundeven.f32", F32, [units]), I32)
    tiny = b.fcmp_ordered("<", mag, ir.Constant(F32, float(2.0 ** emin)))
    code = b.select(tiny, sub, normal)
    big = b.icmp_unsigned(">", mag_bits, ir.Constant(I32, 0x7F000000))     # beyond any f8 (and inf)
    code = b.select(b.or_(big, b.icmp_signed(">", code, ir.Constant(I32, f.top_code))),
                    ir.Constant(I32, f.top_code), code)
    code = b.select(b.fcmp_unordered("uno", x, x), ir.Constant(I32, f.nan_code), code)
    return b.or_(b.trunc(code, I8), sign)
