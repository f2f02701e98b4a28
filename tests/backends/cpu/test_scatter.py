"""The CPU backend's scatter emitter (scatter_emitter.py) against the interpreter, over the dimension-number cases
of tests/unit/interpreter/test_gather_scatter.py (loaded from there, so both backends see the same table), and
the forms XLA-optimized dumps hold: a scatter inside a kLoop fusion, in place into its operand's buffer.

Every module runs as it is (run_pipeline=False: the emitter sees the scatter) and through the CPU pipeline."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.testing import assert_same, load_file

cases = load_file("tests/unit/interpreter/test_gather_scatter.py", "interpreter_gather_scatter_cases")


def check(text: str, *args, pipelines=(False, True)) -> None:
    module = xlapy.hlo.parse(text)
    want = xlapy.compile(module, backend="interpreter", verify=False)(*args)
    for pipeline in pipelines:
        got = xlapy.compile(module, backend="cpu", run_pipeline=pipeline)(*args)
        if isinstance(want, tuple):
            for k, (g, w) in enumerate(zip(got, want)):
                assert_same(g, w, where=f"pipeline={pipeline}, output {k}")
        else:
            assert_same(got, want, where=f"pipeline={pipeline}")


@pytest.mark.parametrize("name,op,operand,ix,ux,dnums,x,idx,u,expected", cases.SCATTER_CASES,
                         ids=[c[0] for c in cases.SCATTER_CASES])
def test_scatter_cases(name, op, operand, ix, ux, dnums, x, idx, u, expected):
    ty = operand.split("[")[0]
    check(cases.scatter_module(cases.combiner(op, ty), operand, ix, ux, dnums), x, idx, u)


@pytest.mark.parametrize("seed", range(16))
def test_scatter_random_dimension_numbers(seed):
    """The interpreter test's random dimension numbers (batching dims, index maps, index_vector_dim anywhere,
    windows that do not fit), with an add and with a non-commutative combiner (order matters)."""
    rng = np.random.default_rng(100 + seed)
    shape = (3, 5, 4)
    batching, index_map, ivd, idx_shape, batch_shape, indices_batching = cases._random_dnums(rng, shape)
    inserted = tuple(sorted(d for d in index_map if rng.random() < 0.5))
    window_operand = [d for d in range(3) if d not in inserted and d not in batching]
    window_shape = [int(rng.integers(1, shape[d] // 2 + 2)) for d in window_operand]
    u_rank = len(batch_shape) + len(window_shape)
    window_dims = tuple(sorted(int(d) for d in rng.permutation(u_rank)[:len(window_shape)]))
    u_shape, it_b, it_w = [], iter(batch_shape), iter(window_shape)
    for d in range(u_rank):
        u_shape.append(next(it_w) if d in window_dims else next(it_b))
    x = rng.standard_normal(shape).astype(np.float32)
    idx = rng.integers(-1, 4, idx_shape).astype(np.int32)
    u = rng.standard_normal(u_shape).astype(np.float32)
    dnums = (f"update_window_dims={cases._ints(window_dims)}, inserted_window_dims={cases._ints(inserted)}, "
             f"scatter_dims_to_operand_dims={cases._ints(index_map)}, input_batching_dims={cases._ints(batching)}, "
             f"scatter_indices_batching_dims={cases._ints(indices_batching)}, index_vector_dim={ivd}")
    for comb in (cases.combiner("add"), cases.GENERIC_COMBINER.split("ENTRY")[0].split("\n", 1)[1]):
        text = cases.scatter_module(comb, "f32[3,5,4]", f"s32[{','.join(map(str, idx_shape))}]",
                                    f"f32[{','.join(map(str, u_shape))}]", dnums)
        check(text, x, idx, u)


def test_implicit_index_vector_dim():
    dnums = "update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1"
    check(cases.scatter_module(cases.combiner("add"), "f32[6]", "s32[3]", "f32[3]", dnums),
          cases.X6, np.array([1, 3, 1], np.int32), cases.f32(3))


@pytest.mark.parametrize("text", ["GENERIC_COMBINER", "NON_ELEMENTWISE_COMBINER"])
def test_combiners(text):
    check(getattr(cases, text), cases.X6, cases.DUP_IDX, cases.U5)
    check(getattr(cases, text), cases.X6, cases.OOB_IDX, cases.U5)


def test_variadic():
    x1 = np.zeros(6, np.int32)
    u1 = np.array([7, -2, 9, 4, 3], np.int32)
    check(cases.VARIADIC, cases.X6, x1, cases.OOB_IDX, cases.U5, u1)


@pytest.mark.parametrize("ty, index_ty", [("bf16", "s32"), ("f16", "s64"), ("s8", "u8"), ("f64", "u64"),
                                          ("pred", "s16")])
def test_types(ty, index_ty):
    import ml_dtypes
    dtype = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "s8": np.int8, "f64": np.float64, "pred": np.bool_}[ty]
    op = "or" if ty == "pred" else "add"
    rng = np.random.default_rng(3)
    x = (rng.integers(-3, 4, 6) > 0 if ty == "pred" else rng.integers(-3, 4, 6)).astype(dtype)
    u = (rng.integers(-3, 4, 5) > 0 if ty == "pred" else rng.integers(-3, 4, 5)).astype(dtype)
    out_of_bounds = {"u8": 250, "u64": 2**64 - 1}.get(index_ty, -1)
    idx = np.array([[1], [5], [out_of_bounds], [1], [0]], np.dtype(
        {"s32": np.int32, "s64": np.int64, "u8": np.uint8, "u64": np.uint64, "s16": np.int16}[index_ty]))
    check(cases.scatter_module(cases.combiner(op, ty), f"{ty}[6]", f"{index_ty}[5,1]", f"{ty}[5]", cases.POINTS),
          x, idx, u)


# -- in place ---------------------------------------------------------------------------------------------
DEAD_OPERAND = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  x = f32[1000] parameter(0)
  i = s32[5,1] parameter(1)
  u = f32[5] parameter(2)
  y = f32[1000] negate(x)
  s = f32[1000] scatter(y, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ROOT r = f32[1000] exponential(s)
}
"""


