"""The verifier: tables of good modules (verify passes) and bad modules (HloVerifierError naming the
instruction and the shapes), all as HLO text."""
from __future__ import annotations

import functools
import glob
import os

import pytest

import xlapy
from xlapy.errors import HloParseError, HloVerifierError
from xlapy.testing import hlo_module, reducer

parser = pytest.importorskip("xlapy.hlo.parser")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "testdata")

ADD, ADD_S32 = reducer("add"), reducer("add_s32")

LESS = """
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}
"""

GE = """
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GE
}
"""

ARGMAX = """
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  v = f32[] select(gt, av, bv)
  i = s32[] select(gt, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
"""

COND_BODY = """
cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  x2 = f32[4] multiply(x, x)
  ROOT t = (s32[], f32[4]) tuple(i2, x2)
}
"""

BRANCHES = """
neg {
  x = f32[3] parameter(0)
  ROOT n = f32[3] negate(x)
}

ident {
  y = f32[3] parameter(0)
  ROOT c = f32[3] copy(y)
}
"""

FUSED = """
fused {
  p0 = f32[2,3] parameter(0)
  p1 = f32[3] parameter(1)
  b = f32[2,3] broadcast(p1), dimensions={1}
  ROOT s = f32[2,3] subtract(p0, b)
}
"""


# module(entry, helpers...): the ENTRY is called main here (some messages name it)
module = functools.partial(hlo_module, entry_name="main")


