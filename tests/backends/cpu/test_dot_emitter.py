"""The dot emitter on its own: small LLVM modules that call `emit_dot`, JIT-ed for the host at -O3, run on numpy
buffers through ctypes and compared with the interpreter's dot (exact for integers)."""
from __future__ import annotations

import ctypes
import statistics
import time

import llvmlite.binding as llvm
import ml_dtypes
import numpy as np
import pytest
from llvmlite import ir

import xlapy
from xlapy.backends.cpu import runtime
from xlapy.backends.cpu.compiler import optimize_llvm, target_machine
from xlapy.backends.cpu.dot_emitter import DotDims, emit_dot, plan_dot
from xlapy.backends.cpu.irhelpers import for_range
from xlapy.hlo.shape import Shape

I8P = ir.IntType(8).as_pointer()
NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "s8": np.int8,
      "s32": np.int32, "s64": np.int64, "u8": np.uint8, "u32": np.uint32, "pred": np.bool_}
MATMUL = dict(lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
_ENGINES = []      # keep JIT-ed code alive for the whole session


def jit_dot(lhs, rhs, out, dnums, ty, lt=None, rt=None, scratch=True, reps=False):
    """Compile `void dot(i8* lhs, i8* rhs, i8* out, i8* scratch[, i64 reps])` around emit_dot; returns
    (call(a, b, out=None) -> out, plan). With reps the dot runs `reps` times in native code (for timing)."""
    tm = target_machine()
    mod = ir.Module("dot_test")
    mod.triple = llvm.get_process_triple()
    mod.data_layout = str(tm.target_data)
    args = [I8P] * 4 + ([ir.IntType(64)] if reps else [])
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), args), "dot")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    emit = lambda: emit_dot(b, mod, fn.args[0], fn.args[1], fn.args[2], lhs, rhs, out, dnums, ty, lt, rt,
                            scratch=fn.args[3] if scratch else None)
    if reps:
        with for_range(b, fn.args[4]):
            plan = emit()
    else:
        plan = emit()
    b.ret_void()
    parsed = llvm.parse_assembly(str(mod))
    parsed.verify()
    optimize_llvm(parsed, tm)
    engine = llvm.create_mcjit_compiler(parsed, tm)
    engine.finalize_object()
    _ENGINES.append(engine)
    cfn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4, *([ctypes.c_int64] if reps else []))(
        engine.get_function_address("dot"))
    out_dims = out.dims if isinstance(out, Shape) else tuple(out)
    work = np.empty(plan.scratch_bytes + 64, np.uint8)
    work_ptr = work.ctypes.data + (-work.ctypes.data) % 64

    def call(a, bb, result=None, n=1):
        result = np.empty(out_dims, NP[ty]) if result is None else result
        cfn(a.ctypes.data, bb.ctypes.data, result.ctypes.data, work_ptr, *([n] if reps else []))
        return result
    call.keep = work
    return call, plan


def interpreter_dot(a, bb, out_dims, dnums, ty, lt, rt):
    text_dims = lambda s: ",".join(map(str, s))
    attrs = ", ".join(f"{k}={{{text_dims(v)}}}" for k, v in dnums.items())
    text = (f"HloModule m\nENTRY e {{\n  a = {lt}[{text_dims(a.shape)}] parameter(0)\n"
            f"  b = {rt}[{text_dims(bb.shape)}] parameter(1)\n"
            f"  ROOT d = {ty}[{text_dims(out_dims)}] dot(a, b){', ' + attrs if attrs else ''}\n}}\n")
    return xlapy.compile(xlapy.hlo.parse(text), backend="interpreter")(a, bb)


def values(ty, shape, rng, small=False):
    if ty == "pred":
        return rng.integers(0, 2, shape).astype(bool)
    dt = np.dtype(NP[ty])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = (-20 if dt.kind == "i" else 0, 20) if small else (info.min, info.max)
        return rng.integers(lo, hi, shape, endpoint=True).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def check(lhs, rhs, out, dnums, ty, lt=None, rt=None, seed=0, **kw):
    lt, rt = lt or ty, rt or ty
    rng = np.random.default_rng(seed)
    small = NP[ty] in (np.float32, np.float64) and lt not in ("f32", "f64", "bf16", "f16")
    a, bb = values(lt, lhs, rng, small), values(rt, rhs, rng, small)
    call, plan = jit_dot(lhs, rhs, out, dnums, ty, lt, rt, **kw)
    got = call(a, bb)
    want = interpreter_dot(a, bb, out, dnums, ty, lt, rt)
    assert got.dtype == want.dtype and got.shape == want.shape
    if np.dtype(NP[ty]).kind in "iub":
        np.testing.assert_array_equal(got, want)
    else:
        tol = {"f64": 1e-12, "f32": 2e-5, "f16": 1e-2, "bf16": 1e-2}[ty]
        scale = np.abs(a.astype(np.float64)).max(initial=1) * np.abs(bb.astype(np.float64)).max(initial=1) * \
            max(1, plan.k)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol * scale)
    return plan


