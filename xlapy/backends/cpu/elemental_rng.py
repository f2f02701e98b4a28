"""rng-bit-generator: ThreeFry-2x32 and Philox-4x32, bit-exact with the interpreter's prng.py (which follows
XLA's rng_bit_generator_expander). A non-elemental op with a (new state, bits) result: the bits are an element
generator (each element runs the cipher on its own counter, so the loop carries no state and LLVM can
vectorize it), the new state a few scalar stores.

Element e (row-major position in the output) reads
  three-fry, 32-bit and narrower:  counter + linear(half index), word e[split] % 2 (SplitShapeIntoHalves)
  three-fry, 64-bit:               counter + e, both words joined (low first)
  philox, 32-bit and narrower:     the 128-bit counter (hi:lo) + e // 4, word e % 4
  philox, 64-bit:                  the 128-bit counter + e // 2, words 2(e % 2), 2(e % 2) + 1 joined.
Narrow outputs keep the low bits of the 32-bit word.
"""
from __future__ import annotations

import math

from llvmlite import ir

from ...errors import UnimplementedError
from ..interpreter.prng import split_halves   # one definition of XLA's SplitShapeIntoHalves
from .indexing import row_major_linear
from .irhelpers import F32, I16, I32, I64, i64
from .loops import emit_loop
from .types import load_element, store_element

_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)


def _u32(v: int) -> ir.Constant:
    return ir.Constant(I32, v & 0xFFFFFFFF)


def _lo(b, x):
    return b.trunc(x, I32)


def _hi(b, x):
    return b.trunc(b.lshr(x, i64(32)), I32)


def _join(b, lo, hi):
    return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), i64(32)))


def _rotl(b, v, r: int):
    return b.or_(b.shl(v, _u32(r)), b.lshr(v, _u32(32 - r)))


def threefry2x32(b, x0, x1, k0, k1):
    ks = (k0, k1, b.xor(_u32(0x1BD11BDA), b.xor(k0, k1)))
    x0, x1 = b.add(x0, ks[0]), b.add(x1, ks[1])
    for block in range(5):
        for r in _THREEFRY_ROTATIONS[block % 2]:
            x0 = b.add(x0, x1)
            x1 = b.xor(_rotl(b, x1, r), x0)
        x0 = b.add(x0, ks[(block + 1) % 3])
        x1 = b.add(x1, b.add(ks[(block + 2) % 3], _u32(block + 1)))
    return x0, x1


def philox4x32(b, ctr, k0, k1):
    x = list(ctr)
    key = [k0, k1]
    m0, m1 = ir.Constant(I64, _PHILOX_M[0]), ir.Constant(I64, _PHILOX_M[1])
    for _ in range(10):
        p0 = b.mul(b.zext(x[0], I64), m0)
        p1 = b.mul(b.zext(x[2], I64), m1)
        x = [b.xor(b.xor(_hi(b, p1), x[1]), key[0]), _lo(b, p1),
             b.xor(b.xor(_hi(b, p0), x[3]), key[1]), _lo(b, p0)]
        key = [b.add(key[0], _u32(_PHILOX_W[0])), b.add(key[1], _u32(_PHILOX_W[1]))]
    return x


def _from_bits(b, pt, bits: ir.Value) -> ir.Value:
    """Raw bits (i32 or i64) as a value of element type pt (narrow types keep the low bits)."""
    if pt.name == "f32":
        return b.bitcast(bits, F32)
    if pt.name == "f64":
        return b.bitcast(bits, ir.DoubleType())
    if pt.name == "bf16":
        return b.bitcast(b.shl(b.and_(bits, _u32(0xFFFF)), _u32(16)), F32)
    if pt.name == "f16":
        return b.fpext(b.bitcast(b.trunc(bits, I16), ir.HalfType()), F32)
    if pt.kind not in ("int", "uint"):
        raise UnimplementedError(f"cpu backend: rng-bit-generator producing {pt.name} not supported yet")
    return b.trunc(bits, ir.IntType(pt.bits)) if pt.bits < bits.type.width else bits


