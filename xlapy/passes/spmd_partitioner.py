"""SpmdPartitioner (GSPMD): rewrite a module annotated with shardings into the program ONE partition runs.

After ShardingPropagation (run first if the module is not fully annotated) every value of the entry computation
has a sharding. The partitioner emits a new entry computation in which each value is its local tile (the shape
divided by the tile counts) and inserts the collectives XLA inserts:

    resharding a value       the same tiles on other devices: collective-permute; otherwise all-gather along
                             the dimensions split differently, then a dynamic-slice at the partition's
                             offsets (a constant table of tile indices read at partition-id)
    elementwise              operands resharded to the result's sharding; the op on the tiles
    dot                      the operand with more tiles leads: batch and free splits stay local; a split
                             contracting dimension gives partial sums, all-reduced over its devices; the other
                             operand is resharded to match; a result split more finely than both operands has
                             them sliced to its tiles first (spmd_partitioner_ops.py)
    reduce                   the tile reduced, then all-reduce over the devices of the split reduced dims
    broadcast / transpose / reshape   the splits mapped through (a reshape that does not keep a split
                             dimension gathers it first; a broadcast whose result is split more finely than
                             its operand maps: the operand's matching tile broadcast at the result tile's shape)
    convolution              split over the batch only (the kernel replicated); otherwise whole
    slice / concatenate / pad / reverse   on tiles, whole along the dimensions they work along
    anything else            operands gathered whole, the op run whole, the result sliced to its sharding

Every partition computes; no padding (each split dimension must divide into its tiles: a ShardingError names
the instruction otherwise). The result is an ordinary module with num_partitions = N and no sharding
attributes, which backends/spmd.py runs on N devices.
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..hlo import Computation, Instruction, Module, Shape
from .build import emit, make_constant, new_computation, parameter
from .pipeline import Pass
from .sharding_propagation import PASS_THROUGH, has_shardings, num_partitions, propagate
from .spmd_sharding import Sharding, ShardingError


def groups_text(groups: list[list[int]]) -> str:
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"


class Partitioner:
    """The builder of the partitioned entry computation: values are (local instruction, sharding)."""

    def __init__(self, comp: Computation, n: int):
        self.comp = comp
        self.n = n
        self._channels = itertools.count(1)
        self._pid: Instruction | None = None

    def emit(self, opcode: str, operands: list, attrs: dict | None = None, shape: Shape | None = None) -> Instruction:
        return emit(self.comp, opcode, operands, attrs, shape=shape)

    def constant(self, value: Any, et: str | None = None) -> Instruction:
        return self.comp.add_instruction(make_constant(value, et))

    def partition_id(self) -> Instruction:
        if self._pid is None:
            self._pid = self.emit("partition-id", [], shape=Shape.scalar("u32"))
        return self._pid

    def collective_attrs(self, groups: list[list[int]], global_ids: bool = True) -> dict:
        attrs = {"channel_id": next(self._channels), "replica_groups": groups_text(groups)}
        if global_ids:
            attrs["use_global_device_ids"] = True
        return attrs

    # -- collectives ---------------------------------------------------------------------------------------
    def all_gather(self, x: Instruction, s: Sharding, dim: int) -> tuple[Instruction, Sharding]:
        t = s.tile_dims[dim]
        dims = list(x.shape.dims)
        dims[dim] *= t
        attrs = dict(self.collective_attrs(s.groups_along([dim])), dimensions=(dim,))
        y = self.emit("all-gather", [x], attrs, shape=Shape.array(x.shape.element_type, dims))
        return y, s.fold([dim])

    def collective_permute(self, x: Instruction, have: Sharding, want: Sharding) -> Instruction:
        """x's tiles moved from the devices of `have` to those of `want` (same tile counts, other devices):
        each tile's holders under `have` paired one to one with its holders under `want`."""
        pairs = []
        for c in np.ndindex(*have.tile_dims):
            for src, dst in zip(have.tiles[c].reshape(-1).tolist(), want.tiles[c].reshape(-1).tolist()):
                pairs.append((src, dst))
        attrs = {"channel_id": next(self._channels),
                 "source_target_pairs": "{" + ",".join("{%d,%d}" % p for p in sorted(pairs, key=lambda q: q[1])) + "}"}
        return self.emit("collective-permute", [x], attrs, shape=x.shape.without_layout())

    def all_reduce(self, x: Instruction, groups: list[list[int]], reducer: Computation) -> Instruction:
        attrs = dict(self.collective_attrs(groups), to_apply=reducer)
        return self.emit("all-reduce", [x], attrs, shape=x.shape.without_layout())

    def dynamic_slice(self, x: Instruction, s: Sharding) -> Instruction:
        """The tile of the whole value `x` that this partition holds under `s`."""
        local = s.local_dims(x.shape.dims)
        offsets = []
        for d, t in enumerate(s.tile_dims):
            if t == 1:
                offsets.append(self.constant(np.int32(0)))
                continue
            table = np.array([s.coordinate(p, d) * local[d] for p in range(self.n)], dtype=np.int32)
            tab = self.constant(table)
            one = self.emit("dynamic-slice", [tab, self.partition_id()], {"dynamic_slice_sizes": (1,)},
                            shape=Shape.array("s32", (1,)))
            offsets.append(self.emit("reshape", [one], shape=Shape.scalar("s32")))
        return self.emit("dynamic-slice", [x] + offsets, {"dynamic_slice_sizes": tuple(local)},
                         shape=Shape.array(x.shape.element_type, local))

    def reshard(self, x: Instruction, have: Sharding, want: Sharding, where: str) -> Instruction:
        """The local value of `x` (sharded as `have`) sharded as `want`."""
        if have == want or x.shape.is_tuple:
            if x.shape.is_tuple and have != want:
                raise ShardingError(f"{where}: resharding a tuple value is not supported")
            return x
        if have.tiles.shape == want.tiles.shape:   # the same tiles on other devices: send them there
            return self.collective_permute(x, have, want)
        for d, t in enumerate(have.tile_dims):      # first the dimensions split differently
            if t > 1 and want.tile_dims[d] != t:
                x, have = self.all_gather(x, have, d)
        if have == want:
            return x
        for d, t in enumerate(have.tile_dims):
            if t > 1:
                x, have = self.all_gather(x, have, d)
        if want.is_replicated:
            return x
        want.local_dims(x.shape.dims, f"{where}: ")
        return self.dynamic_slice(x, want)


