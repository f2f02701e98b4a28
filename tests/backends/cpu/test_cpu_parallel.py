"""Multithreaded loops (parallel.py, loops.py): large loop fusions and reductions split over threads give the
single-threaded backend's results (bitwise for elementwise work and integers, within reassociation for float
reductions) and the interpreter's; the thread-count knob works; small kernels and 1 thread emit no threads."""
import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import parallel
from xlapy.errors import XlapyError

THREADS = (1, 2, 3)
ROWS, COLS = 823, 547            # 450,181 elements: above the threshold for 3 threads, not divisible by 2 or 3

ADD = """
add {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  ROOT r = $T[] add(a, b)
}
max {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  ROOT r = $T[] maximum(a, b)
}
"""


def compile_all(text: str) -> dict:
    module = xlapy.hlo.parse(text)
    exes = {t: xlapy.compile(module, backend="cpu", num_threads=t) for t in THREADS}
    exes["interpreter"] = xlapy.compile(module, backend="interpreter")
    return exes


def threaded(exe) -> bool:
    return "xlapy_pool_run" in exe.llvm_ir


def data(dtype, *shape, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-1000, 1000, shape).astype(dtype)


def assert_bitwise(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("ty", ["f32", "s32"])
def test_elementwise_fusion_matches_bitwise(ty):
    text = f"""HloModule m
fused {{
  x = {ty}[{ROWS},{COLS}] parameter(0)
  y = {ty}[{ROWS},{COLS}] parameter(1)
  m = {ty}[{ROWS},{COLS}] multiply(x, y)
  ROOT r = {ty}[{ROWS},{COLS}] add(m, x)
}}
ENTRY e {{
  x = {ty}[{ROWS},{COLS}] parameter(0)
  y = {ty}[{ROWS},{COLS}] parameter(1)
  ROOT f = {ty}[{ROWS},{COLS}] fusion(x, y), kind=kLoop, calls=fused
}}
"""
    exes = compile_all(text)
    dt = np.float32 if ty == "f32" else np.int32
    x, y = data(dt, ROWS, COLS), data(dt, ROWS, COLS, seed=1)
    want = exes[1](x, y)
    assert not threaded(exes[1]) and threaded(exes[2]) and threaded(exes[3])
    for t in (2, 3):
        assert_bitwise(exes[t](x, y), want)
    # the interpreter evaluates op by op; the CPU backend contracts x * y + x into one FMA (elemental_contract.py)
    from xlapy.backends.cpu.elemental_contract import fused_on_host
    fused = ty == "f32" and fused_on_host()
    ref = (x.astype(np.float64) * y + x).astype(np.float32) if fused else exes["interpreter"](x, y)
    assert_bitwise(ref, want)


def test_column_major_output_and_rank1_odd_length():
    n = 200_003
    text = f"""HloModule m
ENTRY e {{
  x = f32[{ROWS},{COLS}]{{1,0}} parameter(0)
  v = f32[{n}] parameter(1)
  c = f32[{ROWS},{COLS}]{{0,1}} copy(x)
  s = f32[{ROWS},{COLS}]{{0,1}} multiply(c, c)
  w = f32[{n}] multiply(v, v)
  ROOT r = (f32[{ROWS},{COLS}]{{0,1}}, f32[{n}]) tuple(s, w)
}}
"""
    exes = compile_all(text)
    x, v = data(np.float32, ROWS, COLS), data(np.float32, n, seed=2)
    want = exes[1](x, v)
    assert threaded(exes[3])
    for t in (2, 3, "interpreter"):
        for g, w in zip(exes[t](x, v), want):
            assert_bitwise(g, w)


def test_multi_output_fusion_matches_bitwise():
    text = f"""HloModule m
fused {{
  x = f32[{ROWS},{COLS}] parameter(0)
  y = f32[{ROWS},{COLS}] parameter(1)
  a = f32[{ROWS},{COLS}] add(x, y)
  m = f32[{ROWS},{COLS}] multiply(a, y)
  c = s32[{ROWS},{COLS}] convert(m)
  ROOT t = (f32[{ROWS},{COLS}], s32[{ROWS},{COLS}]) tuple(a, c)
}}
ENTRY e {{
  x = f32[{ROWS},{COLS}] parameter(0)
  y = f32[{ROWS},{COLS}] parameter(1)
  ROOT f = (f32[{ROWS},{COLS}], s32[{ROWS},{COLS}]) fusion(x, y), kind=kLoop, calls=fused
}}
"""
    exes = compile_all(text)
    x, y = data(np.float32, ROWS, COLS) * 100, data(np.float32, ROWS, COLS, seed=1)
    want = exes[1](x, y)
    assert threaded(exes[2])
    for t in (2, 3, "interpreter"):
        for g, w in zip(exes[t](x, y), want):
            assert_bitwise(g, w)


def reduce_module(ty: str, dims: str, out: str, reducer: str = "add", init: str = "0") -> str:
    return "HloModule m\n" + ADD.replace("$T", ty) + f"""
fused {{
  x = {ty}[{ROWS},{COLS}] parameter(0)
  y = {ty}[{ROWS},{COLS}] parameter(1)
  p = {ty}[{ROWS},{COLS}] multiply(x, y)
  s = {ty}[{ROWS},{COLS}] add(p, x)
  z = {ty}[] constant({init})
  ROOT r = {ty}{out} reduce(s, z), dimensions={{{dims}}}, to_apply={reducer}
}}
ENTRY e {{
  x = {ty}[{ROWS},{COLS}] parameter(0)
  y = {ty}[{ROWS},{COLS}] parameter(1)
  ROOT f = {ty}{out} fusion(x, y), kind=kInput, calls=fused
}}
"""


REDUCTIONS = [("0,1", "[]"), ("1", f"[{ROWS}]"), ("0", f"[{COLS}]")]


@pytest.mark.parametrize("dims,out", REDUCTIONS, ids=["all", "rows", "columns"])
def test_integer_reductions_match_bitwise(dims, out):
    exes = compile_all(reduce_module("s32", dims, out))
    x, y = data(np.int32, ROWS, COLS), data(np.int32, ROWS, COLS, seed=1)
    want = exes[1](x, y)
    assert threaded(exes[2]) and threaded(exes[3])
    for t in (2, 3, "interpreter"):
        assert_bitwise(exes[t](x, y), want)


@pytest.mark.parametrize("dims,out", REDUCTIONS, ids=["all", "rows", "columns"])
def test_float_reductions_match_within_reassociation(dims, out):
    exes = compile_all(reduce_module("f32", dims, out))
    x, y = data(np.float32, ROWS, COLS), data(np.float32, ROWS, COLS, seed=1)
    axes = tuple(int(d) for d in dims.split(","))
    s = x.astype(np.float64) * y + x
    exact, scale = s.sum(axis=axes), np.abs(s).sum(axis=axes)
    results = {t: exes[t](x, y) for t in exes}
    for t, got in results.items():
        assert np.all(np.abs(got - exact) <= 1e-5 * scale + 1e-6), t
    if dims != "0,1":      # an output loop split: every element reduced exactly as with one thread
        for t in (2, 3):
            assert_bitwise(results[t], results[1])
    for t in (2, 3):       # deterministic for a given thread count
        assert_bitwise(exes[t](x, y), results[t])


def test_max_reduction_over_everything_is_exact():
    exes = compile_all(reduce_module("f32", "0,1", "[]", reducer="max", init="-inf"))
    x, y = data(np.float32, ROWS, COLS), data(np.float32, ROWS, COLS, seed=1)
    want = exes[1](x, y)
    assert threaded(exes[3])
    for t in (2, 3, "interpreter"):
        assert_bitwise(exes[t](x, y), want)


def test_reduction_with_non_identity_init_is_not_split():
    """Each task would apply init 7 once more; such a scalar reduction stays on one thread."""
    exes = compile_all(reduce_module("s32", "0,1", "[]", init="7"))
    x, y = data(np.int32, ROWS, COLS), data(np.int32, ROWS, COLS, seed=1)
    assert not threaded(exes[3])
    assert_bitwise(exes[3](x, y), exes["interpreter"](x, y))


def test_workers_flush_denormals():
    n = 300_001
    text = f"""HloModule m
ENTRY e {{
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  ROOT r = f32[{n}] multiply(x, y)
}}
"""
    module = xlapy.hlo.parse(text)
    one, three = (xlapy.compile(module, backend="cpu", num_threads=t) for t in (1, 3))
    x = np.full(n, 1e-39, np.float32)               # a denormal: read as zero (DAZ) on every thread
    y = np.full(n, 3.0, np.float32)
    assert threaded(three)
    assert_bitwise(three(x, y), one(x, y))
    assert not np.any(three(x, y))


def test_small_kernels_and_one_thread_emit_no_threads(monkeypatch):
    small = xlapy.hlo.parse("HloModule m\nENTRY e {\n  x = f32[1000] parameter(0)\n"
                            "  ROOT r = f32[1000] add(x, x)\n}\n")
    assert not threaded(xlapy.compile(small, backend="cpu", num_threads=8))
    big = xlapy.hlo.parse(reduce_module("f32", "0,1", "[]"))
    assert not threaded(xlapy.compile(big, backend="cpu", num_threads=1))
    monkeypatch.setenv("XLAPY_NUM_THREADS", "1")
    assert not threaded(xlapy.compile(big, backend="cpu"))
    monkeypatch.setenv("XLAPY_NUM_THREADS", "2")
    assert threaded(xlapy.compile(big, backend="cpu"))
    assert parallel.resolve_num_threads(3) == 3      # the compile option wins over the environment
    monkeypatch.setenv("XLAPY_NUM_THREADS", "zero")
    with pytest.raises(XlapyError, match="XLAPY_NUM_THREADS"):
        parallel.resolve_num_threads()
    with pytest.raises(XlapyError, match="num_threads"):
        parallel.resolve_num_threads(0)


def test_task_count_follows_memory_traffic():
    def inst(n):
        return xlapy.hlo.parse(f"HloModule m\nENTRY e {{\n  x = f32[{n}] parameter(0)\n"
                               f"  ROOT r = f32[{n}] negate(x)\n}}\n").entry.root
    assert parallel.task_count(inst(10_000), 8) == 1
    assert parallel.task_count(inst(1 << 15), 8) == 1            # 256 KiB of traffic
    assert parallel.task_count(inst(1 << 16), 8) == 2            # 512 KiB of traffic
    assert parallel.task_count(inst(1 << 24), 8) == 8
    assert parallel.task_count(inst(1 << 24), 1) == 1
    bounds = parallel.chunk_bounds(1001, 3)
    assert bounds[0] == 0 and bounds[-1] == 1001 and bounds == sorted(bounds)


def test_task_count_counts_the_windows_of_a_sliced_value():
    """A loop body's dynamic-slice of one time step out of a [64,16,128] array (512 KiB) moves 8 KiB: one task,
    fused or not; the same value also read whole counts whole."""
    m = xlapy.hlo.parse("""HloModule m
sl {
  a = f32[64,16,128] parameter(0)
  i = s32[] parameter(1)
  z = s32[] constant(0)
  d = f32[1,16,128] dynamic-slice(a, i, z, z), dynamic_slice_sizes={1,16,128}
  ROOT t = f32[1,16,128] tanh(d)
}
whole {
  a = f32[64,16,128] parameter(0)
  ROOT t = f32[64,16,128] tanh(a)
}
ENTRY e {
  a = f32[64,16,128] parameter(0)
  i = s32[] parameter(1)
  z = s32[] constant(0)
  f = f32[1,16,128] fusion(a, i), kind=kLoop, calls=sl
  d = f32[1,16,128] dynamic-slice(a, i, z, z), dynamic_slice_sizes={1,16,128}
  w = f32[64,16,128] fusion(a), kind=kLoop, calls=whole
  ROOT r = (f32[1,16,128], f32[1,16,128], f32[64,16,128]) tuple(f, d, w)
}
""")
    by_name = {i.name: i for i in m.entry.instructions}
    assert parallel.task_count(by_name["f"], 8) == 1
    assert parallel.task_count(by_name["d"], 8) == 1
    assert parallel.task_count(by_name["w"], 8) == 4           # 1 MiB of traffic, 256 KiB a task


def test_reduction_with_fewer_outputs_than_threads_splits_the_reduced_dims():
    """s32[2, n] reduced over dim 1 on 3 threads: two outputs, each combined from three partials."""
    n = 400_009
    text = "HloModule m\n" + ADD.replace("$T", "s32") + f"""
ENTRY e {{
  x = s32[2,{n}] parameter(0)
  z = s32[] constant(0)
  ROOT r = s32[2] reduce(x, z), dimensions={{1}}, to_apply=add
}}
"""
    exes = compile_all(text)
    x = data(np.int32, 2, n)
    assert threaded(exes[3])
    want = exes["interpreter"](x)
    for t in THREADS:
        assert_bitwise(exes[t](x), want)


RESHAPED_GELU = """HloModule m
fused {
  p = f32[520,256] parameter(0)
  r = f32[8,65,256] reshape(p)
  c = f32[] constant(0.5)
  cb = f32[8,65,256] broadcast(c), dimensions={}
  t = f32[8,65,256] tanh(r)
  m = f32[8,65,256] multiply(t, cb)
  ROOT o = f32[520,256] reshape(m)
}
ENTRY e {
  p = f32[520,256] parameter(0)
  ROOT f = f32[520,256] fusion(p), kind=kLoop, calls=fused
}
"""


def test_chunks_of_whole_rows_keep_the_inner_loop_vectorized():
    """A loop with many rows is split in whole rows (loops.row_chunk_nest): each task's minor-most loop has
    constant bounds, so LLVM vectorizes it and folds the reshape's division by the row length, as on one thread.
    (Chunks ending mid-row left a division per element and no vector code: 3-6x slower on two threads than one.)"""
    exes = compile_all(RESHAPED_GELU)
    x = data(np.float32, 520, 256)
    for t in (2, 3):
        assert threaded(exes[t])
        task = exes[t].llvm_ir_optimized.split("xlapy_task", 1)[1]
        assert "<8 x float>" in task or "<4 x float>" in task or "<16 x float>" in task, "task loop not vectorized"
        assert_bitwise(exes[t](x), exes[1](x))
    np.testing.assert_allclose(exes[2](x), exes["interpreter"](x), rtol=2e-6)


BATCHED_DOT = """HloModule m
ENTRY e {
  a = $T[$B,65,32] parameter(0)
  b = $T[$B,32,$N] parameter(1)
  ROOT d = $T[$B,65,$N] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
}
"""


@pytest.mark.parametrize("ty,batch,n", [("f32", 32, 65), ("s32", 13, 65), ("f32", 4, 2048)])
def test_batched_dots_share_out_their_batch(ty, batch, n):
    """Attention's per-head products (each too small for a pool task or for BLAS) are shared out batch element by
    batch element (dot_blas.batch_tasks): the same numbers as on one thread, bitwise for the emitted loops. A
    batch of 4 big GEMMs (BLAS) is shared out too, the BLAS serial meanwhile."""
    module = xlapy.hlo.parse(BATCHED_DOT.replace("$T", ty).replace("$B", str(batch)).replace("$N", str(n)))
    one, two = (xlapy.compile(module, backend="cpu", num_threads=t) for t in (1, 2))
    rng = np.random.default_rng(0)
    a, b = (rng.integers(-9, 9, p.shape.dims).astype({"f32": np.float32, "s32": np.int32}[ty])
            for p in module.entry.parameters)
    assert threaded(two)
    if n == 2048:                                     # small integers: every sum is exact, whoever adds them
        assert "xlapy_blas_serial" in two.llvm_ir
        assert_bitwise(two(a, b), np.matmul(a, b))
    else:
        assert_bitwise(two(a, b), one(a, b))
        assert_bitwise(two(a, b), np.matmul(a, b))


def test_batch_tasks_rule():
    from xlapy.backends.cpu.dot_blas import batch_tasks
    from xlapy.backends.cpu.dot_plan import DotDims, DotShape, make_plan, operands_of

    def tasks(b, m, n, k, threads=2):
        dims = DotDims((0,), (2,), (0,), (1,))
        d = DotShape(*operands_of((b, m, k), (b, k, n), (b, m, n), "f32"), dims)
        return batch_tasks(d, make_plan(d), threads)
    assert tasks(32, 65, 65, 32) == 2                 # vit's attention: 4.3M multiply-adds
    assert tasks(24, 64, 64, 32, threads=1) == 1      # one thread: no tasks
    assert tasks(2, 16, 16, 16) == 1                  # too little work for two tasks
    assert tasks(1, 512, 512, 512) == 1               # no batch
    assert tasks(2, 512, 512, 512) == 1               # two big GEMMs: each split on its own instead


def test_split_gemm_takes_two_chunks_per_thread():
    """Each part of a split GEMM is a BLAS call that packs the shared operand again: 2 chunks per thread
    (dot_blas.GEMM_CHUNKS_PER_THREAD), not the 4 of other loops."""
    module = xlapy.hlo.parse("HloModule m\nENTRY e {\n  a = f32[256,192] parameter(0)\n  b = f32[192,192] parameter(1)\n"
                             "  ROOT d = f32[256,192] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")
    two = xlapy.compile(module, backend="cpu", num_threads=2)
    records = [f"{{i64 {64 * t}, i64 {64 * t + 64}, i64 {t}, i8* null}}" for t in range(4)]
    assert "alloca [4 x {i64, i64, i64, i8*}]" in two.llvm_ir and all(r in two.llvm_ir for r in records)
    # 256 rows: 4 chunks of 64 (the task records: start, end, index, captures)
    a, b = data(np.float32, 256, 192), data(np.float32, 192, 192, seed=1)
    np.testing.assert_allclose(two(a, b), a @ b, rtol=2e-5, atol=1e-5)


def test_task_records_stored_straight_line_or_by_loop():
    """Up to parallel.STRAIGHT_RECORDS task records are stored one by one (no loop over a bounds table for LLVM's
    vectorizer to turn into shuffles); more by a loop over the table. Both give the one-thread bits."""
    text = f"""HloModule m
fused {{
  x = f32[{ROWS},{COLS}] parameter(0)
  ROOT r = f32[{ROWS},{COLS}] multiply(x, x)
}}
ENTRY e {{
  x = f32[{ROWS},{COLS}] parameter(0)
  ROOT f = f32[{ROWS},{COLS}] fusion(x), kind=kLoop, calls=fused
}}
"""
    module = xlapy.hlo.parse(text)
    many = parallel.STRAIGHT_RECORDS // parallel.CHUNKS_PER_TASK + 1
    exes = {t: xlapy.compile(module, backend="cpu", num_threads=t) for t in (1, 2, many)}
    assert threaded(exes[2]) and "xlapy_task.bounds" not in exes[2].llvm_ir
    assert threaded(exes[many]) and "xlapy_task.bounds" in exes[many].llvm_ir
    x = data(np.float32, ROWS, COLS)
    want = exes[1](x)
    for t in (2, many):
        assert_bitwise(exes[t](x), want)
