"""xlapy: XLA, the optimizing compiler for linear algebra and machine learning, rebuilt in Python.

    import xlapy, xlapy.numpy as xnp
    f = xlapy.jit(lambda x, y, z: xnp.sum(x + y * z))      # JAX's API: jit, grad, vjp, jvp, lax, nn, random
    xlapy.compile(xlapy.hlo.parse(text), backend="cpu")   # XLA's: HLO in, an executable out
"""
from .errors import (ConcretizationError, ExecutionError, HloParseError, HloVerifierError, UnimplementedError,
                     XlapyError)
from . import hlo
from .backends import compile

# The tracing front end (JAX's API): jit, Array, pytrees, and differentiation over the HLO -> HLO autodiff.
from .frontend import (Array, clear_caches, config, default_backend, device_get, device_put, explain_recompile,
                       jit)
from .frontend import pytree as tree_util
from .frontend.transforms import grad, jvp, stop_gradient, value_and_grad, vjp, vmap
from . import numpy     # first: it attaches Array's and Tracer's operators and methods (numpy/array_methods.py)
from . import dlpack, lax, nn, random
from . import profiler      # JAX's jax.profiler; XLA_FLAGS=--xla_hlo_profile starts a process-wide trace here

__version__ = "0.1.0"
__all__ = ["XlapyError", "HloParseError", "HloVerifierError", "ExecutionError", "UnimplementedError",
           "ConcretizationError", "hlo", "compile", "default_backend", "Array", "config", "device_get", "device_put",
           "explain_recompile", "jit", "clear_caches", "tree_util", "grad", "value_and_grad", "vjp", "jvp", "stop_gradient", "vmap",
           "dlpack", "lax", "nn", "numpy", "random", "profiler"]


def __getattr__(name: str):
    # xlapy.aot loads the LLVM backend: imported on first use, not with xlapy
    if name == "aot":
        import importlib
        return importlib.import_module(".aot", __name__)
    raise AttributeError(f"module 'xlapy' has no attribute {name!r}")
