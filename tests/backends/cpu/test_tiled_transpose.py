"""Tiled transposes (backends/cpu/tiled_transpose.py): plain transposes, layout-changing copies and loop fusions
that read an array transposed run tile by tile. Every result is checked against the interpreter; which kernels
were tiled is read from the IR (the tile loops' blocks), never from timings. Few compiles: each module holds many
cases, one kernel each."""
import re

import ml_dtypes
import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import tiled_transpose as tt
from xlapy.hlo import parse


@pytest.fixture(autouse=True)
def small_slabs(monkeypatch):
    """The cases here are small: tile them anyway (by default a slab within L1 is not tiled)."""
    monkeypatch.setattr(tt, "MIN_SLAB_BYTES", 0)


def _args(module, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for p in module.entry.parameters:
        dims, name = p.shape.dims, p.shape.ptype.name
        if name == "pred":
            out.append(rng.random(dims) < 0.5)
        elif name in ("c64", "c128"):
            dt = np.complex64 if name == "c64" else np.complex128
            out.append((rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dt))
        elif name in ("s8", "u8", "s32"):
            out.append(rng.integers(-100 if name != "u8" else 0, 100, dims).astype(p.shape.dtype))
        elif name == "bf16":
            out.append(rng.standard_normal(dims).astype(np.float32).astype(ml_dtypes.bfloat16))
        else:
            out.append(rng.standard_normal(dims).astype(p.shape.dtype))
    return out


def _tiled_kernels(exe) -> set[str]:
    """Names of the instructions whose kernel (or its pool workers) runs the tile loops."""
    text = exe.llvm_ir
    functions = re.split(r"\ndefine ", text)
    tiled = set()
    workers = {m.group(1) for f in functions if "tile.sw" in f
               for m in [re.match(r"[^@]*@\"?([\w.]+)", f)] if m}
    for f in functions:
        m = re.match(r"[^@]*@\"?xlapy_kernel\.([\w.]+?)(?:\.\d+)?\"?\(", f)
        if m and ("tile.sw" in f or any(w in f for w in workers if w.startswith("xlapy_task"))):
            tiled.add(m.group(1))
    return tiled


def _check(text: str, threads: int = 1, rtol: float = 0.0):
    module = parse(text)
    args = _args(module)
    exe = xlapy.compile(module, backend="cpu", num_threads=threads)
    got = exe(*args)
    want = xlapy.compile(parse(text), backend="interpreter")(*args)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, k
        if rtol and np.issubdtype(g.dtype, np.floating):
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=rtol, err_msg=str(k))
        else:
            np.testing.assert_array_equal(g, w, err_msg=str(k))
    return exe


