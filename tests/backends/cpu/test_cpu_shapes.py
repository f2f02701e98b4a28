"""Shape ops, reductions, dot, control flow and fusion on the CPU backend against the interpreter."""
import numpy as np
import pytest

import xlapy
from xlapy.errors import UnimplementedError, XlapyError

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5


def test_shape_ops_f32(cpu):
    params = [("x", "f32[2,3,4]"), ("v", "f32[]"), ("i", "s32[]"), ("j", "s32[]"), ("u", "f32[1,2,2]")]
    rows = [
        ("broadcast", "f32[5,2,4,3]", "broadcast(x), dimensions={1,3,2}"),
        ("broadcast.scalar", "f32[3,2]", "broadcast(v), dimensions={}"),
        ("reshape", "f32[6,4]", "reshape(x)"), ("reshape.general", "f32[4,6]", "reshape(x)"),
        ("reshape.unit", "f32[2,1,3,4,1]", "reshape(x)"),
        ("transpose", "f32[4,2,3]", "transpose(x), dimensions={2,0,1}"),
        ("slice", "f32[1,2,2]", "slice(x), slice={[1:2], [0:3:2], [1:4:2]}"),
        ("concatenate", "f32[2,6,4]", "concatenate(x, x), dimensions={1}"),
        ("pad", "f32[2,8,5]", "pad(x, v), padding=0_0x1_2_1x-1_2"),
        ("reverse", "f32[2,3,4]", "reverse(x), dimensions={0,2}"),
        ("iota", "f32[3,5]", "iota(), iota_dimension=1"),
        ("dynamic-slice", "f32[1,2,2]", "dynamic-slice(x, i, j, i), dynamic_slice_sizes={1,2,2}"),
        ("dynamic-update-slice", "f32[2,3,4]", "dynamic-update-slice(x, u, i, j, j)"),
        ("copy", "f32[2,3,4]{0,1,2}", "copy(x)"),
        ("bitcast", "f32[24]", "bitcast(x)"),
    ]
    for i, j in ((0, 1), (5, -3), (-1, 2)):
        cpu.check_ops(params, rows, A, np.float32(9.5), np.int32(i), np.int32(j),
                      np.full((1, 2, 2), 100, np.float32))


@pytest.mark.parametrize("ty", ["s32", "u8", "pred", "bf16", "f16", "f64", "s64"])
def test_shape_ops_types(cpu, ty):
    x = cpu.corners(ty, 24).reshape(2, 3, 4)
    params = [("x", f"{ty}[2,3,4]"), ("v", f"{ty}[]")]
    rows = [("transpose", f"{ty}[4,3,2]", "transpose(x), dimensions={2,1,0}"),
            ("pad", f"{ty}[3,3,6]", "pad(x, v), padding=1_0x0_0x1_1"),
            ("concatenate", f"{ty}[4,3,4]", "concatenate(x, x), dimensions={0}"),
            ("iota", f"{ty}[4]", "iota(), iota_dimension=0")]
    cpu.check_ops(params, rows, x, cpu.corners(ty, 1, 9)[0])


def _reducer(name, ty, op):
    return f"{name} {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  ROOT r = {ty}[] {op}(a, b)\n}}\n"


@pytest.mark.parametrize("ty, op", [("f32", "add"), ("f32", "maximum"), ("f64", "minimum"), ("s32", "add"),
                                    ("u8", "maximum"), ("pred", "or"), ("bf16", "add"), ("f16", "add")])
