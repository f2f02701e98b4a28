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
from .frontend.api_transforms import (Device, ShapeDtypeStruct, block_until_ready, closure_convert, custom_gradient,
                                      device_count,
                                      devices, effects_barrier, ensure_compile_time_eval, eval_shape, float0,
                                      hessian, host_count, host_id, host_ids, jacfwd, jacobian, jacrev,
                                      linear_transpose, linearize, local_device_count, local_devices, make_jaxpr,
                                      named_call, named_scope, print_environment_info, process_count,
                                      process_index, process_indices, typeof, fwd_and_bwd, transfer_guard,
                                      checking_leaks, live_arrays, copy_to_host_async, make_array_from_callback,
                                      make_array_from_single_device_arrays, make_array_from_process_local_data)
from .frontend.callbacks import pure_callback
from .frontend.custom_derivatives import checkpoint, checkpoint_policies, custom_jvp, custom_vjp, remat
from .frontend.jit import disable_jit
from .frontend.parallel.pmap import pmap
from .frontend.parallel.mesh import NamedSharding, P, make_mesh, set_mesh
from .frontend.parallel.sharded_jit import reshard
from .frontend.parallel.shard_map import shard_map, smap
from .frontend.parallel.sharded_array import Shard
from .frontend.parallel.sharded_array import device_put    # with shardings (frontend/__init__.py's, extended)
from . import sharding        # jax.sharding: Mesh, PartitionSpec, NamedSharding (frontend/parallel/mesh.py)
from .experimental import shard_map as _experimental_shard_map  # noqa: F401  (xlapy.experimental.shard_map)
from .frontend.autojit import autojit     # auto-clustering; lazy / sync / set_lazy: the lazy eager mode
from .frontend.lazy import lazy, lazy_stats, set_lazy, sync
from . import numpy     # first: it attaches Array's and Tracer's operators and methods (numpy/array_methods.py)
from . import dlpack, lax, nn, random
from . import ad_checkpoint, tree
from . import ref            # jax.ref: mutable array references (Ref, new_ref, freeze, ...) and ds
from .ref import Ref, ds, empty_ref, free_ref, freeze, new_ref
from .user_context import make_user_context
from . import profiler      # JAX's jax.profiler; XLA_FLAGS=--xla_hlo_profile starts a process-wide trace here
from . import distributed   # jax.distributed: initialize() under mpirun (MPI imported only there)

__version__ = "0.1.0"
__all__ = ["XlapyError", "HloParseError", "HloVerifierError", "ExecutionError", "UnimplementedError",
           "ConcretizationError", "hlo", "compile", "default_backend", "Array", "config", "device_get", "device_put",
           "explain_recompile", "jit", "clear_caches", "tree_util", "grad", "value_and_grad", "vjp", "jvp", "stop_gradient", "vmap",
           "dlpack", "lax", "nn", "numpy", "random", "profiler", "distributed",
           # the rest of JAX's transformation and utility API
           "jacfwd", "jacrev", "jacobian", "hessian", "linearize", "linear_transpose", "custom_jvp", "custom_vjp",
           "checkpoint", "remat", "checkpoint_policies", "ad_checkpoint", "eval_shape", "ShapeDtypeStruct",
           "make_jaxpr", "disable_jit", "ensure_compile_time_eval", "block_until_ready", "devices", "device_count",
           "local_devices", "local_device_count", "process_index", "process_count", "Device", "pmap", "shard_map", "NamedSharding", "P",
           "make_mesh", "set_mesh", "reshard", "smap", "Shard", "pure_callback",
           "tree", "host_count", "host_id", "host_ids", "process_indices", "effects_barrier", "typeof", "float0",
           "named_call", "named_scope", "closure_convert", "custom_gradient", "print_environment_info",
           "fwd_and_bwd", "transfer_guard", "checking_leaks", "live_arrays", "copy_to_host_async",
           "make_array_from_callback", "make_array_from_single_device_arrays", "make_array_from_process_local_data",
           "autojit", "lazy", "lazy_stats", "set_lazy", "sync",
           "ref", "Ref", "ds", "empty_ref", "free_ref", "freeze", "new_ref", "make_user_context"]


def __getattr__(name: str):
    # xlapy.aot loads the LLVM backend: imported on first use, not with xlapy
    if name == "aot":
        import importlib
        return importlib.import_module(".aot", __name__)
    raise AttributeError(f"module 'xlapy' has no attribute {name!r}")
