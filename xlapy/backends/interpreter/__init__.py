"""The reference interpreter backend: numpy evaluation of every opcode, the living definition of HLO."""
from .evaluator import TOKEN, Evaluator, Executable, compile_module

__all__ = ["TOKEN", "Evaluator", "Executable", "compile_module"]
