"""Ahead-of-time compilation, the public API (XLA's tfcompile): a Python function or an HLO module becomes an
object file with one C function and a C header to call it from C or C++ without Python.

    import xlapy.aot
    xlapy.aot.compile(predict, np.zeros((3, 2), np.float32), ((4, 3), np.float32),
                      name="predict", out_dir="build")
    # build/predict.o, build/predict.h, build/predict.hlo

The command line equivalent for HLO text is `xlapy aot MODULE.hlo --name NAME --out-dir DIR`.
The calling convention and what to link are described in the generated header (backends/cpu/aot.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from .backends.cpu.aot import AotArtifacts, compile_aot
from .errors import XlapyError
from .hlo import Module

__all__ = ["compile", "compile_module", "AotArtifacts"]


def _is_shape_dtype_pair(x: Any) -> bool:
    if not (isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], (tuple, list))):
        return False
    if not all(isinstance(d, (int, np.integer)) for d in x[0]):
        return False
    try:
        np.dtype(x[1])
    except TypeError:
        return False
    return True


def _example(x: Any) -> Any:
    """An example argument as something the tracer takes: (shape, dtype) pairs and objects with .shape and
    .dtype (jax.ShapeDtypeStruct) become zero arrays; containers are walked."""
    if _is_shape_dtype_pair(x):
        return np.zeros(tuple(int(d) for d in x[0]), np.dtype(x[1]))
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_example(v) for v in x)
    if isinstance(x, dict):
        return {k: _example(v) for k, v in x.items()}
    if not isinstance(x, np.ndarray) and hasattr(x, "shape") and hasattr(x, "dtype") and not hasattr(x, "__array__"):
        return np.zeros(tuple(x.shape), np.dtype(x.dtype))
    return x


def _module_of(fn_or_module: Any, example_args: tuple, static_argnums) -> Module:
    if isinstance(fn_or_module, Module):
        if example_args:
            raise XlapyError("xlapy.aot.compile: example arguments are only for Python functions; an HLO module "
                             "already has its parameter shapes")
        return fn_or_module
    if isinstance(fn_or_module, str):
        from .hlo import parse
        return _module_of(parse(fn_or_module), example_args, static_argnums)
    if hasattr(fn_or_module, "module") and isinstance(fn_or_module.module, Module):     # a Lowered
        return _module_of(fn_or_module.module, example_args, static_argnums)
    if not callable(fn_or_module):
        raise XlapyError(f"xlapy.aot.compile: expected a function, an HLO Module or HLO text, got "
                         f"{type(fn_or_module).__name__}")
    from .frontend import jit
    jitted = fn_or_module if hasattr(fn_or_module, "lower") else jit(fn_or_module, static_argnums=static_argnums)
    return jitted.lower(*[_example(a) for a in example_args]).module


def compile_module(fn_or_module: Callable | Module | str, *example_args: Any, name: str,
                   target_triple: str | None = None, cpu: str | None = None, features: str | None = None,
                   blas: bool = False, static_argnums=()) -> AotArtifacts:
    """Like `compile`, but keeps the object code and header in memory (nothing is written)."""
    module = _module_of(fn_or_module, example_args, static_argnums)
    return compile_aot(module, name, target_triple=target_triple, cpu=cpu, features=features, blas=blas)


def compile(fn_or_module: Callable | Module | str, *example_args: Any, name: str, out_dir: str | Path,
            target_triple: str | None = None, cpu: str | None = None, features: str | None = None,
            blas: bool = False, shared: bool = False, static_argnums=()) -> AotArtifacts:
    """Compile a function (traced with xlapy.jit on the example arguments: arrays, or (shape, dtype) pairs),
    an HLO Module or HLO text ahead of time. Writes NAME.o (position-independent object code), NAME.h (the C
    interface), NAME.hlo (the optimized module) and, with shared=True, NAME.so into out_dir; returns the
    artifacts, whose `.files` maps "o", "h", "hlo" (and "so") to the paths written.

    target_triple defaults to this machine's; cpu defaults to a generic CPU of that architecture ("host" tunes
    for this one); features is LLVM's list ("+avx2,+fma"). blas=False (the default) compiles dots to loops,
    so the object needs only libc and libm; blas=True calls the Fortran BLAS (sgemm_, ...)."""
    art = compile_module(fn_or_module, *example_args, name=name, target_triple=target_triple, cpu=cpu,
                         features=features, blas=blas, static_argnums=static_argnums)
    art.write(out_dir, shared=shared)
    return art
