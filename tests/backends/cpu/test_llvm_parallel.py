"""Two-thread LLVM compilation (llvm_parallel.py): the split of the printed IR into an entry part and parts by
tier, kernels moved while the rest is emitted, and modules compiled that way giving the same results as the
serial path, for several executables alive at once."""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import compiler, llvm_parallel, opt_levels

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"


def mlp_step():
    sys.path.insert(0, str(BENCH))
    try:
        import cases
    finally:
        sys.path.remove(str(BENCH))
    return cases


@pytest.fixture
def warm(monkeypatch):
    monkeypatch.setattr(compiler, "_WARM", True)


def _mlp_llvm_module(session_for=None):
    cases = mlp_step()
    params, (x, y) = cases._mlp_params(), cases._mlp_data()
    module = cases._xlapy_mlp_step().lower(params, x, y).module
    _, llvm_module, _, _ = compiler.emit_llvm(module, compiler.llvm_jit.shared_target_machine(),
                                              compiler.llvm.get_process_triple(), None, True, False,
                                              compiler.debug.options(), 2, session_for=session_for)
    return llvm_module


def test_split_moves_kernels_and_workers_and_declares_them(warm):
    entry, parts, moved = llvm_parallel.split(str(_mlp_llvm_module()))
    b = "\n".join(p.text for p in parts)
    assert moved and 'define void @"xlapy_entry"' in entry and "xlapy_entry" not in b
    assert any(name.startswith("xlapy_kernel") for name in moved)
    for name in moved:
        assert f'@"{name}"(' not in entry
    declared = re.findall(r'^declare \S+ @"(xlapy_p\d+_[^"]*)"', entry, re.M)
    external = re.findall(r'^define \S+ @"(xlapy_p\d+_[^"]*)"', b, re.M)
    internal = re.findall(r'^define internal \S+ @"(xlapy_p\d+_[^"]*)"', b, re.M)
    # only what the entry calls is external, and the loop bodies that launch parts' workers call
    # (_split_launch); the functions those call stay internal (LLVM inlines them freely)
    bodies = {n for n in external if n.endswith(".body")}
    assert declared and set(declared) == set(external) - bodies
    launch = "\n".join(p.text for p in parts if p.tier == opt_levels.LAUNCH)
    assert bodies and all(f'declare i8* @"{n}"(' in launch for n in bodies)
    assert not re.search(r'^define (?!.*optnone)', launch, re.M)            # launch parts: optnone code alone
    assert len(external) + len(internal) == len(moved) and not set(external) & set(internal)
    assert all(re.search(rf'@"{re.escape(n)}"\(', entry) for n in declared)


def test_kernels_move_while_the_rest_is_emitted(warm, monkeypatch):
    """With small parts, kernels are shipped during emission; the text the session assembles is llvmlite's own,
    and the compiled module is right."""
    monkeypatch.setattr(llvm_parallel, "PART_WEIGHT", 50)
    sessions = []

    def session_for(module):
        sessions.append(llvm_parallel.Session(run=False))
        return sessions[-1]
    llvm_module = _mlp_llvm_module(session_for)
    (session,) = sessions
    assert session.printed and session._parts           # moved before the end
    assert session.module_text(llvm_module) == str(llvm_module)
    entry = session.split_rest(session.module_text(llvm_module))
    for name in session.printed:
        assert f'define internal void @"{name}"' not in entry
    for part in session._parts:                           # every part parses alone
        compiler.llvm.parse_assembly(part.text).verify()
    compiler.llvm.parse_assembly(entry).verify()


def test_parts_nobody_started_are_cut_again_at_the_end(warm, monkeypatch):
    """A part still queued at the end is taken apart: its units go, with the units left, into the end's parts,
    each function defined once, every part parsing alone."""
    monkeypatch.setattr(llvm_parallel, "PART_WEIGHT", 50)
    sessions = []

    def session_for(module):
        sessions.append(llvm_parallel.Session(run=False))
        return sessions[-1]
    llvm_module = _mlp_llvm_module(session_for)
    (session,) = sessions
    streamed = len(session._parts)
    session._queue.extend(range(streamed))               # as if thread 2 had started none of them
    entry = session.split_rest(session.module_text(llvm_module))
    ends = session._parts[streamed:]
    defined = [n for p in ends for n in re.findall(r'^define (?:internal )?\S+ @"([^"]+)"', p.text, re.M)]
    assert sorted(defined) == sorted(session.rename.values()) and not session._queue
    assert len(ends) < streamed                          # cut again into fewer, heavier parts
    for part in ends:
        compiler.llvm.parse_assembly(part.text).verify()
    compiler.llvm.parse_assembly(entry).verify()