def test_reduce(cpu, ty, op):
    x = cpu.corners(ty, 60, 4).reshape(3, 4, 5)
    if ty.startswith("f") or ty == "bf16":
        x = np.where(np.isnan(x), 1, x).astype(x.dtype)
        x = np.where(np.isinf(x), 2, x).astype(x.dtype)
    text = ("HloModule m\n" + _reducer("red", ty, op) + f"ENTRY e {{\n  x = {ty}[3,4,5] parameter(0)\n  c = {ty}[] parameter(1)\n"
            f"  a = {ty}[4] reduce(x, c), dimensions={{0,2}}, to_apply=red\n"
            f"  b = {ty}[3,4] reduce(x, c), dimensions={{2}}, to_apply=red\n"
            f"  d = {ty}[] reduce(x, c), dimensions={{0,1,2}}, to_apply=red\n"
            f"  ROOT t = ({ty}[4], {ty}[3,4], {ty}[]) tuple(a, b, d)\n}}\n")
    cpu.check(text, x, x.reshape(-1)[7])


def test_variadic_reduce_argmax(cpu):
    text = """HloModule m
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  pick = pred[] or(gt, tie)
  v = f32[] select(pick, av, bv)
  i = s32[] select(pick, ai, bi)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[4,7] parameter(0)
  idx = s32[4,7] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[4], s32[4]) reduce(x, idx, ninf, zero), dimensions={1}, to_apply=argmax
}
"""
    x = np.random.default_rng(0).standard_normal((4, 7)).astype(np.float32)
    x[1, 3] = x[1, 5] = 9
    cpu.check(text, x)
    cpu.check(text, x, pipeline=True)


@pytest.mark.parametrize("lt, rt, ot", [("f32", "f32", "f32"), ("f64", "f64", "f64"), ("s32", "s32", "s32"),
                                        ("bf16", "bf16", "f32"), ("bf16", "bf16", "bf16"), ("s8", "s8", "s32")])