def test_scatter_updates_a_dead_operand_in_place():
    """y is dead after the scatter: the scatter writes its five updates into y's buffer, no copy of 4000 bytes."""
    args = (np.linspace(-1, 1, 1000, dtype=np.float32), np.array([[3], [999], [3], [1000], [-1]], np.int32),
            np.arange(5, dtype=np.float32))
    check(DEAD_OPERAND, *args, pipelines=(False,))
    exe = xlapy.compile(xlapy.hlo.parse(DEAD_OPERAND), backend="cpu", run_pipeline=False)
    assert "llvm.memcpy" not in exe.llvm_ir
    live = DEAD_OPERAND.replace("ROOT r = f32[1000] exponential(s)",
                                "e = f32[1000] exponential(s)\n  ROOT r = (f32[1000], f32[1000]) tuple(e, y)")
    check(live, *args, pipelines=(False,))
    assert "llvm.memcpy" in xlapy.compile(xlapy.hlo.parse(live), backend="cpu", run_pipeline=False).llvm_ir


# XLA:CPU's optimized form (TF's stage='optimized_hlo', jax .compile().as_text()): the scatter inside a kLoop
# fusion, its operand a parameter of the fusion (updated in place when the fusion may) or computed inside it
WRAPPED = """HloModule wrapped, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}

%wrapped_scatter_computation (p0: f32[11,4], p1: s32[15,1], p2: f32[15,4]) -> f32[11,4] {
  %p0 = f32[11,4]{1,0} parameter(0)
  %p1 = s32[15,1]{1,0} parameter(1)
  %p2 = f32[15,4]{1,0} parameter(2)
  %two = f32[] constant(2)
  %twos = f32[15,4]{1,0} broadcast(%two), dimensions={}
  %m = f32[15,4]{1,0} multiply(%p2, %twos)
  ROOT %s = f32[11,4]{1,0} scatter(%p0, %p1, %m), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, indices_are_sorted=false, unique_indices=false, to_apply=%add
}

%zeros_scatter_computation (q0: s32[15,1], q1: f32[15,4]) -> f32[11,4] {
  %q0 = s32[15,1]{1,0} parameter(0)
  %q1 = f32[15,4]{1,0} parameter(1)
  %zero = f32[] constant(0)
  %zeros = f32[11,4]{1,0} broadcast(%zero), dimensions={}
  ROOT %s = f32[11,4]{1,0} scatter(%zeros, %q0, %q1), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
}

ENTRY %main (x: f32[11,4], i: s32[15,1], u: f32[15,4]) -> (f32[11,4], f32[11,4]) {
  %x = f32[11,4]{1,0} parameter(0)
  %i = s32[15,1]{1,0} parameter(1)
  %u = f32[15,4]{1,0} parameter(2)
  %y = f32[11,4]{1,0} negate(%x)
  %scatter_fusion = f32[11,4]{1,0} fusion(%y, %i, %u), kind=kLoop, calls=%wrapped_scatter_computation
  %zeros_fusion = f32[11,4]{1,0} fusion(%i, %u), kind=kLoop, calls=%zeros_scatter_computation
  %e = f32[11,4]{1,0} exponential(%scatter_fusion)
  ROOT %t = (f32[11,4]{1,0}, f32[11,4]{1,0}) tuple(%e, %zeros_fusion)
}
"""


