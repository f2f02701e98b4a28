"""The rest of JAX's transformation API, written over grad/vjp/jvp/vmap (transforms.py) and jit:

| name | how |
|---|---|
| jacfwd(f, argnums, has_aux, holomorphic) | vmap of jvp over the standard basis of the inputs (out_axes=-1), as JAX |
| jacrev / jacobian | vmap of the vjp function over the standard basis of the outputs |
| hessian(f) | jacfwd(jacrev(f)) |
| linearize(f, *primals) | (f(*primals), f_jvp): f_jvp(*tangents) is jvp at the primals (recomputed per call) |
| linear_transpose(f, *primals) | the VJP of the linear f (at zero): ct -> tuple of input cotangents |
| eval_shape(f, *args) | f traced on abstract values: ShapeDtypeStruct leaves |
| make_jaxpr(f)(*args) | the traced HLO (xlapy's IR is HLO, not jaxprs): `str()` prints the module |
| ensure_compile_time_eval() | inside a trace, ops on concrete operands run eagerly (tracer.py) |
| block_until_ready, devices, device_count, local_devices, local_device_count, process_index, process_count | one host device |

A Jacobian has, per output leaf, the input structure (one array of shape out.shape + in.shape per input leaf);
`argnums` a tuple gives a tuple of them, as JAX.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import XlapyError
from .lax_shapes import reshape, slice as lax_slice
from .pytree import tree_flatten, tree_map, tree_structure, tree_unflatten
from .tracer import ShapedArray, Trace, aval, current_trace, set_compile_time_eval
from .transforms import _normalize_argnums, jvp, vjp, vmap


# -- Jacobians ------------------------------------------------------------------------------------------
def _dyn_partial(fun: Callable, args: tuple, kwargs: dict, nums: tuple[int, ...]):
    def f_partial(*dyn):
        full = list(args)
        for i, v in zip(nums, dyn):
            full[i] = v
        return fun(*full, **kwargs)
    return f_partial, tuple(args[i] for i in nums)


def _check_inputs(what: str, leaves: list, holomorphic: bool) -> None:
    for x in leaves:
        dt = aval(x).dtype
        if holomorphic:
            if not np.issubdtype(dt, np.complexfloating):
                raise TypeError(f"{what} with holomorphic=True requires inputs with complex dtype, but got "
                                f"{dt.name}.")
            raise XlapyError(f"{what}: holomorphic differentiation is not supported (complex differentiation "
                             f"is not supported at the API boundary)")
        if not np.issubdtype(dt, np.floating):
            raise TypeError(f"{what} requires real-valued inputs (input dtype that is a sub-dtype of np.floating), "
                            f"but got {dt.name}. For holomorphic differentiation, pass holomorphic=True. For "
                            f"differentiation of non-holomorphic functions involving complex inputs or integer "
                            f"inputs, use jax.jvp directly.")


def _basis(avals: Sequence[ShapedArray]) -> list[np.ndarray]:
    """The standard basis of the flattened leaves: leaf k as an array (n,) + shape_k."""
    sizes = [a.size for a in avals]
    n = sum(sizes)
    out, start = [], 0
    for a, size in zip(avals, sizes):
        eye = np.zeros((n, size), a.dtype)
        eye[start + np.arange(size), np.arange(size)] = 1
        out.append(eye.reshape((n,) + tuple(a.shape)))
        start += size
    return out


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """The Jacobian of `fun` by forward mode (jax.jacfwd): one jvp per input element, batched with vmap."""
    def jacfun(*args, **kwargs):
        nums = _normalize_argnums("jacfwd", argnums, len(args))
        f_partial, dyn = _dyn_partial(fun, args, kwargs, nums)
        leaves, in_tree = tree_flatten(dyn)
        _check_inputs("jacfwd", leaves, holomorphic)
        avals = [aval(x) for x in leaves]

        def pushfwd(*tangent_leaves):
            tangents = tree_unflatten(in_tree, tangent_leaves)
            return jvp(f_partial, dyn, tangents, has_aux=has_aux)
        out_axes = (None, -1, None) if has_aux else (None, -1)
        res = vmap(pushfwd, out_axes=out_axes)(*_basis(avals))
        y, jac = res[0], res[1]
        sizes = [a.size for a in avals]

        def unravel(y_leaf, jac_leaf):
            ys = tuple(aval(y_leaf).shape)
            pieces, start = [], 0
            nd = len(ys) + 1
            for a, size in zip(avals, sizes):
                part = lax_slice(jac_leaf, [0] * (nd - 1) + [start], list(ys) + [start + size])
                pieces.append(reshape(part, ys + tuple(a.shape)))
                start += size
            tree = tree_unflatten(in_tree, pieces)
            return tree[0] if isinstance(argnums, int) else tree
        jac_tree = tree_map(unravel, y, jac)
        return (jac_tree, res[2]) if has_aux else jac_tree
    jacfun.__name__ = f"jacfwd_{getattr(fun, '__name__', 'fun')}"
    jacfun.__wrapped__ = fun
    return jacfun


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The Jacobian of `fun` by reverse mode (jax.jacrev): the vjp function on each output basis vector, with
    vmap."""
    def jacfun(*args, **kwargs):
        nums = _normalize_argnums("jacrev", argnums, len(args))
        f_partial, dyn = _dyn_partial(fun, args, kwargs, nums)
        leaves, in_tree = tree_flatten(dyn)
        if not allow_int:
            _check_inputs("jacrev", leaves, holomorphic)
        if has_aux:
            y, pullback, aux = vjp(f_partial, *dyn, has_aux=True)
        else:
            y, pullback = vjp(f_partial, *dyn)
        y_leaves, y_tree = tree_flatten(y)
        y_avals = [aval(v) for v in y_leaves]
        for a in y_avals:
            if not np.issubdtype(a.dtype, np.floating):
                raise TypeError(f"jacrev requires real-valued outputs (output dtype that is a sub-dtype of "
                                f"np.floating), but got {a.dtype.name}. For holomorphic differentiation, pass "
                                f"holomorphic=True. For differentiation of non-holomorphic functions involving "
                                f"complex outputs, use jax.vjp directly.")
        jac = vmap(lambda *cts: pullback(tree_unflatten(y_tree, cts)))(*_basis(y_avals))
        jac_leaves = tree_flatten(jac)[0]       # per input leaf: (m,) + in.shape
        in_avals = [aval(x) for x in leaves]
        per_out = []
        start = 0
        for ya in y_avals:
            pieces = []
            for j, xa in zip(jac_leaves, in_avals):
                part = lax_slice(j, [start] + [0] * xa.ndim, [start + ya.size] + list(xa.shape))
                pieces.append(reshape(part, tuple(ya.shape) + tuple(xa.shape)))
            tree = tree_unflatten(in_tree, pieces)
            per_out.append(tree[0] if isinstance(argnums, int) else tree)
            start += ya.size
        jac_tree = tree_unflatten(y_tree, per_out)
        return (jac_tree, aux) if has_aux else jac_tree
    jacfun.__name__ = f"jacrev_{getattr(fun, '__name__', 'fun')}"
    jacfun.__wrapped__ = fun
    return jacfun