def test_dot(cpu, lt, rt, ot):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((2, 3, 5)) * 4).astype(cpu.DTYPES[lt])
    b = (rng.standard_normal((2, 5, 4)) * 4).astype(cpu.DTYPES[rt])
    m = (rng.standard_normal((3, 5)) * 4).astype(cpu.DTYPES[lt])
    params = [("a", f"{lt}[2,3,5]"), ("b", f"{rt}[2,5,4]"), ("m", f"{lt}[3,5]")]
    rows = [("batch", f"{ot}[2,3,4]", "dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                                      "rhs_batch_dims={0}, rhs_contracting_dims={1}"),
            ("matvec.t", f"{ot}[3,3]", "dot(m, m), lhs_contracting_dims={1}, rhs_contracting_dims={1}")]
    cpu.check_ops(params, rows, a, b, m)


WHILE = """HloModule m
cond {
  s = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[3] get-tuple-element(s), index=1
  b = f32[3] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  ab = f32[3] add(a, b)
  ROOT t = (s32[], f32[3], f32[3]) tuple(i2, b, ab)
}
ENTRY e {
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  z = s32[] constant(0)
  init = (s32[], f32[3], f32[3]) tuple(z, x, y)
  w = (s32[], f32[3], f32[3]) while(init), condition=cond, body=body
  ROOT r = f32[3] get-tuple-element(w), index=2
}
"""

CONDITIONAL = """HloModule m
b0 {
  p = f32[3] parameter(0)
  ROOT n = f32[3] negate(p)
}
b1 {
  p = f32[3] parameter(0)
  ROOT e = f32[3] exponential(p)
}
b2 {
  p = f32[3] parameter(0)
  ROOT e = f32[3] add(p, p)
}
ENTRY e {
  k = s32[] parameter(0)
  x = f32[3] parameter(1)
  ROOT c = f32[3] conditional(k, x, x, x), branch_computations={b0, b1, b2}
}
"""


@pytest.mark.parametrize("pipeline", [False, True])
def test_while_swaps_state(cpu, pipeline):
    cpu.check(WHILE, np.array([1, 2, 3], np.float32), np.array([0.5, 1, -1], np.float32), pipeline=pipeline)


@pytest.mark.parametrize("k", [0, 1, 2, 7, -1])
def test_conditional(cpu, k):
    cpu.check(CONDITIONAL, np.int32(k), np.array([1, 2, -3], np.float32))


def test_tuple_result_with_parameter_and_duplicates(cpu):
    text = """HloModule m
ENTRY e {
  x = f32[2,2] parameter(0)
  y = f32[2,2] negate(x)
  ROOT t = (f32[2,2], f32[2,2], (f32[2,2], f32[2,2])) tuple(y, x, (f32[2,2], f32[2,2]) tuple(y, y))
}
"""
    cpu.check(text, np.eye(2, dtype=np.float32))


def test_fusion_multi_output_and_reduce_root(cpu):
    text = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
fused_mo {
  p0 = f32[4,8] parameter(0)
  p1 = f32[8] parameter(1)
  b = f32[4,8] broadcast(p1), dimensions={1}
  m = f32[4,8] multiply(p0, b)
  e = f32[4,8] exponential(m)
  ROOT t = (f32[4,8], f32[4,8]) tuple(m, e)
}
fused_red {
  p0 = f32[4,8] parameter(0)
  t = f32[8,4] transpose(p0), dimensions={1,0}
  z = f32[] constant(0)
  ROOT r = f32[8] reduce(t, z), dimensions={1}, to_apply=add
}
ENTRY e {
  x = f32[4,8] parameter(0)
  v = f32[8] parameter(1)
  f = (f32[4,8], f32[4,8]) fusion(x, v), kind=kLoop, calls=fused_mo
  g0 = f32[4,8] get-tuple-element(f), index=0
  g1 = f32[4,8] get-tuple-element(f), index=1
  r = f32[8] fusion(g1), kind=kInput, calls=fused_red
  ROOT out = (f32[4,8], f32[8]) tuple(g0, r)
}
"""
    rng = np.random.default_rng(2)
    cpu.check(text, rng.standard_normal((4, 8)).astype(np.float32), rng.standard_normal(8).astype(np.float32))


def test_non_default_parameter_and_result_layouts(cpu):
    text = """HloModule m, entry_computation_layout={(f32[3,4]{0,1})->f32[4,3]{0,1}}
ENTRY e {
  x = f32[3,4]{0,1} parameter(0)
  ROOT t = f32[4,3]{0,1} transpose(x), dimensions={1,0}
}
"""
    cpu.check(text, np.arange(12, dtype=np.float32).reshape(3, 4))


def test_unsupported_op_names_it():
    text = """HloModule m
ENTRY e {
  zero = f32[] constant(0)
  ROOT s = f32[] rng(zero, zero), distribution=rng_uniform
}
"""
    with pytest.raises(UnimplementedError, match="opcode rng not supported yet .instruction s"):
        xlapy.compile(xlapy.hlo.parse(text), backend="cpu", run_pipeline=False)


def test_argument_validation():
    exe = xlapy.compile(xlapy.hlo.parse("HloModule m\nENTRY e {\n  x = f32[3] parameter(0)\n"
                                        "  ROOT n = f32[3] negate(x)\n}\n"), backend="cpu")
    with pytest.raises(XlapyError, match="dtype"):
        exe(np.zeros(3, np.float64))
    with pytest.raises(XlapyError, match="shape"):
        exe(np.zeros(4, np.float32))
    with pytest.raises(XlapyError, match="takes 1 arguments"):
        exe()
    strided = np.arange(6, dtype=np.float32)[::2]
    np.testing.assert_array_equal(exe(strided), -strided)


def test_dumps_llvm_ir_and_assembly(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", f"--xla_dump_to={tmp_path}")
    xlapy.compile(xlapy.hlo.parse("HloModule dumpme\nENTRY e {\n  x = f32[3] parameter(0)\n"
                                  "  ROOT n = f32[3] negate(x)\n}\n"), backend="cpu")
    names = sorted(p.name for p in tmp_path.iterdir())
    for suffix in ("ir-no-opt.ll", "ir-with-opt.ll", ".s", "cpu_after_optimizations.txt"):
        assert any(n.endswith(suffix) and "dumpme" in n for n in names), (suffix, names)
