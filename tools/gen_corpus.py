#!/usr/bin/env python3
"""Generate the XLA correctness corpus under tests/corpus/.

Run with the JAX venv (tools/setup_jax_env.sh):

    .venv-jax/bin/python tools/gen_corpus.py            # everything
    .venv-jax/bin/python tools/gen_corpus.py --only 'conv|sort'   # subset

Outputs (see tests/corpus/README.md):
  tests/corpus/jax/NAME.hlo        unoptimized HLO from jax.jit(f).lower(*args)
  tests/corpus/jax/NAME.npz        arg0.. (ENTRY params), out0.. (XLA outputs)
  tests/corpus/jax_opt/NAME.hlo    XLA:CPU optimized module (compile().as_text())
  tests/corpus/jax_opt/NAME.npz    same npz as jax/NAME.npz
  tests/corpus/jax_opt/UNEXECUTABLE.txt   optimized modules with custom-calls
  tests/corpus/tf/tf_mobilenet_cluster.npz  inputs/outputs for
                                   shared/testdata/tf_mobilenet_cluster.hlo
  tests/corpus/xla_parser_cases/NNN_Name.npz  for runnable parser cases in
                                   shared/testdata/xla_parser_cases/
  tests/corpus/hlo/NAME.{hlo,npz}  hand-written HLO for opcodes jax never emits
                                   (logistic, map, variadic reduce-window, ...)

The work is done in three sub-processes (passes) because jax_enable_x64 must
be fixed before tracing: "x32" (default JAX mode), "x64" (f64/s64/u64
programs) and "hlo" (executing foreign HLO text: TF dump, parser cases).
JAX is never a runtime dependency of xlapy; only this tool uses it.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import xla_check as xc  # noqa: E402

CORPUS = os.path.join(ROOT, "tests", "corpus")
JAX_DIR = os.path.join(CORPUS, "jax")
OPT_DIR = os.path.join(CORPUS, "jax_opt")
TF_DIR = os.path.join(CORPUS, "tf")
PC_DIR = os.path.join(CORPUS, "xla_parser_cases")
HW_DIR = os.path.join(CORPUS, "hlo")
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "testdata")
if not os.path.isdir(SHARED):
    SHARED = "/work/shared/testdata"

# ---------------------------------------------------------------------------
# Input builders (all deterministic: rng = default_rng(crc32(name)))
# ---------------------------------------------------------------------------

F_SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 1.5,
             2.5, -2.5, 3.0, 1e-30, -1e-30, 1e-42, 3e38, -3e38, 100.0, -7.25]


def fv(rng, shape, dtype=np.float32, special=True, scale=3.0, lo=None, hi=None):
    """Float array: random normal*scale (or uniform [lo,hi)) with specials
    (+-0, +-inf, NaN, halves, denormals, huge) at random positions."""
    n = int(np.prod(shape))
    if lo is not None:
        a = rng.uniform(lo, hi, size=n)
    else:
        a = rng.standard_normal(n) * scale
    if special:
        sp = np.array(F_SPECIAL[: max(0, min(len(F_SPECIAL), n))])
        pos = rng.permutation(n)[: len(sp)]
        a[pos] = sp
    with np.errstate(over="ignore"):  # 3e38 -> inf in f16/bf16 is intended
        return a.astype(np.float64).reshape(shape).astype(dtype)


def iv(rng, shape, dtype=np.int32, special=True, lo=None, hi=None):
    """Int array: random values, with min/max/0/+-1 at random positions."""
    dt = np.dtype(dtype)
    info = np.iinfo(dt)
    n = int(np.prod(shape))
    if lo is None:
        lo, hi = max(info.min, -1000), min(info.max, 1000)
    a = rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64 if dt.kind == "i" or dt.itemsize < 8 else np.uint64)
    a = a.astype(dt)
    if special:
        sp = [info.min, info.max, 0, 1, info.max - 1, info.min + 1]
        if dt.kind == "i":
            sp += [-1, -2, 7, -7]
        else:
            sp += [2, 7, info.max // 2, info.max // 2 + 1]
        sp = np.array(sp[: min(len(sp), n)], dtype=dt)
        pos = rng.permutation(n)[: len(sp)]
        a[pos] = sp
    return a.reshape(shape)


def bv(rng, shape):
    return rng.integers(0, 2, size=shape).astype(np.bool_)


def f32(rng, *shape, **kw):
    return fv(rng, shape, np.float32, **kw)


def nrm(rng, *shape, scale=1.0, dtype=np.float32):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def c64(rng, *shape, special=False):
    re_ = fv(rng, shape, np.float32, special=special)
    im_ = fv(rng, shape, np.float32, special=special)
    return (re_.astype(np.complex64) + 1j * im_.astype(np.complex64)).astype(np.complex64)


def s32(x):
    return np.asarray(x, dtype=np.int32)


def u32(x):
    return np.asarray(x, dtype=np.uint32)


# ---------------------------------------------------------------------------
# The TABLE
# ---------------------------------------------------------------------------

class Entry:
    def __init__(self, name, fn, args, opt=False, x64=False, keep_unused=False):
        self.name, self.fn, self.args = name, fn, args
        self.opt, self.x64, self.keep_unused = opt, x64, keep_unused


TABLE: list[Entry] = []


def T(name, fn, args, **kw):
    assert not any(e.name == name for e in TABLE), name
    TABLE.append(Entry(name, fn, args, **kw))


def build_table():  # noqa: C901  (one long table)
    import jax
    import jax.numpy as jnp
    from jax import lax
    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    S = (4, 8)  # default small shape

    # ---------------- seed example ----------------
    T("seed_sum_xyz", lambda x, y, z: jnp.sum(x + y * z),
      lambda r: [nrm(r, 2, 3), nrm(r, 2, 3), nrm(r, 2, 3)], opt=True)

    # ---------------- unary float ops ----------------
    unary_f = {
        "abs": lax.abs, "ceil": lax.ceil, "floor": lax.floor, "cos": lax.cos,
        "sin": lax.sin, "tan": lax.tan, "tanh": lax.tanh, "exp": lax.exp,
        "expm1": lax.expm1, "log": lax.log, "log1p": lax.log1p,
        "logistic": lax.logistic, "neg": lax.neg,
        "round_afz": lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
        "round_ne": lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
        "rsqrt": lax.rsqrt, "sqrt": lax.sqrt, "cbrt": lax.cbrt,
        "sign": lax.sign, "is_finite": lax.is_finite, "erf": lax.erf,
        "erf_inv": lax.erf_inv, "atan": jnp.arctan, "asin": jnp.arcsin,
        "acos": jnp.arccos, "sinh": jnp.sinh, "cosh": jnp.cosh,
        "asinh": jnp.arcsinh, "lgamma": lax.lgamma, "digamma": lax.digamma,
        "exp2": lax.exp2, "log2": jnp.log2, "sigmoid_nn": jax.nn.sigmoid,
        "gelu_tanh": lambda x: jax.nn.gelu(x, approximate=True),
        "gelu_erf": lambda x: jax.nn.gelu(x, approximate=False),
        "softplus": jax.nn.softplus, "relu": jax.nn.relu,
        "isnan_nan_to_num": lambda x: (jnp.isnan(x), jnp.nan_to_num(x)),
    }
    for nm, fn in unary_f.items():
        T("unary_f32_" + nm, fn, lambda r: [f32(r, 5, 8)],
          opt=(nm in ("erf", "logistic")))
    # round ties explicitly
    T("unary_f32_round_ties", lambda x: (lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
                                         lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
                                         jnp.floor(x), jnp.ceil(x)),
      lambda r: [np.array([-3.5, -2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 3.5,
                           0.49999997, -0.49999997, 8388609.0, 1e30, np.nan, np.inf],
                          dtype=np.float32)])

    # ---------------- unary integer / pred ops ----------------
    T("unary_s32_abs_neg_sign", lambda x: (lax.abs(x), lax.neg(x), lax.sign(x)),
      lambda r: [iv(r, S)])
    T("unary_s32_not_popcnt_clz", lambda x: (lax.bitwise_not(x), lax.population_count(x), lax.clz(x)),
      lambda r: [iv(r, S, lo=-2**31, hi=2**31 - 1)])
    T("unary_u32_not_popcnt_clz", lambda x: (lax.bitwise_not(x), lax.population_count(x), lax.clz(x)),
      lambda r: [iv(r, S, np.uint32, lo=0, hi=2**32 - 1)])
    T("unary_u8_popcnt_clz", lambda x: (lax.population_count(x), lax.clz(x), ~x),
      lambda r: [iv(r, (16,), np.uint8, lo=0, hi=255)])
    T("unary_s16_u16_clz_popcnt", lambda x, y: (lax.clz(x), lax.population_count(x), lax.clz(y), lax.population_count(y)),
      lambda r: [iv(r, (16,), np.int16, lo=-2**15, hi=2**15 - 1), iv(r, (16,), np.uint16, lo=0, hi=2**16 - 1)])
    T("unary_pred_not", lambda p: (~p, jnp.logical_not(p), p ^ True),
      lambda r: [bv(r, (3, 5))])

    # ---------------- complex ----------------
    T("c64_add_mul_abs", lambda x, y: (x + y, x * y, jnp.abs(x), x - y),
      lambda r: [c64(r, 3, 4), c64(r, 3, 4)])
    T("c64_div_conj_neg", lambda x, y: (x / y, jnp.conj(x), -x),
      lambda r: [c64(r, 3, 4), c64(r, 3, 4)])
    T("c64_real_imag_complex", lambda x, a, b: (jnp.real(x), jnp.imag(x), lax.complex(a, b)),
      lambda r: [c64(r, 6), f32(r, 6, special=False), f32(r, 6)])
    T("c64_exp_sqrt_log", lambda x: (jnp.exp(x), jnp.sqrt(x), jnp.log(x)),
      lambda r: [c64(r, 6)])
    T("c64_dot_sum", lambda a, b: (a @ b, jnp.sum(a), jnp.prod(b, axis=0)),
      lambda r: [c64(r, 3, 4), c64(r, 4, 2)])
    T("c64_eq_ne", lambda a, b: (a == b, a != b),
      lambda r: [np.array([1 + 1j, 2, 3j, 0, np.nan], np.complex64), np.array([1 + 1j, 2j, 3j, -0.0, np.nan], np.complex64)])

    # ---------------- binary float ----------------
    binary_f = {
        "add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div,
        "rem": lax.rem, "pow": lax.pow, "max": lax.max, "min": lax.min,
        "atan2": lax.atan2, "nextafter": lax.nextafter,
        "mod_py": jnp.mod, "floor_divide": jnp.floor_divide,
    }
    for nm, fn in binary_f.items():
        T("binary_f32_" + nm, fn, lambda r: [f32(r, 5, 8), f32(r, 5, 8)])
    T("binary_f32_broadcast_scalar", lambda x, s: (x * s + 1.0, jnp.maximum(x, s)),
      lambda r: [f32(r, 3, 4), np.float32(0.5)])
    T("compare_f32_all_nan", lambda x, y: (x == y, x != y, x < y, x <= y, x > y, x >= y),
      lambda r: [f32(r, 5, 8), np.where(r.random((5, 8)) < .3, np.nan, f32(r, 5, 8)).astype(np.float32)])
    T("compare_f32_self_nan", lambda x: (x == x, x != x, x < x, x >= x),
      lambda r: [f32(r, 20)])

    # ---------------- integer binary ----------------
    def intbin(dt, lo, hi):
        return lambda r: [iv(r, S, dt, lo=lo, hi=hi), iv(r, S, dt, lo=lo, hi=hi)]

    T("binary_s32_arith", lambda x, y: (x + y, x - y, x * y, lax.max(x, y), lax.min(x, y)),
      intbin(np.int32, -2**31, 2**31 - 1))
    T("binary_s32_bitwise", lambda x, y: (x & y, x | y, x ^ y),
      intbin(np.int32, -2**31, 2**31 - 1))
    T("div_rem_s32_edge", lambda x, y: (lax.div(x, y), lax.rem(x, y)),
      lambda r: [s32([7, -7, 7, -7, 5, -2**31, -2**31, 2**31 - 1, 0, 13, -13, 1, -1, 100, 0, -5]),
                 s32([2, 2, -2, -2, 0, -1, 1, -1, 0, 0, 0, 0, 0, 7, 3, 3])])
    T("div_rem_s32_random", lambda x, y: (lax.div(x, y), lax.rem(x, y), x // y, x % y),
      lambda r: [iv(r, S), iv(r, S, lo=-10, hi=10)])
    T("div_rem_u32_edge", lambda x, y: (lax.div(x, y), lax.rem(x, y)),
      lambda r: [u32([7, 0, 2**32 - 1, 2**31, 5, 100, 2**32 - 1, 3]),
                 u32([2, 0, 0, 0, 7, 2**32 - 1, 1, 2**31])])
    T("div_rem_s8_s16_edge", lambda a, b, c, d: (lax.div(a, b), lax.rem(a, b), lax.div(c, d), lax.rem(c, d)),
      lambda r: [np.array([-128, -128, 127, 5, -5, 0, 7], np.int8), np.array([-1, 0, -1, 2, 2, 0, -3], np.int8),
                 np.array([-32768, -32768, 32767, 5, -5, 0, 7], np.int16), np.array([-1, 0, -1, 2, 2, 0, -3], np.int16)])
    shift_amts = [0, 1, 5, 31, 32, 33, 100, -1, -100, 7, 15, 16, 30, 2, 3, 4]

    T("shift_s32_all", lambda x, s: (lax.shift_left(x, s), lax.shift_right_arithmetic(x, s), lax.shift_right_logical(x, s)),
      lambda r: [iv(r, (16,), lo=-2**31, hi=2**31 - 1), s32(shift_amts)])
    T("shift_u32_all", lambda x, s: (lax.shift_left(x, s), lax.shift_right_arithmetic(x, s), lax.shift_right_logical(x, s)),
      lambda r: [iv(r, (16,), np.uint32, lo=0, hi=2**32 - 1),
                 np.array([0, 1, 5, 31, 32, 33, 100, 2**32 - 1, 2**31, 7, 15, 16, 30, 2, 3, 4], np.uint32)])
    T("shift_u8_s8", lambda x, s, y, t: (x << s, x >> s, lax.shift_right_arithmetic(x, s), y << t, y >> t, lax.shift_right_logical(y, t)),
      lambda r: [iv(r, (10,), np.uint8, lo=0, hi=255), np.array([0, 1, 7, 8, 9, 255, 3, 4, 2, 100], np.uint8),
                 iv(r, (10,), np.int8, lo=-128, hi=127), np.array([0, 1, 7, 8, 9, -1, 3, 4, 2, 100], np.int8)])
    T("shift_jnp_s32", lambda x, s: (jnp.left_shift(x, s), jnp.right_shift(x, s)),
      lambda r: [iv(r, (16,), lo=-2**31, hi=2**31 - 1), s32(shift_amts)])
    T("compare_s32_all", lambda x, y: (x == y, x != y, x < y, x <= y, x > y, x >= y),
      intbin(np.int32, -2**31, 2**31 - 1))
    T("compare_u32_all", lambda x, y: (x == y, x != y, x < y, x <= y, x > y, x >= y),
      intbin(np.uint32, 0, 2**32 - 1))
    T("compare_u8_s8_pred", lambda a, b, c, d, p, q: (a < b, a >= b, c < d, c >= d, p == q, p < q, p > q),
      lambda r: [iv(r, (8,), np.uint8, lo=0, hi=255), iv(r, (8,), np.uint8, lo=0, hi=255),
                 iv(r, (8,), np.int8, lo=-128, hi=127), iv(r, (8,), np.int8, lo=-128, hi=127), bv(r, (8,)), bv(r, (8,))])
    T("pred_and_or_xor", lambda p, q: (p & q, p | q, p ^ q, jnp.logical_and(p, ~q)),
      lambda r: [bv(r, (12,)), bv(r, (12,))])
    T("u8_arith_wrap", lambda x, y: (x + y, x - y, x * y, lax.max(x, y), lax.min(x, y), x & y, x | y, x ^ y),
      intbin(np.uint8, 0, 255))
    T("u16_arith_wrap", lambda x, y: (x + y, x - y, x * y, lax.div(x, y | 1), lax.rem(x, y | 1), lax.max(x, y)),
      intbin(np.uint16, 0, 2**16 - 1))
    T("s8_arith_wrap", lambda x, y: (x + y, x - y, x * y, lax.max(x, y), lax.abs(x), -x),
      intbin(np.int8, -128, 127))
    T("s16_arith_wrap", lambda x, y: (x + y, x - y, x * y, lax.min(x, y), x ^ y, lax.sign(x)),
      intbin(np.int16, -2**15, 2**15 - 1))
    T("u32_arith_wrap", lambda x, y: (x + y, x - y, x * y, lax.max(x, y), lax.min(x, y)),
      intbin(np.uint32, 0, 2**32 - 1))
    T("integer_pow", lambda x, y: (x ** 3, y ** 2, lax.integer_pow(y, -2), x ** 0),
      lambda r: [iv(r, (8,), lo=-50, hi=50), f32(r, 8)])

    # ---------------- select / clamp ----------------
    T("select_f32", lambda p, x, y: lax.select(p, x, y),
      lambda r: [bv(r, S), f32(r, *S), f32(r, *S)])
    T("select_n_where", lambda i, a, b, c: (lax.select_n(i, a, b, c), jnp.where(a > b, a, 0.0)),
      lambda r: [r.integers(0, 3, S).astype(np.int32), f32(r, *S), f32(r, *S), f32(r, *S)])
    T("clamp_f32_s32", lambda x, lo, hi, i: (lax.clamp(lo, x, hi), lax.clamp(np.float32(-1.0), x, np.float32(1.0)),
                                             lax.clamp(np.int32(-5), i, np.int32(5)), jnp.clip(x, -2.0, 0.5)),
      lambda r: [f32(r, *S), np.full(S, -0.5, np.float32), np.full(S, 2.0, np.float32), iv(r, S)])

    # ---------------- convert ----------------
    def cvt(x, dt):
        return lax.convert_element_type(x, dt)

    T("convert_f32_to_ints", lambda a, b, c: (cvt(a, jnp.int32), cvt(a, jnp.int16), cvt(a, jnp.int8),
                                              cvt(b, jnp.uint8), cvt(b, jnp.uint16), cvt(c, jnp.uint32)),
      lambda r: [fv(r, (20,), lo=-127.9, hi=127.9, special=False), fv(r, (20,), lo=0, hi=255.9, special=False),
                 fv(r, (20,), lo=0, hi=4.2e9, special=False)])
    T("convert_f32_to_floats", lambda a: (cvt(a, jnp.float16), cvt(a, jnp.bfloat16), cvt(a, jnp.complex64)),
      lambda r: [np.concatenate([f32(r, 20), np.array([65504, 65520, 1e5, 6e-8, 3e-8, 1e-40, 1.00390625, 1.01171875,
                                                       -1.00390625, 3.3895314e38, 6.1e-5, 5.96e-8], np.float32)])])
    T("convert_f32_to_pred", lambda a: cvt(a, jnp.bool_),
      lambda r: [np.array([0.0, -0.0, 1.0, -1.0, 1e-40, np.inf, -np.inf, 0.5], np.float32)])
    T("convert_ints_to_f32", lambda a, b, c: (cvt(a, jnp.float32), cvt(b, jnp.float32), cvt(c, jnp.float32), cvt(a, jnp.float16), cvt(a, jnp.bfloat16)),
      lambda r: [np.concatenate([iv(r, (12,), lo=-2**31, hi=2**31 - 1), s32([16777217, 16777219, -16777217, 33554435])]),
                 iv(r, (16,), np.uint32, lo=0, hi=2**32 - 1), iv(r, (16,), np.int8, lo=-128, hi=127)])
    T("convert_int_to_int", lambda a, b, c: (cvt(a, jnp.int8), cvt(a, jnp.uint8), cvt(a, jnp.int16), cvt(a, jnp.uint16), cvt(a, jnp.uint32),
                                             cvt(b, jnp.int32), cvt(b, jnp.uint32), cvt(c, jnp.int32), cvt(c, jnp.int8)),
      lambda r: [iv(r, (16,), lo=-2**31, hi=2**31 - 1), iv(r, (16,), np.int8, lo=-128, hi=127), iv(r, (16,), np.uint8, lo=0, hi=255)])
    T("convert_pred_and_to_pred", lambda p, i: (cvt(p, jnp.float32), cvt(p, jnp.int32), cvt(p, jnp.uint8), cvt(i, jnp.bool_)),
      lambda r: [bv(r, (10,)), s32([0, 1, -1, 2, 256, 0, 7, -2**31, 2**31 - 1, 0])])
    T("convert_half_types", lambda h, b: (cvt(h, jnp.float32), cvt(b, jnp.float32), cvt(h, jnp.bfloat16), cvt(b, jnp.float16),
                                          cvt(cvt(h, jnp.float32), jnp.int16)),
      lambda r: [np.concatenate([fv(r, (14,), np.float16), np.array([65504, -65504], np.float16)]),
                 fv(r, (16,), bf16)])
    T("convert_int_to_complex", lambda a: (cvt(a, jnp.complex64), cvt(cvt(a, jnp.float32), jnp.complex64) * 2),
      lambda r: [iv(r, (8,))])

    # ---------------- bitcast_convert / reduce_precision ----------------
    T("bitcast_f32_s32_u8", lambda x, i: (lax.bitcast_convert_type(x, jnp.int32), lax.bitcast_convert_type(i, jnp.float32),
                                          lax.bitcast_convert_type(x, jnp.uint8)),
      lambda r: [f32(r, 3, 5), np.concatenate([iv(r, (11,), lo=-2**31, hi=2**31 - 1), s32([0x7fc00000, 0x7f800001, -8388608, 1])]).reshape(3, 5)])
    T("bitcast_u8_to_f32_u16_bf16", lambda b, u: (lax.bitcast_convert_type(b, jnp.float32), lax.bitcast_convert_type(u, jnp.bfloat16),
                                                   lax.bitcast_convert_type(u, jnp.float16), lax.bitcast_convert_type(u, jnp.int16)),
      lambda r: [iv(r, (3, 4), np.uint8, lo=0, hi=255), iv(r, (12,), np.uint16, lo=0, hi=2**16 - 1)])
    T("reduce_precision", lambda x: (lax.reduce_precision(x, 5, 10), lax.reduce_precision(x, 8, 7), lax.reduce_precision(x, 5, 2),
                                     lax.reduce_precision(x, 4, 3)),
      lambda r: [np.concatenate([f32(r, 20), np.array([65504, 65520, 65519.99, 1e-5, 6e-8, 2.9e-8, 1.00048828125, 1.0009765625,
                                                       1.00146484375, 1.0078125, 1.01171875, 3.4e38, 448, 464, 57344, 61440], np.float32)])])

    # ---------------- f16 / bf16 arithmetic ----------------
    T("f16_arith", lambda x, y: (x + y, x * y, x / y, jnp.exp(x), jnp.tanh(x), jnp.sqrt(jnp.abs(x)), jnp.maximum(x, y), x < y),
      lambda r: [fv(r, S, np.float16), fv(r, S, np.float16)])
    T("bf16_arith", lambda x, y: (x + y, x * y, x / y, jnp.exp(x), jnp.log(jnp.abs(x)), lax.rsqrt(jnp.abs(y)), jnp.minimum(x, y), x >= y),
      lambda r: [fv(r, S, bf16), fv(r, S, bf16)])
    T("bf16_sum_dot", lambda a, b: (jnp.sum(a), jnp.sum(a, axis=0), a @ b, jnp.dot(a, b, preferred_element_type=jnp.float32)),
      lambda r: [nrm(r, 4, 8, dtype=bf16), nrm(r, 8, 3, dtype=bf16)])
    T("f16_sum_mean_softmax", lambda a: (jnp.sum(a), jnp.mean(a, axis=1), jax.nn.softmax(a, axis=-1)),
      lambda r: [nrm(r, 4, 8, dtype=np.float16)], opt=True)

    T("convert_f8", lambda x: (x.astype(jnp.float8_e4m3fn), x.astype(jnp.float8_e5m2),
                               x.astype(jnp.float8_e4m3fn).astype(jnp.float32), x.astype(jnp.float8_e5m2).astype(jnp.float32)),
      lambda r: [np.concatenate([nrm(r, 12) * 4, np.array([0.0, -0.0, 448, 464, 500, 57344, 1e-3, np.inf, np.nan, -1.0625, 1.0625, 3.0],
                                                          np.float32)])])
    T("f8_arith", lambda a, b: (a.astype(jnp.float32) * b.astype(jnp.float32), (a.astype(jnp.float32) + 1).astype(a.dtype)),
      lambda r: [nrm(r, 8).astype(ml_dtypes.float8_e4m3fn), nrm(r, 8).astype(ml_dtypes.float8_e5m2)])
    T("fft_c64", lambda x, y: (jnp.fft.fft(x), jnp.fft.ifft(x), jnp.fft.rfft(y), jnp.fft.irfft(jnp.fft.rfft(y)), jnp.fft.fft2(x.reshape(2, 4))),
      lambda r: [c64(r, 8), nrm(r, 8)])

    # ---------------- shape ops ----------------
    T("broadcast_in_dim", lambda x, s: (lax.broadcast_in_dim(x, (2, 3, 4), (1,)), jnp.broadcast_to(s, (2, 2)), lax.broadcast(x, (2,))),
      lambda r: [f32(r, 3), np.float32(2.5)])
    T("reshape_various", lambda x: (x.reshape(6, 4), x.reshape(-1), x.reshape(2, 3, 2, 2), lax.reshape(x, (4, 6), dimensions=(1, 0))),
      lambda r: [f32(r, 6, 4)])
    T("transpose_3d", lambda x: (lax.transpose(x, (2, 0, 1)), x.T, jnp.swapaxes(x, 0, 1)),
      lambda r: [f32(r, 2, 3, 4)])
    T("slice_strided", lambda x: (lax.slice(x, (1, 0), (5, 8), (2, 3)), x[::-1, 1:7:2], x[2], x[:, -1]),
      lambda r: [f32(r, 6, 8)])
    T("dynamic_slice_oob", lambda x, i, j: (lax.dynamic_slice(x, (i, j), (2, 3)), lax.dynamic_slice_in_dim(x, j, 4, axis=1),
                                            lax.dynamic_index_in_dim(x, i, axis=0, keepdims=False)),
      lambda r: [f32(r, 5, 6), np.int32(4), np.int32(-7)])
    T("dynamic_slice_oob2", lambda x, i, j: lax.dynamic_slice(x, (i, j), (3, 2)),
      lambda r: [nrm(r, 4, 4), np.int32(100), np.int32(2)])
    T("dynamic_update_slice_oob", lambda x, u, i, j: (lax.dynamic_update_slice(x, u, (i, j)), lax.dynamic_update_slice(x, u, (j, i))),
      lambda r: [f32(r, 5, 6), nrm(r, 2, 3), np.int32(4), np.int32(-2)], opt=True)
    T("concatenate", lambda a, b, c: (jnp.concatenate([a, b, c], axis=1), jnp.concatenate([a, a], axis=0), jnp.stack([a, a])),
      lambda r: [f32(r, 2, 3), f32(r, 2, 1), f32(r, 2, 4)])
    T("pad_neg_interior", lambda x, v: (lax.pad(x, v, ((1, 2, 1), (-1, 3, 2))), lax.pad(x, v, ((-1, -1, 0), (0, 0, 1))),
                                        lax.pad(x, np.float32(0), ((2, -3, 3), (-2, 1, 0))), jnp.pad(x, 1, mode="edge")),
      lambda r: [f32(r, 3, 4), np.float32(-9.0)], opt=True)
    T("rev", lambda x: (lax.rev(x, (0,)), lax.rev(x, (0, 2)), jnp.flip(x)),
      lambda r: [f32(r, 2, 3, 4)])
    T("iota_arange", lambda x: (jnp.arange(12, dtype=jnp.int32).reshape(3, 4) + x, lax.broadcasted_iota(jnp.float32, (2, 3), 1),
                                jnp.linspace(0.0, 1.0, 5), jnp.eye(3)),
      lambda r: [iv(r, (3, 4))])
    T("iota_no_params", lambda: (lax.iota(jnp.int32, 6), lax.broadcasted_iota(jnp.uint8, (3, 4), 0), jnp.tri(4, 3, 1)),
      lambda r: [])
    T("expand_squeeze_tile", lambda x: (jnp.expand_dims(x, 1), jnp.squeeze(x[None]), jnp.tile(x, (2, 1)), jnp.repeat(x, 2, axis=0)),
      lambda r: [f32(r, 2, 3)])
    T("optimization_barrier", lambda x, y: lax.optimization_barrier((x * 2, y + 1)),
      lambda r: [f32(r, 3, 4), iv(r, (5,))])

    # ---------------- gather ----------------
    T("gather_take", lambda x, i: (jnp.take(x, i, axis=0), jnp.take(x, i, axis=1, mode="clip"), jnp.take(x, i, axis=1)),
      lambda r: [f32(r, 5, 6), s32([0, 4, 2, 2, -1, 7, -9])], opt=True)
    T("gather_fancy", lambda x, i, j: (x[i], x[i, j], x[:, j], x[i[:, None], j[None, :]]),
      lambda r: [f32(r, 5, 6), s32([1, 0, 4, -1, 3]), s32([5, 2, 0, 1, -6])])
    T("gather_take_along_axis", lambda x, i: (jnp.take_along_axis(x, i, axis=1), jnp.take_along_axis(x, i.T[:3, :4] % 5, axis=0)),
      lambda r: [f32(r, 5, 4), r.integers(0, 4, (5, 4)).astype(np.int32)])
    T("gather_vmap_batched", lambda x, i: jax.vmap(lambda a, b: a[b])(x, i),
      lambda r: [f32(r, 3, 6, 2), r.integers(-6, 6, (3, 4)).astype(np.int32)])
    T("gather_lax_direct", lambda x, i: lax.gather(
        x, i, lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1)),
        slice_sizes=(1, 3), mode=lax.GatherScatterMode.CLIP),
      lambda r: [f32(r, 5, 7), s32([[0, 0], [4, 6], [2, 3], [-1, 2], [9, 9]])])
    T("gather_embedding", lambda e, ids: e[ids].sum(axis=1),
      lambda r: [nrm(r, 10, 4), r.integers(0, 10, (3, 5)).astype(np.int32)])

    # ---------------- scatter ----------------
    T("scatter_set", lambda x, i, u: x.at[i].set(u),
      lambda r: [f32(r, 6, 3), s32([4, 0, 2]), nrm(r, 3, 3)])
    T("scatter_add_dups", lambda x, i, u: (x.at[i].add(u), jnp.zeros(5, jnp.int32).at[i].add(1)),
      lambda r: [np.round(nrm(r, 5) * 4), s32([1, 3, 1, 1, 0, 3]), np.round(nrm(r, 6) * 4)], opt=True)
    T("scatter_mul_min_max", lambda x, i, u: (x.at[i].mul(u), x.at[i].min(u), x.at[i].max(u)),
      lambda r: [f32(r, 8), s32([2, 5, 2, 7]), f32(r, 4)])
    T("scatter_drop_oob", lambda x, i, u: (x.at[i].add(u, mode="drop"), x.at[i].set(u, mode="clip"), x.at[i].get(mode="fill", fill_value=-1.0)),
      lambda r: [nrm(r, 6), s32([0, 9, -1, 3]), nrm(r, 4)])
    T("scatter_2d_rows", lambda x, i, j, u: x.at[i, j].add(u),
      lambda r: [nrm(r, 4, 5), s32([0, 3, 3, 1]), s32([4, 4, 4, 0]), nrm(r, 4)])
    T("scatter_vmap", lambda x, i, u: jax.vmap(lambda a, b, c: a.at[b].add(c))(x, i, u),
      lambda r: [nrm(r, 3, 6), r.integers(0, 6, (3, 4)).astype(np.int32), nrm(r, 3, 4)])
    T("scatter_int_add", lambda x, i, u: (x.at[i].add(u), x.at[i].max(u)),
      lambda r: [iv(r, (6,)), s32([1, 1, 2, 5, 5]), iv(r, (5,))])
    T("segment_sum", lambda d, s: jax.ops.segment_sum(d, s, num_segments=4),
      lambda r: [nrm(r, 10, 2), r.integers(0, 4, 10).astype(np.int32)])

    # ---------------- reductions ----------------
    T("reduce_sum_prod", lambda x: (jnp.sum(x), jnp.sum(x, axis=0), jnp.prod(x, axis=1), jnp.sum(x, axis=(0, 2))),
      lambda r: [nrm(r, 3, 4, 5)], opt=True)
    T("reduce_max_min_nan", lambda x: (jnp.max(x), jnp.min(x, axis=1), jnp.max(x, axis=0), jnp.nanmax(x)),
      lambda r: [f32(r, 5, 6)])
    T("reduce_argmax_argmin", lambda x, y: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), jnp.argmax(y), jnp.argmin(y, axis=1)),
      lambda r: [np.array([[1, 3, 3, 2], [np.nan, 1, 2, np.nan], [-np.inf, -np.inf, 0, 0], [5, 4, 5, 4]], np.float32),
                 iv(r, (4, 5), lo=-3, hi=3)], opt=True)
    T("reduce_any_all", lambda p, x: (jnp.any(p), jnp.all(p, axis=1), jnp.any(x > 1.0, axis=0), jnp.all(x == x)),
      lambda r: [bv(r, (4, 5)), f32(r, 4, 5)])
    T("reduce_int", lambda x, u: (jnp.sum(x), jnp.max(x, axis=0), jnp.min(u), jnp.prod(x[:2], axis=0), jnp.sum(u, dtype=jnp.uint32)),
      lambda r: [iv(r, (4, 5)), iv(r, (4, 5), np.uint8, lo=0, hi=255)])
    T("reduce_variadic", lambda x, i: lax.reduce(
        (x, i), (np.float32(-np.inf), np.int32(0)),
        lambda a, b: (lax.max(a[0], b[0]), lax.select(a[0] >= b[0], a[1], b[1])), (1,)),
      lambda r: [nrm(r, 4, 6), np.tile(np.arange(6, dtype=np.int32), (4, 1))])
    T("reduce_variadic_3", lambda x, y, z: lax.reduce((x, y, z), (np.float32(0), np.float32(1), np.int32(0)),
                                                      lambda a, b: (a[0] + b[0], a[1] * b[1], a[2] ^ b[2]), (0,)),
      lambda r: [nrm(r, 5, 3), nrm(r, 5, 3), iv(r, (5, 3))])
    T("mean_var_std", lambda x: (jnp.mean(x), jnp.var(x, axis=0), jnp.std(x, axis=1), jnp.sqrt(jnp.sum(x * x))),
      lambda r: [nrm(r, 4, 6)])
    T("logsumexp", lambda x: (jax.nn.logsumexp(x, axis=-1), jax.scipy.special.logsumexp(x)),
      lambda r: [np.concatenate([nrm(r, 3, 6) * 10, np.array([[-np.inf] * 6], np.float32)])], opt=True)
    T("softmax", lambda x: (jax.nn.softmax(x, axis=-1), jax.nn.log_softmax(x, axis=0)),
      lambda r: [nrm(r, 4, 7) * 5], opt=True)

    # ---------------- reduce_window / cumulative ----------------
    T("cumsum_cumprod_cummax", lambda x: (lax.cumsum(x, axis=1), lax.cumprod(x, axis=0), lax.cummax(x, axis=1), lax.cummin(x, axis=0, reverse=True),
                                          lax.cumsum(x, axis=0, reverse=True)),
      lambda r: [f32(r, 4, 6, special=False)], opt=True)
    T("cumsum_jnp_int", lambda x: (jnp.cumsum(x), jnp.cumprod(x[:6]), lax.cumlogsumexp(x.astype(jnp.float32))),
      lambda r: [iv(r, (12,), lo=-5, hi=5)])
    T("reduce_window_cumsum_manual", lambda x: lax.reduce_window(x, np.float32(0), lax.add, (x.shape[0],), (1,), [(x.shape[0] - 1, 0)]),
      lambda r: [nrm(r, 10)])
    T("max_pool_2d", lambda x: (lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
                                lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")),
      lambda r: [f32(r, 2, 6, 6, 2)])
    T("avg_pool_2d", lambda x: (lax.reduce_window(x, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 2, 2), "VALID") / 4,
                                lax.reduce_window(x, 0.0, lax.add, (1, 1, 3, 3), (1, 1, 1, 1), ((0, 0), (0, 0), (1, 1), (1, 1)))),
      lambda r: [nrm(r, 2, 2, 5, 5)])
    T("reduce_window_dilated", lambda x: lax.reduce_window(x, np.float32(0), lax.add, (2, 2), (1, 2), ((1, 0), (0, 1)),
                                                           base_dilation=(2, 1), window_dilation=(1, 2)),
      lambda r: [nrm(r, 4, 6)])
    T("max_pool_grad", lambda x: jax.grad(lambda y: jnp.sum(lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") ** 2))(x),
      lambda r: [nrm(r, 2, 4, 4, 3)], opt=True)
    T("max_pool_grad_overlap", lambda x, g: jax.vjp(lambda y: lax.reduce_window(y, -jnp.inf, lax.max, (3, 3), (1, 1), "SAME"), x)[1](g),
      lambda r: [np.round(nrm(r, 5, 5) * 2), nrm(r, 5, 5)])
    T("avg_pool_grad", lambda x: jax.grad(lambda y: jnp.sum(jnp.sin(lax.reduce_window(y, 0.0, lax.add, (2, 2), (1, 1), "VALID"))))(x),
      lambda r: [nrm(r, 5, 5)])

    # ---------------- dot_general ----------------
    T("dot_matmul", lambda a, b: a @ b, lambda r: [nrm(r, 4, 6), nrm(r, 6, 3)], opt=True)
    T("dot_vec_mat", lambda v, m, w: (v @ m, m @ w, jnp.dot(v, v), jnp.outer(v, w)),
      lambda r: [nrm(r, 5), nrm(r, 5, 3), nrm(r, 3)])
    T("dot_general_batch", lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
      lambda r: [nrm(r, 2, 3, 4), nrm(r, 2, 4, 5)], opt=True)
    T("dot_general_multi_contract", lambda a, b: lax.dot_general(a, b, (((1, 3), (2, 0)), ((0,), (1,)))),
      lambda r: [nrm(r, 2, 3, 4, 5), nrm(r, 5, 2, 3, 6)])
    T("einsum_various", lambda a, b, c: (jnp.einsum("bij,bjk->bik", a, b), jnp.einsum("bij->j", a), jnp.einsum("ij,ij->", c, c),
                                         jnp.einsum("bij,k->bkji", a, c[0])),
      lambda r: [nrm(r, 2, 3, 4), nrm(r, 2, 4, 2), nrm(r, 3, 4)])
    T("dot_int", lambda a, b, c, d: (a @ b, jnp.dot(c, d, preferred_element_type=jnp.int32)),
      lambda r: [iv(r, (3, 4), lo=-100, hi=100), iv(r, (4, 2), lo=-100, hi=100),
                 iv(r, (3, 4), np.int8, lo=-128, hi=127), iv(r, (4, 2), np.int8, lo=-128, hi=127)])
    T("dot_precision_highest", lambda a, b: jnp.matmul(a, b, precision=lax.Precision.HIGHEST),
      lambda r: [nrm(r, 3, 5), nrm(r, 5, 2)])

    # ---------------- convolution ----------------
    def conv(x, w, strides=(1, 1), pad="SAME", lhs_d=None, rhs_d=None, dn=("NHWC", "HWIO", "NHWC"), fgc=1, bgc=1):
        return lax.conv_general_dilated(x, w, strides, pad, lhs_d, rhs_d, dimension_numbers=dn,
                                        feature_group_count=fgc, batch_group_count=bgc)

    T("conv2d_nhwc_same", lambda x, w: conv(x, w), lambda r: [nrm(r, 2, 6, 6, 3), nrm(r, 3, 3, 3, 4)], opt=True)
    T("conv2d_nchw_valid_stride", lambda x, w: conv(x, w, (2, 2), "VALID", dn=("NCHW", "OIHW", "NCHW")),
      lambda r: [nrm(r, 2, 3, 7, 7), nrm(r, 4, 3, 3, 3)])
    T("conv2d_explicit_pad_asym", lambda x, w: conv(x, w, (1, 2), ((2, 0), (1, 3))),
      lambda r: [nrm(r, 1, 5, 6, 2), nrm(r, 2, 3, 2, 3)])
    T("conv2d_lhs_dilation", lambda x, w: conv(x, w, (1, 1), ((1, 1), (2, 2)), lhs_d=(2, 2)),
      lambda r: [nrm(r, 1, 4, 4, 2), nrm(r, 3, 3, 2, 2)])
    T("conv2d_rhs_dilation", lambda x, w: conv(x, w, (1, 1), "VALID", rhs_d=(2, 1)),
      lambda r: [nrm(r, 1, 7, 6, 2), nrm(r, 3, 2, 2, 3)])
    T("conv2d_depthwise", lambda x, w: conv(x, w, (1, 1), "SAME", fgc=4),
      lambda r: [nrm(r, 2, 5, 5, 4), nrm(r, 3, 3, 1, 8)])
    T("conv2d_grouped", lambda x, w: conv(x, w, (1, 1), "SAME", fgc=2),
      lambda r: [nrm(r, 1, 5, 5, 4), nrm(r, 3, 3, 2, 6)])
    T("conv2d_batch_group_grad", lambda x, w, g: jax.vjp(lambda ww: conv(x, ww, (1, 1), "SAME", fgc=2), w)[1](g)[0],
      lambda r: [nrm(r, 2, 5, 5, 4), nrm(r, 3, 3, 2, 6), nrm(r, 2, 5, 5, 6)], keep_unused=True)
    T("conv2d_transpose", lambda x, w: lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
      lambda r: [nrm(r, 1, 3, 3, 2), nrm(r, 3, 3, 2, 3)])
    T("conv2d_transpose_valid_kernel", lambda x, w: lax.conv_transpose(x, w, (2, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                                                     transpose_kernel=True),
      lambda r: [nrm(r, 2, 5, 6, 3), nrm(r, 3, 2, 4, 3)])
    T("conv2d_transpose_pads_dilated", lambda x, w: lax.conv_transpose(x, w, (2, 2), ((1, 2), (0, 1)), rhs_dilation=(1, 2),
                                                                     dimension_numbers=("NCHW", "OIHW", "NCHW")),
      lambda r: [nrm(r, 1, 3, 4, 4), nrm(r, 2, 3, 3, 2)])
    T("conv1d", lambda x, w: lax.conv_general_dilated(x, w, (2,), ((1, 2),), dimension_numbers=("NWC", "WIO", "NWC")),
      lambda r: [nrm(r, 2, 9, 3), nrm(r, 4, 3, 5)])
    T("conv3d", lambda x, w: lax.conv_general_dilated(x, w, (1, 2, 1), "SAME", dimension_numbers=("NDHWC", "DHWIO", "NDHWC")),
      lambda r: [nrm(r, 1, 4, 4, 4, 2), nrm(r, 2, 3, 2, 2, 3)])
    T("conv2d_int", lambda x, w: conv(x, w, (1, 1), "VALID"),
      lambda r: [iv(r, (1, 4, 4, 2), lo=-5, hi=5), iv(r, (2, 2, 2, 3), lo=-5, hi=5)])
    T("conv2d_grads", lambda x, w: jax.grad(lambda a, b: jnp.sum(jnp.tanh(conv(a, b, (2, 2), "SAME"))), argnums=(0, 1))(x, w),
      lambda r: [nrm(r, 2, 6, 6, 3), nrm(r, 3, 3, 3, 4)])

    # ---------------- control flow ----------------
    T("while_loop", lambda x, n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5 + 1.0), (np.int32(0), x)),
      lambda r: [nrm(r, 3), np.int32(5)], opt=True)
    T("while_nested", lambda n: lax.while_loop(lambda c: c[0] < n,
                                               lambda c: (c[0] + 1, lax.while_loop(lambda d: d[0] < c[0], lambda d: (d[0] + 1, d[1] + d[0]), (np.int32(0), c[1]))[1]),
                                               (np.int32(0), np.int32(0))),
      lambda r: [np.int32(6)])
    T("fori_loop", lambda x: lax.fori_loop(0, 7, lambda i, a: a * 0.9 + jnp.sin(a + i), x),
      lambda r: [nrm(r, 4)])
    T("fori_loop_dynamic_update", lambda x: lax.fori_loop(0, 5, lambda i, a: lax.dynamic_update_slice(a, jnp.full((1,), i, a.dtype) * 2, (i,)), x),
      lambda r: [nrm(r, 8)])
    T("cond_bool", lambda p, x: lax.cond(p, lambda v: jnp.sin(v) * 2, lambda v: v - 1.0, x),
      lambda r: [np.bool_(True), nrm(r, 4)], opt=True)
    T("cond_bool_false", lambda p, x, y: lax.cond(p, lambda a, b: (a + b, a), lambda a, b: (a * b, b), x, y),
      lambda r: [np.bool_(False), nrm(r, 4), nrm(r, 4)])
    T("switch_indexed", lambda i, x: (lax.switch(i, [lambda v: v + 1, lambda v: v * 2, lambda v: -v], x),
                                      lax.switch(i + 3, [lambda v: v + 1, lambda v: v * 2, lambda v: -v], x),
                                      lax.switch(i - 5, [lambda v: v + 1, lambda v: v * 2, lambda v: -v], x)),
      lambda r: [np.int32(1), nrm(r, 4)], opt=True)
    T("scan_cumulative", lambda x, c0: lax.scan(lambda c, v: (c * 0.5 + v, c + v * v), c0, x),
      lambda r: [nrm(r, 6, 3), nrm(r, 3)], opt=True)
    T("scan_rnn", lambda W, U, xs, h: lax.scan(lambda hh, xx: (jnp.tanh(hh @ W + xx @ U), jnp.sum(hh)), h, xs),
      lambda r: [nrm(r, 4, 4) * .5, nrm(r, 3, 4) * .5, nrm(r, 5, 3), nrm(r, 4)])
    T("scan_reverse_unroll", lambda xs: lax.scan(lambda c, v: (c + v, c), np.float32(0), xs, reverse=True, unroll=2),
      lambda r: [nrm(r, 7)])
    T("map_lax", lambda xs: lax.map(lambda v: jnp.sum(v ** 2), xs),
      lambda r: [nrm(r, 4, 3)])
    T("while_with_cond_inside", lambda x: lax.fori_loop(0, 6, lambda i, a: lax.cond(i % 2 == 0, lambda z: z + 1.0, lambda z: z * 2.0, a), x),
      lambda r: [nrm(r, 3)])

    # ---------------- sort / top_k ----------------
    T("sort_f32_nan", lambda x: (jnp.sort(x), jnp.sort(x, descending=True), jnp.sort(x.reshape(4, 5), axis=0)),
      lambda r: [f32(r, 20)], opt=True)
    T("argsort_stable", lambda x: (jnp.argsort(x), jnp.argsort(x, descending=True), jnp.argsort(x, stable=True)),
      lambda r: [np.round(nrm(r, 12) * 2)])
    T("sort_multi_operand", lambda k, v, w: lax.sort((k, v, w), dimension=0, is_stable=True, num_keys=1),
      lambda r: [r.integers(0, 4, 10).astype(np.int32), nrm(r, 10), iv(r, (10,), np.uint8, lo=0, hi=255)], opt=True)
    T("sort_two_keys", lambda k1, k2, v: lax.sort((k1, k2, v), dimension=0, is_stable=False, num_keys=2),
      lambda r: [r.integers(0, 3, 10).astype(np.int32), r.integers(0, 3, 10).astype(np.float32), np.arange(10, dtype=np.int32)])
    T("sort_int_unsigned_2d", lambda x, u: (jnp.sort(x, axis=1), jnp.sort(u), jnp.argsort(x, axis=0)),
      lambda r: [iv(r, (3, 6), lo=-2**31, hi=2**31 - 1), iv(r, (12,), np.uint32, lo=0, hi=2**32 - 1)])
    T("top_k", lambda x: lax.top_k(x, 3), lambda r: [f32(r, 3, 8, special=False)], opt=True)
    T("sort_bf16_bool", lambda b, p: (jnp.sort(b), jnp.sort(p)),
      lambda r: [fv(r, (10,), bf16), bv(r, (10,))])

    # ---------------- PRNG ----------------
    T("prng_key_split", lambda s: jax.random.key_data(jax.random.split(jax.random.key(s), 3)),
      lambda r: [np.int32(42)])
    T("prng_uniform", lambda s: jax.random.uniform(jax.random.key(s), (4, 5), minval=-1.0, maxval=2.0),
      lambda r: [np.int32(0)], opt=True)
    T("prng_normal", lambda s: jax.random.normal(jax.random.key(s), (12,)), lambda r: [np.int32(7)])
    T("prng_bernoulli_randint", lambda s: (jax.random.bernoulli(jax.random.key(s), 0.3, (10,)),
                                           jax.random.randint(jax.random.fold_in(jax.random.key(s), 3), (10,), -5, 17)),
      lambda r: [np.int32(123)])
    T("prng_permutation", lambda s, x: (jax.random.permutation(jax.random.key(s), x), jax.random.permutation(jax.random.key(s + 1), 10)),
      lambda r: [np.int32(5), np.arange(8, dtype=np.float32)])
    T("prng_raw_key_data", lambda k: (jax.random.uniform(jax.random.wrap_key_data(k), (6,)), jax.random.bits(jax.random.wrap_key_data(k), (4,))),
      lambda r: [np.array([0x12345678, 0x9abcdef0], np.uint32)])
    T("rng_bit_generator_threefry", lambda k: lax.rng_bit_generator(k, (4, 5), algorithm=lax.RandomAlgorithm.RNG_THREE_FRY),
      lambda r: [np.array([1, 2, 3, 4], np.uint32)], opt=True)
    T("rng_bit_generator_philox", lambda k: lax.rng_bit_generator(k, (4, 5), algorithm=lax.RandomAlgorithm.RNG_PHILOX),
      lambda r: [np.array([5, 6, 7, 8], np.uint32)])
    T("rng_bit_generator_u8_philox", lambda k: lax.rng_bit_generator(k, (9,), dtype=jnp.uint8, algorithm=lax.RandomAlgorithm.RNG_PHILOX),
      lambda r: [np.array([0, 0, 0, 1], np.uint32)])
    T("rng_bit_generator_u8_threefry", lambda k: lax.rng_bit_generator(k, (3, 3), dtype=jnp.uint8, algorithm=lax.RandomAlgorithm.RNG_THREE_FRY),
      lambda r: [np.array([9, 8, 7, 6], np.uint32)])
    T("dropout", lambda s, x: jnp.where(jax.random.bernoulli(jax.random.key(s), 0.5, x.shape), x * 2.0, 0.0),
      lambda r: [np.int32(1), nrm(r, 4, 4)])

    # ---------------- models ----------------
    def mlp_loss(params, x, y):
        w1, b1, w2, b2 = params
        h = jax.nn.relu(x @ w1 + b1)
        logits = h @ w2 + b2
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    def mlp_step(w1, b1, w2, b2, x, y):
        params = (w1, b1, w2, b2)
        loss, g = jax.value_and_grad(mlp_loss)(params, x, y)
        return tuple(p - 0.1 * gp for p, gp in zip(params, g)) + (loss,)

    def mlp_args(r):
        y = np.eye(4, dtype=np.float32)[r.integers(0, 4, 6)]
        return [nrm(r, 5, 8, scale=.5), nrm(r, 8, scale=.1), nrm(r, 8, 4, scale=.5), nrm(r, 4, scale=.1), nrm(r, 6, 5), y]

    T("mlp_train_step", mlp_step, mlp_args, opt=True)
    T("mlp_forward", lambda w1, b1, w2, b2, x, y: jax.nn.softmax(jax.nn.relu(x @ w1 + b1) @ w2 + b2) * y.sum(), mlp_args)

    def cnn_loss(w1, b1, w2, x, y):
        h = jax.nn.relu(conv(x, w1) + b1)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = h.reshape(h.shape[0], -1)
        logits = h @ w2
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    def cnn_args(r):
        return [nrm(r, 3, 3, 2, 4, scale=.4), nrm(r, 4, scale=.1), nrm(r, 36, 3, scale=.2), nrm(r, 2, 6, 6, 2),
                np.eye(3, dtype=np.float32)[[0, 2]]]

    T("cnn_fwd_bwd", lambda w1, b1, w2, x, y: jax.value_and_grad(cnn_loss, argnums=(0, 1, 2))(w1, b1, w2, x, y), cnn_args, opt=True)

    def attention(q, k, v):
        s = jnp.einsum("bqd,bkd->bqk", q, k) / np.sqrt(q.shape[-1]).astype(np.float32)
        return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, axis=-1), v)

    T("attention", attention, lambda r: [nrm(r, 2, 4, 8), nrm(r, 2, 5, 8), nrm(r, 2, 5, 8)], opt=True)

    def mha_causal(x, wq, wk, wv, wo):
        B, L, D = x.shape
        H = 2
        q = (x @ wq).reshape(B, L, H, D // H)
        k = (x @ wk).reshape(B, L, H, D // H)
        v = (x @ wv).reshape(B, L, H, D // H)
        s = jnp.einsum("blhd,bmhd->bhlm", q, k) / np.float32(np.sqrt(D // H))
        mask = jnp.tril(jnp.ones((L, L), bool))
        s = jnp.where(mask, s, -jnp.inf)
        o = jnp.einsum("bhlm,bmhd->blhd", jax.nn.softmax(s, axis=-1), v).reshape(B, L, D)
        return o @ wo

    T("attention_mha_causal", mha_causal, lambda r: [nrm(r, 2, 5, 8)] + [nrm(r, 8, 8, scale=.3) for _ in range(4)])
    T("attention_grad", lambda q, k, v: jax.grad(lambda a, b, c: jnp.sum(attention(a, b, c) ** 2), argnums=(0, 1, 2))(q, k, v),
      lambda r: [nrm(r, 1, 3, 4), nrm(r, 1, 4, 4), nrm(r, 1, 4, 4)])

    def layernorm(x, g, b):
        m = jnp.mean(x, axis=-1, keepdims=True)
        v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
        return (x - m) * lax.rsqrt(v + 1e-5) * g + b

    T("layernorm", layernorm, lambda r: [nrm(r, 4, 16) * 3 + 1, nrm(r, 16), nrm(r, 16)], opt=True)
    T("layernorm_grad", lambda x, g, b: jax.grad(lambda *a: jnp.sum(layernorm(*a) ** 3), argnums=(0, 1, 2))(x, g, b),
      lambda r: [nrm(r, 3, 8), nrm(r, 8), nrm(r, 8)])
    T("batchnorm_train", lambda x, g, b: (lambda m, v: ((x - m) / jnp.sqrt(v + 1e-3) * g + b, m, v))(jnp.mean(x, (0, 1, 2)), jnp.var(x, (0, 1, 2))),
      lambda r: [nrm(r, 2, 3, 3, 4), nrm(r, 4), nrm(r, 4)])
    T("cross_entropy_int_labels", lambda logits, lbl: -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), lbl[:, None], axis=1)),
      lambda r: [nrm(r, 6, 5) * 2, r.integers(0, 5, 6).astype(np.int32)])
    T("keep_unused_args", lambda x, unused, y: x + y,
      lambda r: [nrm(r, 3), nrm(r, 2), nrm(r, 3)], keep_unused=True)


def build_table_x64():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def i64(x):
        return np.asarray(x, dtype=np.int64)

    T("x64_f64_arith", lambda x, y: (x + y, x * y, x / y, jnp.sqrt(jnp.abs(x)), jnp.exp(x), jnp.log(jnp.abs(y)), lax.rem(x, y), jnp.maximum(x, y)),
      lambda r: [fv(r, (4, 6), np.float64), fv(r, (4, 6), np.float64)], x64=True, opt=True)
    T("x64_f64_unary", lambda x: (jnp.sin(x), jnp.tanh(x), lax.erf(x), jnp.floor(x), lax.round(x), jnp.expm1(x), jnp.log1p(x), lax.cbrt(x)),
      lambda r: [fv(r, (20,), np.float64)], x64=True)
    T("x64_f64_compare", lambda x, y: (x < y, x == y, x != y, x >= y),
      lambda r: [fv(r, (12,), np.float64), fv(r, (12,), np.float64)], x64=True)
    T("x64_s64_arith", lambda x, y: (x + y, x - y, x * y, lax.max(x, y), x & y, x ^ y),
      lambda r: [iv(r, (10,), np.int64, lo=-2**63, hi=2**63 - 1), iv(r, (10,), np.int64, lo=-2**63, hi=2**63 - 1)], x64=True)
    T("x64_s64_div_rem_edge", lambda x, y: (lax.div(x, y), lax.rem(x, y)),
      lambda r: [i64([7, -7, -2**63, -2**63, 5, 2**63 - 1, 0, 13]), i64([2, 2, -1, 1, 0, -1, 0, -4])], x64=True)
    T("x64_s64_shifts", lambda x, s: (lax.shift_left(x, s), lax.shift_right_arithmetic(x, s), lax.shift_right_logical(x, s)),
      lambda r: [iv(r, (10,), np.int64, lo=-2**63, hi=2**63 - 1), i64([0, 1, 63, 64, 65, -1, 32, 31, 100, 7])], x64=True)
    T("x64_u64_arith", lambda x, y: (x + y, x * y, lax.div(x, y), lax.rem(x, y), x >> np.uint64(3), x < y, lax.clz(x), lax.population_count(y)),
      lambda r: [iv(r, (10,), np.uint64, lo=0, hi=2**64 - 1), np.concatenate([iv(r, (8,), np.uint64, lo=0, hi=2**64 - 1), np.array([0, 1], np.uint64)])],
      x64=True)
    T("x64_converts", lambda d, l, u, f: (d.astype(jnp.float32), f.astype(jnp.float64), l.astype(jnp.float64), d.astype(jnp.int64) * 0 + jnp.trunc(d).astype(jnp.int64),
                                         u.astype(jnp.float32), l.astype(jnp.int32), lax.convert_element_type(f, jnp.uint64), d.astype(jnp.bfloat16), d.astype(jnp.float16)),
      lambda r: [fv(r, (12,), np.float64, lo=-1e6, hi=1e6, special=False), iv(r, (12,), np.int64, lo=-2**63, hi=2**63 - 1),
                 iv(r, (12,), np.uint64, lo=0, hi=2**64 - 1), fv(r, (12,), np.float32, lo=0, hi=1e9, special=False)], x64=True)
    T("x64_convert_f64_rounding", lambda d: (d.astype(jnp.float32), d.astype(jnp.bfloat16), d.astype(jnp.float16)),
      lambda r: [np.array([1.0000000596046448, 1.0000001788139343, 1 + 2**-24 + 2**-50, 1e-46, 1e-300, 1e300, 3.4028235e38 * 1.0000001,
                           65520.0, 1.0 + 2**-9, 1.0 + 2**-9 + 2**-40, np.nan, -np.inf], np.float64)], x64=True)
    T("x64_bitcast", lambda d, l: (lax.bitcast_convert_type(d, jnp.int64), lax.bitcast_convert_type(l, jnp.float64), lax.bitcast_convert_type(d, jnp.uint32)),
      lambda r: [fv(r, (6,), np.float64), iv(r, (6,), np.int64, lo=-2**63, hi=2**63 - 1)], x64=True)
    T("x64_dot_sum", lambda a, b: (a @ b, jnp.sum(a), jnp.prod(b, axis=1), jnp.cumsum(a, axis=1)),
      lambda r: [fv(r, (3, 4), np.float64, special=False), fv(r, (4, 2), np.float64, special=False)], x64=True, opt=True)
    T("x64_argmax_iota", lambda x: (jnp.argmax(x), jnp.arange(5), jnp.argsort(x)),
      lambda r: [fv(r, (8,), np.float64, special=False)], x64=True)
    T("x64_s64_sum_cumsum", lambda x: (jnp.sum(x), jnp.cumsum(x), jnp.max(x)),
      lambda r: [iv(r, (10,), np.int64, lo=-2**40, hi=2**40)], x64=True)
    T("x64_rng_bit_generator_u64", lambda k: (lax.rng_bit_generator(k, (5,), dtype=jnp.uint64, algorithm=lax.RandomAlgorithm.RNG_PHILOX),
                                              lax.rng_bit_generator(k, (3,), dtype=jnp.uint64, algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)),
      lambda r: [np.array([1, 2, 3, 4], np.uint32)], x64=True)
    T("x64_prng_uniform_f64", lambda s: (jax.random.uniform(jax.random.key(s), (6,), dtype=jnp.float64), jax.random.normal(jax.random.key(s), (4,), dtype=jnp.float64)),
      lambda r: [np.int64(3)], x64=True)
    T("x64_c128_arith", lambda x, y: (x * y, x / y, jnp.abs(x), x + y),
      lambda r: [(nrm(r, 5).astype(np.float64) + 1j * nrm(r, 5)).astype(np.complex128), (nrm(r, 5).astype(np.float64) + 1j * nrm(r, 5)).astype(np.complex128)],
      x64=True)
    T("x64_mixed_precision_mlp", lambda x, w: jnp.tanh(x @ w).astype(jnp.float32).sum(),
      lambda r: [fv(r, (3, 4), np.float64, special=False), fv(r, (4, 5), np.float64, special=False)], x64=True)
    T("x64_reduce_precision_f64", lambda d: (lax.reduce_precision(d, 8, 23), lax.reduce_precision(d, 11, 10)),
      lambda r: [np.concatenate([fv(r, (10,), np.float64), np.array([1e-310, 1e300, 1 + 2**-24, 1 + 2**-11 + 2**-30], np.float64)])], x64=True)


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------

def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


@np.errstate(all="ignore")
def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc" or a.dtype.kind == "V" or str(a.dtype) in ("bfloat16",):
        try:
            return np.array_equal(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64),
                                  b.astype(np.complex128 if b.dtype.kind == "c" else np.float64), equal_nan=True)
        except Exception:  # noqa: BLE001
            return np.array_equal(a, b)
    return np.array_equal(a, b)


def check_specs(what, specs, arrays):
    if len(specs) != len(arrays):
        raise AssertionError("%s: module has %d, we have %d" % (what, len(specs), len(arrays)))
    for k, ((dt, sh), a) in enumerate(zip(specs, arrays)):
        if np.dtype(dt) != a.dtype or tuple(sh) != a.shape:
            raise AssertionError("%s %d: module %s%s vs array %s%s" % (what, k, dt, sh, a.dtype, a.shape))


CUSTOM_CALL_RE = re.compile(r'custom_call_target="([^"]+)"')


def gen_jax_entry(e, log, unexec, jobs):
    """Write jax/NAME.{hlo,npz} (and jax_opt/ if e.opt); append re-run jobs."""
    import jax

    args = [np.asarray(a) for a in e.args(np.random.default_rng(seed_of(e.name)))]
    jf = jax.jit(e.fn, keep_unused=e.keep_unused)
    lowered = jf.lower(*args)
    text = lowered.as_text(dialect="hlo")
    outs = [np.asarray(o) for o in jax.tree_util.tree_leaves(jf(*args))]
    check_specs(e.name + " param", xc.entry_param_specs(text), args)
    check_specs(e.name + " result", xc.entry_result_specs(text), outs)
    cc = CUSTOM_CALL_RE.findall(text)
    if cc:
        raise AssertionError("%s: lowered HLO has custom-calls %s" % (e.name, cc))
    hlo = os.path.join(JAX_DIR, e.name + ".hlo")
    with open(hlo, "w") as fh:
        fh.write(text)
    npz = os.path.join(JAX_DIR, e.name + ".npz")
    xc.save_npz(npz, args, outs)
    # cross-check later: executing the *text* with XLA gives the same outputs
    jobs.append(("jax/" + e.name, hlo, npz, outs))
    if e.opt:
        ctext = lowered.compile().as_text()
        try:
            check_specs(e.name + " opt param", xc.entry_param_specs(ctext), args)
            check_specs(e.name + " opt result", xc.entry_result_specs(ctext), outs)
        except Exception as ex:  # noqa: BLE001
            log.append("SKIP opt %s: %s" % (e.name, str(ex).splitlines()[0][:200]))
            return
        ohlo = os.path.join(OPT_DIR, e.name + ".hlo")
        with open(ohlo, "w") as fh:
            fh.write(ctext)
        onpz = os.path.join(OPT_DIR, e.name + ".npz")
        xc.save_npz(onpz, args, outs)
        cc = sorted(set(CUSTOM_CALL_RE.findall(ctext)))
        if cc:
            unexec.append("%s\tcustom-call %s" % (e.name, ",".join(cc)))
        jobs.append(("jax_opt/" + e.name, ohlo, onpz, outs))


def verify_rerun(jobs, log):
    """Re-execute written HLO text with XLA (isolated) and compare outputs."""
    tmp = tempfile.mkdtemp(prefix="xla_rerun_")
    try:
        js = [(hlo, npz, os.path.join(tmp, "%d.npz" % i)) for i, (_, hlo, npz, _) in enumerate(jobs)]
        res = xc.run_isolated(js)
        for (label, _, _, outs), (_, _, outp), err in zip(jobs, js, res):
            if err:
                log.append("NOTE %s: XLA could not re-run the text: %s" % (label, err))
                continue
            _, rt = xc.load_npz(outp)
            if len(rt) != len(outs) or not all(same(a, b) for a, b in zip(rt, outs)):
                bad = [k for k, (a, b) in enumerate(zip(rt, outs)) if not same(a, b)]
                log.append("NOTE %s: re-running the text gives different outputs %s" % (label, bad))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_jax_pass(x64, only, unexec_file=None):
    import jax

    jax.config.update("jax_enable_x64", bool(x64))
    xc.ENABLE_X64 = bool(x64)
    if x64:
        build_table_x64()
    else:
        build_table()
    os.makedirs(JAX_DIR, exist_ok=True)
    os.makedirs(OPT_DIR, exist_ok=True)
    log, unexec, failed, jobs = [], [], [], []
    n = 0
    for e in TABLE:
        if only and not re.search(only, e.name):
            continue
        try:
            gen_jax_entry(e, log, unexec, jobs)
            n += 1
        except Exception as ex:  # noqa: BLE001
            failed.append(e.name)
            print("FAILED %s: %s: %s" % (e.name, type(ex).__name__, str(ex)[:500]), file=sys.stderr)
    verify_rerun(jobs, log)
    for line in log:
        print(line)
    tag = "x64" if x64 else "x32"
    if unexec_file:
        with open(unexec_file, "w") as fh:
            fh.write("".join(u + "\n" for u in unexec))
    else:
        for u in unexec:
            print("UNEXECUTABLE " + u)
    print("pass %s: %d entries written, %d failed %s" % (tag, n, len(failed), failed))
    return 1 if failed else 0


# Ops that make a parser case non-runnable / non-deterministic on one CPU.
PC_SKIP_RE = re.compile(
    r"\b(all-reduce|all-gather|all-to-all|collective-permute|collective-broadcast|reduce-scatter|"
    r"ragged-all-to-all|send|send-done|recv|recv-done|infeed|outfeed|custom-call|async-start|"
    r"async-update|async-done|[a-z\-]+-start|[a-z\-]+-done|rng|rng-get-and-update-state|"
    r"partition-id|replica-id|domain|add-dependency|after-all|"
    r"dynamic-reshape|set-dimension-size|get-dimension-size)\(")


# Parser cases whose result XLA leaves implementation-defined (a reduction init that is not the reducer's
# identity): XLA:CPU's answer there is no reference for anyone.
PC_IMPLEMENTATION_DEFINED = {
    "042_ReduceWindowScalar": "implementation-defined: init value 1 is not the identity of add",
    "043_ReduceWindowVariadic": "implementation-defined: init value 1 is not the identity of add",
}


# Hand-written HLO for opcodes/forms that jax never emits (run with XLA in the
# "hlo" pass; written to tests/corpus/hlo/NAME.{hlo,npz}).
HANDWRITTEN = [
    ("logistic_f32", """HloModule logistic_f32

