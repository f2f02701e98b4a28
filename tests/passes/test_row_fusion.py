"""RowFusion: HLO text after the fusion passes in, CHECK lines out; a must-not-change case for each refusal;
semantics on the interpreter (which runs a kCustom fusion as its computation); a second run changes nothing
(check_rewrite)."""
import numpy as np
import pytest

import xlapy
from xlapy.passes.fusion import RowFusion
from xlapy.passes.fusion.row_fusion import row_plan
from xlapy.passes.pipelines import cpu_pipeline
from xlapy.testing import check_rewrite, reducer

SUM, MAX = reducer("add"), reducer("max")
ROW_FUSION = [RowFusion, "dce"]


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
  s = f32[{rows}] reduce(e, zero), dimensions={{{reduce_dim}}}, to_apply=add
  {"q" if extra_root else "ROOT q"} = f32[{dims}] fusion(e, s), kind=kLoop, calls=div_c
  {extra_root}
}}
"""


def test_softmax_becomes_one_row_fusion():
    m = check_rewrite(softmax_text(), ROW_FUSION, """
CHECK: %row_fusion
CHECK: reduce(
CHECK: fusion(
CHECK: reduce(
CHECK: ROOT
CHECK-SAME: fusion(
CHECK: ENTRY
CHECK: ROOT
CHECK-SAME: kind=kCustom
""")
    entry = [i.opcode for i in m.entry.instructions]
    assert entry.count("fusion") == 1 and "reduce" not in entry
    assert row_plan(m.entry.root) == (1, (64,))


def test_value_used_outside_becomes_a_tuple_output():
    m = check_rewrite(softmax_text(extra_root="ROOT t = (f32[64,32], f32[64]) tuple(q, m)"), ROW_FUSION, """
CHECK: %row_fusion{{.*}} -> (f32[64], f32[64,32]) {
CHECK: ROOT %tuple = (f32[64], f32[64,32]) tuple(
CHECK: ENTRY
CHECK: %[[F:row_fusion[.0-9]*]] = (f32[64], f32[64,32]) fusion({{.*}}), kind=kCustom
CHECK-DAG: f32[64,32] get-tuple-element((f32[64], f32[64,32]) %[[F]]), index=1
CHECK-DAG: f32[64] get-tuple-element((f32[64], f32[64,32]) %[[F]]), index=0
CHECK: ROOT %t = (f32[64,32], f32[64]) tuple(""")
    fusion = [i for i in m.entry.instructions if i.opcode == "fusion"][0]
    assert fusion.shape.is_tuple and len(fusion.shape.tuple_shapes) == 2


def test_rank3_rows_are_the_two_leading_dims():
    text = softmax_text(dims="4,16,32", reduce_dim=2, bcast_dim=0).replace(
        "m = f32[4] reduce", "m = f32[4,16] reduce").replace("s = f32[4] reduce", "s = f32[4,16] reduce") \
        .replace("m = f32[4] parameter(1)", "m = f32[4,16] parameter(1)") \
        .replace("s = f32[4] parameter(1)", "s = f32[4,16] parameter(1)").replace("dimensions={0}", "dimensions={0,1}")
    m = check_rewrite(text, ROW_FUSION, "CHECK: ENTRY\nCHECK: ROOT %row_fusion{{.*}} = f32[4,16,32] fusion(\n"
                                        "CHECK-SAME: kind=kCustom")
    assert row_plan(m.entry.root) == (2, (4, 16))


@pytest.mark.parametrize("why,text", [
    # reducing the major dimension: a row of the result needs every row of the input
    ("column reduction", softmax_text(dims="32,64", reduce_dim=0, bcast_dim=1)),
    # too few rows to be worth a row loop
    ("few rows", softmax_text(dims="4,32")),
])
def test_refused(why, text):
    check_rewrite(text, ROW_FUSION, None)


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
  s = f32[64] reduce(x, zero), dimensions={{1}}, to_apply=add
  ROOT q = f32[64,32] fusion(x, s), kind=kLoop, calls=rev_c
}}
"""
    check_rewrite(text, ROW_FUSION, None)


def test_convexity_path_leaving_the_group():
    """e -> t (not row-preserving: a transpose) -> q: q may not join the group of e, or the group would need
    t's result before it finishes."""
    text = f"""HloModule m

{SUM}
ENTRY main {{
  x = f32[32,32] parameter(0)
  zero = f32[] constant(0)
  s = f32[32] reduce(x, zero), dimensions={{1}}, to_apply=add
  b = f32[32,32] broadcast(s), dimensions={{0}}
  e = f32[32,32] add(x, b)
  t = f32[32,32] transpose(e), dimensions={{1,0}}
  ROOT q = f32[32,32] multiply(e, t)
}}
"""
    m = check_rewrite(text, ROW_FUSION, """
CHECK: ENTRY
CHECK: %[[F:row_fusion[.0-9]*]] = f32[32,32] fusion({{.*}}), kind=kCustom
CHECK-NEXT: %t = f32[32,32] transpose(f32[32,32] %[[F]])
CHECK-NEXT: ROOT %q = f32[32,32] multiply(f32[32,32] %[[F]], f32[32,32] %t)""")
    assert m.entry.root.opcode == "multiply"          # q stays outside the row fusion


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


def test_outlining_many_groups_walks_the_computation_a_constant_number_of_times(monkeypatch):
    """Each outline keeps the topological order by itself (no post order per outline, which made the pass
    quadratic in the module), and the instruction list comes out def-before-use: the transpose t, listed before
    the group's last member y, must now follow the fusion."""
    from xlapy.hlo import Computation, parse
    groups = 12
    body = "\n".join(f"""  m{g} = f32[64] reduce(x{g}, ninf), dimensions={{1}}, to_apply=max
  b{g} = f32[64,32] broadcast(m{g}), dimensions={{0}}
  e{g} = f32[64,32] subtract(x{g}, b{g})
  t{g} = f32[32,64] transpose(e{g}), dimensions={{1,0}}
  y{g} = f32[64,32] multiply(e{g}, e{g})""" for g in range(groups))
    params = "\n".join(f"  x{g} = f32[64,32] parameter({g})" for g in range(groups))
    outputs = ", ".join(f"y{g}, t{g}" for g in range(groups))
    text = f"""HloModule many

{MAX}
ENTRY main {{
{params}
  ninf = f32[] constant(-inf)
{body}
  ROOT r = ({", ".join(["f32[64,32], f32[32,64]"] * groups)}) tuple({outputs})
}}
"""
    module = parse(text)
    walks = []
    real = Computation.post_order
    monkeypatch.setattr(Computation, "post_order",
                        lambda self: walks.append(self.name) or real(self))
    assert RowFusion().run(module)
    entry = module.entry
    assert sum(name == entry.name for name in walks) <= 3
    monkeypatch.undo()
    assert [i.opcode for i in entry.instructions].count("fusion") == groups
    assert entry.instructions == entry.post_order()            # def-before-use
    xlapy.hlo.verify(module)
