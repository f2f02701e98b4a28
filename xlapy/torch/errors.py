"""The PyTorch front end's error: an FX graph (or one node of it) that has no xlapy translation."""
from __future__ import annotations

from ..errors import XlapyError


class TranslationError(XlapyError):
    """`op` (an ATen op name, or "<graph>") cannot be translated to xlapy: `reason` says why."""

    def __init__(self, op: str, reason: str):
        super().__init__(f"{op}: {reason}")
        self.op, self.reason = op, reason