BATCH = dict(lhs_batch_dims=(0,), rhs_batch_dims=(0,), lhs_contracting_dims=(2,), rhs_contracting_dims=(1,))
CASES = {   # name: (lhs dims, rhs dims, out dims, dimension numbers)
    "matmul.tiny": ((3, 5), (5, 4), (3, 4), MATMUL),
    "matmul.small": ((9, 13), (13, 37), (9, 37), MATMUL),
    "matmul.odd": ((61, 67), (67, 71), (61, 71), MATMUL),
    "matmul.128": ((128, 96), (96, 160), (128, 160), MATMUL),
    "lhs.transposed": ((100, 64), (100, 80), (64, 80), dict(lhs_contracting_dims=(0,), rhs_contracting_dims=(0,))),
    "both.transposed": ((100, 64), (80, 100), (64, 80), dict(lhs_contracting_dims=(0,), rhs_contracting_dims=(1,))),
    "rhs.transposed.small": ((6, 7), (5, 7), (6, 5), dict(lhs_contracting_dims=(1,), rhs_contracting_dims=(1,))),
    "batch": ((3, 50, 60), (3, 60, 70), (3, 50, 70), BATCH),
    "batch.small": ((4, 5, 6), (4, 6, 7), (4, 5, 7), BATCH),
    "batch.middle": ((50, 3, 60), (60, 3, 70), (3, 50, 70),
                     dict(lhs_batch_dims=(1,), rhs_batch_dims=(1,), lhs_contracting_dims=(2,),
                          rhs_contracting_dims=(0,))),
    "contract.middle": ((20, 60, 30), (60, 70), (20, 30, 70), MATMUL),
    "multi.contract": ((4, 6, 3, 2), (3, 5, 6), (4, 2, 5), dict(lhs_contracting_dims=(1, 2),
                                                                rhs_contracting_dims=(2, 0))),
    "multi.free": ((4, 6, 3), (6, 2, 5), (4, 3, 2, 5), MATMUL),
    "matvec": ((300, 200), (200,), (300,), MATMUL),
    "matvec.small": ((33, 17), (17,), (33,), MATMUL),
    "matvec.transposed": ((200, 300), (200,), (300,), dict(lhs_contracting_dims=(0,), rhs_contracting_dims=(0,))),
    "vecmat": ((200,), (200, 300), (300,), dict(lhs_contracting_dims=(0,), rhs_contracting_dims=(0,))),
    "vecvec": ((20000,), (20000,), (), dict(lhs_contracting_dims=(0,), rhs_contracting_dims=(0,))),
    "vecvec.small": ((37,), (37,), (), dict(lhs_contracting_dims=(0,), rhs_contracting_dims=(0,))),
    "outer": ((40,), (50,), (40, 50), {}),
    "empty.k": ((4, 0), (0, 3), (4, 3), MATMUL),
    "empty.m": ((0, 5), (5, 3), (0, 3), MATMUL),
}


@pytest.mark.parametrize("ty", ["f32", "f64"])
@pytest.mark.parametrize("case", list(CASES))
def test_float_dots(case, ty):
    check(*CASES[case], ty)


INT_CASES = ["matmul.odd", "both.transposed", "batch.middle", "matvec.small", "vecmat"]


@pytest.mark.parametrize("types", [("s32", "s32", "s32"), ("s32", "s8", "s8"), ("s32", "u8", "u8"),
                                   ("u8", "u8", "u8"), ("pred", "pred", "pred")], ids="-".join)
@pytest.mark.parametrize("case", INT_CASES)
def test_integer_dots_are_exact(case, types):
    ty, lt, rt = types
    plan = check(*CASES[case], ty, lt, rt)
    assert plan.strategy == "loops"