def test_fusion_wrapped_scatter():
    rng = np.random.default_rng(5)
    args = (rng.standard_normal((11, 4)).astype(np.float32), rng.integers(-2, 13, (15, 1)).astype(np.int32),
            rng.standard_normal((15, 4)).astype(np.float32))
    check(WRAPPED, *args, pipelines=(None,))
    exe = xlapy.compile(xlapy.hlo.parse(WRAPPED), backend="cpu")
    assert [i.opcode for i in exe.module.entry.instructions].count("fusion") == 2     # run as it is
    assert "llvm.memcpy" not in exe.llvm_ir        # the first fusion updates y's buffer: no copy


def test_scatter_in_while_loop_state():
    """A scatter-add into the loop state, once per iteration: the body updates the state in place."""
    text = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
cond {
  s = (s32[], f32[8]) parameter(0)
  k = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(k, n), direction=LT
}
body {
  s = (s32[], f32[8]) parameter(0)
  k = s32[] get-tuple-element(s), index=0
  v = f32[8] get-tuple-element(s), index=1
  one = s32[] constant(1)
  k1 = s32[] add(k, one)
  two = s32[] constant(2)
  k2 = s32[] multiply(k, two)
  idx = s32[1] reshape(k2)
  f = f32[] convert(k1)
  upd = f32[1] reshape(f)
  v1 = f32[8] scatter(v, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ROOT t = (s32[], f32[8]) tuple(k1, v1)
}
ENTRY e {
  x = f32[8] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[8]) tuple(zero, x)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(w), index=1
}
"""
    check(text, np.arange(8, dtype=np.float32))


SEGMENT_MEAN = """HloModule seg
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
ENTRY e {
  h = f32[6,4] parameter(0)
  src = s32[16,1] parameter(1)
  dst = s32[16,1] parameter(2)
  bias = f32[4] parameter(3)
  g = f32[16,4] gather(h, src), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  bb = f32[16,4] broadcast(bias), dimensions={1}
  m = f32[16,4] add(g, bb)
  z = f32[] constant(0)
  zb = f32[6,4] broadcast(z), dimensions={}
  s = f32[6,4] scatter(zb, dst, m), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ROOT n = f32[6,4] negate(s)
}
"""


def test_segment_sum_of_gathered_messages_is_one_scatter_fusion():
    """gather + bias into a segment sum (a GNN's message step): the pipeline fuses the messages into the scatter,
    which computes each update where it adds it; indices out of range clamp (gather) or are skipped (scatter)."""
    rng = np.random.default_rng(7)
    h = rng.standard_normal((6, 4)).astype(np.float32)
    src = rng.integers(-2, 8, (16, 1)).astype(np.int32)
    dst = rng.integers(-1, 7, (16, 1)).astype(np.int32)
    bias = rng.standard_normal(4).astype(np.float32)
    exe = xlapy.compile(xlapy.hlo.parse(SEGMENT_MEAN), backend="cpu")
    fused = [i for i in exe.module.entry.instructions if i.opcode == "fusion"]
    assert any(f.attrs["calls"].root.opcode == "scatter" for f in fused), exe.as_text()
    assert not any(i.opcode == "gather" for i in exe.module.entry.instructions)
    want = np.zeros((6, 4), np.float32)
    for k in range(16):
        if 0 <= dst[k, 0] < 6:
            want[dst[k, 0]] += h[np.clip(src[k, 0], 0, 5)] + bias
    np.testing.assert_array_equal(np.asarray(exe(h, src, dst, bias)), -want)