ENTRY main {
  p = f32[24] parameter(0)
  ROOT l = f32[24] logistic(p)
}
""", lambda r: [np.concatenate([f32(r, 4), np.array([0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 20, -20, 88, -88, 100, -100,
                                                      1e-8, -1e-8, 0.5, -0.5, 5, -5, 3e38, -3e38], np.float32)])]),
    ("logistic_f16_bf16", """HloModule logistic_half

ENTRY main {
  a = f16[10] parameter(0)
  b = bf16[10] parameter(1)
  la = f16[10] logistic(a)
  lb = bf16[10] logistic(b)
  ROOT t = (f16[10], bf16[10]) tuple(la, lb)
}
""", lambda r: [fv(r, (10,), np.float16), fv(r, (10,), __import__("ml_dtypes").bfloat16)]),
    ("map_binary", """HloModule map_binary

add_mul {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  s = f32[] add(x, y)
  ROOT m = f32[] multiply(s, y)
}

ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[2,3] parameter(1)
  ROOT m = f32[2,3] map(a, b), dimensions={0,1}, to_apply=add_mul
}
""", lambda r: [nrm(r, 2, 3), nrm(r, 2, 3)]),
    ("reduce_window_variadic_argmax", """HloModule rw_variadic

argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GE
  v = f32[] select(gt, av, bv)
  i = s32[] select(gt, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}