def _local_shape(shape: Shape, s: Sharding, where: str) -> Shape:
    if shape.is_tuple:
        return Shape.tuple_of([_local_shape(e, se, where) for e, se in zip(shape.tuple_shapes, s.elements)])
    if not shape.is_array:
        return shape
    return Shape.array(shape.element_type, s.local_dims(shape.dims, where))


def _live(comp: Computation) -> set[int]:
    seen, stack = set(), [comp.root]
    while stack:
        inst = stack.pop()
        if id(inst) not in seen:
            seen.add(id(inst))
            stack.extend(inst.operands)
    return seen


def partition_module(module: Module) -> None:
    """Replace the entry computation of an annotated module by its per-partition program (in place)."""
    from .spmd_partitioner_ops import partition_instruction
    n = num_partitions(module)
    old = module.entry
    shardings = propagate(module)
    comp = new_computation(module, old.name + ".spmd")
    p = Partitioner(comp, n)
    values: dict[int, Instruction] = {}
    live = _live(old)
    for inst in old.post_order():
        if id(inst) not in live and inst.opcode != "parameter":
            continue        # dead code: its collectives would have effects (DCE keeps them)
        s = shardings[id(inst)]
        if inst.opcode == "parameter":
            values[id(inst)] = parameter(comp, inst.parameter_number,
                                         _local_shape(inst.shape, s, f"parameter {inst.name}: "), inst.name)
            continue
        operands = [(values[id(o)], shardings[id(o)]) for o in inst.operands]
        values[id(inst)] = partition_instruction(p, inst, operands, s)
    comp.root = values[id(old.root)]
    module.entry = comp
    module.remove_computation(old)
    comp.name = old.name
    module.attrs.pop("entry_computation_layout", None)
    comp.remove_dead()
    module.remove_unreachable_computations()
    for other in module.computations:       # called computations run whole: their markers are the values
        for inst in list(other.instructions):
            if inst.opcode == "custom-call" and inst.attrs.get("custom_call_target") in PASS_THROUGH:
                inst.replace_all_uses_with(inst.operands[0])
                if other.root is inst:
                    other.root = inst.operands[0]
                other.remove_instruction(inst)
            inst.attrs.pop("sharding", None)


class SpmdPartitioner(Pass):
    name = "spmd-partitioner"

    def run(self, module: Module) -> bool:
        if num_partitions(module) <= 1 or not has_shardings(module):
            return False
        partition_module(module)
        return True
