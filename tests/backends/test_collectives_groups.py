"""Replica groups and their modes (cross-replica, cross-partition, cross-replica-and-partition, flattened ids),
device assignments, the async forms, and bad input (mismatched groups, peers that never arrive, a failing
device): HLO text run by backends/spmd.py on the interpreter and the CPU backend."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
from xlapy.backends import spmd
from xlapy.errors import ExecutionError, HloVerifierError, XlapyError
from xlapy.hlo import parse, verify

ADD = """
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] add(a, b)
}
"""
BACKENDS = ["interpreter", "cpu"]


def run(text: str, args: list, backend: str, **kw) -> list:
    return spmd.execute(text, [[np.asarray(a, np.int32)] for a in args], backend=backend, **kw)


SUBGROUPS = f"""HloModule subgroups, replica_count=4
{ADD}
ENTRY e {{
  x = s32[2] parameter(0)
  a = s32[2] all-reduce(x), replica_groups={{{{0,2}},{{1,3}}}}, to_apply=add
  b = s32[2] all-reduce(x), replica_groups=[2,2]<=[4], to_apply=add
  c = s32[2] all-reduce(x), replica_groups=[2,2]<=[2,2]T(1,0), to_apply=add
  d = s32[4] all-gather(x), replica_groups={{{{3,0}},{{1,2}}}}, dimensions={{0}}
  ROOT t = (s32[2], s32[2], s32[2], s32[4]) tuple(a, b, c, d)
}}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_subgroups_and_iota_groups(backend):
    xs = [[10 ** d, 2 * 10 ** d] for d in range(4)]
    outs = run(SUBGROUPS, xs, backend)
    x = np.asarray(xs, np.int32)
    for d, (a, b, c, g) in enumerate(outs):
        np.testing.assert_array_equal(a, x[d % 2] + x[d % 2 + 2])            # {0,2},{1,3}
        np.testing.assert_array_equal(b, x[d // 2 * 2] + x[d // 2 * 2 + 1])  # [2,2]<=[4]: {0,1},{2,3}
        np.testing.assert_array_equal(c, x[d % 2] + x[d % 2 + 2])            # transposed: {0,2},{1,3}
        group = (3, 0) if d in (0, 3) else (1, 2)                           # gathered in the group's order
        np.testing.assert_array_equal(g, np.concatenate([x[i] for i in group]))


# 2 replicas x 2 partitions: device = replica * 2 + partition
MODES = f"""HloModule modes, replica_count=2, num_partitions=2
{ADD}
ENTRY e {{
  x = s32[2] parameter(0)
  cross_replica = s32[2] all-reduce(x), replica_groups={{}}, to_apply=add
  cross_partition = s32[2] all-to-all(x), channel_id=1, replica_groups={{{{0,1}}}}, dimensions={{0}}
  replica_and_partition = s32[2] all-reduce(x), channel_id=2, replica_groups={{{{0}},{{1}}}}, to_apply=add
  flattened = s32[2] all-reduce(x), channel_id=3, replica_groups={{{{0,3}},{{1,2}}}}, use_global_device_ids=true, to_apply=add
  swap_partitions = s32[2] collective-permute(x), channel_id=4, source_target_pairs={{{{0,1}},{{1,0}}}}
  rid = u32[] replica-id()
  pid = u32[] partition-id()
  ROOT t = (s32[2], s32[2], s32[2], s32[2], s32[2], u32[], u32[]) tuple(cross_replica, cross_partition, replica_and_partition, flattened, swap_partitions, rid, pid)
}}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_group_modes_over_replicas_and_partitions(backend):
    x = np.asarray([[1, 2], [10, 20], [100, 200], [1000, 2000]], np.int32)
    outs = run(MODES, list(x), backend)
    for d, (cr, cp, rp, fl, sw, rid, pid) in enumerate(outs):
        r, p = divmod(d, 2)
        np.testing.assert_array_equal(cr, x[p] + x[2 + p])                 # replicas of my partition
        mates = [2 * r, 2 * r + 1]                                        # partitions of my replica
        np.testing.assert_array_equal(cp, [x[mates[0]][p], x[mates[1]][p]])
        np.testing.assert_array_equal(rp, x[2 * r] + x[2 * r + 1])         # my replica x every partition
        np.testing.assert_array_equal(fl, x[0] + x[3] if d in (0, 3) else x[1] + x[2])
        np.testing.assert_array_equal(sw, x[2 * r + (1 - p)])
        assert (int(rid), int(pid)) == (r, p)


def test_device_assignment():
    text = """HloModule da, replica_count=2, num_partitions=2
ENTRY e {
  r = u32[] replica-id()
  p = u32[] partition-id()
  ROOT t = (u32[], u32[]) tuple(r, p)
}
"""
    outs = spmd.execute(text, [[]] * 4, backend="interpreter", device_assignment=[[3, 2], [1, 0]])
    assert [(int(r), int(p)) for r, p in outs] == [(1, 1), (1, 0), (0, 1), (0, 0)]
    with pytest.raises(XlapyError, match="device_assignment must be an 2 x 2 table"):
        spmd.compile(text, backend="interpreter", device_assignment=[[0, 0], [1, 2]])


ASYNC = f"""HloModule asyncs, replica_count=2
{ADD}
ENTRY e {{
  x = s32[2] parameter(0)
  ars = s32[2] all-reduce-start(x), replica_groups={{}}, to_apply=add
  ard = s32[2] all-reduce-done(ars)
  ags = (s32[2], s32[4]) all-gather-start(x), replica_groups={{}}, dimensions={{0}}
  agd = s32[4] all-gather-done(ags)
  cps = (s32[2], s32[2], u32[], u32[]) collective-permute-start(x), source_target_pairs={{{{0,1}},{{1,0}}}}
  cpd = s32[2] collective-permute-done(cps)
  y = s32[2] negate(x)
  cps2 = ((s32[2], s32[2]), (s32[2], s32[2])) collective-permute-start(x, y), source_target_pairs={{{{0,1}}}}
  cpd2 = (s32[2], s32[2]) collective-permute-done(cps2)
  ROOT t = (s32[2], s32[4], s32[2], (s32[2], s32[2])) tuple(ard, agd, cpd, cpd2)
}}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_forms(backend):
    x = np.asarray([[1, 2], [3, 4]], np.int32)
    outs = run(ASYNC, list(x), backend)
    for d, (ar, ag, cp, (c0, c1)) in enumerate(outs):
        np.testing.assert_array_equal(ar, x[0] + x[1])
        np.testing.assert_array_equal(ag, x.reshape(-1))
        np.testing.assert_array_equal(cp, x[1 - d])
        want = x[0] if d == 1 else np.zeros(2, np.int32)                   # only 0 -> 1; device 0 gets zeros
        np.testing.assert_array_equal(c0, want)
        np.testing.assert_array_equal(c1, -want)


def test_async_start_wrapping_a_collective_on_the_interpreter():
    text = f"""HloModule wrapped, replica_count=2
{ADD}
wrapped {{
  p = s32[2] parameter(0)
  ROOT ar = s32[2] all-reduce(p), replica_groups={{}}, to_apply=add
}}

ENTRY e {{
  x = s32[2] parameter(0)
  start = ((s32[2]), s32[2], s32[]) async-start(x), calls=wrapped
  ROOT done = s32[2] async-done(start)
}}
"""
    outs = run(text, [[1, 2], [3, 4]], "interpreter")
    for o in outs:
        np.testing.assert_array_equal(o, [4, 6])


# -- bad input ---------------------------------------------------------------------------------------------
def _all_reduce(groups: str, extra: str = "", count: int = 4) -> str:
    return f"""HloModule bad, replica_count={count}
{ADD}
ENTRY e {{
  x = s32[2] parameter(0)
  ROOT ar = s32[2] all-reduce(x), replica_groups={groups}{extra}, to_apply=add
}}
"""


@pytest.mark.parametrize("groups, extra, message", [
    ("{{0,1},{1,2}}", "", r"ar \(all-reduce\): replica_groups=\{\{0,1\},\{1,2\}\}: an id appears in more than one group"),
    ("{{0,1}}", "", r"replica_groups=\{\{0,1\}\}: in cross_replica mode the groups must hold each of the 4 replicas"),
    ("{{0,1},{2,3}}", ", use_global_device_ids=true", "use_global_device_ids=true needs a channel_id"),
    ("[3,2]<=[4]", "", r"3 groups of 2 is not 4 ids"),
    ("{{0,1},{2,x}}", "", "replica_groups"),
])
def test_mismatched_replica_groups_are_verifier_errors(groups, extra, message):
    with pytest.raises((HloVerifierError, XlapyError), match=message):
        verify(parse(_all_reduce(groups, extra)))


def test_uneven_groups_of_an_all_gather():
    text = """HloModule bad, replica_count=3
ENTRY e {
  x = s32[2] parameter(0)
  ROOT ag = s32[4] all-gather(x), replica_groups={{0,1},{2}}, dimensions={0}
}
"""
    with pytest.raises(HloVerifierError, match=r"ag \(all-gather\): replica_groups=\{\{0,1\},\{2\}\}: the groups have "
                                               r"different sizes"):
        verify(parse(text))


def test_groups_beyond_the_run_are_an_error_at_run_time():
    # replica_count=1 in the header lets the verifier pass {{0,1}}; a run with 1 replica cannot form it
    with pytest.raises(HloVerifierError, match=r"an id is out of range for 1 replicas"):
        run(_all_reduce("{{0,1}}", count=1), [[1, 2]], "interpreter")


NEVER_ARRIVES = f"""HloModule never_arrives, replica_count=2
{ADD}
reduce_it {{
  p = s32[2] parameter(0)
  ROOT ar = s32[2] all-reduce(p), replica_groups={{}}, to_apply=add
}}

skip_it {{
  ROOT p = s32[2] parameter(0)
}}

ENTRY e {{
  x = s32[2] parameter(0)
  id = u32[] replica-id()
  zero = u32[] constant(0)
  first = pred[] compare(id, zero), direction=EQ
  ROOT out = s32[2] conditional(first, x, x), true_computation=reduce_it, false_computation=skip_it
}}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_peer_that_never_arrives_times_out(backend, monkeypatch):
    monkeypatch.setenv("XLAPY_COLLECTIVE_TIMEOUT", "0.3")
    with pytest.raises(ExecutionError, match=r"ar \(all-reduce\): timed out after 0.3 s waiting for devices \[1\]"):
        run(NEVER_ARRIVES, [[1, 2], [3, 4]], backend)


def test_a_failing_device_aborts_its_peers(monkeypatch):
    monkeypatch.setenv("XLAPY_COLLECTIVE_TIMEOUT", "30")
    text = _all_reduce("{}", count=2)
    with pytest.raises(XlapyError, match=r"argument 0: shape \(3,\) does not match"):
        spmd.execute(text, [[np.zeros(2, np.int32)], [np.zeros(3, np.int32)]], backend="interpreter")


def test_wrong_argument_count_and_bad_timeout(monkeypatch):
    with pytest.raises(XlapyError, match=r"runs on 2 local devices \(2 replicas x 1 partitions\); got arguments for 1"):
        spmd.execute(_all_reduce("{}", count=2), [[np.zeros(2, np.int32)]], backend="interpreter")
    with pytest.raises(XlapyError, match=r"per_device_args\[1\] must be a list of device 1's arguments \(module bad "
                                         r"takes 1\), got ndarray"):
        spmd.execute(_all_reduce("{}", count=2), [[np.zeros(2, np.int32)], np.zeros(2, np.int32)],
                     backend="interpreter")
    monkeypatch.setenv("XLAPY_COLLECTIVE_TIMEOUT", "soon")
    with pytest.raises(ExecutionError, match="XLAPY_COLLECTIVE_TIMEOUT='soon' is not a number"):
        run(_all_reduce("{}", count=2), [[1, 2], [3, 4]], "interpreter")


def test_outside_a_run_a_collective_is_over_one_device():
    exe = xlapy.compile(_all_reduce("{}", count=1), "interpreter")
    np.testing.assert_array_equal(exe(np.asarray([1, 2], np.int32)), [1, 2])


# -- devices ---------------------------------------------------------------------------------------------
def test_host_device_count_from_xla_flags(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    assert xlapy.device_count() == 4 and xlapy.local_device_count() == 4
    assert [d.id for d in xlapy.devices()] == [0, 1, 2, 3] and xlapy.local_devices() == xlapy.devices()
    assert repr(xlapy.devices()[3]).endswith("Device(id=3)")
    assert (xlapy.process_index(), xlapy.process_count()) == (0, 1)
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=0")
    with pytest.raises(XlapyError, match="takes a positive integer"):
        xlapy.devices()
    monkeypatch.delenv("XLA_FLAGS")
    assert xlapy.device_count() == 1


@pytest.mark.parametrize("op, declared, message", [
    ("all-gather(x), replica_groups={}, dimensions={0}", "s32[6]", r"expected shape s32\[8\]"),
    ("reduce-scatter(x), replica_groups={}, dimensions={0}, to_apply=add", "s32[2]", r"does not split into 4 pieces"),
    ("all-to-all(x), replica_groups={}, dimensions={0}", "s32[2]", r"does not split over a group of 4"),
    ("collective-permute(x), source_target_pairs={{0,1},{0,2}}", "s32[2]", r"a source or a target appears twice"),
    ("collective-permute(x), source_target_pairs={{0,7}}", "s32[2]", r"an id is out of range for 4 replicas"),
])
def test_collective_shape_rules(op, declared, message):
    text = f"""HloModule shapes, replica_count=4
{ADD}
ENTRY e {{
  x = s32[2] parameter(0)
  ROOT r = {declared} {op}
}}
"""
    with pytest.raises(HloVerifierError, match=message):
        verify(parse(text))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reducer_of_several_ops(backend):
    text = """HloModule general_reducer, replica_count=2

sum_of_squares {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  bb = f32[] multiply(b, b)
  ROOT c = f32[] add(a, bb)
}

ENTRY e {
  x = f32[3] parameter(0)
  ROOT r = f32[3] all-reduce(x), replica_groups={}, to_apply=sum_of_squares
}
"""
    x0, x1 = np.asarray([1, 2, 3], np.float32), np.asarray([4, 5, 6], np.float32)
    outs = spmd.execute(text, [[x0], [x1]], backend=backend)
    for o in outs:
        np.testing.assert_array_equal(o, x0 + x1 * x1)           # folded in rank order: f(x0, x1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_sugar_of_ops_without_their_own_async_form(backend):
    text = f"""HloModule sugar, replica_count=2
{ADD}
ENTRY e {{
  x = s32[4] parameter(0)
  rss = ((s32[4]), s32[2]) reduce-scatter-start(x), replica_groups={{}}, dimensions={{0}}, to_apply=add
  rsd = s32[2] reduce-scatter-done(rss)
  a2s = ((s32[4]), s32[4]) all-to-all-start(x), replica_groups={{}}, dimensions={{0}}
  a2d = s32[4] all-to-all-done(a2s)
  ROOT t = (s32[2], s32[4]) tuple(rsd, a2d)
}}
"""
    x = np.asarray([[1, 2, 3, 4], [10, 20, 30, 40]], np.int32)
    outs = run(text, list(x), backend)
    for d, (rs, a2a) in enumerate(outs):
        np.testing.assert_array_equal(rs, (x[0] + x[1])[2 * d:2 * d + 2])
        np.testing.assert_array_equal(a2a, np.concatenate([x[0][2 * d:2 * d + 2], x[1][2 * d:2 * d + 2]]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_ragged_all_to_all(backend):
    # jax.lax.ragged_all_to_all's docstring example on 2 devices
    text = """HloModule ragged, replica_count=2
ENTRY e {
  x = s32[3] parameter(0)
  out = s32[4] parameter(1)
  in_off = s32[2] parameter(2)
  send = s32[2] parameter(3)
  out_off = s32[2] parameter(4)
  recv = s32[2] parameter(5)
  ROOT r = s32[4] ragged-all-to-all(x, out, in_off, send, out_off, recv), replica_groups={{0,1}}
}
"""
    a = lambda *v: np.asarray(v, np.int32)      # noqa: E731
    args = [[a(1, 2, 2), a(0, 0, 0, 0), a(0, 1), a(1, 2), a(0, 0), a(1, 1)],
            [a(3, 4, 0), a(0, 0, 0, 0), a(0, 1), a(1, 1), a(1, 2), a(2, 1)]]
    outs = spmd.execute(text, args, backend=backend)
    np.testing.assert_array_equal(outs[0], [1, 3, 0, 0])
    np.testing.assert_array_equal(outs[1], [2, 2, 4, 0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_combined_collectives_of_several_operands(backend):
    # XLA's all-reduce and all-gather combiners make one collective of several operands (a tuple result)
    text = f"""HloModule combined, replica_count=2
{ADD}
addf {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}

ENTRY e {{
  x = s32[2] parameter(0)
  i = s32[3] iota(), iota_dimension=0
  y = f32[3] convert(i)
  z = s32[2] all-reduce(x), replica_groups={{}}, to_apply=add
  ys = f32[3] all-reduce(y), replica_groups={{}}, to_apply=addf
  both = (s32[2], s32[2]) all-reduce(x, z), replica_groups={{}}, to_apply=add
  gathered = (s32[4], s32[4]) all-gather(x, z), replica_groups={{}}, dimensions={{0}}
  ROOT t = (f32[3], (s32[2], s32[2]), (s32[4], s32[4])) tuple(ys, both, gathered)
}}
"""
    x = np.asarray([[1, 2], [30, 40]], np.int32)
    outs = run(text, list(x), backend)
    total = x[0] + x[1]
    for ys, (b0, b1), (g0, g1) in outs:
        np.testing.assert_array_equal(ys, [0, 2, 4])
        np.testing.assert_array_equal(b0, total)
        np.testing.assert_array_equal(b1, 2 * total)
        np.testing.assert_array_equal(g0, x.reshape(-1))
        np.testing.assert_array_equal(g1, np.concatenate([total, total]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_collective_in_a_loop_meets_once_per_iteration(backend):
    text = f"""HloModule loop, replica_count=2
{ADD}
cond {{
  p = (s32[], s32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}}

body {{
  p = (s32[], s32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = s32[2] get-tuple-element(p), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  summed = s32[2] all-reduce(x), replica_groups={{}}, to_apply=add
  ROOT t = (s32[], s32[2]) tuple(next, summed)
}}

ENTRY e {{
  x = s32[2] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], s32[2]) tuple(zero, x)
  w = (s32[], s32[2]) while(init), condition=cond, body=body
  ROOT r = s32[2] get-tuple-element(w), index=1
}}
"""
    outs = run(text, [[1, 2], [3, 4]], backend)
    for o in outs:                      # (1+3, 2+4) doubled twice more
        np.testing.assert_array_equal(o, [16, 24])