# A module of top-level transposes and copies, every rank 2-5, permutations that are tileable and ones that are
# not (the minor dim stays minor: rows contiguous on both sides; only unit dims move), odd sizes, many types, and
# non-default layouts. The trailing fusion keeps the CPU pipeline from running (the module counts as optimized).
PLAIN = """HloModule plain
triv {
  a = f32[3] parameter(0)
  ROOT n = f32[3] negate(a)
}
ENTRY e {
  p2 = f32[37,45]{1,0} parameter(0)
  p3 = f32[5,33,17]{2,1,0} parameter(1)
  p4 = f32[3,20,6,9]{3,2,1,0} parameter(2)
  p5 = f32[2,3,9,5,7]{4,3,2,1,0} parameter(3)
  bf = bf16[40,70]{1,0} parameter(4)
  hf = f16[33,65]{1,0} parameter(5)
  df = f64[19,41]{1,0} parameter(6)
  i8 = s8[70,130]{1,0} parameter(7)
  cx = c64[21,34]{1,0} parameter(8)
  pr = pred[40,50]{1,0} parameter(9)
  cl = f32[30,50]{0,1} parameter(10)
  z = f32[0,5]{1,0} parameter(11)
  u1 = f32[1,40,1,50]{3,2,1,0} parameter(12)
  c2 = c128[9,12]{1,0} parameter(13)
  v = f32[3]{0} parameter(14)
  t2 = f32[45,37]{1,0} transpose(p2), dimensions={1,0}
  t3a = f32[17,5,33]{2,1,0} transpose(p3), dimensions={2,0,1}
  t3b = f32[5,17,33]{2,1,0} transpose(p3), dimensions={0,2,1}
  t3c = f32[33,5,17]{2,1,0} transpose(p3), dimensions={1,0,2}
  t4a = f32[3,6,9,20]{3,2,1,0} transpose(p4), dimensions={0,2,3,1}
  t4b = f32[3,6,20,9]{3,2,1,0} transpose(p4), dimensions={0,2,1,3}
  t4c = f32[9,6,20,3]{3,2,1,0} transpose(p4), dimensions={3,2,1,0}
  t5 = f32[7,2,5,3,9]{4,3,2,1,0} transpose(p5), dimensions={4,0,3,1,2}
  tbf = bf16[70,40]{1,0} transpose(bf), dimensions={1,0}
  thf = f16[65,33]{1,0} transpose(hf), dimensions={1,0}
  tdf = f64[41,19]{1,0} transpose(df), dimensions={1,0}
  ti8 = s8[130,70]{1,0} transpose(i8), dimensions={1,0}
  tcx = c64[34,21]{1,0} transpose(cx), dimensions={1,0}
  tpr = pred[50,40]{1,0} transpose(pr), dimensions={1,0}
  ccl = f32[30,50]{1,0} copy(cl)
  tcl = f32[50,30]{1,0} transpose(cl), dimensions={1,0}
  p2s = f32[30,45]{1,0} slice(p2), slice={[0:30], [0:45]}
  ocl = f32[30,45]{0,1} copy(p2s)
  tz = f32[5,0]{1,0} transpose(z), dimensions={1,0}
  tu = f32[1,40,1,50]{3,2,1,0} transpose(u1), dimensions={2,1,0,3}
  tu2 = f32[50,1,40,1]{3,2,1,0} transpose(u1), dimensions={3,0,1,2}
  tc2 = c128[12,9]{1,0} transpose(c2), dimensions={1,0}
  f = f32[3]{0} fusion(v), kind=kLoop, calls=triv
  ROOT r = (f32[45,37], f32[17,5,33], f32[5,17,33], f32[33,5,17], f32[3,6,9,20], f32[3,6,20,9], f32[9,6,20,3],
            f32[7,2,5,3,9], bf16[70,40], f16[65,33], f64[41,19], s8[130,70], c64[34,21], pred[50,40],
            f32[30,50], f32[50,30], f32[30,45]{0,1}, f32[5,0], f32[1,40,1,50], f32[50,1,40,1],
            c128[12,9], f32[3])
    tuple(t2, t3a, t3b, t3c, t4a, t4b, t4c, t5, tbf, thf, tdf, ti8, tcx, tpr, ccl, tcl, ocl, tz, tu, tu2, tc2, f)
}
"""


def test_plain_transposes_and_copies():
    # ocl's operand is a slice of p2 (45 -> 50 columns would not fit): fix the text's shapes first
    text = PLAIN.replace("p2s = f32[30,50]{1,0} slice(p2), slice={[0:30], [0:45]}",
                         "p2s = f32[30,45]{1,0} slice(p2), slice={[0:30], [0:45]}")
    text = text.replace("ocl = f32[30,50]{0,1} copy(p2s)", "ocl = f32[30,45]{0,1} copy(p2s)")
    text = text.replace("f32[30,45]{0,1}, f32[5,0]", "f32[30,45]{0,1}, f32[5,0]")
    exe = _check(text)
    tiled = _tiled_kernels(exe)
    for name in ["t2", "t3a", "t3b", "t4a", "t5", "tbf", "thf", "tdf", "ti8", "tcx", "tpr", "ccl",
                 "ocl", "tu2", "tc2"]:
        assert name in tiled, (name, sorted(tiled))
    # the minor dim stays minor; a swapped group of 3 (< MIN_TILED) elements; empty; only unit dims move; the
    # transpose of a column-major array into row-major: the same bytes
    for name in ["t3c", "t4b", "t4c", "tz", "tu", "tcl"]:
        assert name not in tiled, name


