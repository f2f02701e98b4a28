"""What the PyTorch backend could not translate: one record per FX graph that runs eagerly instead.

`xlapy.torch.report()` lists the records (op name, why, which graph); each is also announced once with a
`TorchFallbackWarning`. Nothing here imports torch.
"""
from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass


class TorchFallbackWarning(UserWarning):
    """A graph (or part of one) that xlapy could not translate runs in eager PyTorch instead."""


@dataclass(frozen=True)
class Fallback:
    op: str             # the ATen op (e.g. "aten.cumprod.default"), or "<graph>" when no single op is to blame
    reason: str         # why it was not translated
    graph: str          # which graph: "forward", "backward", "inference" or "dynamo"


_RECORDS: list[Fallback] = []
_LOCK = threading.Lock()
_COUNTS = {"compiled": 0, "fallback": 0}


def record_fallback(op: str, reason: str, graph: str, outcome: str = "that graph runs in eager PyTorch") -> None:
    rec = Fallback(op, reason, graph)
    with _LOCK:
        _RECORDS.append(rec)
        _COUNTS["fallback"] += 1
    warnings.warn(f"xlapy torch backend: {op} in the {graph} graph is not translated ({reason}); {outcome}",
                  TorchFallbackWarning, stacklevel=3)


def record_compiled() -> None:
    with _LOCK:
        _COUNTS["compiled"] += 1


def report() -> list[Fallback]:
    """Every fallback so far, oldest first."""
    with _LOCK:
        return list(_RECORDS)


def counts() -> dict[str, int]:
    """How many FX graphs were compiled by xlapy and how many fell back to eager PyTorch."""
    with _LOCK:
        return dict(_COUNTS)


def clear_report() -> None:
    with _LOCK:
        _RECORDS.clear()
        _COUNTS.update(compiled=0, fallback=0)