def _add128(b, lo, hi, blocks):
    """(hi:lo) + blocks as (new_lo, new_hi), blocks an i64."""
    new_lo = b.add(lo, blocks)
    carry = b.zext(b.icmp_unsigned("<", new_lo, lo), I64)
    return new_lo, b.add(hi, carry)


def rng_bit_generator(em, inst, operands):
    b = em.b
    state = operands[0]
    state_shape, bits_shape = inst.shape.tuple_shapes
    pt = bits_shape.ptype
    if pt.bits not in (8, 16, 32, 64) or pt.kind not in ("int", "uint", "float"):
        raise UnimplementedError(f"cpu backend: rng-bit-generator producing {pt.name} not supported yet "
                                 f"(instruction {inst.name})")
    algorithm = str(inst.attrs.get("algorithm", "rng_default"))
    words = state.shape.numel
    if words < 2:
        raise UnimplementedError(f"cpu backend: rng-bit-generator with a {words}-word state (instruction {inst.name})")
    s = [load_element(b, state.pointer, state.shape.ptype, i64(k)) for k in range(words)]
    key = s[0]
    k0, k1 = _lo(b, key), _hi(b, key)
    dims = bits_shape.dims
    n = math.prod(dims)
    wide = pt.bits == 64

    if algorithm == "rng_three_fry":
        split, half = split_halves(dims)
        count = n if wide else math.prod(half)

        def gen(index):
            if wide:
                ctr = b.add(s[1], row_major_linear(b, index, dims))
                y0, y1 = threefry2x32(b, _lo(b, ctr), _hi(b, ctr), k0, k1)
                return _from_bits(b, pt, _join(b, y0, y1))
            if split < 0:
                y0, _ = threefry2x32(b, _lo(b, s[1]), _hi(b, s[1]), k0, k1)
                return _from_bits(b, pt, y0)
            h = list(index)
            h[split] = b.lshr(index[split], i64(1))
            ctr = b.add(s[1], row_major_linear(b, h, half))
            y0, y1 = threefry2x32(b, _lo(b, ctr), _hi(b, ctr), k0, k1)
            odd = b.trunc(index[split], ir.IntType(1))
            return _from_bits(b, pt, b.select(odd, y1, y0))
        new_state = [key, b.add(s[1], i64(count))] + s[2:]
    elif algorithm in ("rng_philox", "rng_default"):
        lo, hi = (s[1], s[2]) if words >= 3 else (s[1], s[0])
        per_block = 2 if wide else 4
        blocks = -(-n * (4 // per_block) // 4)      # ceil(n / 4) words of 32, ceil(2n / 4) of 64 bits

        def gen(index):
            e = row_major_linear(b, index, dims)
            c_lo, c_hi = _add128(b, lo, hi, b.udiv(e, i64(per_block)))
            x = philox4x32(b, [_lo(b, c_lo), _hi(b, c_lo), _lo(b, c_hi), _hi(b, c_hi)], k0, k1)
            which = b.trunc(b.urem(e, i64(per_block)), I32)
            if wide:
                first = _join(b, x[0], x[1])
                return _from_bits(b, pt, b.select(b.icmp_unsigned("==", which, _u32(0)), first, _join(b, x[2], x[3])))
            word = x[3]
            for k in (2, 1, 0):
                word = b.select(b.icmp_unsigned("==", which, _u32(k)), x[k], word)
            return _from_bits(b, pt, word)
        lo2, hi2 = _add128(b, lo, hi, i64(blocks))
        new_state = [key, lo2, hi2] + s[3:] if words >= 3 else [key, lo2]
    else:
        raise UnimplementedError(f"cpu backend: rng-bit-generator algorithm {algorithm} not supported yet "
                                 f"(instruction {inst.name})")

    out = em.new_tree(inst.shape, inst)
    state_out, bits_out = out
    if n:
        emit_loop(b, bits_shape, gen, [bits_out])
    for k, v in enumerate(new_state):
        store_element(b, state_out.pointer, state_shape.ptype, i64(k), v)
    return out
