"""The one counted loop (irhelpers.for_range) and the loops built on it (loop_nest, loops.chunk_nest): the
iterations they run, and the dominators they record for the generated-value cache (elemental._memoized), which
reuses a value wherever the block it was emitted in dominates the current one."""
import ctypes

import llvmlite.binding as llvm
import pytest
from llvmlite import ir

from xlapy.backends.cpu.irhelpers import I64, dominates, for_range, i64
from xlapy.backends.cpu.llvm_jit import new_target_machine
from xlapy.backends.cpu.loops import chunk_nest

_ENGINES = []          # keep the machine code alive while its functions may be called


def _function(params: list) -> tuple[ir.Module, ir.Function, ir.IRBuilder]:
    mod = ir.Module("loops_test")
    mod.triple = llvm.get_process_triple()
    fn = ir.Function(mod, ir.FunctionType(I64, params), "f")
    return mod, fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _jit(mod: ir.Module, nargs: int):
    parsed = llvm.parse_assembly(str(mod))
    parsed.verify()
    engine = llvm.create_mcjit_compiler(parsed, new_target_machine(0))
    engine.finalize_object()
    _ENGINES.append(engine)
    return ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_int64] * nargs)(engine.get_function_address("f"))


def test_for_range_runs_start_to_stop():
    """f(lo, hi) = sum of 3^k over k in range(lo, hi) (mod 2^64): each iteration exactly once, in order."""
    mod, fn, b = _function([I64, I64])
    acc = b.alloca(I64)
    b.store(i64(0), acc)
    with for_range(b, fn.args[1], "k", start=fn.args[0]) as k:
        b.store(b.add(b.mul(b.load(acc), i64(3)), k), acc)
    b.ret(b.load(acc))
    f = _jit(mod, 2)
    for lo, hi in [(0, 5), (2, 9), (4, 4), (7, 3), (0, 0)]:
        want = 0
        for k in range(lo, hi):
            want = want * 3 + k
        assert f(lo, hi) == want, (lo, hi)


@pytest.mark.parametrize("start,end", [(0, 32), (5, 27), (8, 16), (3, 4), (9, 9)])
def test_chunk_nest_visits_its_chunk_in_row_major_order(start, end):
    """f() over chunk [start, end) of a 4x8 nest: every linear index once, in order (a positional hash)."""
    mod, fn, b = _function([])
    acc = b.alloca(I64)
    b.store(i64(0), acc)
    with chunk_nest(b, [4, 8], i64(start), i64(end)) as (row, col):
        linear = b.add(b.mul(row, i64(8)), col)
        b.store(b.add(b.mul(b.load(acc), i64(33)), b.add(linear, i64(1))), acc)
    b.ret(b.load(acc))
    want = 0
    for linear in range(start, end):
        want = (want * 33 + linear + 1) % (1 << 64)
    assert _jit(mod, 0)() % (1 << 64) == want


def test_for_range_records_dominators():
    _, fn, b = _function([I64, I64])
    before = b.block
    with for_range(b, fn.args[1], "k", start=fn.args[0]):
        body = b.block
    after = b.block
    b.ret(i64(0))
    assert dominates(b, before, body) and dominates(b, before, after)
    assert not dominates(b, body, after)          # a value cached in the body is not reused after the loop


def test_chunk_nest_records_dominators():
    """Regression: the chunk loops of parallel tasks (loops.for_interval) recorded no dominators, so values
    emitted before them were never reused inside."""
    _, fn, b = _function([I64, I64])
    before = b.block
    with chunk_nest(b, [4, 8], fn.args[0], fn.args[1]):
        inner = b.block
    after = b.block
    b.ret(i64(0))
    assert dominates(b, before, inner) and dominates(b, before, after)
    assert not dominates(b, inner, after)
