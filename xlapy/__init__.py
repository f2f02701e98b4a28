"""xlapy: XLA, the optimizing compiler for linear algebra and machine learning, rebuilt in Python."""
from .errors import ExecutionError, HloParseError, HloVerifierError, UnimplementedError, XlapyError
from . import hlo
from .backends import compile

__version__ = "0.1.0"
__all__ = ["XlapyError", "HloParseError", "HloVerifierError", "ExecutionError", "UnimplementedError",
           "hlo", "compile"]

# The tracing front end (JAX's API): jit, Array, lax, pytrees.
from .errors import ConcretizationError
from .frontend import Array, config, device_get, device_put, explain_recompile, jit
from .frontend import pytree as tree_util
from . import lax

__all__ += ["ConcretizationError", "Array", "config", "device_get", "device_put", "explain_recompile", "jit",
            "tree_util", "lax"]

# Differentiation (JAX's API over the HLO -> HLO autodiff).
from .frontend.transforms import grad, jvp, stop_gradient, value_and_grad, vjp

__all__ += ["grad", "value_and_grad", "vjp", "jvp", "stop_gradient"]
