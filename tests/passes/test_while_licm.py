"""WhileLoopInvariantCodeMotion: HLO text in, CHECK lines out; must-not-change cases; idempotence; semantics kept
on corner values (check_rewrite), with the simplifiers it runs beside in the CPU pipeline."""
import numpy as np

import xlapy
from xlapy.passes.while_loop_invariant_code_motion import WhileLoopInvariantCodeMotion, invariant_instructions
from xlapy.testing import check_rewrite

PASSES = [WhileLoopInvariantCodeMotion, "tuple-simplifier", "dce"]


def check(text, checks=None, **options):
    return check_rewrite(text, PASSES, checks, fixed_point=True, **options)


# An LSTM-shaped loop: the step concatenates two weights the body passes through unchanged, then multiplies the
# carried state by them; the counter and the state change every iteration.
LSTM = """HloModule m

body {{
  p = (s32[], f32[2,4], f32[4,3], f32[4,5]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  h = f32[2,4] get-tuple-element(p), index=1
  wa = f32[4,3] get-tuple-element(p), index=2
  wb = f32[4,5] get-tuple-element(p), index=3
  w = f32[4,8] concatenate(wa, wb), dimensions={{1}}
  {extra}
  d = f32[2,8] dot(h, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  s = f32[2,4] slice(d), slice={{[0:2], [0:4]}}
  h1 = f32[2,4] tanh(s)
  ROOT t = (s32[], f32[2,4], f32[4,3], f32[4,5]) tuple(i1, h1, wa, wb)
}}

cond {{
  p = (s32[], f32[2,4], f32[4,3], f32[4,5]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}}

ENTRY e {{
  h0 = f32[2,4] parameter(0)
  wa = f32[4,3] parameter(1)
  wb = f32[4,5] parameter(2)
  z = s32[] constant(0)
  init = (s32[], f32[2,4], f32[4,3], f32[4,5]) tuple(z, h0, wa, wb)
  loop = (s32[], f32[2,4], f32[4,3], f32[4,5]) while(init), condition=cond, body=body
  ROOT r = f32[2,4] get-tuple-element(loop), index=1
}}
"""


def test_weight_concatenate_moves_out_of_the_loop():
    after = check(LSTM.format(extra=""), """
CHECK: %body
CHECK-NOT: concatenate
CHECK: ROOT
CHECK: ENTRY
CHECK: concatenate(f32[4,3] %wa, f32[4,5] %wb)
CHECK: while(
""", corners=False)
    loop = next(i for i in after.entry.instructions if i.opcode == "while")
    assert len(loop.shape.tuple_shapes) == 5             # the concatenated weights ride along in the state


def test_chains_of_invariants_move_together():
    """A transpose of the concatenation and a negate of that: the whole chain moves; only what the body still
    reads (the last of it) joins the loop state."""
    text = LSTM.format(extra="wt = f32[8,4] transpose(w), dimensions={1,0}\n  wn = f32[8,4] negate(wt)\n"
                             "  w2 = f32[4,8] transpose(wn), dimensions={1,0}").replace("dot(h, w)", "dot(h, w2)")
    after = check(text, "CHECK: %body\nCHECK-NOT: concatenate\nCHECK-NOT: negate\nCHECK: ENTRY\nCHECK: negate",
                  corners=False)
    loop = next(i for i in after.entry.instructions if i.opcode == "while")
    assert len(loop.shape.tuple_shapes) == 5


def test_the_result_is_the_same():
    module = xlapy.hlo.parse(LSTM.format(extra=""))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in [(2, 4), (4, 3), (4, 5)]]
    want = xlapy.compile(module, backend="interpreter")(*args)
    optimized = xlapy.hlo.parse(LSTM.format(extra=""))
    xlapy.passes.pipeline.run_passes(optimized, [WhileLoopInvariantCodeMotion()])
    np.testing.assert_array_equal(np.asarray(xlapy.compile(optimized, backend="interpreter")(*args)), want)
    np.testing.assert_allclose(np.asarray(xlapy.compile(optimized, backend="cpu")(*args)), want, rtol=1e-6)


def test_what_depends_on_the_state_stays():
    text = LSTM.format(extra="").replace("concatenate(wa, wb)", "concatenate(wa, wb)").replace(
        "ROOT t = (s32[], f32[2,4], f32[4,3], f32[4,5]) tuple(i1, h1, wa, wb)",
        "wa1 = f32[4,3] negate(wa)\n  ROOT t = (s32[], f32[2,4], f32[4,3], f32[4,5]) tuple(i1, h1, wa1, wb)")
    check(text, None)                     # wa changes every iteration: the concatenate must stay


NOT_WORTH = LSTM.format(extra="").replace(
    "  w = f32[4,8] concatenate(wa, wb), dimensions={1}\n",
    "  c = f32[] constant(2)\n  cb = f32[2,4] broadcast(c), dimensions={}\n  hc = f32[2,4] multiply(h, cb)\n"
    "  w = f32[4,8] concatenate(wa, wb), dimensions={1}\n").replace("dot(h, w)", "dot(hc, w)")


def test_broadcasts_and_constants_never_move_alone():
    body = xlapy.hlo.parse(NOT_WORTH).computation("body")
    hoisted, invariant = invariant_instructions(body)
    assert [h.opcode for h in hoisted] == ["concatenate"]
    names = {i.name for i in body.instructions if id(i) in invariant}
    assert {"c", "cb", "w", "wa", "wb", "one"} <= names and "hc" not in names
    check(NOT_WORTH, "CHECK: %body\nCHECK: broadcast\nCHECK-NOT: concatenate\nCHECK: ENTRY", corners=False)


def test_a_shared_body_must_not_change():
    text = LSTM.format(extra="").replace(
        "  ROOT r = f32[2,4] get-tuple-element(loop), index=1",
        "  loop2 = (s32[], f32[2,4], f32[4,3], f32[4,5]) while(init), condition=cond, body=body\n"
        "  r1 = f32[2,4] get-tuple-element(loop), index=1\n  r2 = f32[2,4] get-tuple-element(loop2), index=1\n"
        "  ROOT r = f32[2,4] add(r1, r2)")
    check(text, None)


def test_side_effects_stay_in_the_loop():
    text = LSTM.format(extra="").replace(
        "  w = f32[4,8] concatenate(wa, wb), dimensions={1}\n",
        "  lo = f32[] constant(0)\n  hi = f32[] constant(1)\n"
        "  noise = f32[4,8] rng(lo, hi), distribution=rng_uniform\n"
        "  w0 = f32[4,8] concatenate(wa, wb), dimensions={1}\n  w = f32[4,8] add(w0, noise)\n")
    after = check(text, "CHECK: %body\nCHECK: rng(\nCHECK-NOT: concatenate\nCHECK: ENTRY\nCHECK: concatenate",
                  semantics=False)
    assert any(i.opcode == "rng" for i in after.computation("body").instructions)