ENTRY main {
  x = f32[9] parameter(0)
  idx = s32[9] iota(), iota_dimension=0
  ninf = f32[] constant(-inf)
  zero = s32[] constant(-1)
  ROOT r = (f32[4], s32[4]) reduce-window(x, idx, ninf, zero), window={size=3 stride=2 pad=0_1}, to_apply=argmax
}
""", lambda r: [nrm(r, 9)]),
    ("compare_totalorder", """HloModule cmp_total

ENTRY main {
  a = f32[10] parameter(0)
  b = f32[10] parameter(1)
  lt = pred[10] compare(a, b), direction=LT, type=TOTALORDER
  eq = pred[10] compare(a, b), direction=EQ, type=TOTALORDER
  ge = pred[10] compare(a, b), direction=GE, type=TOTALORDER
  flt = pred[10] compare(a, b), direction=LT, type=FLOAT
  ROOT t = (pred[10], pred[10], pred[10], pred[10]) tuple(lt, eq, ge, flt)
}
""", lambda r: [np.array([-0.0, 0.0, np.nan, -np.nan, 1, -np.inf, np.nan, 2, -1, 0.0], np.float32),
                np.array([0.0, -0.0, 1, 1, np.nan, -np.nan, np.nan, 2, -2, 0.0], np.float32)]),
    ("clamp_scalar_bounds", """HloModule clamp_scalar