GOOD = {
    "elementwise": module("""
  p = f32[2,3] parameter(0)
  q = f32[2,3] parameter(1)
  i = s32[2,3] parameter(2)
  a = f32[2,3] add(p, q)
  e = f32[2,3] exponential(a)
  l = f32[2,3] log(e)
  t = f32[2,3] tanh(l)
  r = f32[2,3] round-nearest-even(t)
  f = pred[2,3] is-finite(r)
  n = pred[2,3] not(f)
  c = pred[2,3] compare(p, q), direction=GT, type=TOTALORDER
  s = f32[2,3] select(c, p, q)
  z = f32[] constant(0)
  o = f32[] constant(1)
  k = f32[2,3] clamp(z, s, o)
  x = s32[2,3] xor(i, i)
  sh = s32[2,3] shift-left(x, i)
  cl = s32[2,3] count-leading-zeros(sh)
  ab = s32[2,3] abs(cl)
  cv = f32[2,3] convert(ab)
  cx = c64[2,3] complex(cv, k)
  re = f32[2,3] real(cx)
  ax = f32[2,3] abs(cx)
  at = f32[2,3] atan2(re, ax)
  rp = f32[2,3] reduce-precision(at), exponent_bits=5, mantissa_bits=10
  bc = u32[2,3] bitcast-convert(rp)
  b8 = u8[2,3,4] bitcast-convert(rp)
  back = f32[2,3] bitcast-convert(b8)
  ROOT out = (f32[2,3], u32[2,3], pred[2,3]) tuple(back, bc, n)
"""),
    "movement": module("""
  p = f32[2,3] parameter(0)
  b = f32[4,2,3] broadcast(p), dimensions={1,2}
  s = f32[] constant(1)
  bs = f32[5] broadcast(s), dimensions={}
  r = f32[6,4] reshape(b)
  t = f32[4,6] transpose(r), dimensions={1,0}
  sl = f32[2,3] slice(t), slice={[1:3], [0:6:2]}
  c = f32[2,6] concatenate(sl, p), dimensions={1}
  pd = f32[4,10] pad(c, s), padding=1_1x-1_0_1
  rv = f32[4,10] reverse(pd), dimensions={0,1}
  io = s32[4,10] iota(), iota_dimension=1
  bt = f32[10,4]{0,1} bitcast(rv)
  ROOT out = (f32[10,4], s32[4,10], f32[5]) tuple(bt, io, bs)
"""),
    "dynamic_slice": module("""
  p = f32[8,6] parameter(0)
  u = f32[2,3] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ds = f32[2,3] dynamic-slice(p, i, j), dynamic_slice_sizes={2,3}
  a = f32[2,3] add(ds, u)
  ROOT dus = f32[8,6] dynamic-update-slice(p, a, j, i)
"""),
    "reduce": module("""
  p = f32[4,5,6] parameter(0)
  ix = s32[4,5,6] iota(), iota_dimension=2
  z = f32[] constant(0)
  iz = s32[] constant(0)
  r = f32[5] reduce(p, z), dimensions={0,2}, to_apply=add
  am = (f32[4,5], s32[4,5]) reduce(p, ix, z, iz), dimensions={2}, to_apply=argmax
  rw = f32[2,5,3] reduce-window(p, z), window={size=2x1x3 stride=2x1x2 pad=0_0x0_0x1_1}, to_apply=add
  ROOT out = (f32[5], (f32[4,5], s32[4,5]), f32[2,5,3]) tuple(r, am, rw)
""", ADD + ARGMAX),
    "select_and_scatter": module("""
  op = f32[4,6] parameter(0)
  src = f32[2,3] parameter(1)
  z = f32[] constant(0)
  ROOT sas = f32[4,6] select-and-scatter(op, src, z), window={size=2x2 stride=2x2}, select=ge, scatter=add
""", ADD + GE),
    "dot_conv": module("""
  a = f32[7,2,3] parameter(0)
  b = f32[7,3,4] parameter(1)
  d = f32[7,2,4] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  v = f32[3] parameter(2)
  vv = f32[] dot(v, v), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  i8 = s8[2,3] parameter(3)
  j8 = s8[3,5] parameter(4)
  mixed = s32[2,5] dot(i8, j8), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  x = f32[1,8,8,4] parameter(5)
  w = f32[3,3,2,6] parameter(6)
  cv = f32[1,4,4,6] convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2
  w2 = f32[3,3,4,4] parameter(7)
  cd = f32[1,17,17,4] convolution(x, w2), window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f
  ROOT out = (f32[7,2,4], f32[], s32[2,5], f32[1,4,4,6], f32[1,17,17,4]) tuple(d, vv, mixed, cv, cd)
"""),
    "gather_scatter": module("""
  op = f32[5,6] parameter(0)
  idx = s32[3,1] parameter(1)
  g = f32[3,6] gather(op, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,6}
  g2 = f32[3,2,6] gather(op, idx), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={2,6}
  s = f32[5,6] scatter(op, idx, g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ROOT out = (f32[3,2,6], f32[5,6]) tuple(g2, s)
""", ADD),
    "control_flow": module("""
  x = f32[4] parameter(0)
  i = s32[] constant(0)
  init = (s32[], f32[4]) tuple(i, x)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  y = f32[3] parameter(1)
  pr = pred[] parameter(2)
  c1 = f32[3] conditional(pr, y, y), true_computation=neg, false_computation=ident
  c2 = f32[3] conditional(i, y, c1), branch_computations={neg, ident}
  cl = f32[3] call(c2), to_apply=neg
  a = f32[2,3] parameter(3)
  fu = f32[2,3] fusion(a, cl), kind=kLoop, calls=fused
  m = f32[2,3] map(fu, a), dimensions={0,1}, to_apply=add
  k = s32[2,3] parameter(4)
  so = (f32[2,3], s32[2,3]) sort(m, k), dimensions={1}, is_stable=true, to_apply=less
  ROOT out = ((s32[], f32[4]), (f32[2,3], s32[2,3])) tuple(w, so)
""", ADD + LESS + COND_BODY + BRANCHES + FUSED),
    "misc": module("""
  x = f32[2,3,4] parameter(0)
  sc = f32[4] parameter(1)
  bnt = (f32[2,3,4], f32[4], f32[4]) batch-norm-training(x, sc, sc), epsilon=0.001, feature_index=2
  bni = f32[2,3,4] batch-norm-inference(x, sc, sc, sc, sc), epsilon=0.001, feature_index=2
  bng = (f32[2,3,4], f32[4], f32[4]) batch-norm-grad(x, sc, sc, sc, bni), epsilon=0.001, feature_index=2
  st = u64[2] parameter(2)
  rng = (u64[2], u32[3,4]) rng-bit-generator(st), algorithm=rng_three_fry
  ob = (f32[4], u64[2]) opt-barrier((f32[4], u64[2]) tuple(sc, st))
  tk = token[] after-all()
  cc = f32[7] custom-call(x), custom_call_target="foo"
  ar = f32[4] all-reduce(sc), replica_groups={}, to_apply=add
  gte = u32[3,4] get-tuple-element(rng), index=1
  ROOT out = ((f32[2,3,4], f32[4], f32[4]), (f32[2,3,4], f32[4], f32[4]), u32[3,4], (f32[4], u64[2]), token[], f32[7], f32[4]) tuple(bnt, bng, gte, ob, tk, cc, ar)
""", ADD),
    "groups_and_batching": module("""
  x = f32[8,5,5,3] parameter(0)
  w = f32[3,3,3,4] parameter(1)
  bgc = f32[2,3,3,4] convolution(x, w), window={size=3x3}, dim_labels=b01f_01io->b01f, batch_group_count=4
  op = f32[2,5,7] parameter(2)
  idx = s32[2,4,1] parameter(3)
  g = f32[2,4,7] gather(op, idx), offset_dims={2}, collapsed_slice_dims={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, start_index_map={1}, index_vector_dim=2, slice_sizes={1,1,7}
  c = c128[4] parameter(4)
  ir = f64[6] fft(c), fft_type=IRFFT, fft_length={6}
  m = f32[3,3] parameter(5)
  ch = f32[3,3] cholesky(m), lower=true
  ROOT out = (f32[2,3,3,4], f32[2,4,7], f64[6], f32[3,3]) tuple(bgc, g, ir, ch)
"""),
}


