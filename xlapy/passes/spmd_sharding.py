"""HLO shardings as values: XLA's `sharding={...}` text <-> `Sharding`, and the tile arithmetic the sharding
propagation and the SPMD partitioner share.

A Sharding of an array of rank r is a tile assignment: an integer array of shape [t_0, ..., t_{r-1}, R] holding
device (partition) ids. Dimension d is split into t_d equal tiles; the R devices of the last axis hold the same
tile (replication). `{replicated}` is all t_d = 1 and R = N; `{maximal device=k}` is read as replicated (every
partition computes the value; xlapy runs no op on one device only). A tuple value has a tuple of Shardings.

    {devices=[2,1]0,1}                               dimension 0 in two tiles, on devices 0 and 1
    {devices=[2,1,2]0,1,2,3 last_tile_dim_replicate} dimension 0 in two tiles, each on two devices
    {devices=[2,2]<=[4]}, {devices=[2,2]<=[2,2]T(1,0)}   the iota forms of the device list
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import XlapyError


class ShardingError(XlapyError):
    """A sharding that is malformed, or that the SPMD partitioner cannot apply (named with the instruction)."""


@dataclass(frozen=True, eq=False)
class Sharding:
    tiles: np.ndarray                   # [t_0, ..., t_{r-1}, R] device ids
    elements: tuple | None = None       # a tuple sharding: one Sharding per element (tiles unused)

    # -- construction ------------------------------------------------------------------------------------
    @staticmethod
    def replicated(rank: int, n: int) -> "Sharding":
        return Sharding(np.arange(n).reshape((1,) * rank + (n,)))

    @property
    def is_tuple(self) -> bool:
        return self.elements is not None

    @property
    def rank(self) -> int:
        return self.tiles.ndim - 1

    @property
    def tile_dims(self) -> tuple[int, ...]:
        return tuple(self.tiles.shape[:-1])

    @property
    def num_devices(self) -> int:
        return int(self.tiles.size)

    @property
    def is_replicated(self) -> bool:
        return all(t == 1 for t in self.tile_dims)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Sharding) or self.is_tuple != other.is_tuple:
            return False
        if self.is_tuple:
            return self.elements == other.elements
        return self.tiles.shape == other.tiles.shape and bool((self.tiles == other.tiles).all())

    def __hash__(self) -> int:
        return hash(self.to_text())

    # -- tile arithmetic -----------------------------------------------------------------------------------
    def local_dims(self, dims: Sequence[int], where: str = "") -> tuple[int, ...]:
        """The per-partition shape of an array of `dims` (every dimension must divide evenly)."""
        out = []
        for d, (n, t) in enumerate(zip(dims, self.tile_dims)):
            if n % t:
                raise ShardingError(f"{where}dimension {d} of size {n} does not divide into the {t} tiles of "
                                    f"the sharding {self.to_text()} (the partitioner does not pad)")
            out.append(n // t)
        return tuple(out)

    def coordinate(self, device: int, dim: int) -> int:
        """The tile index along `dim` of `device`."""
        where = np.argwhere(self.tiles == device)
        return int(where[0][dim])

    def fold(self, dims: Sequence[int]) -> "Sharding":
        """This sharding with `dims` no longer split: their tiles join the replication."""
        dims = sorted(set(dims))
        if not dims:
            return self
        r = self.rank
        keep = [d for d in range(r) if d not in dims]
        t = np.transpose(self.tiles, keep + dims + [r])
        shape = [self.tiles.shape[d] if d not in dims else 1 for d in range(r)]
        return Sharding(t.reshape(shape + [-1]))

    def permuted(self, perm: Sequence[int]) -> "Sharding":
        """The sharding of transpose(x, perm) when x has this sharding."""
        return Sharding(np.transpose(self.tiles, list(perm) + [self.rank]))

    def mapped(self, rank: int, dim_map: dict[int, int]) -> "Sharding":
        """A sharding of rank `rank` whose dimension dim_map[d] is split as this one's d (the other dimensions
        of this one fold into the replication; new dimensions are whole)."""
        folded = self.fold([d for d in range(self.rank) if d not in dim_map])
        src = sorted(dim_map, key=lambda d: dim_map[d])
        t = np.transpose(folded.tiles, src + [d for d in range(self.rank) if d not in dim_map] + [self.rank])
        n_rep = folded.tiles.shape[-1]
        sizes = [1] * rank
        for d in src:
            sizes[dim_map[d]] = folded.tiles.shape[d]
        return Sharding(t.reshape(sizes + [n_rep]))

    def groups_along(self, dims: Sequence[int]) -> list[list[int]]:
        """Device groups that differ only in their tile index along `dims` (each ordered by that index)."""
        dims = list(dims)
        other = [d for d in range(self.rank + 1) if d not in dims]
        t = np.transpose(self.tiles, other + dims)
        return t.reshape(-1, int(np.prod([self.tiles.shape[d] for d in dims], dtype=np.int64))).tolist()

    # -- text ----------------------------------------------------------------------------------------------
    def to_text(self) -> str:
        if self.is_tuple:
            return "{" + ", ".join(e.to_text() for e in self.elements) + "}"
        if self.is_replicated:
            return "{replicated}"
        rep = self.tiles.shape[-1]
        dims = list(self.tile_dims) + ([rep] if rep > 1 else [])
        text = "{devices=[%s]%s" % (",".join(map(str, dims)), ",".join(map(str, self.tiles.reshape(-1))))
        return text + (" last_tile_dim_replicate}" if rep > 1 else "}")

    __str__ = to_text


_TILED = re.compile(r"devices=\[([\d,]+)\]\s*(<=\[[\d,]+\](?:T\([\d,]+\))?|[\d,\s]+)\s*(.*)$")


def parse_sharding(text: str, rank: int, num_devices: int) -> Sharding:
    """A sharding attribute's text for an array of `rank` in a program of `num_devices` partitions."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ShardingError(f"malformed sharding {text!r}")
    inner = body[1:-1].strip()
    if inner.startswith("{"):
        raise ShardingError(f"a tuple sharding {text!r} given for an array")
    if inner in ("replicated", "manual") or inner.startswith("maximal"):
        return Sharding.replicated(rank, num_devices)
    m = _TILED.match(inner)
    if not m:
        raise ShardingError(f"unsupported sharding {text!r}")
    dims = [int(x) for x in m.group(1).split(",")]
    ids = _device_list(m.group(2))
    tail = m.group(3)
    if "last_tile_dims" in tail:
        raise ShardingError(f"sharding {text!r}: last_tile_dims (subgroups) are not supported")
    replicate = "last_tile_dim_replicate" in tail
    if int(np.prod(dims)) != len(ids):
        raise ShardingError(f"sharding {text!r}: {len(ids)} devices for tiles {dims}")
    tiles = np.asarray(ids).reshape(dims)
    if not replicate:
        tiles = tiles.reshape(dims + [1])
    if tiles.ndim - 1 != rank:
        raise ShardingError(f"sharding {text!r} has {tiles.ndim - 1} tile dimensions for an array of rank {rank}")
    if sorted(tiles.reshape(-1).tolist()) != list(range(num_devices)):
        raise ShardingError(f"sharding {text!r} must name each of the {num_devices} partitions once")
    return Sharding(tiles)


