"""xlapy: XLA, the optimizing compiler for linear algebra and machine learning, rebuilt in Python."""
from .errors import ExecutionError, HloParseError, HloVerifierError, UnimplementedError, XlapyError
from . import hlo
from .backends import compile

__version__ = "0.1.0"
__all__ = ["XlapyError", "HloParseError", "HloVerifierError", "ExecutionError", "UnimplementedError",
           "hlo", "compile"]