@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_module_verifies(name):
    xlapy.hlo.verify(xlapy.hlo.parse(GOOD[name]))


# (HLO text, instruction the error must name, substrings the message must contain)
BAD = [
    (module("""
  p = f32[2,3] parameter(0)
  ROOT add.3 = f32[3,2] add(p, p)
"""), "add.3", ["expected shape f32[2,3]", "(f32[2,3], f32[2,3])", "declares f32[3,2]"]),
    (module("""
  p = f32[2] parameter(0)
  q = s32[2] parameter(1)
  ROOT multiply.7 = f32[2] multiply(p, q)
"""), "multiply.7", ["operand 1 has element type s32 but operand 0 has f32"]),
    (module("""
  p = f32[2] parameter(0)
  q = f32[3] parameter(1)
  ROOT sub = f32[2] subtract(p, q)
"""), "sub", ["f32[3]", "f32[2]"]),
    (module("""
  p = s32[2] parameter(0)
  ROOT exponential.1 = s32[2] exponential(p)
"""), "exponential.1", ["s32[2]", "floating-point"]),
    (module("""
  p = f32[2] parameter(0)
  ROOT and.1 = f32[2] and(p, p)
"""), "and.1", ["f32[2]", "pred or integral"]),
    (module("""
  p = f32[2] parameter(0)
  ROOT cmp = f32[2] compare(p, p), direction=LT
"""), "cmp", ["expected shape pred[2]", "declares f32[2]"]),
    (module("""
  p = f32[2] parameter(0)
  ROOT sel = f32[2] select(p, p, p)
"""), "sel", ["f32[2]", "pred"]),
    (module("""
  p = f32[2] parameter(0)
  z = f32[3] parameter(1)
  ROOT clamp.1 = f32[2] clamp(z, p, p)
"""), "clamp.1", ["f32[3]", "f32[2]"]),
    (module("""
  p = u32[2] parameter(0)
  ROOT neg = u32[2] sign(p)
"""), "neg", ["u32[2]", "signed"]),
    (module("""
  p = f32[2,3] parameter(0)
  ROOT bcast = f32[2,4] broadcast(p), dimensions={0,1}
"""), "bcast", ["f32[2,3]", "f32[2,4]"]),
    (module("""
  p = f32[2,3] parameter(0)
  ROOT rs = f32[5] reshape(p)
"""), "rs", ["f32[2,3]", "f32[5]"]),
    (module("""
  p = f32[2,3] parameter(0)
  ROOT tr = f32[3,2] transpose(p), dimensions={0,0}
"""), "tr", ["permutation", "f32[2,3]"]),
    (module("""
  p = f32[2,3] parameter(0)
  ROOT sl = f32[2,3] slice(p), slice={[0:2], [0:4]}
"""), "sl", ["[0:4", "f32[2,3]"]),
    (module("""
  p = f32[4] parameter(0)
  i = f32[] parameter(1)
  ROOT ds = f32[2] dynamic-slice(p, i), dynamic_slice_sizes={2}
"""), "ds", ["f32[]", "integers"]),
    (module("""
  p = f32[4] parameter(0)
  u = f32[5] parameter(1)
  i = s32[] parameter(2)
  ROOT dus = f32[4] dynamic-update-slice(p, u, i)
"""), "dus", ["f32[5]", "f32[4]"]),
    (module("""
  p = f32[2,3] parameter(0)
  q = f32[3,3] parameter(1)
  ROOT cat = f32[5,3] concatenate(p, q), dimensions={1}
"""), "cat", ["f32[3,3]", "f32[2,3]"]),
    (module("""
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT pd = f32[8] pad(p, z), padding=1_1_1
"""), "pd", ["expected shape f32[9]", "declares f32[8]"]),
    (module("""
  p = f32[4,5] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(p, z), dimensions={0}, to_apply=add
""", ADD), "r", ["expected shape f32[5]", "declares f32[4]"]),
    (module("""
  p = f32[4,5] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[5] reduce(p, z), dimensions={0}, to_apply=add_s32
""", ADD_S32), "r", ["add_s32", "f32"]),
    (module("""
  p = f32[4,6] parameter(0)
  z = f32[] constant(0)
  ROOT rw = f32[2,3] reduce-window(p, z), window={size=2 stride=2}, to_apply=add
""", ADD), "rw", ["window has 1 dimensions", "2"]),
    (module("""
  a = f32[2,3] parameter(0)
  b = f32[4,5] parameter(1)
  ROOT dot.2 = f32[2,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
"""), "dot.2", ["f32[2,3]", "f32[4,5]"]),
    (module("""
  x = f32[1,8,8,4] parameter(0)
  w = f32[3,3,3,6] parameter(1)
  ROOT conv = f32[1,8,8,6] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
"""), "conv", ["f32[1,8,8,4]", "f32[3,3,3,6]", "features"]),
    (module("""
  x = f32[1,8,8,4] parameter(0)
  w = f32[3,3,4,6] parameter(1)
  ROOT conv = f32[1,8,8,6] convolution(x, w), window={size=3x3}, dim_labels=b01f_01io->b01f
"""), "conv", ["expected shape f32[1,6,6,6]", "declares f32[1,8,8,6]"]),
    (module("""
  op = f32[5,6] parameter(0)
  idx = s32[3,1] parameter(1)
  ROOT g = f32[3,5] gather(op, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,6}
"""), "g", ["expected shape f32[3,6]", "declares f32[3,5]"]),
    (module("""
  op = f32[5,6] parameter(0)
  idx = s32[3,1] parameter(1)
  up = f32[4,6] parameter(2)
  ROOT s = f32[5,6] scatter(op, idx, up), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
""", ADD), "s", ["f32[4,6]", "s32[3,1]"]),
    (module("""
  k = f32[4] parameter(0)
  ROOT so = f32[4] sort(k), dimensions={0}, to_apply=add
""", ADD), "so", ["comparator", "returns f32[]", "pred[]"]),
    (module("""
  x = f32[5] parameter(0)
  i = s32[] constant(0)
  init = (s32[], f32[5]) tuple(i, x)
  ROOT w = (s32[], f32[5]) while(init), condition=cond, body=body
""", COND_BODY), "w", ["(s32[], f32[4])", "(s32[], f32[5])"]),
    (module("""
  y = f32[4] parameter(0)
  pr = pred[] parameter(1)
  ROOT cnd = f32[3] conditional(pr, y, y), true_computation=neg, false_computation=ident
""", BRANCHES), "cnd", ["f32[3]", "f32[4]"]),
    (module("""
  y = f32[3] parameter(0)
  ROOT cl = f32[3] call(y, y), to_apply=neg
""", BRANCHES), "cl", ["takes 1 parameters", "(f32[3], f32[3])"]),
    (module("""
  a = f32[2,3] parameter(0)
  b = f32[2] parameter(1)
  ROOT fu = f32[2,3] fusion(a, b), kind=kLoop, calls=fused
""", FUSED), "fu", ["f32[3]", "f32[2]"]),
    (module("""
  p = (f32[2], s32[]) parameter(0)
  ROOT gte = f32[2] get-tuple-element(p), index=2
"""), "gte", ["index=2", "(f32[2], s32[])"]),
    (module("""
  p = f32[2] parameter(0)
  ROOT t = (f32[2], f32[3]) tuple(p, p)
"""), "t", ["expected shape (f32[2], f32[2])", "declares (f32[2], f32[3])"]),
    (module("""
  p = f32[2,3] parameter(0)
  ROOT bc = s64[2] bitcast-convert(p)
"""), "bc", ["f32[2,3]", "last dimension must be 2"]),
    (module("""
  ROOT io = s32[4] iota(), iota_dimension=1
"""), "io", ["iota_dimension=1", "s32[4]"]),
    (module("""
  x = f32[2,3,4] parameter(0)
  sc = f32[3] parameter(1)
  ROOT bn = (f32[2,3,4], f32[3], f32[3]) batch-norm-training(x, sc, sc), epsilon=0.001, feature_index=2
"""), "bn", ["f32[3]", "f32[4]", "f32[2,3,4]"]),
    (module("""
  st = u64[2] parameter(0)
  ROOT rng = (u64[3], u32[4]) rng-bit-generator(st), algorithm=rng_three_fry
"""), "rng", ["expected shape (u64[2], u32[4])", "declares (u64[3], u32[4])"]),
    (module("""
  p = f32[2] parameter(0)
  ROOT fin = f32[2] is-finite(p)
"""), "fin", ["expected shape pred[2]", "declares f32[2]"]),
    (module("""
  p = f32[2] parameter(0)
  q = f32[2] parameter(2)
  ROOT a = f32[2] add(p, q)
"""), "main", ["parameter numbers [0, 2]"]),
    (module("""
  a = s32[2,3] parameter(0)
  b = s32[3,4] parameter(1)
  ROOT d = s8[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
"""), "d", ["s8", "narrower", "s32[2,3]"]),
    (module("""
  k = f32[4] parameter(0)
  v = s32[5] parameter(1)
  ROOT so = (f32[4], s32[5]) sort(k, v), dimensions={0}, to_apply=less
""", LESS), "so", ["s32[5]", "f32[4]"]),
    (module("""
  p = f32[4,5] parameter(0)
  ix = s32[4,5] parameter(1)
  z = f32[] constant(0)
  iz = s32[] constant(0)
  ROOT am = (f32[4], s32[4]) reduce(p, ix, iz, z), dimensions={1}, to_apply=argmax
""", ARGMAX), "am", ["init value 0 has element type s32", "f32[]"]),
    (module("""
  op = f32[4,6] parameter(0)
  src = f32[2,2] parameter(1)
  z = f32[] constant(0)
  ROOT sas = f32[4,6] select-and-scatter(op, src, z), window={size=2x2 stride=2x2}, select=ge, scatter=add
""", ADD + GE), "sas", ["f32[2,2]", "f32[2,3]", "f32[4,6]"]),
    (module("""
  a = f32[3] parameter(0)
  b = s32[3] parameter(1)
  ROOT mp = f32[3] map(a, b), dimensions={0}, to_apply=add
""", ADD), "mp", ["parameter 1 has shape f32[]", "s32[]"]),
    (module("""
  i = s32[] parameter(0)
  y = f32[3] parameter(1)
  ROOT cnd = f32[3] conditional(i, y), branch_computations={neg, ident}
""", BRANCHES), "cnd", ["2 branches takes 3 operands, got 2"]),
    (module("""
  x = c64[8,32] parameter(0)
  ROOT fft = c64[8,32] fft(x), fft_type=FFT, fft_length={16}
"""), "fft", ["c64[8,32]", "[16]"]),
    (module("""
  x = f32[10,10] parameter(0)
  ROOT tk = (f32[10,3], s32[10,3]) topk(x), k=2, largest=true
"""), "tk", ["expected shape (f32[10,2], s32[10,2])", "declares (f32[10,3], s32[10,3])"]),
    (module("""
  a = f32[4,4] parameter(0)
  b = f32[3,5] parameter(1)
  ROOT ts = f32[3,5] triangular-solve(a, b), lower=true, transpose_a=NO_TRANSPOSE
"""), "ts", ["f32[4,4]", "f32[3,5]"]),
    (module("""
  p = f32[4,4] parameter(0)
  i = s32[] parameter(1)
  ROOT ds = f32[2,2] dynamic-slice(p, i), dynamic_slice_sizes={2,2}
"""), "ds", ["needs 2 start indices", "got 1"]),
    (module("""
  op = f32[5,6] parameter(0)
  idx = s32[3,1] parameter(1)
  ROOT g = f32[3,6] gather(op, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={2,6}
"""), "g", ["collapsed_slice_dims", "slice size <= 1"]),
    (module("""
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = f32[3] rng(a, b), distribution=rng_uniform
"""), "r", ["s32[]", "f32"]),
    (module("""
  x = f32[1,8,8,4] parameter(0)
  w = f32[3,3,4,6] parameter(1)
  ROOT conv = f32[1,6,6,6] convolution(x, w), window={size=3x3}, dim_labels=b01f_01io->b01f, batch_group_count=4
"""), "conv", ["batch (1)", "group counts"]),
]


