"""Equal instructions of a fused computation share one generator (fused_cse.py): a multi-output fusion whose two
roots are equal sums (reducer regions equal in structure, distinct objects) computes one sum and stores it
twice; a root differing in anything (the reducer's opcode, a literal) keeps its own code."""
import numpy as np

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
fused { p = f32[6,1500] parameter(0)
  q = f32[1500] parameter(1)
  qb = f32[6,1500] broadcast(q), dimensions={1}
  x1 = f32[6,1500] add(p, qb)
  qb2 = f32[6,1500] broadcast(q), dimensions={1}
  x2 = f32[6,1500] add(p, qb2)
  z = f32[] constant(0)
  z2 = f32[] constant(0)
  z3 = f32[] constant(-inf)
  one = f32[] constant(1)
  s1 = f32[6] reduce(x1, z), dimensions={1}, to_apply=add_a
  s2 = f32[6] reduce(x2, z2), dimensions={1}, to_apply=add_b
  m3 = f32[6] reduce(x2, z3), dimensions={1}, to_apply=max_c
  s4 = f32[6] reduce(x2, one), dimensions={1}, to_apply=add_b
  ROOT t = (f32[6], f32[6], f32[6], f32[6]) tuple(s1, s2, m3, s4) }
ENTRY e { p = f32[6,1500] parameter(0)
  q = f32[1500] parameter(1)
  ROOT f = (f32[6], f32[6], f32[6], f32[6]) fusion(p, q), kind=kLoop, calls=fused }
"""


def test_equal_roots_of_a_fusion_share_code(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", f"--xla_dump_to={tmp_path}")
    monkeypatch.setenv("XLAPY_CACHE_DIR", "off")
    rng = np.random.default_rng(0)
    p = rng.standard_normal((6, 1500)).astype(np.float32)
    q = rng.standard_normal(1500).astype(np.float32)
    p[2, 7] = np.nan
    got = xlapy.compile(SUMS, backend="cpu", run_pipeline=False)(p, q)
    want = xlapy.compile(SUMS, backend="interpreter")(p, q)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, equal_nan=True)
    assert np.array_equal(got[0], got[1], equal_nan=True)
    ir_text = next(tmp_path.glob("*ir-no-opt.ll")).read_text()
    # s1 and s2 are one blocked sum (one f64 total), s4 has its own (its init differs), m3 its own loop
    assert ir_text.count("alloca double") == 2
