"""Who talks to whom in a collective: XLA's replica-group semantics (xla/service/collective_ops_utils.cc).

replica_groups is kept by the parser as raw text; this module reads its two forms
  {{0,1},{2,3}}          explicit groups ({} = one group of every id)
  [G,S]<=[d0,d1,..]T(p)  iota groups: iota(prod d) reshaped to d, transposed by p, reshaped to [G,S]
and source_target_pairs ({{0,1},{1,2}}). The ids in the groups mean different things by mode:

| mode | when | ids are | a group of devices is |
|---|---|---|---|
| cross_replica | no channel_id (and use_global_device_ids false/absent) | replica ids | those replicas, one group per partition |
| cross_partition | channel_id, no use_global_device_ids attribute (all-to-all, permute, broadcast) | partition ids | those partitions, one group per replica |
| cross_replica_and_partition | channel_id, use_global_device_ids=false (all-reduce, all-gather, reduce-scatter) | replica ids | those replicas x every partition (replica-major) |
| flattened_id | channel_id, use_global_device_ids=true | replica * P + partition | those devices |

Devices are numbered by a device assignment, an R x P table (default: replica * P + partition).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

import numpy as np

from ..errors import HloVerifierError

CROSS_REPLICA, CROSS_PARTITION = "cross_replica", "cross_partition"
CROSS_REPLICA_AND_PARTITION, FLATTENED_ID = "cross_replica_and_partition", "flattened_id"

# opcodes -> the family whose semantics they share (async forms run as their synchronous op)
FAMILY = {
    "all-reduce": "all-reduce", "all-reduce-start": "all-reduce",
    "all-gather": "all-gather", "all-gather-start": "all-gather",
    "reduce-scatter": "reduce-scatter",
    "all-to-all": "all-to-all", "ragged-all-to-all": "ragged-all-to-all",
    "collective-permute": "collective-permute", "collective-permute-start": "collective-permute",
    "collective-broadcast": "collective-broadcast",
}
# the ops with a use_global_device_ids attribute (the others pass "absent" to the mode rule)
_HAS_GLOBAL_IDS = {"all-reduce", "all-gather", "reduce-scatter"}


def parse_groups(text: str | None) -> tuple[tuple[int, ...], ...]:
    """replica_groups text -> groups of ids; () for `{}` or an absent attribute."""
    if text is None:
        return ()
    s = str(text).strip()
    if s.startswith("["):
        return _iota_groups(s)
    return _explicit_groups(s)


@lru_cache(maxsize=512)
def _explicit_groups(s: str) -> tuple[tuple[int, ...], ...]:
    inner = s.strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        raise HloVerifierError(f"replica_groups: expected {{{{...}},...}} or [G,S]<=[...], got {s!r}")
    inner = inner[1:-1].strip()
    if not inner:
        return ()
    groups = re.findall(r"\{([^{}]*)\}", inner)
    if re.sub(r"\{[^{}]*\}|[\s,]", "", inner):
        raise HloVerifierError(f"replica_groups: cannot read {s!r}")
    try:
        return tuple(tuple(int(x) for x in g.split(",") if x.strip()) for g in groups)
    except ValueError:
        raise HloVerifierError(f"replica_groups: {s!r} holds something other than integer ids") from None


@lru_cache(maxsize=512)
def _iota_groups(s: str) -> tuple[tuple[int, ...], ...]:
    m = re.fullmatch(r"\[\s*(\d+)\s*,\s*(\d+)\s*\]\s*<=\s*\[([\d,\s]+)\](?:\s*T\(([\d,\s]+)\))?", s)
    if m is None:
        raise HloVerifierError(f"replica_groups: cannot read the iota form {s!r}")
    g, size = int(m.group(1)), int(m.group(2))
    dims = [int(x) for x in m.group(3).split(",") if x.strip()]
    ids = np.arange(int(np.prod(dims))).reshape(dims)
    if m.group(4):
        perm = [int(x) for x in m.group(4).split(",") if x.strip()]
        if sorted(perm) != list(range(len(dims))):
            raise HloVerifierError(f"replica_groups: {s!r}: T{tuple(perm)} is not a permutation of the dims")
        ids = ids.transpose(perm)
    if g * size != ids.size:
        raise HloVerifierError(f"replica_groups: {s!r}: {g} groups of {size} is not {ids.size} ids")
    return tuple(tuple(int(x) for x in row) for row in ids.reshape(g, size))


def parse_pairs(text: str | None) -> tuple[tuple[int, int], ...]:
    """source_target_pairs text -> ((source, target), ...)."""
    if text is None:
        return ()
    groups = _explicit_groups(str(text).strip())
    for p in groups:
        if len(p) != 2:
            raise HloVerifierError(f"source_target_pairs: each pair needs two ids, got {p} in {text}")
    return tuple((a, b) for a, b in groups)


def _bool_attr(inst, name: str) -> bool | None:
    v = inst.attrs.get(name)
    if v is None:
        return None
    return v if isinstance(v, bool) else str(v).strip().lower() == "true"


def group_mode(inst) -> str:
    """XLA's GetCollectiveOpGroupMode for a collective instruction."""
    family = FAMILY.get(inst.opcode, inst.opcode)
    has_channel = inst.attrs.get("channel_id") is not None
    use_global = (_bool_attr(inst, "use_global_device_ids") or False) if family in _HAS_GLOBAL_IDS else None
    if not has_channel:
        if use_global:
            raise HloVerifierError(f"{inst.name} ({inst.opcode}): use_global_device_ids=true needs a channel_id")
        return CROSS_REPLICA
    if use_global is None:
        return CROSS_PARTITION
    return FLATTENED_ID if use_global else CROSS_REPLICA_AND_PARTITION