@pytest.mark.parametrize("hlo,inst,fragments", BAD, ids=[f"{i:02d}_{b[1]}" for i, b in enumerate(BAD)])
def test_bad_module_rejected(hlo, inst, fragments):
    try:
        m = xlapy.hlo.parse(hlo)
    except HloParseError as e:   # the parser may reject some of these itself; then it must say why
        pytest.skip(f"parser rejects it first: {e}")
    with pytest.raises(HloVerifierError) as info:
        xlapy.hlo.verify(m)
    msg = str(info.value)
    assert msg.startswith(inst) or f" {inst}" in msg, msg
    for fragment in fragments:
        assert fragment in msg, msg


# -- bad modules built by editing a parsed good one (the parser would not produce them) ---------------
def _simple():
    return xlapy.hlo.parse(module("""
  p = f32[2] parameter(0)
  q = f32[2] parameter(1)
  ROOT a = f32[2] add(p, q)
"""))


def test_wrong_operand_count():
    m = _simple()
    add = m.entry.root
    add._append_operand(m.entry.parameter(0))
    with pytest.raises(HloVerifierError, match=r"a \(add\): add takes 2 operand\(s\), got 3: \(f32\[2\], f32\[2\], f32\[2\]\)"):
        xlapy.hlo.verify(m)