jacobian = jacrev


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
    """jacfwd(jacrev(fun)): forward over reverse, as JAX."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums, has_aux=has_aux,
                  holomorphic=holomorphic)


# -- linearize and linear_transpose ---------------------------------------------------------------------
def linearize(fun: Callable, *primals: Any, has_aux: bool = False):
    """(fun(*primals), f_jvp[, aux]): f_jvp(*tangents) is the JVP of fun at `primals` (jax.linearize). xlapy
    evaluates it by forward mode at each call (no partial evaluation)."""
    primals = tuple(primals)
    p_tree = tree_structure(primals)
    out = jvp(fun, primals, tree_map(lambda x: np.zeros(aval(x).shape, aval(x).dtype), primals), has_aux=has_aux)
    p_avals = [aval(x) for x in tree_flatten(primals)[0]]

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tuple(tangents))
        if t_tree != p_tree:
            raise ValueError(f"linearized function called on tangent values inconsistent with the original "
                             f"primal values: got tangent structure {t_tree} for primal structure {p_tree}")
        for t, a in zip(t_leaves, p_avals):
            ta = aval(t)
            if ta.shape != a.shape or ta.dtype != a.dtype:
                raise ValueError(f"linearized function called on tangent values inconsistent with the original "
                                 f"primal values: got tangent aval {ta} for primal aval {a}")
        return jvp(fun, primals, tuple(tangents), has_aux=has_aux)[1]
    f_jvp.__name__ = f"linearized_{getattr(fun, '__name__', 'fun')}"
    if has_aux:
        return out[0], f_jvp, out[2]
    return out[0], f_jvp


def linear_transpose(fun: Callable, *primals: Any, reduce_axes: Any = ()) -> Callable:
    """The transpose of the linear function `fun` (jax.linear_transpose): `primals` give the input shapes and
    dtypes (arrays or ShapeDtypeStructs). The result maps an output cotangent to a tuple of input cotangents."""
    del reduce_axes
    leaves, in_tree = tree_flatten(primals)
    avals = [_aval_of(x) for x in leaves]
    for a in avals:
        if not np.issubdtype(a.dtype, np.inexact):
            raise TypeError(f"linear_transpose only supports [float or complex] -> [float or complex], and integer "
                            f"-> integer functions, but got {a.dtype.name} inputs")
    zeros = tree_unflatten(in_tree, [np.zeros(a.shape, a.dtype) for a in avals])
    out_shape = eval_shape(fun, *primals)
    out_tree = tree_structure(out_shape)

    def transposed(out_cotangent):
        ct_leaves, ct_tree = tree_flatten(out_cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"cotangent tree does not match function output, expected {out_tree} but got {ct_tree}")
        for ct, o in zip(ct_leaves, tree_flatten(out_shape)[0]):
            c = aval(ct)
            if c.shape != tuple(o.shape) or c.dtype != np.dtype(o.dtype):
                raise TypeError(f"cotangent type does not match function output, expected {o.dtype.name}"
                                f"{list(o.shape)} but got {c.dtype.name}{list(c.shape)}")
        _, pullback = vjp(fun, *zeros)
        return pullback(out_cotangent)
    return transposed


# -- shapes and inspection ------------------------------------------------------------------------------
class ShapeDtypeStruct:
    """An abstract array: shape, dtype, weak_type (jax.ShapeDtypeStruct). jit, eval_shape, make_jaxpr and
    pure_callback accept it wherever they accept an array's abstract value."""
    __slots__ = ("shape", "dtype", "sharding", "weak_type")

    def __init__(self, shape: Sequence[int], dtype: Any, sharding: Any = None, weak_type: bool = False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.sharding = sharding
        self.weak_type = weak_type

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @property
    def aval(self) -> ShapedArray:
        from . import dtypes
        return ShapedArray(self.shape, dtypes.canonicalize(self.dtype), self.weak_type)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type)
                == (other.shape, other.dtype, other.weak_type))

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def _aval_of(x: Any) -> ShapedArray:
    if isinstance(x, ShapeDtypeStruct):
        return x.aval
    return aval(x)


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes of fun(*args, **kwargs) as a pytree of ShapeDtypeStructs, without running it (the
    arguments may be arrays or ShapeDtypeStructs)."""
    leaves, tree = tree_flatten((args, kwargs))
    avals = [_aval_of(x) for x in leaves]
    trace = Trace(f"eval_shape_{getattr(fun, '__name__', 'fun')}", current_trace(), abstract=True)
    with trace:
        params = [trace.new_param(a) for a in avals]
        a, k = tree_unflatten(tree, params)
        out = fun(*a, **k)
        out_leaves, out_tree = tree_flatten(out)
        structs = []
        for o in out_leaves:
            oa = aval(o)
            structs.append(ShapeDtypeStruct(oa.shape, oa.dtype, weak_type=oa.weak_type))
    return tree_unflatten(out_tree, structs)


@dataclass
class HloJaxpr:
    """What make_jaxpr returns: xlapy's IR is HLO, so this holds the traced HLO module (before optimization).
    `str()` / `pretty_print()` print it; `in_avals`, `out_avals` as a ClosedJaxpr's; `module` is the Module."""
    module: Any
    in_avals: list
    out_avals: list

    @property
    def jaxpr(self) -> "HloJaxpr":
        return self

    @property
    def consts(self) -> list:
        return []

    @property
    def eqns(self) -> list:
        """The entry computation's instructions (a jaxpr's equations, roughly)."""
        return [i for i in self.module.entry.instructions if i.opcode != "parameter"]

    def pretty_print(self, **_: Any) -> str:
        return self.module.to_text()

    def __str__(self) -> str:
        return self.module.to_text()

    __repr__ = __str__


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (), axis_env: Any = None,
               return_shape: bool = False) -> Callable:
    """A function returning the traced program of fun on the given arguments (jax.make_jaxpr). xlapy's IR is
    HLO, not jaxprs: the result's str() is the HLO module jit would compile (before optimization)."""
    from .jit import jit
    del axis_env

    def make(*args, **kwargs):
        lowered = jit(fun, static_argnums=static_argnums).lower(*args, **kwargs)
        entry = lowered.module.entry
        in_avals = [ShapedArray(p.shape.dims, p.shape.dtype) for p in entry.parameters]
        root = entry.root.shape
        outs = root.tuple_shapes if root.is_tuple else (root,)
        out_avals = [ShapedArray(s.dims, s.dtype, w) for s, w in zip(outs, lowered.out_weak)]
        closed = HloJaxpr(lowered.module, in_avals, out_avals)
        if return_shape:
            shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in out_avals]
            return closed, tree_unflatten(lowered.out_tree, shapes)
        return closed
    make.__name__ = f"make_jaxpr({getattr(fun, '__name__', 'fun')})"
    return make


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Inside a trace (jit, grad, ...), ops whose operands are all concrete run eagerly and give concrete Arrays
    (so Python control flow may depend on them), as jax.ensure_compile_time_eval."""
    previous = set_compile_time_eval(True)
    try:
        yield
    finally:
        set_compile_time_eval(previous)


# -- devices --------------------------------------------------------------------------------------------
# Device and the counts live in backends/devices.py (XLA_FLAGS' host device count, MPI's processes)
from ..backends.devices import Device  # noqa: E402


def _platform(backend: str | None) -> str:
    from .backend import default_backend
    if backend is None:
        return default_backend()
    from ..backends import registry
    registry.get(backend)           # unknown names raise UnknownBackendError
    return backend


def devices(backend: str | None = None) -> list[Device]:
    from ..backends import devices as _devices
    return _devices.devices(_platform(backend))


def local_devices(process_index: int | None = None, backend: str | None = None, host_id: int | None = None) -> list:
    from ..backends import devices as _devices
    process = process_index if process_index is not None else host_id
    return _devices.local_devices(_platform(backend), process)


def device_count(backend: str | None = None) -> int:
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    return len(local_devices(backend=backend))


def process_index(backend: str | None = None) -> int:
    from ..backends import devices as _devices
    return _devices.process_index()


def process_count(backend: str | None = None) -> int:
    from ..backends import devices as _devices
    return _devices.process_count()


def block_until_ready(x: Any) -> Any:
    """Wait for every array in the pytree `x` (xlapy's calls return finished arrays) and return x."""
    def wait(leaf):
        fn = getattr(leaf, "block_until_ready", None)
        if callable(fn):
            fn()
        return leaf
    tree_map(wait, x)
    return x


def host_count(backend: str | None = None) -> int:
    return 1


def host_id(backend: str | None = None) -> int:
    return 0


def host_ids(backend: str | None = None) -> list[int]:
    return [0]


def process_indices(backend: str | None = None) -> list[int]:
    return [0]


def effects_barrier() -> None:
    """Wait for pending effects (callbacks): xlapy runs them synchronously, so there is nothing to wait for."""


def typeof(x: Any) -> ShapedArray:
    """The abstract value of x (jax.typeof): its ShapedArray."""
    return _aval_of(x)


float0 = np.dtype([("float0", np.void, 0)])     # JAX's dtype of integer inputs' tangents (xlapy gives zeros)


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """jax.named_call: names fun's part of the program; xlapy's traces are not named per call, so fun itself."""
    return fun


@contextlib.contextmanager
def named_scope(name: str):
    """jax.named_scope: a name for the ops traced inside (accepted; xlapy does not record it)."""
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    yield


def closure_convert(fun: Callable, *example_args: Any):
    """(converted, consts) as jax.closure_convert: the traced values fun closes over become explicit trailing
    arguments, so converted(*args, *consts) == fun(*args) (for custom_vjp functions that must not close over
    tracers)."""
    from .transforms import _call, _callable, trace_flat
    traced = trace_flat(fun, example_args, {}, f"closure_convert_{getattr(fun, '__name__', 'fun')}")
    consts = list(traced.captured)
    comp = _callable(traced.comp)
    n_in = len(traced.leaves)

    def converted(*args):
        leaves, tree = tree_flatten(tuple(args[:len(args) - len(consts)]))
        if tree != traced.in_tree or len(leaves) != n_in:
            raise TypeError(f"closure_convert: called with arguments of structure {tree}, converted for "
                            f"{traced.in_tree}")
        outs = _call(comp, leaves + list(args[len(args) - len(consts):]), [a.weak_type for a in traced.out_avals],
                     "closure_converted")
        return tree_unflatten(traced.out_tree, outs)
    return converted, consts


def custom_gradient(fun: Callable) -> Callable:
    """jax.custom_gradient: fun(*args) returns (output, vjp_fn), vjp_fn(output cotangent) -> a tuple with one
    cotangent per argument. A custom_vjp whose fwd traces vjp_fn with closure_convert: the traced values vjp_fn
    closes over become the residuals, and bwd calls the converted function on them."""
    import threading
    from .custom_derivatives import custom_vjp
    converted = threading.local()       # fwd and bwd are traced one after the other, in one thread

    @custom_vjp
    def wrapped(*args):
        return fun(*args)[0]

    def fwd(*args):
        out, vjp_fn = fun(*args)
        example = tree_map(lambda o: np.zeros(aval(o).shape, aval(o).dtype), out)
        conv, consts = closure_convert(lambda ct: vjp_fn(ct), example)
        converted.fn = conv
        return out, tuple(consts)

    def bwd(res, ct):
        g = converted.fn(ct, *res)
        return tuple(g) if isinstance(g, (tuple, list)) else (g,)
    wrapped.defvjp(fwd, bwd)
    wrapped.__name__ = getattr(fun, "__name__", "custom_gradient")
    return wrapped


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
    """(fwd, bwd) as jax.fwd_and_bwd: fwd(*args) -> (fun(*args), residuals[, aux]); bwd(residuals, cotangent) ->
    the cotangents of the `argnums` arguments. xlapy's residuals are the arguments themselves (a pytree that
    passes through jit; bwd recomputes the forward pass, as xlapy's vjp function does)."""
    from .jit import jit

    def fwd(*args):
        out = fun(*args)
        if has_aux:
            return out[0], tuple(args), out[1]
        return out, tuple(args)

    def bwd(residuals, outgrad):
        nums = _normalize_argnums("fwd_and_bwd", argnums, len(residuals))
        f_partial, dyn = _dyn_partial(fun, tuple(residuals), {}, nums)
        pullback = vjp(f_partial, *dyn, has_aux=has_aux)[1]
        g = pullback(outgrad)
        return g[0] if isinstance(argnums, int) else g
    if jitted:
        return jit(fwd), jit(bwd)
    return fwd, bwd


@contextlib.contextmanager
def transfer_guard(new_val: str):
    """jax.transfer_guard: host/device transfers are not guarded on one host device (accepted, no effect)."""
    if new_val not in ("allow", "log", "disallow", "log_explicit", "disallow_explicit"):
        raise ValueError(f"Unknown transfer_guard level: {new_val!r}")
    yield


@contextlib.contextmanager
def checking_leaks():
    """jax.checking_leaks: xlapy reports a leaked tracer whenever it is used (tracer.py), so nothing to switch."""
    yield


def live_arrays(platform: str | None = None) -> list:
    """jax.live_arrays: xlapy's Arrays are numpy-backed and not tracked, so none are listed."""
    return []


def copy_to_host_async(x: Any) -> None:
    """jax.copy_to_host_async: results already live in host memory."""
    return None


def make_array_from_callback(shape: Sequence[int], sharding: Any, data_callback: Callable,
                             dtype: Any = None) -> Any:
    """jax.make_array_from_callback on one device: data_callback(index of the whole array) gives the data."""
    from .array import Array
    data = np.asarray(data_callback(tuple(slice(0, int(d)) for d in shape)))
    if tuple(data.shape) != tuple(shape):
        raise ValueError(f"make_array_from_callback: the callback returned shape {data.shape}, expected {tuple(shape)}")
    return Array(data if dtype is None else data.astype(dtype))


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Any, arrays: Sequence[Any], *,
                                         dtype: Any = None) -> Any:
    """One device: the single array is the whole array."""
    from .array import Array
    if len(arrays) != 1 or tuple(np.shape(arrays[0])) != tuple(shape):
        raise ValueError(f"make_array_from_single_device_arrays: one device holds the whole array of shape "
                         f"{tuple(shape)}; got {len(arrays)} arrays")
    data = np.asarray(arrays[0])
    return Array(data if dtype is None else data.astype(dtype))


