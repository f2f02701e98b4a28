"""HLO element types in LLVM: how each is stored in memory and which LLVM type carries it in registers.

  pred       stored as i8 (numpy bool), carried as i1
  sN / uN    iN both ways (signedness lives in the HLO type, not in LLVM's)
  f32, f64   float, double
  f16        stored as half, carried as float holding an f16-representable value
  bf16       stored as i16 (its bits), carried as float holding a bf16-representable value
  s4, u4, .. stored as i8 (value in the low bits, upper bits zero), carried as i4 / i2
  f8e5m2 ... stored as i8 (its bits), carried as float like bf16 (f8.py)
  c64, c128  {float, float}, {double, double} both ways (numpy's layout; scalar_complex.py)

Narrow floats are computed in f32 and rounded after every op (XLA:CPU's upcast-compute-round), which is why
their register type is float: `round_value` brings an f32 result back onto the narrow grid.
"""
from __future__ import annotations

from llvmlite import ir

from ...errors import UnimplementedError
from ...hlo.shape import PrimitiveType, primitive_type
from . import f8
from .irhelpers import F16, F32, F64, I1, I8, I16, I32, element_pointer, intrinsic

_INT_BITS = {"s8": 8, "s16": 16, "s32": 32, "s64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}

SUB_BYTE_INTS = ("s2", "s4", "u2", "u4")     # one per byte, in its low bits (ml_dtypes' layout)

# element type name -> (storage type, register type)
_TYPES: dict[str, tuple[ir.Type, ir.Type]] = {
    "pred": (I8, I1), "f16": (F16, F32), "bf16": (I16, F32), "f32": (F32, F32), "f64": (F64, F64),
    **{name: (ir.IntType(bits), ir.IntType(bits)) for name, bits in _INT_BITS.items()},
    **{name: (I8, F32) for name in f8.FORMATS},
    **{name: (I8, ir.IntType(int(name[1:]))) for name in SUB_BYTE_INTS},
    "c64": (ir.LiteralStructType([F32, F32]),) * 2, "c128": (ir.LiteralStructType([F64, F64]),) * 2,
}

SUPPORTED_TYPES = frozenset(_TYPES)


def _entry(name: str, what: str = "") -> tuple[ir.Type, ir.Type]:
    try:
        return _TYPES[name]
    except KeyError:
        raise UnimplementedError(f"cpu backend: element type {name} not supported yet{what}") from None


def storage_type(pt: PrimitiveType | str) -> ir.Type:
    return _entry(pt if isinstance(pt, str) else pt.name)[0]


def value_type(pt: PrimitiveType | str) -> ir.Type:
    return _entry(pt if isinstance(pt, str) else pt.name)[1]


def ptype(name: str) -> PrimitiveType:
    return primitive_type(name)


def is_narrow_float(pt: PrimitiveType) -> bool:
    return pt.name in ("f16", "bf16") or pt.name in f8.FORMATS


# -- bf16 <-> f32 by bit manipulation ------------------------------------------------------------------
def bf16_round_bits(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """The f32 bit pattern of x rounded to bf16 (round-nearest-even, NaN kept quiet); low 16 bits zero."""
    bits = b.bitcast(x, I32)
    lsb = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    rounded = b.add(b.add(bits, ir.Constant(I32, 0x7FFF)), lsb)
    quiet = b.or_(bits, ir.Constant(I32, 0x00400000))
    is_nan = b.fcmp_unordered("uno", x, x)
    return b.and_(b.select(is_nan, quiet, rounded), ir.Constant(I32, 0xFFFF0000))


def round_value(b: ir.IRBuilder, pt: PrimitiveType, x: ir.Value) -> ir.Value:
    """An f32 compute result rounded onto pt's grid (identity for types computed natively)."""
    if pt.name == "bf16":
        return b.bitcast(bf16_round_bits(b, x), F32)
    if pt.name == "f16":
        return b.fpext(b.fptrunc(x, F16), F32)
    if pt.name in f8.FORMATS:
        return f8.decode(b, pt.name, f8.encode(b, pt.name, x))
    return x


def load_element(b: ir.IRBuilder, base: ir.Value, pt: PrimitiveType, linear: ir.Value,
                 invariant: bool = False) -> ir.Value:
    """Element `linear` of the i8* buffer `base` holding pt elements, in pt's register type. `invariant`: the
    buffer is never written while the function runs (an entry parameter), so the load carries
    !invariant.load and LLVM may hoist it out of loops (XLA marks entry parameters the same way)."""
    stored = b.load(element_pointer(b, base, storage_type(pt), linear))
    if invariant:
        stored.set_metadata("invariant.load", b.module.add_metadata([]))
    if pt.name == "pred":
        return b.icmp_unsigned("!=", stored, ir.Constant(I8, 0))
    if pt.name == "bf16":
        return b.bitcast(b.shl(b.zext(stored, I32), ir.Constant(I32, 16)), F32)
    if pt.name == "f16":
        return b.fpext(stored, F32)
    if pt.name in f8.FORMATS:
        return f8.decode(b, pt.name, stored)
    if pt.name in SUB_BYTE_INTS:
        return b.trunc(stored, value_type(pt))
    return stored


def to_storage(b: ir.IRBuilder, pt: PrimitiveType, value: ir.Value) -> ir.Value:
    if pt.name == "pred":
        return b.zext(value, I8)
    if pt.name == "bf16":
        return b.trunc(b.lshr(bf16_round_bits(b, value), ir.Constant(I32, 16)), I16)
    if pt.name == "f16":
        return b.fptrunc(value, F16)
    if pt.name in f8.FORMATS:
        return f8.encode(b, pt.name, value)
    if pt.name in SUB_BYTE_INTS:
        return b.zext(value, I8)
    return value


def store_element(b: ir.IRBuilder, base: ir.Value, pt: PrimitiveType, linear: ir.Value, value: ir.Value) -> None:
    b.store(to_storage(b, pt, value), element_pointer(b, base, storage_type(pt), linear))


def float_bits_type(value_ty: ir.Type) -> ir.IntType:
    return ir.IntType(64) if isinstance(value_ty, ir.DoubleType) else I32


def call_math(b: ir.IRBuilder, name: str, x: ir.Value, *more: ir.Value) -> ir.Value:
    """An LLVM math intrinsic (`llvm.NAME.f32/f64`, `llvm.NAME.vNf32/vNf64` on vectors) on float/double values."""
    elem = x.type.element if isinstance(x.type, ir.VectorType) else x.type
    suffix = "f64" if isinstance(elem, ir.DoubleType) else "f32"
    if isinstance(x.type, ir.VectorType):
        suffix = f"v{x.type.count}{suffix}"
    return intrinsic(b, f"llvm.{name}.{suffix}", x.type, [x, *more])


def call_libm(b: ir.IRBuilder, name: str, x: ir.Value, *more: ir.Value) -> ir.Value:
    """A C math library function (erf, cbrt, expm1, ...): `NAMEf` on float, `NAME` on double."""
    fname = name if isinstance(x.type, ir.DoubleType) else name + "f"
    return intrinsic(b, fname, x.type, [x, *more])


__all__ = ["SUPPORTED_TYPES", "storage_type", "value_type", "load_element", "store_element", "round_value",
           "to_storage", "is_narrow_float", "call_math", "call_libm", "float_bits_type", "ptype", "I1"]