def test_too_few_operands_for_a_variadic_op():
    m = xlapy.hlo.parse(module("""
  p = f32[4] parameter(0)
  u = f32[2] parameter(1)
  i = s32[] parameter(2)
  ROOT dus = f32[4] dynamic-update-slice(p, u, i)
"""))
    dus = m.entry.root
    dus.operands = dus.operands[:1]
    with pytest.raises(HloVerifierError, match=r"dus \(dynamic-update-slice\): dynamic-update-slice needs at least 2 operands, got 1: \(f32\[4\]\)"):
        xlapy.hlo.verify(m)


def test_duplicate_instruction_name():
    m = _simple()
    m.entry.parameter(1).name = "p"
    with pytest.raises(HloVerifierError, match="p: instruction name is used twice"):
        xlapy.hlo.verify(m)


def test_operand_from_another_computation():
    m = xlapy.hlo.parse(module("""
  x = f32[3] parameter(0)
  ROOT cl = f32[3] call(x), to_apply=neg
""", BRANCHES))
    neg = m.computation("neg")
    neg.root.replace_operand_with(0, m.entry.parameter(0))
    with pytest.raises(HloVerifierError, match=r"operand 0 \(x\) belongs to computation main"):
        xlapy.hlo.verify(m)


def test_missing_entry():
    m = _simple()
    m.entry = None
    with pytest.raises(HloVerifierError, match="no entry computation"):
        xlapy.hlo.verify(m)