@pytest.mark.parametrize("types", [("s32", "u8", "s8"), ("s64", "s64", "s64")], ids="-".join)
@pytest.mark.parametrize("case", ["multi.contract", "multi.free", "empty.k"])
def test_integer_dots_more(case, types):
    check(*CASES[case], *types)


@pytest.mark.parametrize("types", [("bf16", "bf16", "bf16"), ("f16", "f16", "f16"), ("f32", "bf16", "bf16"),
                                   ("f64", "f32", "f32"), ("f32", "s32", "s32")], ids="-".join)
@pytest.mark.parametrize("case", ["matmul.odd", "batch.middle", "matvec.small", "vecmat"])
def test_narrow_and_mixed_dots(case, types):
    check(*CASES[case], *types)


def test_bf16_rounds_once():
    """1 + 2^-8 + 2^-8 is 1 in bf16 if rounded after every add (ties to even), 1 + 2^-7 when accumulated in f32."""
    a = np.array([[1.0, 2.0**-8, 2.0**-8]], ml_dtypes.bfloat16)
    bb = np.ones((3, 8), ml_dtypes.bfloat16)
    call, _ = jit_dot((1, 3), (3, 8), (1, 8), MATMUL, "bf16")
    np.testing.assert_array_equal(call(a, bb).astype(np.float32), np.full((1, 8), 1 + 2.0**-7, np.float32))


def test_integer_dot_wraps_around():
    a = np.full((2, 4), 2**30 + 1, np.int32)
    bb = np.full((4, 3), 3, np.int32)
    call, _ = jit_dot((2, 4), (4, 3), (2, 3), MATMUL, "s32")
    np.testing.assert_array_equal(call(a, bb), np.full((2, 3), 12, np.int32))     # 12 * 2^30 + 12 mod 2^32


def _plan_strategies():
    big = plan_dot((512, 512), (512, 512), (512, 512), MATMUL, "f32")
    small = plan_dot((8, 8), (8, 8), (8, 8), MATMUL, "f32")
    ints = plan_dot((512, 512), (512, 512), (512, 512), MATMUL, "s32")
    return big, small, ints


def test_plan_strategies():
    big, small, ints = _plan_strategies()
    assert small.strategy == "loops" and ints.strategy == "loops"
    if runtime.blas_function("gemm", "f32") is not None:
        assert big.strategy == "gemm" and big.copies == () and big.symbol == runtime.blas_symbol("gemm", "f32")
        tr = plan_dot((100, 64), (80, 100), (64, 80), CASES["both.transposed"][3], "f32")
        assert tr.strategy == "gemm" and tr.copies == ()      # transposes fold into the call's flags
        mid = plan_dot(*CASES["contract.middle"][:4], "f32")
        assert mid.copies == ("lhs",) and mid.scratch_bytes >= 20 * 60 * 30 * 4
        assert plan_dot(*CASES["matvec"][:4], "f64").strategy == "gemv"


def test_dot_dims_from_attrs():
    dd = DotDims.of({"lhs_batch_dims": [0], "lhs_contracting_dims": [2], "rhs_batch_dims": [0],
                     "rhs_contracting_dims": [1]})
    assert dd == DotDims((0,), (2,), (0,), (1,))
    assert DotDims.of(dd) is dd


def test_mismatched_shapes_are_rejected():
    with pytest.raises(xlapy.errors.UnimplementedError, match="dot"):
        plan_dot((3, 4), (5, 6), (3, 6), MATMUL, "f32")


@pytest.mark.parametrize("layouts", [((1, 0), (1, 0), (0, 1)), ((0, 1), (0, 1), (1, 0)), ((0, 1), (1, 0), (0, 1))])
@pytest.mark.parametrize("mkn", [(100, 80, 90), (7, 9, 11), (1, 300, 1)])
def test_layouts(mkn, layouts):
    """Operands and results in column-major layouts: strides fold into the BLAS flags or the loops."""
    m, k, n = mkn
    rng = np.random.default_rng(1)
    a, bb = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    shapes = [Shape.array("f32", d, l) for d, l in zip(((m, k), (k, n), (m, n)), layouts)]
    physical = lambda x, l: np.ascontiguousarray(x if l == (1, 0) else x.T)
    call, plan = jit_dot(*shapes, MATMUL, "f32")
    out = np.empty((m, n) if layouts[2] == (1, 0) else (n, m), np.float32)
    call(physical(a, layouts[0]), physical(bb, layouts[1]), out)
    got = out if layouts[2] == (1, 0) else out.T
    np.testing.assert_allclose(got, a @ bb, rtol=1e-4, atol=1e-4)
    if plan.strategy == "loops":     # small: rhs and out are copied only to give the vector kernel unit-stride N
        assert set(plan.copies) <= {"rhs", "out"}
    else:
        assert plan.copies == ()


