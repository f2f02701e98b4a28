"""llvm_parallel's second thread and the GIL (gil_handoff.py): the switch interval is short while thread 2 runs
and restored after, whatever the session's end; and a part's fixed calls into LLVM (host target, pipeline
options) are made once per process, not once per part."""
import sys
import threading

import pytest

from xlapy.backends.cpu import gil_handoff, llvm_jit, llvm_parallel, opt_levels

PART = 'define void @"xlapy_kernel.k"()\n{\nentry:\n  ret void\n}\n'


@pytest.fixture
def default_interval():
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield 0.005
    sys.setswitchinterval(before)


def test_nested_holders_restore_the_interval_found_first(default_interval):
    gil_handoff.acquire()
    assert sys.getswitchinterval() == pytest.approx(gil_handoff.SWITCH_INTERVAL)
    gil_handoff.acquire()
    gil_handoff.release()
    assert sys.getswitchinterval() == pytest.approx(gil_handoff.SWITCH_INTERVAL)     # one holder left
    gil_handoff.release()
    assert sys.getswitchinterval() == pytest.approx(default_interval)


def test_a_shorter_interval_than_ours_is_left_alone(default_interval):
    sys.setswitchinterval(gil_handoff.SWITCH_INTERVAL / 2)
    gil_handoff.acquire()
    assert sys.getswitchinterval() == pytest.approx(gil_handoff.SWITCH_INTERVAL / 2)
    gil_handoff.release()
    assert sys.getswitchinterval() == pytest.approx(gil_handoff.SWITCH_INTERVAL / 2)


@pytest.mark.parametrize("abandon", [False, True])
def test_thread_2_runs_under_the_short_interval_and_close_restores_it(default_interval, monkeypatch, abandon):
    seen = []
    compile_part = llvm_parallel.compile_part

    def recording(part):
        if threading.current_thread() is not threading.main_thread():
            seen.append(sys.getswitchinterval())
        return compile_part(part)
    monkeypatch.setattr(llvm_parallel, "compile_part", recording)
    session = llvm_parallel.Session()
    session._submit(llvm_parallel.Part(PART, opt_levels.HOT))
    session.close(abandon=RuntimeError("stop") if abandon else None)
    session.close()                                       # a second close changes nothing
    assert sys.getswitchinterval() == pytest.approx(default_interval)
    if seen:                                              # abandoned before thread 2 took the part: none
        assert seen == [pytest.approx(gil_handoff.SWITCH_INTERVAL)]
    if not abandon:
        assert seen and 0 in session._results


def test_a_session_without_thread_2_leaves_the_interval(default_interval):
    session = llvm_parallel.Session(run=False)
    session._submit(llvm_parallel.Part(PART, opt_levels.HOT))
    assert sys.getswitchinterval() == pytest.approx(default_interval)
    session.close()
    assert sys.getswitchinterval() == pytest.approx(default_interval)


def test_host_target_and_pipeline_options_are_made_once():
    assert llvm_jit.host_target() is llvm_jit.host_target()
    for tier in (*opt_levels.TIERS, opt_levels.ENTRY, opt_levels.STRAIGHT):
        assert opt_levels.tuning(tier) is opt_levels.tuning(tier)
    hot, light = opt_levels.tuning(opt_levels.HOT), opt_levels.tuning(opt_levels.LIGHT)
    assert hot.loop_vectorization and hot.slp_vectorization and hot.speed_level == 3
    assert not light.loop_vectorization and not light.slp_vectorization and light.speed_level == 1
    # a part compiled with the shared options twice gives the same object both times
    part = llvm_parallel.Part(PART, opt_levels.HOT)
    assert llvm_parallel.compile_part(part)[0] == llvm_parallel.compile_part(part)[0]



def test_parts_are_parsed_without_llvmlites_lock():
    """A part is parsed and compiled through the raw ctypes functions (llvm_parallel._parse, _held): they run while
    another thread holds llvmlite's lock, so the calling thread's calls into llvmlite never wait for thread 2's
    parse. Invalid IR is still InvalidIR."""
    from llvmlite.binding import ffi
    context = llvm_parallel.llvm.create_context()
    held, done, parsed = threading.Event(), threading.Event(), []

    def hold():
        with ffi.lib._lock:
            held.set()
            done.wait(10)
            parsed.append(bool(done.is_set()))     # the parse ended while the lock was held here
    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    llvm_parallel.compile_part(llvm_parallel.Part(PART, opt_levels.HOT))   # a target machine to borrow
    try:
        mod = llvm_parallel._parse(PART, context)
        obj, _ = llvm_parallel.compile_part(llvm_parallel.Part(PART, opt_levels.HOT))   # every call of a part too
    finally:
        done.set()
        holder.join()
    assert parsed == [True] and obj
    mod.close()
    context.close()
    with pytest.raises(llvm_parallel.InvalidIR, match="parsing error"):
        llvm_parallel.compile_part(llvm_parallel.Part("define void @f() {\n  bogus\n}\n", opt_levels.HOT))
    bad = 'define void @"f"()\n{\nentry:\n  %x = add i32 %x, 1\n  ret void\n}\n'
    with pytest.raises(llvm_parallel.InvalidIR):
        llvm_parallel.compile_part(llvm_parallel.Part(bad, opt_levels.HOT))
