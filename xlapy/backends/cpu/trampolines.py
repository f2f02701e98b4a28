"""What the Python trampolines that compiled code calls (host callbacks: host_callback_emitter.py; collectives:
collectives_emitter.py) share: registering one under its symbol once per process, and the error it caught.

An exception must not unwind through machine code, so a trampoline records it (`PendingError.record`: the first
one of the calling thread's current call) and returns; the executable, which calls such code through ctypes,
runs the owner's `raise_pending` after the call (`Executable.check_after_calls`)."""
from __future__ import annotations

import ctypes
import threading
from typing import Callable

from ...errors import ExecutionError

_REGISTERED: dict[str, object] = {}     # symbol -> its ctypes function (kept alive for the process)


def register(symbol: str, proto, fn: Callable) -> None:
    """Make `symbol` resolve to the Python function `fn` (of ctypes type `proto`) in JIT-compiled code, once."""
    if symbol not in _REGISTERED:
        import llvmlite.binding as llvm
        from .llvm_jit import init_llvm
        init_llvm()
        function = proto(fn)
        llvm.add_symbol(symbol, ctypes.cast(function, ctypes.c_void_p).value)
        _REGISTERED[symbol] = function


class PendingError(threading.local):
    """The first exception a trampoline caught in this thread's current call, raised after the call as an
    ExecutionError "<what> failed: ..." (instances of `passthrough` as they are)."""

    def __init__(self, what: str, passthrough: tuple[type, ...] = ()):
        self.what, self.passthrough = what, passthrough
        self.error: BaseException | None = None

    def record(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error

    def raise_pending(self) -> None:
        error, self.error = self.error, None
        if error is None:
            return
        if isinstance(error, self.passthrough):
            raise error
        raise ExecutionError(f"{self.what} failed: {type(error).__name__}: {error}") from error