def test_small_dot_with_transposed_rhs_copies_it_for_the_vector_kernel():
    """dW-style dot of the MLP step: [32,10] x [128,10]^T. Scalar loops over rhs's strided columns took 16 us;
    a copy of rhs (1,280 elements) lets the vector kernel run."""
    plan = plan_dot((32, 10), (128, 10), (32, 128), DotDims(lhs_contracting=(1,), rhs_contracting=(1,)), "f32")
    assert plan.strategy == "loops" and plan.copies == ("rhs",) and plan.scratch_bytes == 128 * 10 * 4
    assert "vector kernel" in plan.reason
    rng = np.random.default_rng(3)
    a, w = rng.standard_normal((32, 10)).astype(np.float32), rng.standard_normal((128, 10)).astype(np.float32)
    for scratch in (True, False):
        call, _ = jit_dot((32, 10), (128, 10), (32, 128), DotDims(lhs_contracting=(1,), rhs_contracting=(1,)),
                          "f32", scratch=scratch)
        out = np.empty((32, 128), np.float32)
        call(a, w, out)
        np.testing.assert_allclose(out, a @ w.T, rtol=1e-5, atol=1e-5)
    assert plan_dot((1, 10), (128, 10), (1, 128), DotDims(lhs_contracting=(1,), rhs_contracting=(1,)),
                    "f32").copies == ()          # one row: the copy would cost as much as the product


@pytest.mark.parametrize("scratch", [True, False], ids=["scratch", "malloc"])
def test_transpose_copies(scratch):
    """Contracting dim between two free dims, result in a layout whose M dims do not merge: both copied."""
    rng = np.random.default_rng(2)
    a, bb = rng.standard_normal((20, 60, 30)).astype(np.float32), rng.standard_normal((60, 70)).astype(np.float32)
    out_shape = Shape.array("f32", (20, 30, 70), (0, 2, 1))       # physical [30, 70, 20]
    call, plan = jit_dot((20, 60, 30), (60, 70), out_shape, MATMUL, "f32", scratch=scratch)
    out = np.empty((30, 70, 20), np.float32)
    call(a, bb, out)
    got = out.transpose(2, 0, 1)
    np.testing.assert_allclose(got, np.einsum("akb,kn->abn", a, bb), rtol=1e-4, atol=1e-4)
    if runtime.blas_function("gemm", "f32") is not None:
        assert plan.strategy == "gemm" and plan.copies == ("lhs", "out")


def test_matmul_1024_against_numpy(capsys):
    """1024^3 f32 through the emitted BLAS call vs numpy's `a @ b` (median of 5 each): reported, not asserted."""
    n = 1024
    rng = np.random.default_rng(3)
    a, bb = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    call, plan = jit_dot((n, n), (n, n), (n, n), MATMUL, "f32")
    out = np.empty((n, n), np.float32)
    want = a @ bb
    np.testing.assert_allclose(call(a, bb, out), want, rtol=1e-3, atol=1e-3)

    ours, theirs = [], []
    for _ in range(5):        # interleaved, so both see the same machine load
        t = time.perf_counter()
        call(a, bb, out)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        np.matmul(a, bb, out=want)
        theirs.append(time.perf_counter() - t)
    ours, theirs = statistics.median(ours), statistics.median(theirs)
    with capsys.disabled():
        print(f"\n[dot 1024^3 f32] {plan.strategy} via {runtime.describe()}: {ours * 1e3:.1f} ms; "
              f"numpy a @ b: {theirs * 1e3:.1f} ms; ratio {ours / theirs:.3f}")


def test_small_matmul_kernel_runs_natively():
    """The register-blocked kernel for small shapes, repeated in native code, agrees with numpy."""
    rng = np.random.default_rng(4)
    a, bb = rng.standard_normal((24, 24)).astype(np.float32), rng.standard_normal((24, 24)).astype(np.float32)
    call, plan = jit_dot((24, 24), (24, 24), (24, 24), MATMUL, "f32", reps=True)
    assert plan.strategy == "loops"
    np.testing.assert_allclose(call(a, bb, n=3), a @ bb, rtol=1e-5, atol=1e-5)


