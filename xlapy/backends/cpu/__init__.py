"""The CPU backend: HLO -> LLVM IR (llvmlite) -> host machine code, JIT-compiled in process."""
from .compiler import compile_module
from .executable import Executable

__all__ = ["compile_module", "Executable"]
