"""RowFusion: HLO text after the fusion passes in, CHECK lines out; a must-not-change case for each refusal;
semantics on the interpreter (which runs a kCustom fusion as its computation); a second run changes nothing."""
import numpy as np
import pytest

import xlapy
from xlapy.passes import Pipeline
from xlapy.passes.dce import HloDCE
from xlapy.passes.fusion import RowFusion
from xlapy.passes.fusion.row_fusion import row_plan
from xlapy.passes.pipelines import cpu_pipeline
from xlapy.testing import assert_same_semantics, filecheck

SUM = "sum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
MAX = "max {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] maximum(a, b)\n}\n"


def softmax_text(dims="64,32", reduce_dim=1, bcast_dim=0, extra_root=""):
    """Softmax as the fusion passes leave it (reduces and two kLoop fusions), over dims with rows `bcast_dim`."""
    rows = dims.split(",")[bcast_dim]
    return f"""HloModule softmax

{SUM}{MAX}
exp_c {{
  x = f32[{dims}] parameter(0)
  m = f32[{rows}] parameter(1)
  b = f32[{dims}] broadcast(m), dimensions={{{bcast_dim}}}
  d = f32[{dims}] subtract(x, b)
  ROOT e = f32[{dims}] exponential(d)
}}

div_c {{
  e = f32[{dims}] parameter(0)
  s = f32[{rows}] parameter(1)
  b = f32[{dims}] broadcast(s), dimensions={{{bcast_dim}}}
  ROOT q = f32[{dims}] divide(e, b)
}}

ENTRY main {{
  x = f32[{dims}] parameter(0)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  m = f32[{rows}] reduce(x, ninf), dimensions={{{reduce_dim}}}, to_apply=max
  e = f32[{dims}] fusion(x, m), kind=kLoop, calls=exp_c
  s = f32[{rows}] reduce(e, zero), dimensions={{{reduce_dim}}}, to_apply=sum
  {"q" if extra_root else "ROOT q"} = f32[{dims}] fusion(e, s), kind=kLoop, calls=div_c
  {extra_root}
}}
"""


def run(text):
    m = xlapy.hlo.parse(text)
    changed = Pipeline("t", [RowFusion(), HloDCE()], check_invariants=True).run(m)
    return m, changed


check_semantics = assert_same_semantics


def test_softmax_becomes_one_row_fusion():
    text = softmax_text()
    m, changed = run(text)
    assert changed
    out = m.to_text()
    filecheck(out, """
CHECK: %row_fusion
CHECK: reduce(
CHECK: fusion(
CHECK: reduce(
CHECK: ROOT
CHECK-SAME: fusion(
CHECK: ENTRY
CHECK: ROOT
CHECK-SAME: kind=kCustom
""".replace("CHECK-SAME:", "CHECK:"))
    entry = [i.opcode for i in m.entry.instructions]
    assert entry.count("fusion") == 1 and "reduce" not in entry
    fusion = m.entry.root
    assert row_plan(fusion) == (1, (64,))
    check_semantics(text, m)
    again = xlapy.hlo.parse(out)
    assert not Pipeline("t", [RowFusion()]).run(again)       # idempotent, and the text round-trips


def test_value_used_outside_becomes_a_tuple_output():
    text = softmax_text(extra_root="ROOT t = (f32[64,32], f32[64]) tuple(q, m)")
    m, changed = run(text)
    assert changed
    fusion = [i for i in m.entry.instructions if i.opcode == "fusion"][0]
    assert fusion.shape.is_tuple and len(fusion.shape.tuple_shapes) == 2
    check_semantics(text, m)


def test_rank3_rows_are_the_two_leading_dims():
    text = softmax_text(dims="4,16,32", reduce_dim=2, bcast_dim=0).replace(
        "m = f32[4] reduce", "m = f32[4,16] reduce").replace("s = f32[4] reduce", "s = f32[4,16] reduce") \
        .replace("m = f32[4] parameter(1)", "m = f32[4,16] parameter(1)") \
        .replace("s = f32[4] parameter(1)", "s = f32[4,16] parameter(1)").replace("dimensions={0}", "dimensions={0,1}")
    m, changed = run(text)
    assert changed
    assert row_plan(m.entry.root) == (2, (4, 16))
    check_semantics(text, m)


@pytest.mark.parametrize("why,text", [
    # reducing the major dimension: a row of the result needs every row of the input
    ("column reduction", softmax_text(dims="32,64", reduce_dim=0, bcast_dim=1)),
    # too few rows to be worth a row loop
    ("few rows", softmax_text(dims="4,32")),
])
def test_refused(why, text):
    m, changed = run(text)
    assert not changed, why


def test_consumer_reading_another_row_is_left_out():
    """A consumer that reads the reduction at a reversed row index does not preserve rows: it stays outside."""
    text = f"""HloModule m

{SUM}
rev_c {{
  x = f32[64,32] parameter(0)
  s = f32[64] parameter(1)
  r = f32[64] reverse(s), dimensions={{0}}
  b = f32[64,32] broadcast(r), dimensions={{0}}
  ROOT q = f32[64,32] divide(x, b)
}}

ENTRY main {{
  x = f32[64,32] parameter(0)
  zero = f32[] constant(0)
  s = f32[64] reduce(x, zero), dimensions={{1}}, to_apply=sum
  ROOT q = f32[64,32] fusion(x, s), kind=kLoop, calls=rev_c
}}
"""
    m, changed = run(text)
    assert not changed


def test_convexity_path_leaving_the_group():
    """e -> t (not row-preserving: a transpose) -> q: q may not join the group of e, or the group would need
    t's result before it finishes."""
    text = f"""HloModule m

{SUM}
ENTRY main {{
  x = f32[32,32] parameter(0)
  zero = f32[] constant(0)
  s = f32[32] reduce(x, zero), dimensions={{1}}, to_apply=sum
  b = f32[32,32] broadcast(s), dimensions={{0}}
  e = f32[32,32] add(x, b)
  t = f32[32,32] transpose(e), dimensions={{1,0}}
  ROOT q = f32[32,32] multiply(e, t)
}}
"""
    m, changed = run(text)
    assert changed
    q = m.entry.root
    assert q.opcode == "multiply"          # q stays outside the row fusion
    check_semantics(text, m)


def test_full_pipeline_fuses_jax_softmax_and_layernorm():
    import xlapy.numpy as xnp

    def softmax(a):
        e = xnp.exp(a - xnp.max(a, axis=-1, keepdims=True))
        return e / xnp.sum(e, axis=-1, keepdims=True)

    def layernorm(a):
        mu = xnp.mean(a, axis=-1, keepdims=True)
        return (a - mu) / xnp.sqrt(xnp.mean((a - mu) ** 2, axis=-1, keepdims=True) + 1e-5)

    x = np.zeros((64, 128), np.float32)
    for fn in (softmax, layernorm):
        m = xlapy.jit(fn).lower(x).module
        cpu_pipeline().run(m)
        kinds = [i.attrs.get("kind") for i in m.entry.instructions if i.opcode == "fusion"]
        assert kinds == ["kCustom"], (fn.__name__, m.to_text())