def default_assignment(num_replicas: int, num_partitions: int) -> np.ndarray:
    """XLA's default device assignment for one computation: device = replica * P + partition."""
    return np.arange(num_replicas * num_partitions).reshape(num_replicas, num_partitions)


def device_groups(inst, num_replicas: int, num_partitions: int,
                  assignment: np.ndarray | None = None) -> list[tuple[int, ...]]:
    """XLA's GetParticipatingDevicesGroups: every group of device ids that runs `inst` together, in rank order.
    Raises HloVerifierError naming the op and its groups when they do not fit R replicas x P partitions."""
    da = default_assignment(num_replicas, num_partitions) if assignment is None else np.asarray(assignment)
    mode = group_mode(inst)
    groups = parse_groups(inst.attrs.get("replica_groups"))
    R, P = num_replicas, num_partitions
    if not groups:
        if mode == FLATTENED_ID:
            _bad(inst, groups, "replica groups cannot be empty with use_global_device_ids=true")
        groups = (tuple(range(P if mode == CROSS_PARTITION else R)),)
    limit = {CROSS_REPLICA: R, CROSS_PARTITION: P, CROSS_REPLICA_AND_PARTITION: R, FLATTENED_ID: R * P}[mode]
    seen = [i for g in groups for i in g]
    if any(i < 0 or i >= limit for i in seen):
        what = {CROSS_PARTITION: f"{P} partitions", FLATTENED_ID: f"{R * P} devices"}.get(mode, f"{R} replicas")
        _bad(inst, groups, f"an id is out of range for {what} ({mode})")
    if len(set(seen)) != len(seen):
        _bad(inst, groups, "an id appears in more than one group")
    if sorted(seen) != list(range(limit)):
        _bad(inst, groups, f"the groups do not cover every id 0..{limit - 1} ({mode})")
    if inst.opcode not in ("all-reduce", "all-reduce-start") and len({len(g) for g in groups}) > 1:
        _bad(inst, groups, "the groups have different sizes")
    out: list[tuple[int, ...]] = []
    if mode == CROSS_REPLICA:
        out = [tuple(int(da[r, p]) for r in g) for g in groups for p in range(P)]
    elif mode == CROSS_PARTITION:
        out = [tuple(int(da[r, p]) for p in g) for g in groups for r in range(R)]
    elif mode == CROSS_REPLICA_AND_PARTITION:
        out = [tuple(int(da[r, p]) for r in g for p in range(P)) for g in groups]
    else:
        out = [tuple(int(da[i // P, i % P]) for i in g) for g in groups]
    return out


def group_of(inst, device: int, num_replicas: int, num_partitions: int,
             assignment: np.ndarray | None = None) -> tuple[int, ...]:
    """The group of devices `device` runs `inst` with (its rank is its index there)."""
    for g in device_groups(inst, num_replicas, num_partitions, assignment):
        if device in g:
            return g
    raise HloVerifierError(f"{inst.name} ({inst.opcode}): device {device} is in none of its groups")


def permute_pairs(inst, num_replicas: int, num_partitions: int,
                  assignment: np.ndarray | None = None) -> list[tuple[int, int]]:
    """collective-permute's (source device, target device) pairs: the ids are replicas within each partition
    (no channel_id) or partitions within each replica (channel_id)."""
    da = default_assignment(num_replicas, num_partitions) if assignment is None else np.asarray(assignment)
    pairs = parse_pairs(inst.attrs.get("source_target_pairs"))
    cross_partition = inst.attrs.get("channel_id") is not None
    limit = num_partitions if cross_partition else num_replicas
    sources, targets = [s for s, _ in pairs], [t for _, t in pairs]
    if any(not 0 <= i < limit for i in sources + targets):
        _bad(inst, pairs, f"an id is out of range for {limit} {'partitions' if cross_partition else 'replicas'}",
             "source_target_pairs")
    if len(set(sources)) != len(sources) or len(set(targets)) != len(targets):
        _bad(inst, pairs, "a source or a target appears twice", "source_target_pairs")
    out = []
    for s, t in pairs:
        if cross_partition:
            out += [(int(da[r, s]), int(da[r, t])) for r in range(num_replicas)]
        else:
            out += [(int(da[s, p]), int(da[t, p])) for p in range(num_partitions)]
    return out


def module_counts(module) -> tuple[int, int]:
    """(replica_count, num_partitions) from the module header (1 when absent)."""
    attrs = getattr(module, "attrs", {}) or {}
    return int(attrs.get("replica_count", 1) or 1), int(attrs.get("num_partitions", 1) or 1)


def _bad(inst, groups: Sequence, why: str, attr: str = "replica_groups") -> None:
    text = "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"
    raise HloVerifierError(f"{inst.name} ({inst.opcode}): {attr}={text}: {why}")


__all__ = ["CROSS_PARTITION", "CROSS_REPLICA", "CROSS_REPLICA_AND_PARTITION", "FAMILY", "FLATTENED_ID",
           "default_assignment", "device_groups", "group_mode", "group_of", "module_counts", "parse_groups",
           "parse_pairs", "permute_pairs"]
