"""Every error xlapy raises on purpose derives from XlapyError."""
from __future__ import annotations


class XlapyError(Exception):
    """Base class of all xlapy errors."""


class HloParseError(XlapyError):
    """Malformed HLO text. Carries the 1-based line and column, the offending token, what was expected."""

    def __init__(self, message: str, line: int = 0, column: int = 0, token: str = "", expected: str = ""):
        self.line, self.column, self.token, self.expected, self.reason = line, column, token, expected, message
        where = f"{line}:{column}: " if line else ""
        got = f" (got {token!r})" if token else ""
        want = f"; expected {expected}" if expected else ""
        super().__init__(f"{where}{message}{got}{want}")


class HloVerifierError(XlapyError):
    """A module whose declared shapes or operands disagree with what the op requires."""


class ExecutionError(XlapyError):
    """A program that cannot be executed (unknown custom-call target, elided constant, ...)."""


class UnimplementedError(XlapyError):
    """A feature that xlapy does not support yet; the message names it."""


class ConcretizationError(XlapyError):
    """A traced (abstract) value was used where Python needs a concrete one: bool(), int(), np.asarray() ..."""


class UnknownBackendError(XlapyError):
    """A backend name that is not registered (xlapy.backends.registry); the message lists the registered ones."""


class UnsupportedOpcodeError(UnimplementedError):
    """A module holding an opcode its backend does not declare (xlapy.backends.placement); the message names the
    opcode, the instruction and the backend, and how soft placement would run it elsewhere."""