ENTRY main {
  lo = f32[] parameter(0)
  x = f32[12] parameter(1)
  hi = f32[] parameter(2)
  ROOT c = f32[12] clamp(lo, x, hi)
}
""", lambda r: [np.float32(-1), f32(r, 12), np.float32(2)]),
    ("layouts_nondefault", """HloModule layouts, entry_computation_layout={(f32[3,4]{0,1}, f32[4,2]{1,0})->f32[3,2]{0,1}}

ENTRY main {
  a = f32[3,4]{0,1} parameter(0)
  b = f32[4,2]{1,0} parameter(1)
  c = f32[3,4]{1,0} copy(a)
  d = f32[3,2]{0,1} dot(c, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT e = f32[3,2]{0,1} add(d, d)
}
""", lambda r: [nrm(r, 3, 4), nrm(r, 4, 2)]),
    ("tuple_nested_result", """HloModule nested

ENTRY main {
  a = s32[3] parameter(0)
  b = f32[] parameter(1)
  n = s32[3] negate(a)
  t1 = (s32[3], f32[]) tuple(n, b)
  e = () tuple()
  ROOT t = ((s32[3], f32[]), s32[3], ()) tuple(t1, a, e)
}
""", lambda r: [iv(r, (3,)), np.float32(1.5)]),
    ("int4_convert", """HloModule int4

ENTRY main {
  a = s8[8] parameter(0)
  c = s4[8] convert(a)
  d = s32[8] convert(c)
  u = u4[8] convert(a)
  e = s32[8] convert(u)
  ROOT t = (s32[8], s32[8]) tuple(d, e)
}
""", lambda r: [np.array([-8, -9, 7, 8, 15, 16, -1, 0], np.int8)]),
]


PC_MAX_ELEMENTS = 1 << 16  # keep the corpus small: params + results


def run_hlo_pass(only):
    os.makedirs(TF_DIR, exist_ok=True)
    os.makedirs(PC_DIR, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="xla_hlo_")
    try:
        _run_hlo_pass(only, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _run_hlo_pass(only, tmp):
    # TF mobilenet cluster (no expected outputs shipped with it)
    tfp = os.path.join(SHARED, "tf_mobilenet_cluster.hlo")
    if os.path.exists(tfp) and (not only or re.search(only, "tf_mobilenet_cluster")):
        text = open(tfp).read()
        specs = xc.entry_param_specs(text)
        rng = np.random.default_rng(seed_of("tf_mobilenet_cluster"))
        args = []
        for dt, sh in specs:
            if len(sh) == 1:      # biases / batch-norm scale, offset, mean, variance
                a = rng.uniform(0.5, 1.5, sh)
            elif sh[0] == 1 and len(sh) == 4 and sh[-1] == 3 and sh[1] > 8:  # image
                a = rng.uniform(0.0, 1.0, sh)
            else:                  # weights
                a = rng.standard_normal(sh) * (1.0 / np.sqrt(np.prod(sh[:-1])))
            args.append(a.astype(dt))
        inp, outp = os.path.join(tmp, "tf_in.npz"), os.path.join(tmp, "tf_out.npz")
        xc.save_npz(inp, args)
        err = xc.run_isolated([(tfp, inp, outp)])[0]
        if err:
            raise RuntimeError("tf_mobilenet_cluster: " + err)
        _, outs = xc.load_npz(outp)
        check_specs("tf result", xc.entry_result_specs(text), outs)
        assert all(np.isfinite(o).all() for o in outs), "tf outputs not finite"
        xc.save_npz(os.path.join(TF_DIR, "tf_mobilenet_cluster.npz"), args, outs)
        print("tf_mobilenet_cluster: %d args, outs %s" % (len(args), [o.shape for o in outs]))
    # hand-written modules
    hw_jobs = []
    for name, text, mk in HANDWRITTEN:
        if only and not re.search(only, name):
            continue
        os.makedirs(HW_DIR, exist_ok=True)
        hlo = os.path.join(HW_DIR, name + ".hlo")
        with open(hlo, "w") as fh:
            fh.write(text)
        args = [np.asarray(a) for a in mk(np.random.default_rng(seed_of(name)))]
        check_specs(name + " param", xc.entry_param_specs(text), args)
        inp = os.path.join(tmp, name + ".in.npz")
        xc.save_npz(inp, args)
        hw_jobs.append((name, hlo, inp, os.path.join(tmp, name + ".out.npz"), args, text))
    for (name, hlo, inp, outp, args, text), err in zip(hw_jobs, xc.run_isolated([j[1:4] for j in hw_jobs])):
        if err:
            print("FAILED hand-written %s: %s" % (name, err), file=sys.stderr)
            os.remove(hlo)
            continue
        _, outs = xc.load_npz(outp)
        check_specs(name + " result", xc.entry_result_specs(text), outs)
        xc.save_npz(os.path.join(HW_DIR, name + ".npz"), args, outs)
    print("hand-written: %d modules" % len(hw_jobs))
    # XLA parser cases
    ok, skipped, cand = [], [], []
    for path in sorted(glob.glob(os.path.join(SHARED, "xla_parser_cases", "*.hlo"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if only and not re.search(only, name):
            continue
        text = open(path).read()
        if name in PC_IMPLEMENTATION_DEFINED:
            skipped.append((name, PC_IMPLEMENTATION_DEFINED[name]))
            continue
        m = PC_SKIP_RE.search(text)
        if m:
            skipped.append((name, "uses " + m.group(1)))
            continue
        try:
            specs = xc.entry_param_specs(text)
            rspecs = xc.entry_result_specs(text)
        except Exception as ex:  # noqa: BLE001
            skipped.append((name, (str(ex).strip().splitlines() or [type(ex).__name__])[0][:150]))
            continue
        nelem = sum(int(np.prod(sh)) for _, sh in list(specs) + list(rspecs))
        if nelem > PC_MAX_ELEMENTS:
            skipped.append((name, "too large (%d elements)" % nelem))
            continue
        args = xc.random_inputs(specs, seed=seed_of(name))
        inp = os.path.join(tmp, name + ".in.npz")
        xc.save_npz(inp, args)
        cand.append((name, path, inp, args, rspecs))
    # run each twice (must be deterministic), isolated from XLA crashes
    jobs = []
    for name, path, inp, _, _ in cand:
        jobs.append((path, inp, os.path.join(tmp, name + ".o1.npz")))
        jobs.append((path, inp, os.path.join(tmp, name + ".o2.npz")))
    res = xc.run_isolated(jobs)
    for k, (name, path, inp, args, rspecs) in enumerate(cand):
        e1, e2 = res[2 * k], res[2 * k + 1]
        if e1 or e2:
            skipped.append((name, "XLA: " + (e1 or e2)))
            continue
        _, o1 = xc.load_npz(jobs[2 * k][2])
        _, o2 = xc.load_npz(jobs[2 * k + 1][2])
        try:
            check_specs("result", rspecs, o1)
        except AssertionError as ex:
            skipped.append((name, str(ex)))
            continue
        if not all(same(a, b) for a, b in zip(o1, o2)):
            skipped.append((name, "non-deterministic"))
            continue
        xc.save_npz(os.path.join(PC_DIR, name + ".npz"), args, o1)
        ok.append(name)
    skipped.sort()
    if not only:  # a partial run leaves SKIPPED.txt alone
        with open(os.path.join(PC_DIR, "SKIPPED.txt"), "w") as fh:
            fh.write("# parser cases without expected outputs (name<TAB>reason)\n")
            for n, why in skipped:
                fh.write("%s\t%s\n" % (n, why))
    print("parser cases: %d with outputs, %d skipped" % (len(ok), len(skipped)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pass", dest="pass_", choices=["all", "x32", "x64", "hlo"], default="all")
    ap.add_argument("--only", default=None, help="regex: only entries whose name matches")
    ap.add_argument("--unexec-file", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.pass_ == "x32":
        return run_jax_pass(False, a.only, a.unexec_file)
    if a.pass_ == "x64":
        return run_jax_pass(True, a.only, a.unexec_file)
    if a.pass_ == "hlo":
        return run_hlo_pass(a.only)
    t0 = time.time()
    if not a.only:  # full regeneration: start from clean directories
        for d, pats in ((JAX_DIR, ("*.hlo", "*.npz")), (OPT_DIR, ("*.hlo", "*.npz", "UNEXECUTABLE.txt", ".unexec_*.tmp")),
                        (TF_DIR, ("*.npz",)), (PC_DIR, ("*.npz", "SKIPPED.txt")), (HW_DIR, ("*.hlo", "*.npz"))):
            for p in pats:
                for f in glob.glob(os.path.join(d, p)):
                    os.remove(f)
    rc = 0
    tmpdir = tempfile.mkdtemp(prefix="gen_corpus_")
    lines = []
    try:
        for p in ("x32", "x64", "hlo"):
            t = time.time()
            uf = os.path.join(tmpdir, "unexec_%s.txt" % p)
            cmd = [sys.executable, os.path.abspath(__file__), "--pass", p] + (["--only", a.only] if a.only else [])
            if p != "hlo":
                cmd += ["--unexec-file", uf]
            r = subprocess.call(cmd)
            print("[pass %s: rc=%d, %.1fs]" % (p, r, time.time() - t))
            rc = rc or r
            if os.path.exists(uf):  # merge UNEXECUTABLE lists
                lines += [ln for ln in open(uf).read().splitlines() if ln.strip()]
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    ufile = os.path.join(OPT_DIR, "UNEXECUTABLE.txt")
    if a.only and os.path.exists(ufile):  # keep the lines of entries not regenerated
        lines += [ln for ln in open(ufile).read().splitlines()
                  if ln.strip() and not ln.startswith("#") and not re.search(a.only, ln.split("\t")[0])]
    if os.path.isdir(OPT_DIR):
        with open(ufile, "w") as fh:
            fh.write("# optimized modules that contain custom-calls: parse-only (name<TAB>reason)\n")
            for ln in sorted(lines):
                fh.write(ln + "\n")
    print("total %.1fs" % (time.time() - t0))
    return rc


if __name__ == "__main__":
    sys.exit(main())
