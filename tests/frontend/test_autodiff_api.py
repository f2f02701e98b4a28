"""The autodiff API: signatures of the derived computations, errors, element types, loops."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xlapy
from xlapy.frontend.autodiff import (AutodiffError, computation_module, grad_module, jvp_computation,
                                     vjp_computation)
from xlapy.hlo import parse

ADD = """add {
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  ROOT c = {t}[] add(a, b)
}"""


def loss_module(t: str = "f64") -> str:
    """sum(tanh(x @ y))"""
    return f"""HloModule loss_{t}
{ADD.replace('{t}', t)}
ENTRY e {{
  x = {t}[3,4] parameter(0)
  y = {t}[4,2] parameter(1)
  d = {t}[3,2] dot(x, y), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  h = {t}[3,2] tanh(d)
  z = {t}[] constant(0)
  ROOT r = {t}[] reduce(h, z), dimensions={{0,1}}, to_apply=add
}}
"""


def reference_grads(x, y):
    g = 1 - np.tanh(x @ y) ** 2
    return g @ y.T, x.T @ g


def run(mod, comp, *args):
    return xlapy.compile(computation_module(mod, comp))(*args)


def test_grad_module_int_wrt_gives_array_and_list_gives_tuple():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    gx, gy = reference_grads(x, y)
    m = parse(loss_module())
    np.testing.assert_allclose(xlapy.compile(grad_module(m, 1))(x, y), gy, rtol=1e-12)
    both = xlapy.compile(grad_module(m, [0, 1]))(x, y)
    np.testing.assert_allclose(both[0], gx, rtol=1e-12)
    value, (g0,) = xlapy.compile(grad_module(m, (0,), has_value=True))(x, y)
    np.testing.assert_allclose(value, np.tanh(x @ y).sum(), rtol=1e-12)
    np.testing.assert_allclose(g0, gx, rtol=1e-12)
    assert m.entry.name == "e" and len(m.entry.parameters) == 2   # the input module is not changed


def test_vjp_signature_one_cotangent_per_leaf():
    m = parse("""HloModule t
ENTRY e {
  x = f64[3] parameter(0)
  n = s32[] parameter(1)
  s = f64[3] sine(x)
  inner = (f64[3], s32[]) tuple(s, n)
  ROOT t = ((f64[3], s32[]), f64[3]) tuple(inner, x)
}""")
    v = vjp_computation(m, m.entry, [0])
    shapes = [str(p.shape.without_layout()) for p in v.parameters]
    assert shapes == ["f64[3]", "s32[]", "f64[3]", "s32[]", "f64[3]"]
    x = np.array([0.1, 0.2, 0.3])
    ct_s, ct_x = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.5, 0.5])
    out = run(m, v, x, np.int32(4), ct_s, np.int32(0), ct_x)
    np.testing.assert_allclose(out[1], ct_s * np.cos(x) + ct_x, rtol=1e-12)
    j = jvp_computation(m, m.entry)
    assert len(j.parameters) == 4


@pytest.mark.parametrize("t,dtype,rtol", [("f32", np.float32, 1e-5), ("bf16", ml_dtypes.bfloat16, 3e-2),
                                          ("f16", np.float16, 3e-3)])
def test_low_precision_types(t, dtype, rtol):
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal((3, 4)) * 0.5).astype(dtype), (rng.standard_normal((4, 2)) * 0.5).astype(dtype)
    gx, gy = xlapy.compile(grad_module(parse(loss_module(t)), [0, 1]))(x, y)
    assert gx.dtype == dtype and gy.dtype == dtype
    wx, wy = reference_grads(x.astype(np.float64), y.astype(np.float64))
    np.testing.assert_allclose(gx.astype(np.float64), wx, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(gy.astype(np.float64), wy, rtol=rtol, atol=rtol)


def test_integer_input_and_non_scalar_output_raise():
    m = parse("""HloModule i
ENTRY e {
  x = f64[3] parameter(0)
  n = s32[3] parameter(1)
  c = f64[3] convert(n)
  ROOT m = f64[3] multiply(x, c)
}""")
    with pytest.raises(AutodiffError, match="parameter 1 of type s32.*floating-point"):
        vjp_computation(m, m.entry, [1])
    with pytest.raises(xlapy.XlapyError, match="scalar floating-point output"):
        grad_module(m, 0)


def test_missing_rule_names_the_opcode():
    # batch-norm-inference has no rule: the front end's batch norms are plain arithmetic
    m = parse("""HloModule c
