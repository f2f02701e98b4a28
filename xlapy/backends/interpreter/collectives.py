"""The collective opcodes: what each device of a group receives (XLA's operation semantics).

| opcode | device of rank i in a group of n receives |
|---|---|
| all-reduce(x...) | reduce(x_0, ..., x_{n-1}) per operand, folded in rank order (so every rank gets the same bits) |
| all-gather(x...), dimensions={d} | concatenate(x_0, ..., x_{n-1}) along d |
| reduce-scatter(x...), dimensions={d} | the i-th of n equal pieces along d of reduce(x_0, ..., x_{n-1}) |
| all-to-all(x), dimensions={d} | concatenate over r of the i-th piece along d of x_r, along d |
| all-to-all(x_0..x_{n-1}) (tuple form) | the tuple (x_i of rank 0, ..., x_i of rank n-1) |
| collective-permute(x), source_target_pairs | x of the source paired with it, zeros when none is |
| collective-broadcast(x) | x of the group's first device |
| ragged-all-to-all(in, out, in_offsets, send_sizes, out_offsets, recv_sizes) | out, with each sender's slices for it written where the sender's out_offsets say (jax.lax.ragged_all_to_all) |
| replica-id, partition-id | its replica / partition number (u32) |

The -start forms run the collective (all-reduce-start's value is the result; all-gather-start's and
collective-permute-start's are tuples whose done reads the result); the -done forms read it. async-start /
async-done around a collective computation run it at start. Groups and pairs come from hlo/collectives.py
(the replica-group modes); the device a thread runs as, and the communicator, from rendezvous.current().
`run(spec, operands, outs)` is shared with the CPU backend (its trampoline passes result buffers as `outs`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import ExecutionError, UnimplementedError
from ...hlo import collectives as groups_of
from ...hlo.shape_inference_collectives import in_place as permute_in_place
from . import rendezvous
from .reducers import COMBINERS, call_lifted, recognise


@dataclass(frozen=True)
class Spec:
    """What a collective instruction does, independent of the instruction object (the CPU backend rebuilds it
    from text): the opcode, its name (for messages), the attributes that choose groups, dims, the reducer."""
    opcode: str
    name: str
    attrs: tuple            # (("replica_groups", text), ("channel_id", text), ...) as the parser keeps them
    dimension: int | None = None        # all-gather / reduce-scatter / all-to-all dimension
    split_dimension: int | None = None  # all-to-all's array form only
    reducer: str | None = None          # a COMBINERS row name, or None
    in_place: bool = False              # collective-permute's in-place form (input, output, offsets, offsets)
    reducer_comp: Any = None            # the to_apply computation, where it is not one COMBINERS op

    @property
    def family(self) -> str:
        return groups_of.FAMILY.get(self.opcode, self.opcode)

    @property
    def what(self) -> str:
        return f"{self.name} ({self.opcode})"


class _AttrView:
    """The (opcode, name, attrs) an hlo/collectives.py function reads, for a Spec."""

    def __init__(self, spec: Spec):
        self.opcode, self.name, self.attrs = spec.opcode, spec.name, dict(spec.attrs)


_GROUP_ATTRS = ("replica_groups", "channel_id", "use_global_device_ids", "source_target_pairs")


def spec_of(inst) -> Spec:
    attrs = tuple((k, str(inst.attrs[k])) for k in _GROUP_ATTRS if inst.attrs.get(k) is not None)
    dims = inst.attrs.get("dimensions")
    split = dims[0] if inst.opcode == "all-to-all" and dims else None     # XLA prints it as dimensions={d}
    reducer = reducer_comp = None
    comp = inst.attrs.get("to_apply")
    if comp is not None:
        reducer = recognise(comp)
        if reducer in (None, "assign"):
            reducer, reducer_comp = None, comp
    in_place = groups_of.FAMILY.get(inst.opcode) == "collective-permute" and permute_in_place(inst)
    return Spec(inst.opcode, inst.name, attrs, int(dims[0]) if dims else None,
                None if split is None else int(split), reducer, in_place, reducer_comp)


@lru_cache(maxsize=1024)
def _groups(spec: Spec, num_replicas: int, num_partitions: int, assignment: bytes | None) -> list:
    da = None if assignment is None else np.frombuffer(assignment, np.int64).reshape(num_replicas, num_partitions)
    view = _AttrView(spec)
    if spec.family == "collective-permute":
        return groups_of.permute_pairs(view, num_replicas, num_partitions, da)
    return groups_of.device_groups(view, num_replicas, num_partitions, da)


def group_for(spec: Spec, ctx: rendezvous.DeviceContext) -> Any:
    found = _groups(spec, ctx.num_replicas, ctx.num_partitions, ctx.assignment_key)
    if spec.family == "collective-permute":
        return found
    for g in found:
        if ctx.device in g:
            return g
    raise ExecutionError(f"{spec.what}: device {ctx.device} is in none of the groups {found}")


# -- the semantics over everyone's operands ---------------------------------------------------------------
def combiner(spec: Spec, dtype: np.dtype) -> Callable:
    """fn(a, b, out=out): the reducer over whole arrays (a numpy ufunc for one COMBINERS op; else the to_apply
    computation run by the evaluator, lifted to arrays where it can be, element by element otherwise)."""
    if spec.reducer is not None:
        numbers, preds = COMBINERS[spec.reducer]
        return preds if np.dtype(dtype) == np.bool_ else numbers
    comp = spec.reducer_comp
    if comp is None:
        raise ExecutionError(f"{spec.what}: needs a to_apply reducer computation")
    from .evaluator import Evaluator
    ev = Evaluator(comp.parent)

    def apply(a, b, out):
        lifted = call_lifted(ev, comp, [np.asarray(a), np.asarray(b)], np.shape(a))
        if lifted is None:
            flat = [np.asarray(ev.call_scalar(comp, x, y)) for x, y in zip(np.asarray(a).reshape(-1),
                                                                          np.asarray(b).reshape(-1))]
            out[...] = np.asarray(flat, out.dtype).reshape(np.shape(a))
        else:
            out[...] = lifted[0]
        return out
    return apply


def fold(values: Sequence[np.ndarray], fn: Callable, out: np.ndarray | None = None) -> np.ndarray:
    """((values[0] fn values[1]) fn values[2]) ... in rank order, into out (a fresh array when None)."""
    if len(values) == 1:
        return np.array(values[0], copy=True) if out is None else _assign(out, values[0])
    if out is None:
        out = np.empty(np.shape(values[0]), np.asarray(values[0]).dtype)
    fn(values[0], values[1], out=out)          # the first step writes out: no copy of values[0] first
    for v in values[2:]:
        fn(out, v, out=out)
    return out


def _assign(out: np.ndarray, value: np.ndarray) -> np.ndarray:
    out[...] = value
    return out


def _pieces(x: np.ndarray, dim: int, n: int, what: str) -> list[np.ndarray]:
    if x.shape[dim] % n:
        raise ExecutionError(f"{what}: dimension {dim} of size {x.shape[dim]} does not split into {n} pieces")
    return np.split(x, n, axis=dim)


def _local_all_reduce(values: list, rank: int, shared: dict, spec: Spec) -> None:
    """Each rank folds its share of the elements into one shared result (the others read it after)."""
    n = len(values)
    with shared["lock"]:
        if "out" not in shared:
            shared["out"] = [np.empty(x.shape, x.dtype) for x in values[0]]
    for k, out in enumerate(shared["out"]):
        flat_out = out.reshape(-1)
        size = flat_out.size
        lo, hi = size * rank // n, size * (rank + 1) // n
        if hi > lo:
            fn = combiner(spec, out.dtype)
            fold([v[k].reshape(-1)[lo:hi] for v in values], fn, flat_out[lo:hi])


_ALONE = rendezvous.Rendezvous()      # outside a run every group is one device: meetings return at once


def _meet(spec: Spec, ctx, group, operands, compute, after=None):
    comm = ctx.communicator
    if comm is None:            # outside a run: a group of one
        if len(group) != 1:
            raise ExecutionError(f"{spec.what}: a group of {len(group)} devices outside a replicated run "
                                 f"(run the module with xlapy.backends.spmd.execute)")
        comm = _ALONE
    key = ctx.next_key((spec.name, spec.opcode, spec.attrs))
    return comm.meet(key, group, ctx.device, operands, compute, spec.what, after)


def _into(outs: list | None, k: int, value: np.ndarray) -> np.ndarray:
    if outs is None:
        return np.ascontiguousarray(value) if not value.flags.c_contiguous else value.copy()
    outs[k][...] = value
    return outs[k]


def results_from_all(spec: Spec, values: list[list[np.ndarray]], rank: int) -> list[np.ndarray]:
    """What the device of `rank` receives, given every device's operands in group order (values[r][k]); the
    rule of every family but collective-permute (a communicator that gathers everything uses it too)."""
    family, n = spec.family, len(values)
    count = len(values[0])
    if family in ("all-reduce", "reduce-scatter"):
        total = [fold([v[k] for v in values], combiner(spec, values[0][k].dtype)) for k in range(count)]
        if family == "all-reduce":
            return total
        return [_pieces(t, spec.dimension, n, spec.what)[rank] for t in total]
    if family == "all-gather":
        return [np.concatenate([v[k] for v in values], axis=spec.dimension) for k in range(count)]
    if family == "all-to-all":
        if spec.split_dimension is not None:
            parts = [_pieces(v[0], spec.split_dimension, n, spec.what)[rank] for v in values]
            return [np.concatenate(parts, axis=spec.dimension)]
        return [values[j][rank] for j in range(n)]
    if family == "collective-broadcast":
        return list(values[0])
    if family == "ragged-all-to-all":
        return [_ragged(values, rank)]
    raise UnimplementedError(f"collectives: no rule for {spec.what}")


def _ragged(values: list[list[np.ndarray]], rank: int) -> np.ndarray:
    """jax.lax.ragged_all_to_all: sender s's slice i (of k per receiver) goes to receiver i // k, at the offset
    output_offsets[i] of s (an offset in the receiver's output)."""
    n = len(values)
    result = np.array(values[rank][1], copy=True)
    k = values[0][2].reshape(-1).size // n
    for s, (data, _, in_offsets, send_sizes, out_offsets, _) in enumerate(values):
        in_offsets, send_sizes, out_offsets = (np.asarray(a).reshape(-1) for a in (in_offsets, send_sizes, out_offsets))
        for j in range(k):
            i = rank * k + j
            size = int(send_sizes[i])
            start, at = int(in_offsets[i]), int(out_offsets[i])
            if size:
                result[at:at + size] = data[start:start + size]
    return result


_METHODS = {f: f.replace("-", "_") for f in set(groups_of.FAMILY.values())}    # a communicator's method per family


def run(spec: Spec, operands: list[np.ndarray], outs: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """The results (one per result leaf) of `spec` for this thread's device. outs: buffers to write them into."""
    ctx = rendezvous.current()
    group = group_for(spec, ctx)
    family = spec.family
    fast = getattr(ctx.communicator, _METHODS.get(family) or family.replace("-", "_"), None)
    if fast is not None:            # an MPI communicator's own collective (None: the group is in this process)
        done = fast(spec, ctx, group, operands, outs)
        if done is not None:
            return done
    if family == "all-reduce":
        def after(_, shared):
            return [_into(outs, k, r) for k, r in enumerate(shared["out"])]
        return _meet(spec, ctx, group, operands, lambda v, r, s: _local_all_reduce(v, r, s, spec), after)
    if family == "reduce-scatter":
        def after(rank, shared):
            n = len(group)
            return [_into(outs, k, _pieces(r, spec.dimension, n, spec.what)[rank])
                    for k, r in enumerate(shared["out"])]
        return _meet(spec, ctx, group, operands,
                     lambda v, r, s: (_local_all_reduce(v, r, s, spec), r)[1], after)
    if family == "all-to-all" and spec.split_dimension is None and len(operands) != len(group):
        raise ExecutionError(f"{spec.what}: the tuple form needs one operand per device of the group "
                             f"({len(group)}), got {len(operands)}")
    if family in ("all-gather", "all-to-all", "collective-broadcast", "ragged-all-to-all"):
        return _meet(spec, ctx, group, operands,
                     lambda v, r, s: [_into(outs, k, x) for k, x in enumerate(results_from_all(spec, v, r))])
    if family == "collective-permute":
        return _permute(spec, ctx, group, operands, outs)
    raise UnimplementedError(f"collectives: no rule for {spec.what}")


def _permute(spec: Spec, ctx, pairs: list, operands: list, outs: list | None) -> list:
    if spec.in_place:
        raise UnimplementedError(f"{spec.what}: the in-place (slice) form of collective-permute is not supported")
    members = sorted({d for p in pairs for d in p})
    source = {t: s for s, t in pairs}
    if ctx.device not in members:
        return [_into(outs, k, np.zeros_like(x)) for k, x in enumerate(operands)]

    def compute(v, r, s):
        src = source.get(ctx.device)
        return [_into(outs, k, np.zeros_like(x) if src is None else v[members.index(src)][k])
                for k, x in enumerate(operands)]
    return _meet(spec, ctx, members, operands, compute)


# -- the interpreter's handlers ---------------------------------------------------------------------------
def _leaves(value) -> list:
    return [leaf for v in value for leaf in _leaves(v)] if isinstance(value, tuple) else [value]


def _collective(inst, args, ev):
    spec = spec_of(inst)
    results = run(spec, [np.asarray(a) for a in _leaves(tuple(args))])
    shape = inst.shape
    if spec.family == "all-to-all" and spec.split_dimension is None:
        return tuple(results)
    if inst.opcode in ("all-gather-start", "collective-permute-start"):
        # (operand(s), result(s)[, u32 contexts]): done reads element 1
        ops = tuple(args) if len(args) > 1 else args[0]
        res = tuple(results) if len(results) > 1 else results[0]
        extra = tuple(np.zeros((), np.uint32) for _ in range(len(shape.tuple_shapes) - 2))
        return (ops, res) + extra
    if shape.is_tuple:
        return tuple(results)
    return results[0]


def _done(inst, args, ev):
    value = args[0]
    if inst.opcode == "all-reduce-done":
        return value
    return value[1]


def _replica_id(inst, args, ev):
    return np.asarray(rendezvous.current().replica, dtype=np.uint32)


def _partition_id(inst, args, ev):
    return np.asarray(rendezvous.current().partition, dtype=np.uint32)


def _async_start(inst, args, ev):
    comp = inst.attrs.get("calls")
    if comp is None:
        raise ExecutionError(f"{inst.name} (async-start) has no calls= computation")
    result = ev.call(comp, list(args))
    rest = tuple(_zeros(s) for s in inst.shape.tuple_shapes[2:])
    return (tuple(args), result) + rest


def _zeros(shape):
    if shape.is_tuple:
        return tuple(_zeros(s) for s in shape.tuple_shapes)
    return np.zeros(shape.dims, shape.dtype)


HANDLERS = {
    **{op: _collective for op in ("all-reduce", "all-reduce-start", "all-gather", "all-gather-start",
                                  "reduce-scatter", "all-to-all", "collective-permute", "collective-permute-start",
                                  "collective-broadcast", "ragged-all-to-all")},
    "all-reduce-done": _done, "all-gather-done": _done, "collective-permute-done": _done,
    "replica-id": _replica_id, "partition-id": _partition_id,
    "async-start": _async_start, "async-update": lambda inst, args, ev: args[0],
    "async-done": lambda inst, args, ev: args[0][1],
}

__all__ = ["HANDLERS", "Spec", "fold", "group_for", "results_from_all", "run", "spec_of"]
