"""Sharding propagation and the SPMD partitioner on HLO text: the partitioned module has XLA's collectives
(FileCheck), and run on N devices (backends/spmd.py, the interpreter) it gives the unpartitioned result."""
from __future__ import annotations

import numpy as np
import pytest

from xlapy.backends import compile as compile_module, spmd
from xlapy.filecheck import filecheck
from xlapy.hlo import parse
from xlapy.passes.registry import make_pass
from xlapy.passes.sharding_propagation import PASS_THROUGH, propagate
from xlapy.passes.spmd_sharding import ShardingError

ADD = """%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}
"""


@pytest.fixture(autouse=True)
def eight_devices(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8")


def _tile(a: np.ndarray, s, p: int) -> np.ndarray:
    coords = np.argwhere(s.tiles == p)[0][:-1]
    local = s.local_dims(a.shape)
    return np.ascontiguousarray(a[tuple(slice(c * n, (c + 1) * n) for c, n in zip(coords, local))])


def _without_markers(module):
    """The module with its sharding marker custom-calls replaced by their operands (to run it whole)."""
    for inst in list(module.entry.instructions):
        if inst.opcode == "custom-call" and inst.attrs.get("custom_call_target") in PASS_THROUGH:
            inst.replace_all_uses_with(inst.operands[0])
            module.entry.remove_instruction(inst)
    return module


def partition_and_run(text: str, *args: np.ndarray) -> str:
    """Partition `text`, run it on its num_partitions devices, compare with the whole module; the new text."""
    want = compile_module(_without_markers(parse(text)), "interpreter")(*args)
    module = parse(text)
    n = int(module.attrs["num_partitions"])
    shardings = propagate(module)
    params = [shardings[id(p)] for p in module.entry.parameters]
    root = shardings[id(module.entry.root)]
    make_pass("sharding-propagation").run(module)
    make_pass("spmd-partitioner").run(module)
    outs = spmd.execute(module, [[_tile(a, s, p) for a, s in zip(args, params)] for p in range(n)],
                        backend="interpreter")
    if root.is_tuple:
        for k, (w, r) in enumerate(zip(want, root.elements)):
            _check(w, r, [o[k] for o in outs])
    else:
        _check(want, root, outs)
    return module.to_text()


def _check(want: np.ndarray, root, outs: list) -> None:
    full = np.zeros(np.shape(want), np.asarray(want).dtype)
    for p, out in enumerate(outs):
        coords = np.argwhere(root.tiles == p)[0][:-1]
        full[tuple(slice(c * k, (c + 1) * k) for c, k in zip(coords, out.shape))] = out
    np.testing.assert_allclose(full, want, rtol=1e-5, atol=1e-5)


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_elementwise_stays_local():
    text = partition_and_run("""HloModule m, num_partitions=4
ENTRY %e (x: f32[8,4], y: f32[8,4]) -> f32[8,4] {
  %x = f32[8,4] parameter(0), sharding={devices=[4,1]0,1,2,3}
  %y = f32[8,4] parameter(1), sharding={devices=[4,1]0,1,2,3}
  %t = f32[8,4] tanh(%x)
  ROOT %s = f32[8,4] add(%t, %y), sharding={devices=[4,1]0,1,2,3}
}""", _rand(8, 4), _rand(8, 4, seed=1))
    filecheck(text, """
        CHECK: ENTRY
        CHECK: f32[2,4] parameter(0)
        CHECK: f32[2,4] tanh(
        CHECK-NOT: all-gather
        CHECK: ROOT {{.*}} = f32[2,4] add(
    """)


def test_dot_batch_and_non_contracting_splits_stay_local():
    text = partition_and_run("""HloModule m, num_partitions=4
ENTRY %e (x: f32[4,8,6], y: f32[4,6,5]) -> f32[4,8,5] {
  %x = f32[4,8,6] parameter(0), sharding={devices=[2,2,1]0,1,2,3}
  %y = f32[4,6,5] parameter(1), sharding={devices=[2,1,1,2]0,1,2,3 last_tile_dim_replicate}
  ROOT %d = f32[4,8,5] dot(%x, %y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}, sharding={devices=[2,2,1]0,1,2,3}
}""", _rand(4, 8, 6), _rand(4, 6, 5, seed=1))
    filecheck(text, """
        CHECK: f32[2,4,5] dot(f32[2,4,6] {{.*}}, f32[2,6,5] {{.*}}), lhs_batch_dims={0}
        CHECK-NOT: all-reduce
        CHECK-NOT: all-gather
    """)


def test_dot_contracting_split_is_all_reduced():
    text = partition_and_run("""HloModule m, num_partitions=2
ENTRY %e (x: f32[8,6], y: f32[6,4]) -> f32[8,4] {
  %x = f32[8,6] parameter(0), sharding={devices=[1,2]0,1}
  %y = f32[6,4] parameter(1), sharding={devices=[2,1]0,1}
  ROOT %d = f32[8,4] dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}
}""", _rand(8, 6), _rand(6, 4, seed=1))
    filecheck(text, """
        CHECK: %[[D:.*]] = f32[8,4] dot(f32[8,3] {{.*}}, f32[3,4] {{.*}})
        CHECK-NEXT: all-reduce(f32[8,4] %[[D]]), channel_id=1, replica_groups={{[{][{]0,1[}][}]}}, use_global_device_ids=true, to_apply=%scalar_add_computation
        CHECK-NOT: all-gather
    """)


def test_mismatched_dot_operands_are_gathered_and_the_output_resliced():
    text = partition_and_run("""HloModule m, num_partitions=2
ENTRY %e (x: f32[8,6], y: f32[6,4]) -> f32[8,4] {
  %x = f32[8,6] parameter(0), sharding={devices=[2,1]0,1}
  %y = f32[6,4] parameter(1), sharding={devices=[1,2]0,1}
  ROOT %d = f32[8,4] dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[1,2]0,1}
}""", _rand(8, 6), _rand(6, 4, seed=1))
    filecheck(text, """
        CHECK: f32[6,4] all-gather(f32[6,2] {{.*}}), channel_id={{[0-9]+}}, replica_groups={{[{][{]0,1[}][}]}}, use_global_device_ids=true, dimensions={1}
        CHECK: f32[4,4] dot(
        CHECK: f32[8,4] all-gather(f32[4,4] {{.*}}dimensions={0}
        CHECK: partition-id()
        CHECK: f32[8,2] dynamic-slice(
    """)


def test_reduction_over_a_split_dimension_and_reshape_transpose_mapping():
    text = partition_and_run("""HloModule m, num_partitions=4
""" + ADD + """
ENTRY %e (x: f32[8,6]) -> (f32[6], f32[6,8], f32[8,2,3]) {
  %x = f32[8,6] parameter(0), sharding={devices=[4,1]0,1,2,3}
  %z = f32[] constant(0)
  %r = f32[6] reduce(%x, %z), dimensions={0}, to_apply=%add
  %t = f32[6,8] transpose(%x), dimensions={1,0}
  %s = f32[8,2,3] reshape(%x)
  ROOT %o = (f32[6], f32[6,8], f32[8,2,3]) tuple(%r, %t, %s), sharding={{replicated}, {devices=[1,4]0,1,2,3}, {devices=[4,1,1]0,1,2,3}}
}""", _rand(8, 6))
    filecheck(text, """
        CHECK: f32[6] reduce(f32[2,6]
        CHECK-NEXT: f32[6] all-reduce({{.*}}replica_groups={{[{][{]0,1,2,3[}][}]}}, use_global_device_ids=true, to_apply=%add
        CHECK: f32[6,2] transpose(f32[2,6]
        CHECK: f32[2,2,3] reshape(f32[2,6]
        CHECK-NOT: all-gather
    """)


def test_convolution_split_over_the_batch():
    text = partition_and_run("""HloModule m, num_partitions=2
ENTRY %e (x: f32[4,5,5,2], k: f32[3,3,2,3]) -> f32[4,3,3,3] {
  %x = f32[4,5,5,2] parameter(0), sharding={devices=[2,1,1,1]0,1}
  %k = f32[3,3,2,3] parameter(1), sharding={replicated}
  ROOT %c = f32[4,3,3,3] convolution(%x, %k), window={size=3x3}, dim_labels=b01f_01io->b01f, sharding={devices=[2,1,1,1]0,1}
}""", _rand(4, 5, 5, 2), _rand(3, 3, 2, 3, seed=1))
    filecheck(text, """
        CHECK: f32[2,3,3,3] convolution(f32[2,5,5,2] {{.*}}, f32[3,3,2,3] {{.*}}), window={size=3x3}, dim_labels=b01f_01io->b01f
        CHECK-NOT: all-gather
    """)


def test_unannotated_or_single_partition_modules_do_not_change():
    for text in ["""HloModule m, num_partitions=2
ENTRY %e (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%x)
}""", """HloModule m
ENTRY %e (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0), sharding={devices=[2]0,1}
  ROOT %n = f32[4] negate(%x)
}"""]:
        module = parse(text)
        assert not make_pass("sharding-propagation").run(module)
        assert not make_pass("spmd-partitioner").run(module)


def test_bad_shardings_name_the_instruction():
    module = parse("""HloModule m, num_partitions=2
ENTRY %e (x: f32[5]) -> f32[5] {
  %x = f32[5] parameter(0), sharding={devices=[2]0,1}
  ROOT %n = f32[5] negate(%x)
}""")
    with pytest.raises(ShardingError, match="parameter x.*dimension 0 of size 5 does not divide into the 2 tiles"):
        make_pass("spmd-partitioner").run(module)
    module = parse("""HloModule m, num_partitions=2
ENTRY %e (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0), sharding={devices=[2]0,0}
  ROOT %n = f32[4] negate(%x)
}""")
    with pytest.raises(ShardingError, match="x: .* must name each of the 2 partitions once"):
        make_pass("spmd-partitioner").run(module)


JAX_MODULE = r"""HloModule jit__lambda, num_partitions=4, entry_computation_layout={(f32[8,6]{1,0}, f32[6,4]{1,0})->f32[4]{0}}, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=2]>}}
region_0.1 {
  reduce_sum.3 = f32[] parameter(0)
  reduce_sum.4 = f32[] parameter(1)
  ROOT reduce_sum.5 = f32[] add(reduce_sum.3, reduce_sum.4)
}
ENTRY main.2 {
  a.1 = f32[8,6]{1,0} parameter(0), sharding={devices=[2,2]<=[4]}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"x\"}, {\"y\"}]>"}
  w.1 = f32[6,4]{1,0} parameter(1), sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"y\"}, {}]>"}
  dot_general.1 = f32[8,4]{1,0} dot(a.1, w.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  tanh.1 = f32[8,4]{1,0} tanh(dot_general.1)
  constant.1 = f32[] constant(0)
  reduce_sum.8 = f32[4]{0} reduce(tanh.1, constant.1), dimensions={0}, to_apply=region_0.1
  reduce_sum.9 = f32[4]{0} custom-call(reduce_sum.8), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{}]>]>"}
  tuple.1 = (f32[4]{0}) tuple(reduce_sum.9)
  ROOT get-tuple-element.1 = f32[4]{0} get-tuple-element(tuple.1), index=0, sharding={replicated}
}"""


def test_a_module_jax_lowered_gets_the_collectives_xla_inserts():
    """jax.jit(lambda a, w: tanh(a @ w).sum(0)) with a: P('x','y'), w: P('y', None) on a 2x2 mesh (JAX 0.10.2's
    HLO before partitioning). XLA's partitioned module: f32[4,3] x f32[3,4] dot, all-reduce over {{0,1},{2,3}}
    (the 'y' contraction), tanh and the reduce, all-reduce over 'x' ({{0,2},{1,3}})."""
    text = partition_and_run(JAX_MODULE, _rand(8, 6), _rand(6, 4, seed=1))
    filecheck(text, """
        CHECK: f32[4,3] parameter(0)
        CHECK: f32[3,4] parameter(1)
        CHECK-NOT: all-gather
        CHECK: %[[D:.*]] = f32[4,4] dot(
        CHECK-NEXT: all-reduce(f32[4,4] %[[D]]), channel_id={{[0-9]+}}, replica_groups={{[{][{]0,1[}],[{]2,3[}][}]}}
        CHECK: f32[4] reduce(
        CHECK-NEXT: all-reduce({{.*}}replica_groups={{[{][{]0,2[}],[{]1,3[}][}]}}
        CHECK-NOT: all-gather
    """)


def test_the_same_tiles_on_other_devices_move_by_collective_permute():
    text = partition_and_run("""HloModule m, num_partitions=4
ENTRY %e (x: f32[8,6], w: f32[6,4]) -> f32[8,4] {
  %x = f32[8,6] parameter(0), sharding={devices=[2,2]0,1,2,3}
  %w = f32[6,4] parameter(1), sharding={devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}
  ROOT %d = f32[8,4] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}
}""", _rand(8, 6), _rand(6, 4, seed=1))
    filecheck(text, """
        CHECK: f32[3,4] collective-permute(f32[3,4] {{.*}}), channel_id=1, source_target_pairs={{[{][{]0,0[}],[{]2,1[}],[{]1,2[}],[{]3,3[}][}]}}
        CHECK: f32[4,4] dot(
        CHECK-NEXT: all-reduce({{.*}}replica_groups={{[{][{]0,1[}],[{]2,3[}][}]}}
        CHECK-NOT: all-gather
    """)


def test_a_dot_of_whole_operands_into_a_split_result_slices_its_operands_first():
    text = partition_and_run("""HloModule m, num_partitions=4
ENTRY %e (x: f32[8,6], w: f32[6,4]) -> f32[8,4] {
  %x = f32[8,6] parameter(0), sharding={replicated}
  %w = f32[6,4] parameter(1), sharding={replicated}
  ROOT %d = f32[8,4] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,2]0,1,2,3}
}""", _rand(8, 6), _rand(6, 4, seed=1))
    filecheck(text, """
        CHECK: f32[4,6] dynamic-slice(f32[8,6]
        CHECK: f32[6,2] dynamic-slice(f32[6,4]
        CHECK: ROOT {{.*}} = f32[4,2] dot(f32[4,6] {{.*}}, f32[6,2] {{.*}})
        CHECK-NOT: all-
    """)


def test_a_reshape_keeps_a_split_major_dimension():
    text = partition_and_run("""HloModule m, num_partitions=2
ENTRY %e (x: f32[8,6]) -> (f32[2,4,6], f32[8,6]) {
  %x = f32[8,6] parameter(0), sharding={devices=[2,1]0,1}
  %r = f32[2,4,6] reshape(%x)
  %n = f32[2,4,6] negate(%r)
  %b = f32[8,6] reshape(%n)
  ROOT %o = (f32[2,4,6], f32[8,6]) tuple(%r, %b), sharding={{devices=[2,1,1]0,1}, {devices=[2,1]0,1}}
}""", _rand(8, 6))
    filecheck(text, """
        CHECK: f32[1,4,6] reshape(f32[4,6]
        CHECK: f32[4,6] reshape(f32[1,4,6]
        CHECK-NOT: all-gather
    """)


def test_slice_concatenate_pad_reverse_stay_local_along_whole_dimensions():
    text = partition_and_run("""HloModule m, num_partitions=2
ENTRY %e (x: f32[8,6]) -> f32[8,9] {
  %x = f32[8,6] parameter(0), sharding={devices=[2,1]0,1}
  %s = f32[8,3] slice(%x), slice={[0:8], [1:4]}
  %r = f32[8,3] reverse(%s), dimensions={1}
  %z = f32[] constant(0)
  %p = f32[8,5] pad(%r, %z), padding=0_0x1_1
  %c = f32[8,1] slice(%x), slice={[0:8], [5:6]}
  ROOT %o = f32[8,9] concatenate(%p, %c, %s), dimensions={1}, sharding={devices=[2,1]0,1}
}""", _rand(8, 6))
    filecheck(text, """
        CHECK: f32[4,3] slice(f32[4,6] {{.*}}), slice={[0:4], [1:4]}
        CHECK: f32[4,3] reverse(
        CHECK: f32[4,5] pad(
        CHECK: f32[4,9] concatenate(
        CHECK-NOT: all-gather
    """)


def test_elementwise_takes_its_users_sharding_backward():
    """x replicated, exp and negate unannotated, the root split: exp and negate run on tiles (x sliced, no
    collective), as XLA's backward propagation makes them; `w` (also used whole by a reduce) stays whole."""
    text = partition_and_run("""HloModule m, num_partitions=4
""" + ADD + """
ENTRY %e (x: f32[8,4]) -> (f32[8,4], f32[]) {
  %x = f32[8,4] parameter(0), sharding={replicated}
  %ex = f32[8,4] exponential(%x)
  %ng = f32[8,4] negate(%ex)
  %w = f32[8,4] tanh(%x)
  %s = f32[8,4] add(%ng, %w), sharding={devices=[4,1]0,1,2,3}
  %z = f32[] constant(0)
  %r = f32[] reduce(%w, %z), dimensions={0,1}, to_apply=%add
  ROOT %t = (f32[8,4], f32[]) tuple(%s, %r), sharding={{devices=[4,1]0,1,2,3}, {replicated}}
}""", _rand(8, 4))
    filecheck(text, """
        CHECK: ENTRY
        CHECK: f32[8,4] parameter(0)
        CHECK: f32[2,4] exponential(
        CHECK: f32[2,4] negate(
        CHECK: f32[8,4] tanh(
        CHECK-NOT: all-gather
        CHECK-NOT: all-reduce
    """)


def test_broadcast_takes_its_users_sharding_backward():
    """A broadcast of a replicated row added to a split x: made at the tile's shape, not whole then sliced."""
    text = partition_and_run("""HloModule m, num_partitions=4
ENTRY %e (x: f32[8,4], v: f32[4]) -> f32[8,4] {
  %x = f32[8,4] parameter(0), sharding={devices=[2,2]0,1,2,3}
  %v = f32[4] parameter(1), sharding={replicated}
  %b = f32[8,4] broadcast(%v), dimensions={1}
  ROOT %s = f32[8,4] add(%x, %b), sharding={devices=[2,2]0,1,2,3}
}""", _rand(8, 4), _rand(4, seed=1))
    filecheck(text, """
        CHECK: ENTRY
        CHECK: f32[2] dynamic-slice(
        CHECK: f32[4,2] broadcast(
        CHECK-NOT: f32[8,4]
        CHECK: ROOT {{.*}} = f32[4,2] add(
    """)