ENTRY e {
  x = f64[2,2] parameter(0)
  s = f64[2] parameter(1)
  ROOT c = f64[2,2] batch-norm-inference(x, s, s, s, s), epsilon=0.001, feature_index=1
}""")
    with pytest.raises(AutodiffError, match="'batch-norm-inference'"):
        vjp_computation(m, m.entry, [0])
    with pytest.raises(AutodiffError, match="'batch-norm-inference'"):
        jvp_computation(m, m.entry)


WHILE = """HloModule w
body {
  p = (s32[], f64[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  a = f64[3] get-tuple-element(p), index=1
  s = f64[3] sine(a)
  a1 = f64[3] multiply(a, s)
  ROOT t = (s32[], f64[3]) tuple(i1, a1)
}
cond {
  cp = (s32[], f64[3]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  ROOT lt = pred[] compare(ci, LIMIT), direction=LT
}
ENTRY e {
  x = f64[3] parameter(0)
  n = s32[] parameter(1)
  c0 = s32[] constant(0)
  init = (s32[], f64[3]) tuple(c0, x)
  w = (s32[], f64[3]) while(init), condition=cond, body=body
  ROOT a = f64[3] get-tuple-element(w), index=1
}
"""


def _reference_loop(x, n):
    for _ in range(n):
        x = x * np.sin(x)
    return x


def test_fori_loop_is_unrolled_for_reverse_mode_and_kept_for_forward_mode():
    m = parse(WHILE.replace("LIMIT", "k").replace("ci = s32[] get-tuple-element(cp), index=0",
                                                  "ci = s32[] get-tuple-element(cp), index=0\n  k = s32[] constant(4)"))
    v = vjp_computation(m, m.entry, [0])
    assert not any(i.opcode == "while" for i in v.instructions)
    j = jvp_computation(m, m.entry)
    assert any(i.opcode == "while" for i in j.instructions)
    x = np.array([0.3, -0.7, 1.1])
    eps, d = 1e-6, np.array([1.0, 0.0, 0.0])
    fd = (_reference_loop(x + eps * d, 4) - _reference_loop(x - eps * d, 4)) / (2 * eps)
    _, tangent = run(m, j, x, np.int32(0), d, np.int32(0))
    np.testing.assert_allclose(tangent, fd, rtol=1e-6)
    _, g = run(m, v, x, np.int32(0), np.ones(3))
    np.testing.assert_allclose(g[0], fd[0], rtol=1e-6)


def test_while_with_dynamic_trip_count_reverse_mode_raises_forward_mode_works():
    # make the bound a loop-carried value: the condition reads it from the carry
    dynamic = parse(WHILE.replace("(s32[], f64[3])", "(s32[], f64[3], s32[])")
                    .replace("ROOT t = (s32[], f64[3], s32[]) tuple(i1, a1)",
                             "nn = s32[] get-tuple-element(p), index=2\n  ROOT t = (s32[], f64[3], s32[]) tuple(i1, a1, nn)")
                    .replace("LIMIT", "cn").replace("ci = s32[] get-tuple-element(cp), index=0",
                                                    "ci = s32[] get-tuple-element(cp), index=0\n  cn = s32[] get-tuple-element(cp), index=2")
                    .replace("tuple(c0, x)", "tuple(c0, x, n)"))
    with pytest.raises(xlapy.XlapyError, match="reverse-mode differentiation of while_loop is not supported; "
                                               "use fori_loop with static bounds or scan"):
        vjp_computation(dynamic, dynamic.entry, [0])
    j = jvp_computation(dynamic, dynamic.entry)
    x, d = np.array([0.3, -0.7, 1.1]), np.array([0.2, 1.0, -0.5])
    eps = 1e-6
    fd = (_reference_loop(x + eps * d, 5) - _reference_loop(x - eps * d, 5)) / (2 * eps)
    primal, tangent = run(dynamic, j, x, np.int32(5), d, np.int32(0))
    np.testing.assert_allclose(primal, _reference_loop(x, 5), rtol=1e-12)
    np.testing.assert_allclose(tangent, fd, rtol=1e-6)


def test_non_differentiable_ops_give_zero_cotangents():
    """argmax (a variadic reduce's index output), compare, iota, rng: no rule is needed, no gradient flows."""
    m = parse("""HloModule nd
argmax {
  v0 = f64[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f64[] parameter(2)
  i1 = s32[] parameter(3)
  ge = pred[] compare(v0, v1), direction=GE
  v = f64[] select(ge, v0, v1)
  i = s32[] select(ge, i0, i1)
  ROOT r = (f64[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f64[5] parameter(0)
  io = s32[5] iota(), iota_dimension=0
  ninf = f64[] constant(-inf)
  zero = s32[] constant(0)
  am = (f64[], s32[]) reduce(x, io, ninf, zero), dimensions={0}, to_apply=argmax
  idx = s32[] get-tuple-element(am), index=1
  fidx = f64[] convert(idx)
  lo = f64[] constant(0)
  hi = f64[] constant(1)
  noise = f64[5] rng(lo, hi), distribution=rng_uniform
  pos = pred[5] compare(x, noise), direction=GT
  b = f64[5] broadcast(fidx), dimensions={}
  xb = f64[5] multiply(x, b)
  ROOT s = f64[5] select(pos, xb, x)
}""")
    v = vjp_computation(m, m.entry, [0])
    assert v.root.shape.tuple_shapes[1].dims == (5,)
    j = jvp_computation(m, m.entry)
    assert j.root.shape.tuple_shapes[1].dims == (5,)
