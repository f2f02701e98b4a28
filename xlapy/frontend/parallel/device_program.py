"""One program per device: what pmap and shard_map compile and run at the top level (outside any trace).

`compile_program` traces a function on the per-device abstract values with the mesh's device axes bound
(axis_env.py), so its collectives become HLO collectives among the devices; the module says
num_partitions = the mesh size and backends/spmd.py compiles it once and runs one instance per device, on the
thread pool. `ProgramCache` keeps one compiled program per signature (the pytree structure, the per-device
avals, static values, the mesh and the backend).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import XlapyError
from .. import dtypes
from ..array import Array, host_value
from ..backend import registry_default
from ..eager import build_module
from ..pytree import PyTreeDef
from ..tracer import ShapedArray, trace_function
from .axis_env import AxisFrame, axis_frames


@dataclass
class DeviceProgram:
    executable: Any             # backends.spmd.SpmdExecutable
    out_tree: PyTreeDef
    out_avals: list[ShapedArray]
    module_text: Callable[[], str]

    def run(self, per_device: Sequence[Sequence[Any]]) -> list[list[np.ndarray]]:
        """per_device[d]: device d's argument leaves -> per device, its output leaves (numpy arrays)."""
        args = [[_contiguous(host_value(v)) for v in leaves] for leaves in per_device]
        outs = self.executable(args)
        return [list(o) if isinstance(o, (tuple, list)) else [o] for o in outs]


def _contiguous(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy(order="C")      # (np.ascontiguousarray makes 0-d 1-d)


def backend_name(backend: str | None) -> str:
    name = backend or dtypes.config.default_backend or registry_default()
    if name not in ("cpu", "interpreter"):
        raise XlapyError(f"many devices run on the 'cpu' or 'interpreter' backend, not {name!r}")
    return name


def check_devices(n: int, what: str) -> None:
    """A program for `n` devices needs that many: say how to get them otherwise."""
    from ...backends import devices
    have = devices.device_count()
    if n > have:
        raise XlapyError(f"{what} needs {n} devices, but only {have} are available; start the process with "
                         f"XLA_FLAGS=--xla_force_host_platform_device_count={n} (or more) for {n} host devices")


def compile_program(fun: Callable, in_avals: Sequence[ShapedArray], in_tree: PyTreeDef, frames: Sequence[AxisFrame],
                    name: str, backend: str, device_assignment: Any = None) -> DeviceProgram:
    from ...backends import spmd
    n = int(np.prod([f.size for f in frames], dtype=np.int64))
    with axis_frames(frames):
        trace, outs, out_tree = trace_function(fun, in_avals, in_tree, "main")
    comp = trace.finish(outs, tuple_root=True)
    module = build_module(name, comp)
    module.attrs["num_partitions"] = str(n)
    text = module.to_text()
    exe = spmd.compile(module, backend=backend, num_partitions=n, device_assignment=device_assignment)
    return DeviceProgram(exe, out_tree, [o.aval for o in outs], lambda: text)


class ProgramCache:
    """Compiled device programs by signature (one compile per key, whichever thread asks first)."""

    def __init__(self):
        self._programs: dict[Any, DeviceProgram] = {}
        self._lock = threading.Lock()

    def get(self, key: Any, make: Callable[[], DeviceProgram]) -> DeviceProgram:
        with self._lock:
            program = self._programs.get(key)
            if program is None:
                program = self._programs[key] = make()
            return program

    def __len__(self) -> int:
        return len(self._programs)


def to_arrays(values: Sequence[np.ndarray], avals: Sequence[ShapedArray]) -> list[Array]:
    return [Array(v, weak_type=a.weak_type) for v, a in zip(values, avals)]
