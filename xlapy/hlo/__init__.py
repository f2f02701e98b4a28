"""The HLO IR, its text format and its verifier. Imports nothing above it."""
from .shape import PRIMITIVE_TYPES, Layout, PrimitiveType, Shape, primitive_type, type_name_of_dtype
from .opcodes import OPCODES, OpInfo, opinfo
from .ir import ELIDED, Computation, Instruction, Module, elided_constant_error


def parse(text: str) -> Module:
    """Parse HLO text (as JAX, TensorFlow or xlapy print it) into a Module; raises HloParseError."""
    from .parser import parse as _parse
    return _parse(text)


def verify(module: Module) -> Module:
    """Check every instruction's shape against shape inference; raises HloVerifierError."""
    from .verifier import verify as _verify
    _verify(module)
    return module


__all__ = ["PRIMITIVE_TYPES", "Layout", "PrimitiveType", "Shape", "primitive_type", "type_name_of_dtype",
           "OPCODES", "OpInfo", "opinfo", "ELIDED", "Computation", "Instruction", "Module", "elided_constant_error",
           "parse", "verify"]