def _device_list(text: str) -> list[int]:
    text = text.strip()
    if not text.startswith("<="):
        return [int(x) for x in re.split(r"[,\s]+", text) if x]
    m = re.match(r"<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
    shape = [int(x) for x in m.group(1).split(",")]
    ids = np.arange(int(np.prod(shape))).reshape(shape)
    if m.group(2):
        ids = np.transpose(ids, [int(x) for x in m.group(2).split(",")])
    return ids.reshape(-1).tolist()


def split_tuple_text(text: str) -> list[str]:
    """The element texts of a tuple sharding `{{a}, {b}}`."""
    inner = text.strip()[1:-1]
    out, depth, start = [], 0, None
    for i, ch in enumerate(inner):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                out.append(inner[start:i + 1])
    return out


def sharding_of(text: str, shape, num_devices: int) -> Sharding:
    """The Sharding of a value of `shape` (tuple shapes take a tuple sharding, or one sharding for every leaf)."""
    if shape.is_tuple:
        parts = split_tuple_text(text) if text.strip()[1:].lstrip().startswith("{") else \
            [text] * len(shape.tuple_shapes)
        if len(parts) != len(shape.tuple_shapes):
            raise ShardingError(f"tuple sharding {text!r} has {len(parts)} elements for {len(shape.tuple_shapes)}")
        return Sharding(np.zeros(1), tuple(sharding_of(p, s, num_devices) for p, s in zip(parts, shape.tuple_shapes)))
    return parse_sharding(text, shape.rank if shape.is_array else 0, num_devices)
