"""The thread pool when cores are shared (issue 11; threadpool.py, parallel.py): results do not depend on
which thread runs which chunk, also with a competing busy process (bitwise, across runs; split reductions
combine their partials in task order); task-independent loops are cut into more chunks than threads, split
reductions keep one per task; the pool survives thousands of small parallel loops, from a while loop and from
several Python threads; and an idle process does not spin. While the workers' help is too small to pay (other
processes hold the cores: threadpool_share.py), loops run on their callers, sampled now and then, with the same
results."""
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import loop_state, parallel

N = 300_007                  # elements: 2 tasks of >= 256 KiB traffic each with 2 threads
SMALL = 65_536               # a loop just big enough for 2 tasks

ELEMENTWISE = f"""HloModule m
ENTRY e {{
  x = f32[{N}] parameter(0)
  y = f32[{N}] parameter(1)
  m = f32[{N}] multiply(x, y)
  ROOT r = f32[{N}] add(m, x)
}}
"""

SUM = f"""HloModule s
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}}
ENTRY e {{
  x = f32[{N}] parameter(0)
  y = f32[{N}] parameter(1)
  m = f32[{N}] multiply(x, y)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(m, z), dimensions={{0}}, to_apply=add
}}
"""

SOFTMAX_ROWS = """HloModule r
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  x = f32[512,1024] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[512] reduce(x, ninf), dimensions={1}, to_apply=max
  mb = f32[512,1024] broadcast(m), dimensions={0}
  e = f32[512,1024] exponential(f32[512,1024] subtract(x, mb))
  z = f32[] constant(0)
  s = f32[512] reduce(e, z), dimensions={1}, to_apply=add
  sb = f32[512,1024] broadcast(s), dimensions={0}
  ROOT r = f32[512,1024] divide(e, sb)
}
"""

# A while loop whose body is one parallel loop: ITERATIONS pool jobs per call.
ITERATIONS = 400
LOOP = f"""HloModule w
cond {{
  p = (s32[], f32[{SMALL}]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant({ITERATIONS})
  ROOT c = pred[] compare(i, n), direction=LT
}}
body {{
  p = (s32[], f32[{SMALL}]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[{SMALL}] get-tuple-element(p), index=1
  one = s32[] constant(1)
  k = f32[] constant(0.999)
  kb = f32[{SMALL}] broadcast(k), dimensions={{}}
  c = f32[] constant(0.5)
  cb = f32[{SMALL}] broadcast(c), dimensions={{}}
  y = f32[{SMALL}] add(f32[{SMALL}] multiply(x, kb), cb)
  ROOT t = (s32[], f32[{SMALL}]) tuple(s32[] add(i, one), y)
}}
ENTRY e {{
  x = f32[{SMALL}] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[{SMALL}]) tuple(z, x)
  w = (s32[], f32[{SMALL}]) while(t), condition=cond, body=body
  ROOT r = f32[{SMALL}] get-tuple-element(w), index=1
}}
"""


def compile_threads(text, threads=2):
    return xlapy.compile(xlapy.hlo.parse(text), backend="cpu", num_threads=threads)


@pytest.fixture
def pool_loops(monkeypatch):
    """LOOP's small body on the pool, not on its caller (loop_state.runs_on_caller): these tests want many
    small pool jobs. The persistent cache is off, since its key does not hold the setting."""
    monkeypatch.setattr(loop_state, "CALLER_MAX_FLOPS", -1)
    monkeypatch.setenv("XLAPY_CACHE_DIR", "off")


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def pool_runs(exe) -> list[tuple[int, int]]:
    """(tasks, threads) of every xlapy_pool_run call in the executable's IR."""
    calls = re.findall(r'call void @"?xlapy_pool_run"?\(.*, i64 (\d+), i64 (\d+)\)$', exe.llvm_ir, re.M)
    return [(int(count), int(threads)) for count, threads in calls]


class BusyLoop:
    """A competing process spinning in pure Python for the duration of a `with`."""

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


CASES = {
    "elementwise": (ELEMENTWISE, lambda: (rand(N), rand(N, seed=1))),
    "split sum": (SUM, lambda: (rand(N), rand(N, seed=1))),
    "row softmax": (SOFTMAX_ROWS, lambda: (rand(512, 1024),)),
}


@pytest.mark.parametrize("case", CASES)
def test_results_are_bitwise_the_same_with_a_competing_busy_process(case):
    text, make_args = CASES[case]
    exe = compile_threads(text)
    assert pool_runs(exe), "the case must use the pool"
    args = make_args()
    want = exe(*args).tobytes()
    for _ in range(10):
        assert exe(*args).tobytes() == want
    with BusyLoop():
        for _ in range(30):
            assert exe(*args).tobytes() == want


def test_loops_are_cut_finer_than_threads_but_split_reductions_keep_one_chunk_per_task():
    elementwise = pool_runs(compile_threads(ELEMENTWISE))
    assert elementwise == [(2 * parallel.CHUNKS_PER_TASK, 2)]
    reduction = pool_runs(compile_threads(SUM))
    assert reduction == [(2, 2)]       # one partial per task, combined in task order


