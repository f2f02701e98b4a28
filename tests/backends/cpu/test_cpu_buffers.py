"""Buffer assignment on the CPU backend: in-place dynamic-update-slice (plain and fusion-rooted), while loops
whose state is updated in place, liveness-based reuse of scratch slices, and the buffer-assignment dump. Every
program is checked against the interpreter; the structural tests read the emitted LLVM IR and scratch sizes."""
from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import buffer_assignment
from xlapy.backends.cpu.compiler import emit_llvm, target_machine
from xlapy.testing import CORPUS, assert_same
from xlapy.tools import npz

N, STEPS = 4096, 64          # buffer elements, loop iterations
FULL_COPY = f"i64 {4 * N}, i1 0"      # a memcpy of the whole f32[N] loop buffer


def _cond(state: str) -> str:
    return f"""cond {{
  s = {state} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant({STEPS})
  ROOT lt = pred[] compare(i, n), direction=LT
}}
"""


def _scatter_like(update_op: str = "add") -> str:
    """while i < STEPS: buf[i] = buf[i] <op> i  (dynamic-slice, then dynamic-update-slice of the loop state)."""
    st = f"(s32[], f32[{N}])"
    return f"""HloModule scatter_like
{_cond(st)}
body {{
  s = {st} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  buf = f32[{N}] get-tuple-element(s), index=1
  old = f32[1] dynamic-slice(buf, i), dynamic_slice_sizes={{1}}
  f = f32[] convert(i)
  fb = f32[1] broadcast(f), dimensions={{}}
  upd = f32[1] {update_op}(old, fb)
  new = f32[{N}] dynamic-update-slice(buf, upd, i)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = {st} tuple(i1, new)
}}

ENTRY e {{
  x = f32[{N}] parameter(0)
  z = s32[] constant(0)
  t = {st} tuple(z, x)
  w = {st} while(t), condition=cond, body=body
  ROOT r = f32[{N}] get-tuple-element(w), index=1
}}
"""


def _compile_both(text: str, pipeline: bool = False):
    module = xlapy.hlo.parse(text)
    return (xlapy.compile(module, backend="cpu", run_pipeline=pipeline),
            xlapy.compile(xlapy.hlo.parse(text), backend="interpreter"))


def _check(text: str, *args, pipeline: bool = False):
    cpu, ref = _compile_both(text, pipeline)
    got, want = cpu(*args), ref(*args)
    if isinstance(want, tuple):
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, where=f"output {k}")
    else:
        assert_same(got, want)
    return cpu