def test_narrow_f32_gemm_runs_the_vector_kernel_over_the_pool():
    """N <= 64 with rhs in L1 (dot_plan.narrow): the emitted vector kernel, not sgemm (gnn/fwd's 16384x128x64);
    on two threads its rows are shared out over the pool as batch elements (dot_emitter._rows_as_batch); a
    wider or f64 GEMM stays with BLAS."""
    from xlapy.backends.cpu.dot_plan import NARROW_REASON
    assert plan_dot((512, 64), (64, 32), (512, 32), MATMUL, "f32").reason == NARROW_REASON
    if runtime.blas_function("gemm", "f32") is not None:
        assert plan_dot((512, 128), (128, 128), (512, 128), MATMUL, "f32").strategy == "gemm"
        assert plan_dot((512, 64), (64, 32), (512, 32), MATMUL, "f64").strategy == "gemm"
    text = """HloModule narrow
ENTRY e {
  a = f32[514,64] parameter(0)
  b = f32[64,32] parameter(1)
  ROOT d = f32[514,32] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}"""
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", num_threads=2)
    assert "gemm" not in exe.llvm_ir and "xlapy_task" in exe.llvm_ir
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((514, 64), np.float32), rng.standard_normal((64, 32), np.float32)
    np.testing.assert_allclose(exe(a, b), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_narrow_gemm_rows_over_several_dims_share_the_pool():
    """M spanning several contiguous dims (a 3x3 filter gradient's GEMM, conv_gemm.py: patches [c, k..., o..., n],
    result [o..., n, f], M = 3 x 3 x 40) is one strided run, cut into row blocks for the pool all the same: on
    two threads the same bits as on one (each element's sum is unchanged)."""
    text = """HloModule fgrad
ENTRY e {
  a = f32[8,4,4,40] parameter(0)
  b = f32[8,4,4,48] parameter(1)
  ROOT r = f32[3,3,40,48] convolution(a, b), window={size=4x4 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf
}"""
    module = xlapy.hlo.parse(text)
    one, two = (xlapy.compile(module, backend="cpu", run_pipeline=False, num_threads=t) for t in (1, 2))
    assert "gemm" not in two.llvm_ir and "xlapy_task" in two.llvm_ir
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((8, 4, 4, 40), np.float32), rng.standard_normal((8, 4, 4, 48), np.float32)
    np.testing.assert_array_equal(two(a, b), one(a, b))


def test_short_f32_gemm_runs_the_vector_kernel():
    """At most SHORT_M rows (a classifier head, a sampling step's logits): the vector kernel, K in blocks, not
    sgemm packing all of rhs; 16 rows or f64 stay with BLAS."""
    from xlapy.backends.cpu.dot_plan import SHORT_REASON
    assert plan_dot((8, 512), (512, 100), (8, 100), MATMUL, "f32").reason == SHORT_REASON
    assert plan_dot((2, 192), (192, 2048), (2, 2048), MATMUL, "f32").reason == SHORT_REASON
    if runtime.blas_function("gemm", "f32") is not None:
        assert plan_dot((16, 768), (768, 2048), (16, 2048), MATMUL, "f32").strategy == "gemm"
        assert plan_dot((8, 512), (512, 100), (8, 100), MATMUL, "f64").strategy == "gemm"
    rng = np.random.default_rng(0)
    a = np.maximum(rng.standard_normal((8, 512)), 0).astype(np.float32)
    w = (rng.standard_normal((512, 100)) / 22.6).astype(np.float32)
    call, _ = jit_dot((8, 512), (512, 100), (8, 100), MATMUL, "f32")
    exact = a.astype(np.float64) @ w.astype(np.float64)
    got = np.asarray(call(a, w), np.float64)
    one_run = np.zeros((8, 100), np.float32)           # one run of K, as sgemm sums it
    for k in range(512):
        one_run = (one_run.astype(np.float64) + np.outer(a[:, k], w[k])).astype(np.float32)
    err = lambda y: np.sqrt(((y - exact) ** 2).sum() / (exact ** 2).sum())   # noqa: E731
    assert err(got) < 0.7 * err(one_run)
