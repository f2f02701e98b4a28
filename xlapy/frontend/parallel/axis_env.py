"""Named axes: the axis environment a traced function sees (JAX's axis env), per thread.

A frame is pushed while a function is traced under a named axis:

    kind "device"  pmap / shard_map at the top level: the function becomes one program per device, and a
                   collective over the axis is an HLO collective (all-reduce, ...) among those devices;
    kind "vmap"    vmap(axis_name=...) and pmap / shard_map inside another trace (emulated by vmap): the
                   collective is emitted tagged with its axes and batching (HLO -> HLO) turns it into a
                   reduction over the batch dimension (frontend/batching/rules_collective.py).

Device frames form the device mesh, outermost first: device (partition) p sits at the row-major position p of
the mesh of their sizes. `groups(axes)` gives the replica_groups of a collective over some of them: one group
per position of the other axes, its members varying over `axes` in the order named (the order all_gather
stacks in). Collectives are emitted as JAX emits them inside pmap and shard_map: channel_id=1,
use_global_device_ids=true, groups of device ids, the module having num_partitions = the mesh size.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from ...errors import XlapyError


class AxisNameError(XlapyError, NameError):
    """A collective names an axis that no enclosing pmap / shard_map / vmap binds (JAX's NameError)."""


@dataclass(frozen=True)
class AxisFrame:
    name: Any
    size: int
    kind: str           # "device" or "vmap"


class _Frames(threading.local):
    def __init__(self):
        self.stack: list[AxisFrame] = []


_FRAMES = _Frames()

TAG = "xlapy_axes"      # the frontend attribute naming a collective's axes: frontend_attributes={xlapy_axes="i,j"}


@contextlib.contextmanager
def axis_frames(frames: Sequence[AxisFrame]) -> Iterator[None]:
    """Bind `frames` (outermost first) while a function is traced."""
    stack = _FRAMES.stack
    n = len(stack)
    stack.extend(frames)
    try:
        yield
    finally:
        del stack[n:]


def axis_frame(name: Any, size: int, kind: str):
    return axis_frames([AxisFrame(name, size, kind)])


def frames() -> list[AxisFrame]:
    return list(_FRAMES.stack)


def lookup(name: Any, what: str) -> AxisFrame:
    """The innermost frame binding `name` (a collective's axis), else AxisNameError."""
    for frame in reversed(_FRAMES.stack):
        if frame.name == name:
            return frame
    bound = [f.name for f in _FRAMES.stack]
    where = f"the bound axes are {bound}" if bound else "no axis is bound"
    raise AxisNameError(f"{what}: unbound axis name: {name!r} ({where}; name axes with pmap(axis_name=...), "
                        f"shard_map's mesh or vmap(axis_name=...))")


def axis_names(axis_name: Any) -> tuple:
    """A collective's axis_name argument as a tuple of names (a tuple/list names several axes)."""
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def device_frames() -> list[AxisFrame]:
    """The device axes of the innermost device program (the frames since the last vmap frame do not count:
    a device frame inside a vmap frame is impossible, pmap inside a trace is emulated by vmap)."""
    return [f for f in _FRAMES.stack if f.kind == "device"]


def mesh_size() -> int:
    return int(np.prod([f.size for f in device_frames()], dtype=np.int64))


def groups(axes: Sequence[Any]) -> list[list[int]]:
    """replica_groups (device ids) of a collective over the device axes `axes`."""
    dev = device_frames()
    names = [f.name for f in dev]
    ids = np.arange(mesh_size()).reshape([f.size for f in dev])
    picked = [names.index(a) for a in axes]
    rest = [k for k in range(len(dev)) if k not in picked]
    moved = np.transpose(ids, rest + picked).reshape(-1, int(np.prod([dev[k].size for k in picked], dtype=np.int64)))
    return moved.tolist()


def groups_text(gs: Sequence[Sequence[int]]) -> str:
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in gs) + "}"


def stride(name: Any) -> int:
    """The product of the sizes of the device axes inside `name`: device id // stride % size is its index."""
    dev = device_frames()
    k = [f.name for f in dev].index(name)
    return int(np.prod([f.size for f in dev[k + 1:]], dtype=np.int64))


def tag_text(names: Sequence[Any]) -> str:
    return "{%s=\"%s\"}" % (TAG, ",".join(str(n) for n in names))


def tagged_axes(inst: Any) -> tuple[str, ...]:
    """The axis names a collective was emitted for (from its frontend attribute), () if untagged."""
    text = inst.attrs.get("frontend_attributes")
    if not isinstance(text, str) or TAG not in text:
        return ()
    value = text.split(TAG + "=", 1)[1].lstrip().lstrip('"')
    value = value[:value.index('"')]
    return tuple(n for n in value.split(",") if n)


def retag(attrs: dict, names: Sequence[Any]) -> dict:
    """attrs with the tag naming `names` (dropped when empty)."""
    out = dict(attrs)
    out.pop("frontend_attributes", None)
    if names:
        out["frontend_attributes"] = tag_text(names)
    return out