def test_the_entry_alone_compiles_at_the_entry_tier():
    alone = 'define void @"xlapy_entry"()\n{\nentry:\n  ret void\n}\n'
    kept = alone + 'define internal void @"xlapy_kernel.k"()\n{\nentry:\n  ret void\n}\n'
    assert llvm_parallel._entry_tier(alone, "xlapy_entry") == opt_levels.STRAIGHT       # no branch: O0 throughout
    assert llvm_parallel._entry_tier(kept, "xlapy_entry") == opt_levels.HOT
    helper = alone + 'define internal float @"scatter.combine"(float %a)\n{\nentry:\n  ret float %a\n}\n'
    assert llvm_parallel._entry_tier(helper, "xlapy_entry") == opt_levels.STRAIGHT
    looping = 'define void @"xlapy_entry"()\n{\nentry:\n  br label %l\nl:\n  br label %l\n}\n'
    assert llvm_parallel._entry_tier(looping, "xlapy_entry") == opt_levels.ENTRY
    assert opt_levels.tuning(opt_levels.STRAIGHT).speed_level == opt_levels.tuning(opt_levels.LAUNCH).speed_level == 0
    assert opt_levels.tuning(opt_levels.ENTRY).speed_level == 1


def test_a_kernel_moves_with_its_own_internal_helper():
    """A scatter kernel calling its combiner (not a kernel or worker) moves with it, unless a global or another
    function names the combiner."""
    define = 'define {}void @"{}"()\n{{\nentry:\n{}  ret void\n}}'
    defs = {"xlapy_kernel.s": define.format("internal ", "xlapy_kernel.s", '  call void @"combine"()\n'),
            "combine": define.format("internal ", "combine", "")}
    assert [u[1:] for u in llvm_parallel._units(defs)] == [("xlapy_kernel.s", ["combine", "xlapy_kernel.s"])]
    assert llvm_parallel._units(defs, pinned={"combine"}) == []
    t = define.format("internal ", "xlapy_kernel.t", '  call void @"combine"()\n')
    shared = dict(defs, **{"xlapy_kernel.t": t})
    assert llvm_parallel._units(shared) == []
    assert llvm_parallel._units(dict(defs, combine=define.format("", "combine", ""))) == []     # external


def test_the_end_cut_shrinks_to_the_last_part():
    units = [(w, [str(w)]) for w in (900, 700, 500, 300, 200, 100, 50)]
    groups = llvm_parallel._cut(units, 2750)
    weights = [sum(w for w, _ in g) for g in groups]
    assert [u for g in groups for u in g] == units
    assert weights == [1600, 500, 500, 150]              # ~1/END_SHARE of what is left, the rest joined last
    assert llvm_parallel._cut([(100, ["a"]), (40, ["b"])], 140) == [[(100, ["a"]), (40, ["b"])]]


def test_streamed_compile_matches_serial(warm, monkeypatch):
    monkeypatch.setattr(llvm_parallel, "PART_WEIGHT", 50)
    test_parallel_compile_matches_serial(warm, monkeypatch)


def test_a_call_into_a_moved_internal_function_restarts():
    session = llvm_parallel.Session(run=False)
    session.rename = {"xlapy_task.w": "xlapy_p0_xlapy_task.w"}         # moved as a kernel's internal worker
    session.printed = {"xlapy_task.w": 'define internal i8* @"xlapy_task.w"(i8* %a)\n{\nentry:\n  ret i8* %a\n}'}
    text = ('define void @"xlapy_entry"(i8* %p)\n{\nentry:\n  %r = call i8* @"xlapy_task.w"(i8* %p)\n'
            '  ret void\n}\n')
    with pytest.raises(llvm_parallel.Restart):
        session.split_rest(text)