def _x(n: int = N, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


@pytest.fixture
def switches(monkeypatch):
    """Set the buffer-assignment switches for one test (restored afterwards)."""
    def set_(reuse: bool = True, in_place: bool = True):
        monkeypatch.setattr(buffer_assignment, "REUSE_TEMPORARIES", reuse)
        monkeypatch.setattr(buffer_assignment, "IN_PLACE_UPDATES", in_place)
    return set_


# -- in-place dynamic-update-slice in a while loop -----------------------------------------------------------
def test_while_dus_is_in_place_and_correct(switches):
    exe = _check(_scatter_like(), _x())
    # the state is copied in once; the body stores only the update window (no full-buffer copy-back)
    assert exe.llvm_ir.count(FULL_COPY) == 1
    assert "dus1.header" in exe.llvm_ir
    switches(in_place=False)
    before = _check(_scatter_like(), _x())
    assert before.llvm_ir.count(FULL_COPY) == 2      # copy-in and a copy back per iteration


def test_dus_of_entry_parameter_leaves_the_caller_array_alone():
    text = f"""HloModule p
ENTRY e {{
  x = f32[{N}] parameter(0)
  u = f32[2] constant({{5, 6}})
  i = s32[] constant(7)
  ROOT d = f32[{N}] dynamic-update-slice(x, u, i)
}}
"""
    x = _x()
    keep = x.copy()
    _check(text, x)
    np.testing.assert_array_equal(x, keep)


def test_dus_of_dead_temporary_is_in_place_and_live_one_is_not():
    text = f"""HloModule t
ENTRY e {{
  x = f32[{N}] parameter(0)
  a = f32[{N}] exponential(x)
  u = f32[3] constant({{1, 2, 3}})
  i = s32[] constant(100)
  d = f32[{N}] dynamic-update-slice(a, u, i)
  ROOT n = f32[{N}] negate(d)
}}
"""
    assert "dus1.header" in _check(text, _x()).llvm_ir
    live = text.replace(f"ROOT n = f32[{N}] negate(d)",
                        f"n = f32[{N}] negate(d)\n  ROOT t = (f32[{N}], f32[{N}]) tuple(n, a)")
    assert "dus1.header" not in _check(live, _x()).llvm_ir      # a is read after the update: copy


def test_start_indices_are_clamped_in_place():
    text = _scatter_like().replace("old = f32[1] dynamic-slice(buf, i)", "old = f32[1] dynamic-slice(buf, j)") \
        .replace("new = f32[4096] dynamic-update-slice(buf, upd, i)", "new = f32[4096] dynamic-update-slice(buf, upd, j)") \
        .replace("  f = f32[] convert(i)", f"  big = s32[] constant({N - 40})\n  j = s32[] add(i, big)\n  f = f32[] convert(i)")
    _check(text, _x())


# -- loops that swap state elements ------------------------------------------------------------------------------
def _swap(root: str) -> str:
    st = f"(s32[], f32[{N}], f32[{N}])"
    return f"""HloModule swap
{_cond(st)}
body {{
  s = {st} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[{N}] get-tuple-element(s), index=1
  b = f32[{N}] get-tuple-element(s), index=2
  sa = f32[1] dynamic-slice(a, i), dynamic_slice_sizes={{1}}
  sb = f32[1] dynamic-slice(b, i), dynamic_slice_sizes={{1}}
  one = s32[] constant(1)
  onef = f32[1] constant({{1}})
  sa1 = f32[1] add(sa, onef)
  ua = f32[{N}] dynamic-update-slice(a, sb, i)
  ub = f32[{N}] dynamic-update-slice(b, sa1, i)
  i1 = s32[] add(i, one)
  ROOT t = {st} tuple({root})
}}

ENTRY e {{
  x = f32[{N}] parameter(0)
  y = f32[{N}] parameter(1)
  z = s32[] constant(0)
  t = {st} tuple(z, x, y)
  w = {st} while(t), condition=cond, body=body
  ROOT r = (f32[{N}], f32[{N}]) tuple(f32[{N}] get-tuple-element(w), index=1, f32[{N}] get-tuple-element(w), index=2)
}}
"""


@pytest.mark.parametrize("root", ["i1, b, a", "i1, ub, a", "i1, ua, ub", "i1, ub, ua", "i1, ua, a"])
def test_loops_that_swap_state_elements(root):
    text = _swap(root).replace(
        f"  ROOT r = (f32[{N}], f32[{N}]) tuple(f32[{N}] get-tuple-element(w), index=1, f32[{N}] get-tuple-element(w), index=2)",
        f"  r1 = f32[{N}] get-tuple-element(w), index=1\n  r2 = f32[{N}] get-tuple-element(w), index=2\n"
        f"  ROOT r = (f32[{N}], f32[{N}]) tuple(r1, r2)")
    _check(text, _x(seed=1), _x(seed=2))


# -- in-place DUS fusion -------------------------------------------------------------------------------------------
def _fused_loop(ds_index: str = "p1") -> str:
    st = f"(s32[], f32[{N}])"
    return f"""HloModule fused_dus
fused {{
  p0 = f32[{N}] parameter(0)
  p1 = s32[] parameter(1)
  k = s32[] constant(1)
  p1k = s32[] add(p1, k)
  ds = f32[1] dynamic-slice(p0, {ds_index}), dynamic_slice_sizes={{1}}
  f = f32[] convert(p1)
  fb = f32[1] broadcast(f), dimensions={{}}
  upd = f32[1] add(ds, fb)
  ROOT d = f32[{N}] dynamic-update-slice(p0, upd, p1)
}}

{_cond(st)}
body {{
  s = {st} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  buf = f32[{N}] get-tuple-element(s), index=1
  new = f32[{N}] fusion(buf, i), kind=kLoop, calls=fused
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = {st} tuple(i1, new)
}}

ENTRY e {{
  x = f32[{N}] parameter(0)
  z = s32[] constant(0)
  c = f32[{N}] copy(x)
  t = {st} tuple(z, c)
  w = {st} while(t), condition=cond, body=body
  ROOT r = f32[{N}] get-tuple-element(w), index=1
}}
"""


def test_fusion_rooted_dus_is_in_place(switches):
    exe = _check(_fused_loop(), _x())
    assert "dus1.header" in exe.llvm_ir
    assert exe.llvm_ir.count(FULL_COPY) == 2       # the entry's copy and the state's copy-in: none per iteration
    switches(in_place=False)
    assert _check(_fused_loop(), _x()).llvm_ir.count(FULL_COPY) == 3


def test_fusion_reading_another_window_is_not_in_place():
    exe = _check(_fused_loop("p1k"), _x())      # reads buf[i+1] while writing buf[i]: not the DUS window
    assert "dus1.header" not in exe.llvm_ir


# -- scatter and select-and-scatter programs through the full pipeline --------------------------------------------
SCATTER_CASES = sorted(p for p in (CORPUS / "jax").glob("*.hlo")
                       if p.stem.startswith(("scatter_", "max_pool_grad", "cnn_fwd_bwd", "fori_loop_dynamic"))
                       and p.with_suffix(".npz").exists())


@pytest.mark.parametrize("path", SCATTER_CASES, ids=[p.stem for p in SCATTER_CASES])
def test_scatter_programs_match_interpreter(path):
    args = npz.numbered(npz.load(path.with_suffix(".npz")), "arg")
    cpu, ref = _compile_both(path.read_text(), pipeline=True)
    for k, (g, w) in enumerate(zip(npz.flatten(cpu(*args)), npz.flatten(ref(*args)))):
        assert_same(g, w, where=f"{path.name} out{k}")


def test_max_pool_grad_loop_has_no_full_buffer_work_per_iteration(switches):
    """select-and-scatter -> a while over the gradient buffer: after buffer assignment the loop body only stores the
    window (no full-size loop nest and no copy-back), so the optimized IR has one full-size memcpy at most."""
    text = (CORPUS / "jax" / "max_pool_grad.hlo").read_text()
    x = npz.numbered(npz.load(CORPUS / "jax" / "max_pool_grad.npz"), "arg")
    exe = _check(text, *x, pipeline=True)
    full = 4 * 2 * 4 * 4 * 3
    assert exe.llvm_ir.count(f"i64 {full}, i1 0") <= 2      # copy-in, and the result copy-out
    # the scatter's zeros and its updates are fused into it: a scatter fusion writes the zeros into its own buffer
    # and adds there, so no operand is copied, in place or not
    assert any(i.opcode == "fusion" and i.attrs["calls"].root.opcode == "scatter" for i in exe.module.entry.instructions)
    switches(in_place=False)
    before = _check(text, *x, pipeline=True)
    assert before.llvm_ir.count(f"i64 {full}, i1 0") == exe.llvm_ir.count(f"i64 {full}, i1 0")


# -- liveness-based reuse -----------------------------------------------------------------------------------------
def _scratch_bytes(text: str, pipeline: bool = False) -> int:
    tm = target_machine()
    _, _, size, _ = emit_llvm(xlapy.hlo.parse(text), tm, llvm.get_process_triple(), run_pipeline=pipeline)
    return size


CHAIN = f"""HloModule chain
ENTRY e {{
  x = f32[{N}] parameter(0)
  a = f32[{N}] exponential(x)
  b = f32[{N}] log(a)
  c = f32[{N}] sine(b)
  d = f32[{N}] cosine(c)
  e2 = f32[{N}] tanh(d)
  ROOT r = f32[{N}] add(e2, x)
}}
"""


def test_reuse_shrinks_scratch_on_a_chain_of_temporaries(switches):
    with_reuse = _scratch_bytes(CHAIN)
    switches(reuse=False)
    without = _scratch_bytes(CHAIN)
    assert without == 5 * 4 * N
    assert with_reuse == 2 * 4 * N          # two slices alternate along the chain
    switches()
    _check(CHAIN, _x())


def test_reused_slices_keep_live_values_apart():
    """A value read far down the chain (a) keeps its slice while the others are recycled around it."""
    text = CHAIN.replace(f"ROOT r = f32[{N}] add(e2, x)", f"ROOT r = f32[{N}] add(e2, a)")
    _check(text, _x())


# -- the dump ------------------------------------------------------------------------------------------------------
def test_buffer_assignment_dump(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", f"--xla_dump_to={tmp_path}")
    xlapy.compile(xlapy.hlo.parse(CHAIN), backend="cpu", run_pipeline=False)
    files = list(tmp_path.glob("module_*.chain.cpu-buffer-assignment.txt"))
    assert len(files) == 1
    text = files[0].read_text()
    assert re.search(r"allocation 0: size=16384 kind=parameter", text)
    assert "kind=output" in text
    assert re.search(r"kind=temp offset=0\n  value: a f32\[4096\] defined at e:1\n  live until: after b", text)
    assert f"total scratch bytes: {2 * 4 * N}" in text