def _run_parallel_for(bounds, threads, use_task):
    """A function f(i64* out) whose body writes, for each chunk it runs, start * 1000 + end into out[task]
    (use_task) or into out[start / 16]; JIT-compiled and run. Returns (out, the pool call's (tasks, threads))."""
    import ctypes

    import llvmlite.binding as llvm
    from llvmlite import ir
    from xlapy.backends.cpu.llvm_jit import init_llvm, new_target_machine
    init_llvm()
    i64 = ir.IntType(64)
    module = ir.Module("t")
    module.triple = llvm.get_process_triple()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i64.as_pointer()]), "f")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    out = fn.args[0]

    def body(b, start, end, task):
        slot = task if use_task else b.udiv(start, ir.Constant(i64, 16))
        b.store(b.add(b.mul(start, ir.Constant(i64, 1000)), end), b.gep(out, [slot]))
    assert parallel.parallel_for(b, bounds, body, threads=threads)
    b.ret_void()
    text = str(module)
    mod = llvm.parse_assembly(text)
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, new_target_machine(3))
    engine.finalize_object()
    result = np.full(bounds[-1] // 16, -1, np.int64)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.get_function_address("f"))(result.ctypes.data)
    calls = re.findall(r'call void @"?xlapy_pool_run"?\(.*, i64 (\d+), i64 (\d+)\)$', text, re.M)
    return result, tuple(map(int, calls[0]))


def test_a_body_naming_its_task_runs_each_given_chunk_once_on_at_most_threads_threads():
    """A split reduction that wants more chunks than threads passes them all and `threads`: 16 pool tasks for 2
    threads, chunk t's bounds in slot t."""
    bounds = [16 * k for k in range(17)]
    got, call = _run_parallel_for(bounds, threads=2, use_task=True)
    assert call == (16, 2)
    assert got.tolist() == [lo * 1000 + hi for lo, hi in zip(bounds, bounds[1:])]


def test_a_body_not_naming_its_task_runs_finer_chunks():
    bounds = [0, 512, 1024]
    got, call = _run_parallel_for(bounds, threads=None, use_task=False)
    fine = parallel.finer_bounds(bounds, parallel.CHUNKS_PER_TASK)
    assert call == (len(fine) - 1, 2) and len(fine) - 1 == 2 * parallel.CHUNKS_PER_TASK
    want = np.full(64, -1, np.int64)
    for lo, hi in zip(fine, fine[1:]):
        want[lo // 16] = lo * 1000 + hi
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("bounds,parts", [([0, 150_000, 300_007], 4), ([0, 0, 3], 4), ([0, 32, 48], 4),
                                          ([0, 4096, 8192, 12_288], 3)])
def test_finer_bounds(bounds, parts):
    fine = parallel.finer_bounds(bounds, parts)
    assert fine[0] == bounds[0] and fine[-1] == bounds[-1]
    assert all(a < b for a, b in zip(fine, fine[1:]))
    assert set(bounds) - {bounds[0]} <= set(fine) | {bounds[0]}      # every original bound is kept
    for lo, hi in zip(bounds, bounds[1:]):
        inner = [c for c in fine if lo < c < hi]
        assert len(inner) <= parts - 1
        assert all((c - lo) % parallel.CHUNK_QUANTUM == 0 for c in inner)


def test_pool_survives_many_small_parallel_loops(pool_loops):
    """A while loop of ITERATIONS pool jobs, called again and again, and from several Python threads at once:
    every result equals the single-threaded one bitwise."""
    two, one = compile_threads(LOOP, 2), compile_threads(LOOP, 1)
    assert pool_runs(two)
    x = rand(SMALL)
    want = one(x).tobytes()
    for _ in range(5):
        assert two(x).tobytes() == want
    small = compile_threads(ELEMENTWISE)
    a, b = rand(N), rand(N, seed=1)
    want_small = small(a, b).tobytes()
    errors = []

    def work(k):
        try:
            for _ in range(3 if k % 2 else 150):
                got = two(x) if k % 2 else small(a, b)
                assert got.tobytes() == (want if k % 2 else want_small)
        except Exception as e:     # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_idle_pool_does_not_spin():
    """After a parallel loop the workers spin for at most a fraction of a millisecond, then sleep: the process
    uses (almost) no CPU while idle. A generous bound: this tests behaviour, not timing."""
    exe = compile_threads(ELEMENTWISE)
    args = rand(N), rand(N, seed=1)
    for _ in range(20):
        exe(*args)
    time.sleep(0.05)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    time.sleep(0.5)
    used = time.process_time() - cpu0
    assert used < 0.1 * (time.perf_counter() - wall0), f"{used:.3f} s of CPU while idle"


def test_loops_run_on_their_caller_while_help_is_low_and_results_do_not_change(pool_loops):
    """The help measure decides (threadpool_share.py): below HELP_LOW a job is published only as every
    SAMPLE_EVERY-th sample; at full help every job is. Either way the results are bitwise the same."""
    from xlapy.backends.cpu import threadpool, threadpool_share
    loop = LOOP.replace(f"constant({ITERATIONS})", "constant(10)")      # 10 pool jobs, fewer than SAMPLE_EVERY
    two, one = compile_threads(loop, 2), compile_threads(loop, 1)
    x = rand(SMALL)
    want = one(x).tobytes()
    try:
        threadpool.set_helper_share(0)
        jobs = threadpool.jobs_published()
        assert two(x).tobytes() == want
        assert threadpool.jobs_published() == jobs           # no job is a sample: all ran here
        threadpool.set_helper_share(threadpool.HELP_ONE)
        jobs = threadpool.jobs_published()
        assert two(x).tobytes() == want
        # judged jobs without help (a busy machine) lower the measure by an eighth of the way each: 10 of them
        # leave it above HELP_LOW
        assert threadpool.jobs_published() - jobs == 10
    finally:
        threadpool.set_helper_share(threadpool.HELP_ONE)