# Loop fusions: an elementwise producer under the transpose (the hero), elementwise work after it reading an array
# in the output's order (split at the hero), reshape chains as attention's head transposes make them (the output's
# dims split where the read array's are separate), a multi-output fusion, a transposed parameter layout, a pad and
# a slice between the array and the transpose, and fusions that are not tiled.
FUSED = """HloModule fused
exp_t_add {
  x = f32[24,40]{1,0} parameter(0)
  y = f32[40,24]{1,0} parameter(1)
  e = f32[24,40]{1,0} exponential(x)
  t = f32[40,24]{1,0} transpose(e), dimensions={1,0}
  ROOT a = f32[40,24]{1,0} add(t, y)
}
heads {
  p = f32[2,4,9,8]{3,2,1,0} parameter(0)
  r = f32[2,4,9,1,8]{4,3,2,1,0} reshape(p)
  t = f32[2,9,4,1,8]{4,3,2,1,0} transpose(r), dimensions={0,2,1,3,4}
  r2 = f32[2,9,4,8]{3,2,1,0} reshape(t)
  t2 = f32[4,8,2,9]{3,2,1,0} transpose(r2), dimensions={2,3,0,1}
  ROOT o = f32[32,18]{1,0} reshape(t2)
}
bias_t {
  x = f32[18,48]{1,0} parameter(0)
  b = f32[48]{0} parameter(1)
  r = f32[2,9,48]{2,1,0} reshape(x)
  bb = f32[2,9,48]{2,1,0} broadcast(b), dimensions={2}
  a = f32[2,9,48]{2,1,0} add(r, bb)
  t = f32[48,2,9]{2,1,0} transpose(a), dimensions={2,0,1}
  ROOT o = f32[48,18]{1,0} reshape(t)
}
multi {
  a = f32[20,36]{1,0} parameter(0)
  b = f32[20,36]{1,0} parameter(1)
  c = f32[36,20]{1,0} parameter(2)
  s = f32[20,36]{1,0} add(a, b)
  m = f32[20,36]{1,0} multiply(a, b)
  ts = f32[36,20]{1,0} transpose(s), dimensions={1,0}
  tm = f32[36,20]{1,0} transpose(m), dimensions={1,0}
  n = f32[36,20]{1,0} negate(c)
  sub = f32[36,20]{1,0} subtract(tm, c)
  ROOT r = (f32[36,20]{1,0}, f32[36,20]{1,0}, f32[36,20]{1,0}) tuple(ts, sub, n)
}
layout {
  p = f32[30,50]{0,1} parameter(0)
  ROOT n = f32[30,50]{1,0} negate(p)
}
bf_conv {
  p = bf16[33,20]{1,0} parameter(0)
  t = bf16[20,33]{1,0} transpose(p), dimensions={1,0}
  ROOT c = f32[20,33]{1,0} convert(t)
}
minor_kept {
  p = f32[4,6,5,8]{3,2,1,0} parameter(0)
  t = f32[4,5,6,8]{3,2,1,0} transpose(p), dimensions={0,2,1,3}
  ROOT n = f32[4,5,6,8]{3,2,1,0} negate(t)
}
param_t {
  x = f32[26,30]{1,0} parameter(0)
  y = f32[30,26]{1,0} parameter(1)
  t = f32[30,26]{1,0} transpose(x), dimensions={1,0}
  ROOT m = f32[30,26]{1,0} multiply(t, y)
}
padded {
  p = f32[4,7,20]{2,1,0} parameter(0)
  q = f32[4,7,20]{2,1,0} parameter(1)
  a = f32[4,7,20]{2,1,0} add(p, q)
  z = f32[] constant(0)
  pd = f32[4,8,20]{2,1,0} pad(a, z), padding=0_0x0_1x0_0
  t = f32[20,4,8]{2,1,0} transpose(pd), dimensions={2,0,1}
  ROOT r = f32[20,32]{1,0} reshape(t)
}
padded_low {
  p = f32[7,20]{1,0} parameter(0)
  z = f32[] constant(-1)
  pd = f32[9,20]{1,0} pad(p, z), padding=2_0x0_0
  ROOT t = f32[20,9]{1,0} transpose(pd), dimensions={1,0}
}
sliced {
  p = f32[26,30]{1,0} parameter(0)
  s = f32[24,30]{1,0} slice(p), slice={[1:25], [0:30]}
  ROOT t = f32[30,24]{1,0} transpose(s), dimensions={1,0}
}
ENTRY e {
  x = f32[24,40]{1,0} parameter(0)
  y = f32[40,24]{1,0} parameter(1)
  h = f32[2,4,9,8]{3,2,1,0} parameter(2)
  bx = f32[18,48]{1,0} parameter(3)
  bb = f32[48]{0} parameter(4)
  ma = f32[20,36]{1,0} parameter(5)
  mb = f32[20,36]{1,0} parameter(6)
  mc = f32[36,20]{1,0} parameter(7)
  lp = f32[30,50]{0,1} parameter(8)
  bf = bf16[33,20]{1,0} parameter(9)
  mk = f32[4,6,5,8]{3,2,1,0} parameter(10)
  px = f32[26,30]{1,0} parameter(11)
  py = f32[30,26]{1,0} parameter(12)
  pp = f32[4,7,20]{2,1,0} parameter(13)
  pq = f32[4,7,20]{2,1,0} parameter(14)
  pl = f32[7,20]{1,0} parameter(15)
  f1 = f32[40,24]{1,0} fusion(x, y), kind=kLoop, calls=exp_t_add
  f2 = f32[32,18]{1,0} fusion(h), kind=kLoop, calls=heads
  f3 = f32[48,18]{1,0} fusion(bx, bb), kind=kLoop, calls=bias_t
  f4 = (f32[36,20]{1,0}, f32[36,20]{1,0}, f32[36,20]{1,0}) fusion(ma, mb, mc), kind=kLoop, calls=multi
  f5 = f32[30,50]{1,0} fusion(lp), kind=kLoop, calls=layout
  f6 = f32[20,33]{1,0} fusion(bf), kind=kLoop, calls=bf_conv
  f7 = f32[4,5,6,8]{3,2,1,0} fusion(mk), kind=kLoop, calls=minor_kept
  f8 = f32[30,26]{1,0} fusion(px, py), kind=kLoop, calls=param_t
  f9 = f32[20,32]{1,0} fusion(pp, pq), kind=kLoop, calls=padded
  f10 = f32[30,24]{1,0} fusion(px), kind=kLoop, calls=sliced
  f11 = f32[20,9]{1,0} fusion(pl), kind=kLoop, calls=padded_low
  ROOT r = (f32[40,24], f32[32,18], f32[48,18], (f32[36,20], f32[36,20], f32[36,20]), f32[30,50], f32[20,33],
            f32[4,5,6,8], f32[30,26], f32[20,32], f32[30,24], f32[20,9]) tuple(f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11)
}
"""


