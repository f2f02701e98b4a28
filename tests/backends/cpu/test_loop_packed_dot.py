"""Loop-invariant dot operands packed once per run of the loop (dot_plan's "packed" plan, loop_state.py,
dot_loops.emit_packed): a dot in a small while body whose rhs the body passes through unchanged reads a copy of it
in column tiles, made in the loop's first iteration. Checked against the interpreter: a weight packed and one that
changes every iteration (never packed), M and N that leave partial register blocks, a second call with the same
weight array holding new values, and an inner loop run again with another weight by an outer loop."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import dot_emitter, dot_plan
from xlapy.tools import npz

M, K, N, T = 6, 16, 80, 3     # 6 rows: one 4-row block and 2 more; 80 columns: full tiles and a partial one
ST = f"(s32[], f32[{M},{K}], f32[{K},{N}], f32[{T},{M},{K}], f32[{K},{N}], f32[{K},{N}])"

BODY = f"""body {{
  s = {ST} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[{M},{K}] get-tuple-element(s), index=1
  w = f32[{K},{N}] get-tuple-element(s), index=2
  xs = f32[{T},{M},{K}] get-tuple-element(s), index=3
  u = f32[{K},{N}] get-tuple-element(s), index=4
  v = f32[{K},{N}] get-tuple-element(s), index=5
  z = s32[] constant(0)
  xt = f32[1,{M},{K}] dynamic-slice(xs, i, z, z), dynamic_slice_sizes={{1,{M},{K}}}
  x = f32[{M},{K}] reshape(xt)
  d1 = f32[{M},{N}] dot(x, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  d2 = f32[{M},{N}] dot(h, u), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  d3 = f32[{M},{N}] dot(h, v), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  a = f32[{M},{N}] add(d1, d2)
  sum = f32[{M},{N}] add(a, d3)
  cut = f32[{M},{K}] slice(sum), slice={{[0:{M}], [0:{K}]}}
  hn = f32[{M},{K}] tanh(cut)
  half = f32[] constant(0.5)
  halves = f32[{K},{N}] broadcast(half), dimensions={{}}
  vn = f32[{K},{N}] multiply(v, halves)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = {ST} tuple(i1, hn, w, xs, u, vn)
}}
cond {{
  s = {ST} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({T})
  ROOT lt = pred[] compare(i, n), direction=LT
}}"""

LOOP = f"""HloModule packed
{BODY}
ENTRY e {{
  h = f32[{M},{K}] parameter(0)
  w = f32[{K},{N}] parameter(1)
  xs = f32[{T},{M},{K}] parameter(2)
  u = f32[{K},{N}] parameter(3)
  v = f32[{K},{N}] parameter(4)
  z = s32[] constant(0)
  t = {ST} tuple(z, h, w, xs, u, v)
  r = {ST} while(t), condition=cond, body=body
  ROOT o = f32[{M},{K}] get-tuple-element(r), index=1
}}
"""

# an outer loop running the inner one twice, the inner loop's w (invariant inside) scaled between the runs
OS = f"(s32[], f32[{M},{K}], f32[{K},{N}], f32[{T},{M},{K}], f32[{K},{N}], f32[{K},{N}])"
NESTED = f"""HloModule packed_nested
{BODY}
outer_body {{
  s = {OS} parameter(0)
  j = s32[] get-tuple-element(s), index=0
  h = f32[{M},{K}] get-tuple-element(s), index=1
  w = f32[{K},{N}] get-tuple-element(s), index=2
  xs = f32[{T},{M},{K}] get-tuple-element(s), index=3
  u = f32[{K},{N}] get-tuple-element(s), index=4
  v = f32[{K},{N}] get-tuple-element(s), index=5
  z = s32[] constant(0)
  t = {ST} tuple(z, h, w, xs, u, v)
  r = {ST} while(t), condition=cond, body=body
  hn = f32[{M},{K}] get-tuple-element(r), index=1
  c = f32[] constant(-1.5)
  cs = f32[{K},{N}] broadcast(c), dimensions={{}}
  wn = f32[{K},{N}] multiply(w, cs)
  one = s32[] constant(1)
  j1 = s32[] add(j, one)
  ROOT o = {OS} tuple(j1, hn, wn, xs, u, v)
}}
outer_cond {{
  s = {OS} parameter(0)
  j = s32[] get-tuple-element(s), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(j, n), direction=LT
}}
ENTRY e {{
  h = f32[{M},{K}] parameter(0)
  w = f32[{K},{N}] parameter(1)
  xs = f32[{T},{M},{K}] parameter(2)
  u = f32[{K},{N}] parameter(3)
  v = f32[{K},{N}] parameter(4)
  z = s32[] constant(0)
  t = {OS} tuple(z, h, w, xs, u, v)
  r = {OS} while(t), condition=outer_cond, body=outer_body
  ROOT o = f32[{M},{K}] get-tuple-element(r), index=1
}}
"""


def _args(seed: int = 0):
    rng = np.random.default_rng(seed)
    f = lambda *shape: (rng.standard_normal(shape) * 0.3).astype(np.float32)
    return [f(M, K), f(K, N), f(T, M, K), f(K, N), f(K, N)]


def _compile(text: str, monkeypatch):
    """The CPU executable (small shapes count as worth packing) and the number of dots emitted packed."""
    monkeypatch.setattr(dot_plan, "PACKED_MIN_MNK", 0)
    packed = []
    real = dot_emitter.emit_packed
    monkeypatch.setattr(dot_emitter, "emit_packed", lambda *a: packed.append(1) or real(*a))
    return xlapy.compile(xlapy.hlo.parse(text), backend="cpu"), len(packed)


def _check(cpu, text: str, args) -> None:
    ref = xlapy.compile(xlapy.hlo.parse(text), backend="interpreter")
    got, want = npz.flatten(cpu(*args)), npz.flatten(ref(*args))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("threads", [1, 2])
def test_invariant_weights_are_packed_and_a_changing_one_is_not(monkeypatch, threads):
    monkeypatch.setenv("XLAPY_NUM_THREADS", str(threads))
    cpu, packed = _compile(LOOP, monkeypatch)
    assert packed == 2                      # x @ w and h @ u; h @ v reads a v halved in every iteration
    args = _args()
    _check(cpu, LOOP, args)
    args[1][...] = _args(1)[1]              # the same array, new values: the next run copies it again
    _check(cpu, LOOP, args)


def test_an_inner_loop_run_again_copies_its_new_weight(monkeypatch):
    cpu, packed = _compile(NESTED, monkeypatch)
    assert packed == 2
    _check(cpu, NESTED, _args(2))


def _transposed_weight(text: str) -> str:
    """LOOP with w stored as [N, K] and read through rhs_contracting_dims={1} (an RNN's backward step reads its
    weight this way): the packing copy reads it in that order."""
    text = text.replace(f"f32[{K},{N}], f32[{T},{M},{K}]", f"f32[{N},{K}], f32[{T},{M},{K}]")
    text = text.replace(f"w = f32[{K},{N}]", f"w = f32[{N},{K}]")
    return text.replace("d1 = f32[{M},{N}] dot(x, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"
                        .format(M=M, N=N), f"d1 = f32[{M},{N}] dot(x, w), lhs_contracting_dims={{1}}, "
                                            f"rhs_contracting_dims={{1}}")


def test_a_weight_read_transposed_is_packed(monkeypatch):
    text = _transposed_weight(LOOP)
    assert "rhs_contracting_dims={1}" in text and f"w = f32[{N},{K}]" in text
    cpu, packed = _compile(text, monkeypatch)
    assert packed == 2
    args = _args(3)
    args[1] = np.ascontiguousarray(args[1].T)
    _check(cpu, text, args)
