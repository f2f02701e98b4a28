"""The devices xlapy runs on, as JAX counts them.

| name | value |
|---|---|
| local devices | `--xla_force_host_platform_device_count=N` in XLA_FLAGS (default 1) host devices of this process |
| process_index / process_count | 0 / 1, or MPI's rank / size once `xlapy.distributed.initialize()` ran |
| global devices | every process's local devices; device id = first id of its process + local index |

A device is one instance of a replicated module (backends/spmd.py runs one thread per local device). The
frontend's `xlapy.devices()` & co. read these functions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..debug import options


@dataclass(frozen=True)
class Device:
    """One device (jax.Device's attributes): a global id, the platform, the process that owns it."""
    id: int
    platform: str = "cpu"
    process_index: int = 0

    @property
    def device_kind(self) -> str:
        return self.platform

    @property
    def host_id(self) -> int:
        return self.process_index

    @property
    def client(self) -> Any:
        return None

    def __repr__(self) -> str:
        name = "Cpu" if self.platform == "cpu" else self.platform.capitalize()
        return f"{name}Device(id={self.id})"


@dataclass
class _Processes:
    index: int = 0
    count: int = 1
    local_counts: tuple[int, ...] | None = None    # per process, once distributed.initialize() ran


_PROCESSES = _Processes()


def set_processes(index: int, count: int, local_counts: tuple[int, ...] | None) -> None:
    """Called by xlapy.distributed.initialize (MPI's rank and size, every process's local device count)."""
    _PROCESSES.index, _PROCESSES.count, _PROCESSES.local_counts = index, count, local_counts


def local_device_count() -> int:
    if _PROCESSES.local_counts is not None:
        return _PROCESSES.local_counts[_PROCESSES.index]
    return options().force_host_platform_device_count


def process_index() -> int:
    return _PROCESSES.index


def process_count() -> int:
    return _PROCESSES.count


def _counts() -> tuple[int, ...]:
    return _PROCESSES.local_counts if _PROCESSES.local_counts is not None else (local_device_count(),)


def first_local_id(process: int | None = None) -> int:
    counts = _counts()
    return sum(counts[:_PROCESSES.index if process is None else process])


def devices(platform: str = "cpu") -> list[Device]:
    out = []
    for p, n in enumerate(_counts()):
        start = first_local_id(p)
        out += [Device(start + i, platform, p) for i in range(n)]
    return out


def local_devices(platform: str = "cpu", process: int | None = None) -> list[Device]:
    p = _PROCESSES.index if process is None else process
    return [d for d in devices(platform) if d.process_index == p]


def device_count() -> int:
    return sum(_counts())


def owner(device_id: int) -> int:
    """The process index that owns global device `device_id`."""
    for p in range(len(_counts())):
        if device_id < first_local_id(p) + _counts()[p]:
            return p
    raise ValueError(f"device {device_id} does not exist ({device_count()} devices)")


__all__ = ["Device", "device_count", "devices", "first_local_id", "local_device_count", "local_devices", "owner",
           "process_count", "process_index", "set_processes"]