def _flat(value):
    return [leaf for v in value for leaf in (_flat(v) if isinstance(v, tuple) else [v])]


def test_fusions():
    module = parse(FUSED)
    args = _args(module)
    exe = xlapy.compile(module, backend="cpu", num_threads=1)
    got = _flat(exe(*args))
    want = _flat(xlapy.compile(parse(FUSED), backend="interpreter")(*args))
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=2e-6, atol=1e-6,
                                   err_msg=str(k))
    tiled = _tiled_kernels(exe)
    assert {"f1", "f2", "f3", "f4", "f5", "f6", "f8", "f9", "f10", "f11"} <= tiled, sorted(tiled)
    assert "f7" not in tiled


# On two threads, large enough for the parallel-task plan to split the tiles (odd sizes: partial edge tiles).
PARALLEL = """HloModule par
fused {
  x = f32[300,257]{1,0} parameter(0)
  y = f32[257,300]{1,0} parameter(1)
  t = f32[257,300]{1,0} transpose(x), dimensions={1,0}
  ROOT a = f32[257,300]{1,0} add(t, y)
}
ENTRY e {
  x = f32[300,257]{1,0} parameter(0)
  y = f32[257,300]{1,0} parameter(1)
  big = f32[8,130,6,100]{3,2,1,0} parameter(2)
  f = f32[257,300]{1,0} fusion(x, y), kind=kLoop, calls=fused
  t = f32[8,100,6,130]{3,2,1,0} transpose(big), dimensions={0,3,2,1}
  c = f32[300,257]{0,1} copy(x)
  ROOT r = (f32[257,300], f32[8,100,6,130], f32[300,257]{0,1}) tuple(f, t, c)
}
"""