def make_array_from_process_local_data(sharding: Any, local_data: Any, global_shape: Any = None) -> Any:
    """One process: the local data is the global array. Several (xlapy.distributed), with a NamedSharding:
    parallel/process_shards.from_process_local (each process's block, exchanged over MPI)."""
    from .array import Array
    from ..backends import devices
    from .parallel.mesh import NamedSharding
    if devices.process_count() > 1 and isinstance(sharding, NamedSharding):
        from .parallel.process_shards import from_process_local
        from .parallel.sharded_array import ShardedArray
        return ShardedArray(from_process_local(sharding, local_data, global_shape), sharding)
    data = np.asarray(local_data)
    if global_shape is not None and tuple(global_shape) != data.shape:
        raise ValueError(f"make_array_from_process_local_data: one process holds the whole array; global_shape "
                         f"{tuple(global_shape)} differs from the local data's {data.shape}")
    return Array(data)


def print_environment_info(return_string: bool = False) -> str | None:
    """Versions of xlapy, Python, numpy and the default backend (jax.print_environment_info)."""
    import platform
    import sys
    from .backend import default_backend
    text = (f"xlapy:    0.1.0\nnumpy:    {np.__version__}\npython:   {sys.version.split()[0]}\n"
            f"platform: {platform.platform()}\nbackend:  {default_backend()}\n")
    if return_string:
        return text
    print(text, end="")
    return None


__all__ = ["jacfwd", "jacrev", "jacobian", "hessian", "linearize", "linear_transpose", "ShapeDtypeStruct",
           "eval_shape", "make_jaxpr", "HloJaxpr", "ensure_compile_time_eval", "Device", "devices", "local_devices",
           "device_count", "local_device_count", "process_index", "process_count", "block_until_ready", "host_count",
           "host_id", "host_ids", "process_indices", "effects_barrier", "typeof", "float0", "named_call",
           "named_scope", "closure_convert", "custom_gradient", "print_environment_info", "fwd_and_bwd",
           "transfer_guard", "checking_leaks", "live_arrays", "copy_to_host_async", "make_array_from_callback",
           "make_array_from_single_device_arrays", "make_array_from_process_local_data"]
