"""Every collective on 1, 2, 4 and 8 devices of one process, on the interpreter and the CPU backend, against
numpy: one HLO module per device count holds them all (one compile each), run by backends/spmd.py."""
from __future__ import annotations

import numpy as np
import pytest

from xlapy.backends import spmd

ADD = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
"""


def everything(n: int) -> str:
    """all-reduce (sum, max), all-gather, reduce-scatter, all-to-all (array and tuple forms), collective-permute
    (a ring), collective-broadcast, replica-id, on n replicas; x is f32[8*n] per device (n=1: f32[8])."""
    m = 8 * n
    ring = ",".join(f"{{{i},{(i + 1) % n}}}" for i in range(n))
    tuple_ops = ", ".join(["x"] * n)
    tuple_shape = ", ".join([f"f32[{m}]"] * n)
    return f"""HloModule everything_{n}, replica_count={n}
{ADD}
ENTRY e {{
  x = f32[{m}] parameter(0)
  ar = f32[{m}] all-reduce(x), replica_groups={{}}, to_apply=add
  mx = f32[{m}] all-reduce(x), replica_groups={{}}, to_apply=max
  ag = f32[{m * n}] all-gather(x), replica_groups={{}}, dimensions={{0}}
  rs = f32[8] reduce-scatter(x), replica_groups={{}}, dimensions={{0}}, to_apply=add
  a2a = f32[{m}] all-to-all(x), replica_groups={{}}, dimensions={{0}}
  a2t = ({tuple_shape}) all-to-all({tuple_ops}), replica_groups={{}}
  a2t0 = f32[{m}] get-tuple-element(a2t), index=0
  cp = f32[{m}] collective-permute(x), source_target_pairs={{{ring}}}
  cb = f32[{m}] collective-broadcast(x), replica_groups={{}}
  id = u32[] replica-id()
  ROOT t = (f32[{m}], f32[{m}], f32[{m * n}], f32[8], f32[{m}], f32[{m}], f32[{m}], f32[{m}], u32[]) tuple(ar, mx, ag, rs, a2a, a2t0, cp, cb, id)
}}
"""


def expected(xs: list[np.ndarray]) -> list[list[np.ndarray]]:
    n = len(xs)
    total = xs[0].copy()
    for x in xs[1:]:
        total = total + x
    out = []
    for d in range(n):
        pieces = [np.split(x, n)[d] for x in xs]
        out.append([total, np.max(xs, axis=0), np.concatenate(xs), np.split(total, n)[d], np.concatenate(pieces),
                    xs[0],          # the tuple form's element 0 on device d: device 0's operand d (its x)
                    xs[(d - 1) % n], xs[0], np.uint32(d)])
    return out


def inputs(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(n)
    return [rng.standard_normal(8 * n).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_every_collective(n, backend):
    xs = inputs(n)
    outs = spmd.execute(everything(n), [[x] for x in xs], backend=backend)
    assert len(outs) == n
    for d, (got, want) in enumerate(zip(outs, expected(xs))):
        names = ["all-reduce", "all-reduce max", "all-gather", "reduce-scatter", "all-to-all", "all-to-all tuple",
                 "collective-permute", "collective-broadcast", "replica-id"]
        for name, g, w in zip(names, got, want):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=f"{name} on device {d} of {n}")


def test_sum_is_folded_in_rank_order_identically_on_both_backends():
    # XLA promises every device the same bits: both backends fold x_0 + x_1 + ... in rank order
    xs = [np.full(8 * 4, v, np.float32) for v in (1e8, 1.0, -1e8, 1.0)]
    for backend in ("interpreter", "cpu"):
        outs = spmd.execute(everything(4), [[x] for x in xs], backend=backend)
        assert all(np.array_equal(o[0], outs[0][0]) for o in outs)
        np.testing.assert_array_equal(outs[0][0], ((xs[0] + xs[1]) + xs[2]) + xs[3])


def test_compiled_once_runs_many():
    exe = spmd.compile(everything(2), backend="cpu")
    for seed in range(3):
        xs = [np.full(16, seed + d, np.float32) for d in range(2)]
        outs = exe([[x] for x in xs])
        np.testing.assert_array_equal(outs[1][0], np.full(16, 2 * seed + 1, np.float32))
    exe.close()


def test_large_results_are_reused_only_once_dropped():
    n = (1 << 20) // 4          # 1 MiB of f32: spmd's ResultPool lends such buffers
    exe = spmd.compile(everything(1).replace("f32[8]", f"f32[{n}]").replace("f32[8", f"f32[{n}"), backend="cpu")
    first = exe([[np.full(n, 1, np.float32)]])[0][0]
    second = exe([[np.full(n, 2, np.float32)]])[0][0]
    assert not np.shares_memory(first, second) and first[0] == 1 and second[-1] == 2
    address = second.__array_interface__["data"][0]
    del second                  # its buffer goes back to the pool; the next result may take it, never first's
    third = exe([[np.full(n, 3, np.float32)]])[0][0]
    assert third[0] == 3 and first[0] == 1 and not np.shares_memory(first, third)
    assert type(third.base).__name__ == "_Pooled" and third.__array_interface__["data"][0] == address


DOT_THEN_SUM = """HloModule dot_then_sum, replica_count=2
""" + ADD + """
ENTRY e {
  a = f32[32,32] parameter(0)
  d = f32[32,32] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT s = f32[32,32] all-reduce(d), replica_groups={}, to_apply=add
}
"""


def test_blas_is_single_threaded_while_devices_run():
    """Per-device programs are compiled single-threaded; their BLAS calls must not each start the BLAS's own
    threads (N devices x the BLAS's threads oversubscribed the cores: a 2-device step ran ~100x slower). A
    module without BLAS ops leaves the BLAS alone (no cost on a collective's path)."""
    from xlapy.backends.cpu import runtime
    before = runtime.get_num_threads()
    if before is None or not runtime.set_num_threads(2):
        pytest.skip("the BLAS provider has no thread control")
    try:
        exe = spmd.compile(DOT_THEN_SUM, backend="cpu")
        assert exe.serial_blas
        seen = []

        def watching(instance):
            def run(*args):
                seen.append(runtime.get_num_threads())
                return instance(*args)
            return run
        exe._instances = [watching(inst) for inst in exe._instances]
        a = np.eye(32, dtype=np.float32)
        outs = exe([[a], [2 * a]])
        np.testing.assert_array_equal(outs[1], 5 * a)
        assert seen == [1, 1] and runtime.get_num_threads() == 2        # restored after the run
        assert not spmd.compile(DOT_THEN_SUM, backend="cpu", num_threads=2).serial_blas   # the JIT's own rule
        assert not spmd.compile(everything(2), backend="cpu").serial_blas                  # no BLAS op
    finally:
        runtime.set_num_threads(before)