def test_parallel_tiles():
    exe = _check(PARALLEL, threads=2)
    assert "xlapy_task" in exe.llvm_ir and "tile.sw" in exe.llvm_ir


# -- the analysis alone (no compiles) --------------------------------------------------------------------------
def _inst(text: str, name: str):
    module = parse(text)
    return next(i for c in module.computations for i in c.instructions if i.name == name)


@pytest.mark.parametrize("name, groups, w, r", [
    ("t2", [[0], [1]], 1, 0),
    ("t3a", [[0], [1, 2]], 1, 0),            # 5x33 move together: 17 <-> 165
    ("t5", [[0], [1], [2], [3, 4]], 3, 0),      # 3x9 move together
    ("tu2", [[0], [2]], 1, 0),                   # unit dims dropped
])
def test_plan(name, groups, w, r):
    inst = _inst(PLAIN, name)
    reads = tt.read_order(inst, inst.shape)
    p = tt.plan(reads, 4)
    assert [[reads.vdims[v][0] for v in g] for g in p.groups] == groups and (p.w, p.r) == (w, r)


def test_read_order_splits_merged_dims():
    """The head transpose's output dim 0 (4 heads x 8 features) reads its two parts from separate input dims."""
    inst = _inst(FUSED, "f2")
    reads = tt.read_order(inst, inst.shape)
    assert reads.vdims == [(0, 4, 8), (0, 8, 1), (1, 2, 9), (1, 9, 1)]
    assert reads.order == [2, 0, 3, 1]


@pytest.mark.parametrize("name", ["t3c", "t4b", "t4c", "tz", "tu", "tcl"])
def test_not_tiled(name):
    inst = _inst(PLAIN, name)
    reads = tt.read_order(inst, inst.shape)
    assert reads is None or tt.plan(reads, 4) is None


def test_small_slab_not_tiled(monkeypatch):
    monkeypatch.setattr(tt, "MIN_SLAB_BYTES", 32 << 10)
    inst = _inst(PLAIN, "t2")                     # 37 x 45 f32: 6.7 KB
    assert tt.plan(tt.read_order(inst, inst.shape), 4) is None
    big = _inst(PARALLEL, "t")                    # 100 x 130 x 6 f32 swapped with 130: tiled
    assert tt.plan(tt.read_order(big, big.shape), 4) is not None


@pytest.mark.parametrize("size, edges", [(1, (64, 128)), (2, (32, 128)), (4, (16, 128)), (8, (8, 64)),
                                         (16, (8, 32))])
def test_tile_edges(size, edges):
    assert (tt.tile_edge(size), tt.tile_edge(size, tt.TILE_R_BYTES)) == edges
