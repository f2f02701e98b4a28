"""Equal instructions of a fused computation share one generator (fused_cse.py): a multi-output fusion whose two
roots are equal sums (reducer regions equal in structure, distinct objects) computes one sum and stores it
twice; a root differing in anything (the reducer's opcode, a literal) keeps its own code."""
import numpy as np
import pytest

import xlapy

SUMS = """HloModule m
add_a { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
add_b { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
max_c { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b) }
fused { p = f32[6,3000] parameter(0)
  q = f32[3000] parameter(1)
  qb = f32[6,3000] broadcast(q), dimensions={1}
  x1 = f32[6,3000] add(p, qb)
  qb2 = f32[6,3000] broadcast(q), dimensions={1}
  x2 = f32[6,3000] add(p, qb2)
  z = f32[] constant(0)
  z2 = f32[] constant(0)
  z3 = f32[] constant(-inf)
  one = f32[] constant(1)
  s1 = f32[6] reduce(x1, z), dimensions={1}, to_apply=add_a
  s2 = f32[6] reduce(x2, z2), dimensions={1}, to_apply=add_b
  m3 = f32[6] reduce(x2, z3), dimensions={1}, to_apply=max_c
  s4 = f32[6] reduce(x2, one), dimensions={1}, to_apply=add_b
  ROOT t = (f32[6], f32[6], f32[6], f32[6]) tuple(s1, s2, m3, s4) }
ENTRY e { p = f32[6,3000] parameter(0)
  q = f32[3000] parameter(1)
  ROOT f = (f32[6], f32[6], f32[6], f32[6]) fusion(p, q), kind=kLoop, calls=fused }
"""


def test_equal_roots_of_a_fusion_share_code(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", f"--xla_dump_to={tmp_path}")
    monkeypatch.setenv("XLAPY_CACHE_DIR", "off")
    rng = np.random.default_rng(0)
    p = rng.standard_normal((6, 3000)).astype(np.float32)
    q = rng.standard_normal(3000).astype(np.float32)
    p[2, 7] = np.nan
    got = xlapy.compile(SUMS, backend="cpu", run_pipeline=False)(p, q)
    want = xlapy.compile(SUMS, backend="interpreter")(p, q)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, equal_nan=True)
    assert np.array_equal(got[0], got[1], equal_nan=True)
    ir_text = next(tmp_path.glob("*ir-no-opt.ll")).read_text()
    # s1 and s2 are one blocked sum (one f64 total: rows of 3000 are longer than any host's long_leaf), s4 has its
    # own (its init differs), m3 its own loop
    assert ir_text.count("alloca double") == 2


def _siblings(ty: str, n: int) -> str:
    """mean-like and variance-like sums of one expression (independent: siblings), and a centered sum reading the
    first (dependent: its own loop after it)."""
    return f"""HloModule m
add {{ a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT s = {ty}[] add(a, b) }}
fused {{ p = {ty}[6,{n}] parameter(0)
  z = {ty}[] constant(0)
  x = {ty}[6,{n}] exponential(p)
  sq = {ty}[6,{n}] multiply(x, x)
  s = {ty}[6] reduce(x, z), dimensions={{1}}, to_apply=add
  ss = {ty}[6] reduce(sq, z), dimensions={{1}}, to_apply=add
  sb = {ty}[6,{n}] broadcast(s), dimensions={{0}}
  c = {ty}[6,{n}] subtract(x, sb)
  cs = {ty}[6] reduce(c, z), dimensions={{1}}, to_apply=add
  ROOT t = ({ty}[6], {ty}[6], {ty}[6]) tuple(s, ss, cs) }}
ENTRY e {{ p = {ty}[6,{n}] parameter(0)
  ROOT f = ({ty}[6], {ty}[6], {ty}[6]) fusion(p), kind=kLoop, calls=fused }}
"""


@pytest.mark.parametrize("ty, n", [("f32", 3000), ("f32", 300), ("f64", 3000)])
def test_sibling_sums_share_one_loop(ty, n, tmp_path, monkeypatch):
    """Sibling reductions of one multi-output fusion are summed in one loop (elemental_reduce.sibling_sums):
    blocked sums (n > 1024) in one leaf nest, plain ones in one element loop, each in its own accumulators; a
    sum reading another's result waits for it."""
    monkeypatch.setenv("XLA_FLAGS", f"--xla_dump_to={tmp_path}")
    monkeypatch.setenv("XLAPY_CACHE_DIR", "off")
    rng = np.random.default_rng(1)
    p = rng.standard_normal((6, n)).astype(ty.replace("f", "float"))
    p[3, 5] = np.nan
    got = xlapy.compile(_siblings(ty, n), backend="cpu", run_pipeline=False)(p)
    ir_text = next(tmp_path.glob("*ir-no-opt.ll")).read_text()
    want = xlapy.compile(_siblings(ty, n), backend="interpreter")(p)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5 if ty == "f32" else 1e-12, atol=1e-3, equal_nan=True)
    if n > 1024:
        loops = ir_text.count("leaf.header:") + ir_text.count("leaf.header.1:")
        assert loops == 2, loops         # s and ss together, cs after them
    else:   # s and ss in one plain loop; cs, alone, in vector chains (elemental_reduce.interleaved_reduce)
        plain = len([line for line in ir_text.splitlines() if line.startswith("r1.header")])
        chains = len([line for line in ir_text.splitlines() if line.startswith("lanes.header")])
        assert (plain, chains) == (1, 1), (plain, chains)
