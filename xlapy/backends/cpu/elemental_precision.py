"""reduce-precision: round a float to `exponent_bits` / `mantissa_bits` on its bits, as XLA's
reduce_precision_insertion / elemental_ir_emitter do (and the interpreter's convert.py): round the mantissa
to nearest even, then overflow to a signed infinity and underflow (including the reduced type's denormals)
to a signed zero; NaN stays NaN (it becomes +inf when no mantissa bit is left). f16/bf16 values are rounded
in f32 (their register type) and brought back onto their own grid.
"""
from __future__ import annotations

from llvmlite import ir

from ...errors import ExecutionError
from .types import float_bits_type, round_value


def reduce_precision_value(b: ir.IRBuilder, x: ir.Value, exponent_bits: int, mantissa_bits: int) -> ir.Value:
    wide = isinstance(x.type, ir.DoubleType)
    src_mant, src_exp = (52, 11) if wide else (23, 8)
    ity = float_bits_type(x.type)

    def c(v):
        return ir.Constant(ity, v & ((1 << ity.width) - 1))
    bits = b.bitcast(x, ity)
    if mantissa_bits < src_mant:
        shift = src_mant - mantissa_bits
        last = 1 << shift
        bias = b.add(c((last >> 1) - 1), b.lshr(b.and_(bits, c(last)), c(shift)))
        bits = b.and_(b.add(bits, bias), c(~(last - 1)))
    if exponent_bits < src_exp:
        sign = b.and_(bits, c(1 << (ity.width - 1)))
        exp_mask = ((1 << src_exp) - 1) << src_mant
        exp_bias = (1 << (src_exp - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        x_exp = b.and_(bits, c(exp_mask))
        overflow = b.icmp_unsigned(">", x_exp, c((exp_bias + reduced_bias) << src_mant))
        underflow = b.icmp_unsigned("<=", x_exp, c((exp_bias - reduced_bias) << src_mant))
        bits = b.select(overflow, b.or_(sign, c(exp_mask)), bits)
        bits = b.select(underflow, sign, bits)
    out = b.bitcast(bits, x.type)
    nan = b.fcmp_unordered("uno", x, x)
    return b.select(nan, x if mantissa_bits > 0 else ir.Constant(x.type, float("inf")), out)


def reduce_precision(em, inst, gens):
    pt = inst.shape.ptype
    if pt.kind != "float":
        raise ExecutionError(f"reduce-precision is not defined for {pt.name} (instruction {inst.name})")
    e, m = int(inst.attrs["exponent_bits"]), int(inst.attrs["mantissa_bits"])
    return lambda index: round_value(em.b, pt, reduce_precision_value(em.b, gens[0](index), e, m))