def test_parallel_compile_matches_serial(warm, monkeypatch):
    """Bit for bit with every kernel hot: moving a kernel to a part changes nothing. (Light kernels compile at
    O1, which may round `reassoc`/`contract` arithmetic differently, as the IR allows: test_opt_levels.py.)"""
    monkeypatch.setattr(opt_levels, "LIGHT_WORK_LIMIT", 0)
    cases = mlp_step()
    params, (x, y) = cases._mlp_params(), cases._mlp_data()
    runs = {}
    for mode in ("1", "0"):
        monkeypatch.setenv("XLAPY_PARALLEL_LLVM", mode)
        step = cases._xlapy_mlp_step()
        runs[mode] = [step(params, x, y) for _ in range(2)]
    flat = {m: [np.asarray(a) for r in v for pair in r for a in pair] for m, v in runs.items()}
    for got, want in zip(flat["1"], flat["0"]):
        np.testing.assert_array_equal(got, want)


def test_small_modules_are_not_split():
    text = "define void @\"xlapy_entry\"()\n{\nentry:\n  ret void\n}\n"
    assert llvm_parallel.split(text) is None


def test_dumps_and_ir_text_cover_both_halves(warm, tmp_path, monkeypatch):
    cases = mlp_step()
    params, (x, y) = cases._mlp_params(), cases._mlp_data()
    monkeypatch.setenv("XLA_FLAGS", f"--xla_dump_to={tmp_path}")
    exe = xlapy.compile(cases._xlapy_mlp_step().lower(params, x, y).module, backend="cpu", num_threads=2)
    text = exe.llvm_ir_optimized
    assert compiler.PART_SEPARATOR in text and "x float>" in text
    asm = (next(tmp_path.glob("*step*.s"))).read_text()
    assert "xlapy_entry" in asm and "xlapy_p" in asm
    assert next(tmp_path.glob("*step*ir-with-opt.ll")).read_text() == text


def test_parts_borrow_target_machines_one_thread_at_a_time():
    """compile_part borrows a target machine per code generation level and gives it back (llvm_jit: a fresh one
    cost ~1 ms per part); a machine is never lent to two borrowers at once, and the object is the one a fresh
    machine makes."""
    import threading
    from xlapy.backends.cpu import llvm_jit
    with llvm_jit.borrowed_target_machine(3) as first:
        with llvm_jit.borrowed_target_machine(3) as second:
            assert second is not first
    with llvm_jit.borrowed_target_machine(3) as again:
        assert again in (first, second)
    held = llvm_jit.borrowed_target_machine(0)
    seen = []
    t = threading.Thread(target=lambda: seen.append(held.__enter__()))
    t.start()
    t.join()
    with llvm_jit.borrowed_target_machine(0) as other:
        assert other is not seen[0]                # another thread holds it
    held.__exit__(None, None, None)
    with llvm_jit.borrowed_target_machine(0) as mine:
        assert mine is seen[0]                     # given back last, lent first
    text = 'define i32 @"f"(i32 %x) {\n  %y = mul i32 %x, 3\n  ret i32 %y\n}\n'
    part = llvm_parallel.Part(text, opt_levels.HOT)
    context = llvm_parallel.llvm.create_context()
    mod, tm = llvm_parallel._parse(text, context), llvm_jit.new_target_machine(3)
    llvm_parallel._optimize(mod, tm, opt_levels.HOT)
    fresh = llvm_parallel._emit(mod, tm)
    assert llvm_parallel.compile_part(part)[0] == llvm_parallel.compile_part(part)[0] == fresh
    mod.close()
    context.close()


def test_a_parts_optimized_ir_is_made_when_printed():
    """compile_part writes no bitcode: the optimized IR of a part is its pipeline run again on its text when
    someone prints it (Executable.llvm_ir_optimized), once."""
    loop = ('define void @"f"(float* noalias %p) {\nentry:\n  br label %l\nl:\n'
            '  %i = phi i64 [0, %entry], [%n, %l]\n  %q = getelementptr float, float* %p, i64 %i\n'
            '  %v = load float, float* %q\n  %w = fmul float %v, 2.0\n  store float %w, float* %q\n'
            '  %n = add i64 %i, 1\n  %c = icmp ult i64 %n, 1024\n  br i1 %c, label %l, label %e\ne:\n  ret void\n}\n')
    obj, optimized = llvm_parallel.compile_part(llvm_parallel.Part(loop, opt_levels.HOT))
    assert obj and "x float>" in str(optimized) and str(optimized) is str(optimized)   # vectorized, printed once
    light = llvm_parallel.compile_part(llvm_parallel.Part(loop, opt_levels.LIGHT))[1]
    assert "x float>" not in str(light)                                    # the light tier does not vectorize