def test_layouts_are_ignored():
    xlapy.hlo.verify(xlapy.hlo.parse(module("""
  p = f32[2,3]{0,1} parameter(0)
  ROOT a = f32[2,3]{1,0} add(p, p)
""")))


# -- real-world modules --------------------------------------------------------------------------------
def _files(pattern):
    return sorted(glob.glob(pattern, recursive=True))


TF_DUMP = os.path.join(SHARED, "tf_mobilenet_cluster.hlo")


@pytest.mark.skipif(not os.path.exists(TF_DUMP), reason="../shared/testdata is absent")
def test_tf_mobilenet_dump_verifies():
    with open(TF_DUMP) as f:
        xlapy.hlo.verify(xlapy.hlo.parse(f.read()))


CORPUS = _files(os.path.join(ROOT, "tests", "corpus", "**", "*.hlo"))


@pytest.mark.parametrize("path", CORPUS, ids=[os.path.relpath(p, os.path.join(ROOT, "tests", "corpus")) for p in CORPUS])
def test_corpus_verifies(path):
    """Every module of tests/corpus (jax, jax_opt, tf, ...) as JAX/TF/XLA printed it."""
    with open(path) as f:
        text = f.read()
    try:
        m = xlapy.hlo.parse(text)
    except HloParseError as e:
        pytest.skip(f"not parsed: {e}")
    xlapy.hlo.verify(m)


PARSER_CASES = _files(os.path.join(SHARED, "xla_parser_cases", "*.hlo"))


@pytest.mark.parametrize("path", PARSER_CASES, ids=[os.path.basename(p) for p in PARSER_CASES])
def test_xla_parser_cases_verify(path):
    with open(path) as f:
        text = f.read()
    try:
        m = xlapy.hlo.parse(text)
    except (HloParseError, KeyError) as e:
        pytest.skip(f"not parsed: {e}")
    xlapy.hlo.verify(m)
