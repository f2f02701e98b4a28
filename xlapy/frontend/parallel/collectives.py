"""jax.lax's collectives over named axes, lowered to HLO collectives as JAX lowers them in pmap / shard_map.

    psum / pmax / pmin      all-reduce (add / maximum / minimum), use_global_device_ids=true
    pmean                   psum, then a division by the axis size
    all_gather              all-gather along `axis` (untiled: of x with a unit dimension inserted there)
    psum_scatter            reduce-scatter along scatter_dimension (untiled: that dimension then dropped)
    ppermute / pshuffle     collective-permute, the pairs as device ids within each group
    all_to_all / pswapaxes  all-to-all over dimension 0 of x with the chunks moved to the front
    axis_index              partition-id // (sizes of the inner axes) % size, as s32
    pbroadcast              psum of x on the source index, zeros elsewhere

Each collective carries the names of its axes (`frontend_attributes={xlapy_axes="i"}`): over a vmap axis the
batching rules (batching/rules_collective.py) make it a reduction over the batch dimension, which is also how
pmap and shard_map inside another trace (jit, grad) run. A concrete (untraced) operand is the same on every
device: psum of it is size * x, as in JAX.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...errors import XlapyError
from ...hlo import Shape, type_name_of_dtype
from ...passes.build import make
from ..pytree import tree_flatten, tree_unflatten
from ..tracer import ShapedArray, Trace, Tracer, aval, bind
from . import axis_env
from .axis_env import AxisFrame, axis_names, lookup

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "pshuffle", "all_to_all",
           "pswapaxes", "axis_index", "axis_size", "pbroadcast", "pcast"]


def _frames(axis_name: Any, what: str) -> tuple[tuple, list[AxisFrame]]:
    names = axis_names(axis_name)
    return names, [lookup(n, what) for n in names]


def _size(frames: Sequence[AxisFrame]) -> int:
    return int(np.prod([f.size for f in frames], dtype=np.int64))


def _no_groups(axis_index_groups: Any, what: str) -> None:
    if axis_index_groups is not None:
        raise XlapyError(f"{what}: axis_index_groups is not supported (split the axis with a mesh of two axes)")


def _reducer(opcode: str, dtype) -> Any:
    trace = Trace("region")
    a = trace.new_param(ShapedArray((), np.dtype(dtype)))
    b = trace.new_param(ShapedArray((), np.dtype(dtype)))
    root = trace.add(make(opcode, [a.inst, b.inst], name=opcode))
    return trace.finish([root])


def collective_attrs(names: Sequence[Any], frames: Sequence[AxisFrame], global_ids: bool = True) -> dict:
    """channel_id, replica_groups (device ids over the device axes among `names`), the axes tag."""
    device = [n for n, f in zip(names, frames) if f.kind == "device"]
    attrs: dict[str, Any] = {}
    if device:
        attrs = {"channel_id": 1, "replica_groups": axis_env.groups_text(axis_env.groups(device))}
        if global_ids:
            attrs["use_global_device_ids"] = True
    return axis_env.retag(attrs, names)


def _emit(opcode: str, x: Any, names, frames, shape: Shape, extra: dict | None = None,
          global_ids: bool = True) -> Any:
    attrs = dict(extra or {}, **collective_attrs(names, frames, global_ids))
    return bind(opcode, [x], attrs, shape=shape, name=opcode)


def _shape(x: Any, dims: Sequence[int] | None = None) -> Shape:
    a = aval(x)
    return Shape.array(type_name_of_dtype(a.dtype), tuple(a.shape if dims is None else dims))


def _per_leaf(fn, x: Any) -> Any:
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [fn(leaf) for leaf in leaves])


def _all_reduce(x: Any, axis_name: Any, opcode: str, what: str, concrete) -> Any:
    names, frames = _frames(axis_name, what)

    def one(leaf):
        if not isinstance(leaf, Tracer):
            return concrete(leaf, _size(frames))
        a = aval(leaf)
        op = "or" if a.dtype == np.bool_ and opcode == "add" else opcode
        return _emit("all-reduce", leaf, names, frames, _shape(leaf), {"to_apply": _reducer(op, a.dtype)})
    return _per_leaf(one, x)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The sum of x over the named axes, on every member (jax.lax.psum); x is a pytree."""
    _no_groups(axis_index_groups, "psum")
    return _all_reduce(x, axis_name, "add", "psum", lambda v, n: _times(v, n))


def _times(v: Any, n: int) -> Any:
    from ..array import Array
    if isinstance(v, (int, float, complex)) and not isinstance(v, bool):
        return v * n
    arr = np.asarray(v)
    return Array(arr * np.asarray(n, arr.dtype))


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The mean of x over the named axes (jax.lax.pmean)."""
    _no_groups(axis_index_groups, "pmean")
    _, frames = _frames(axis_name, "pmean")
    n = _size(frames)
    total = psum(x, axis_name)
    return _per_leaf(lambda s: bind("divide", [s, _scalar_like(s, n)], name="div"), total)


def _scalar_like(x: Any, value: Any) -> Any:
    a = aval(x)
    c = np.asarray(value, dtype=a.dtype)
    return bind("broadcast", [c], {"dimensions": ()}, shape=_shape(x), name="broadcast") if a.shape else c


def pmax(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The maximum of x over the named axes (jax.lax.pmax)."""
    _no_groups(axis_index_groups, "pmax")
    return _all_reduce(x, axis_name, "maximum", "pmax", lambda v, n: v)


def pmin(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The minimum of x over the named axes (jax.lax.pmin)."""
    _no_groups(axis_index_groups, "pmin")
    return _all_reduce(x, axis_name, "minimum", "pmin", lambda v, n: v)


def _axis(axis: int, rank: int, what: str, name: str) -> int:
    if not -rank <= axis < rank:
        raise XlapyError(f"{what}: {name}={axis} is out of range (valid: {-rank} to {rank - 1})")
    return axis % rank


def _reshape(x: Any, dims: Sequence[int]) -> Any:
    return bind("reshape", [x], shape=_shape(x, dims), name="reshape")


def _transpose(x: Any, perm: Sequence[int]) -> Any:
    if list(perm) == sorted(perm):
        return x
    dims = [aval(x).shape[p] for p in perm]
    return bind("transpose", [x], {"dimensions": tuple(perm)}, shape=_shape(x, dims), name="transpose")


def _moveaxis(x: Any, src: int, dst: int) -> Any:
    perm = [k for k in range(aval(x).ndim) if k != src]
    perm.insert(dst, src)
    return _transpose(x, perm)


def all_gather(x: Any, axis_name: Any, *, axis_index_groups: Any = None, axis: int = 0, tiled: bool = False) -> Any:
    """Every member's x, stacked along a new axis `axis` (concatenated along it when tiled): jax.lax.all_gather."""
    _no_groups(axis_index_groups, "all_gather")
    names, frames = _frames(axis_name, "all_gather")
    n = _size(frames)

    def one(leaf):
        shape = list(aval(leaf).shape)
        if tiled:
            a = _axis(axis, max(len(shape), 1), "all_gather", "axis")
            if not shape:
                raise XlapyError("all_gather(tiled=True) needs an operand of rank 1 or more, got a scalar")
            v = leaf
        else:
            a = _axis(axis, len(shape) + 1, "all_gather", "axis")
            shape.insert(a, 1)
            v = _reshape(leaf, shape)
        out = list(shape)
        out[a] *= n
        return _emit("all-gather", v, names, frames, _shape(v, out), {"dimensions": (a,)})
    return _per_leaf(one, x)


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0, axis_index_groups: Any = None,
                 tiled: bool = False) -> Any:
    """psum, then member i keeps the i-th block along scatter_dimension (jax.lax.psum_scatter)."""
    _no_groups(axis_index_groups, "psum_scatter")
    names, frames = _frames(axis_name, "psum_scatter")
    n = _size(frames)

    def one(leaf):
        a = aval(leaf)
        d = _axis(scatter_dimension, max(a.ndim, 1), "psum_scatter", "scatter_dimension")
        size = a.shape[d] if a.ndim else 0
        if (tiled and size % n) or (not tiled and size != n):
            need = f"a multiple of {n}" if tiled else f"equal to the axis size {n}"
            raise XlapyError(f"psum_scatter: dimension {d} of the operand {a} has size {size}, which must be {need} "
                             f"(axis {names})")
        out = list(a.shape)
        out[d] //= n
        y = _emit("reduce-scatter", leaf, names, frames, _shape(leaf, out),
                  {"dimensions": (d,), "to_apply": _reducer("add", a.dtype)})
        return y if tiled else _reshape(y, out[:d] + out[d + 1:])
    return _per_leaf(one, x)


def ppermute(x: Any, axis_name: Any, perm: Sequence[tuple[int, int]]) -> Any:
    """Send x from axis index src to dst for each (src, dst) in perm; members no pair sends to get zeros."""
    names, frames = _frames(axis_name, "ppermute")
    n = _size(frames)
    perm = [tuple(int(v) for v in p) for p in perm]
    srcs, dsts = [p[0] for p in perm], [p[1] for p in perm]
    if any(len(p) != 2 for p in perm) or len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise XlapyError(f"ppermute: perm must be (source, destination) pairs, each source and each destination "
                         f"at most once, got {perm}")
    if any(not 0 <= v < n for v in srcs + dsts):
        raise XlapyError(f"ppermute: perm {perm} names an index outside the axis {names} of size {n}")
    device = [nm for nm, f in zip(names, frames) if f.kind == "device"]
    pairs = [(g[s], g[d]) for g in axis_env.groups(device) for s, d in perm] if len(device) == len(names) else []
    attrs = {"source_target_pairs": "{" + ",".join("{%d,%d}" % p for p in pairs) + "}",
             **collective_attrs(names, frames, global_ids=False)}
    attrs.pop("replica_groups", None)
    attrs["frontend_attributes"] = attrs["frontend_attributes"][:-1] + \
        ',xlapy_perm="%s"}' % ";".join(f"{s}:{d}" for s, d in perm)
    return _per_leaf(lambda leaf: bind("collective-permute", [leaf], attrs, shape=_shape(leaf),
                                       name="collective-permute"), x)


def pshuffle(x: Any, axis_name: Any, perm: Sequence[int]) -> Any:
    """Member i gets the x of member perm[i] (jax.lax.pshuffle)."""
    if sorted(perm) != list(range(len(perm))):
        raise XlapyError(f"pshuffle: perm must be a permutation of range({len(perm)}), got {list(perm)}")
    return ppermute(x, axis_name, [(int(s), d) for d, s in enumerate(perm)])


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *, axis_index_groups: Any = None,
               tiled: bool = False) -> Any:
    """Split x along split_axis into one block per member, send block j to member j, and stack (tiled:
    concatenate) the received blocks along concat_axis (jax.lax.all_to_all)."""
    _no_groups(axis_index_groups, "all_to_all")
    names, frames = _frames(axis_name, "all_to_all")
    n = _size(frames)

    def one(leaf):
        a = aval(leaf)
        s = _axis(split_axis, max(a.ndim, 1), "all_to_all", "split_axis")
        c = _axis(concat_axis, max(a.ndim, 1), "all_to_all", "concat_axis")
        size = a.shape[s] if a.ndim else 0
        if (tiled and size % n) or (not tiled and size != n):
            need = f"a multiple of {n}" if tiled else f"equal to the axis size {n}"
            raise XlapyError(f"all_to_all: split_axis {s} of the operand {a} has size {size}, which must be {need}")
        shape = list(a.shape)
        if tiled:
            shape[s:s + 1] = [n, size // n]
            z = _moveaxis(_reshape(leaf, shape), s, 0)
        else:
            z = _moveaxis(leaf, s, 0)
        r = _emit("all-to-all", z, names, frames, _shape(z), {"dimensions": (0,)}, global_ids=False)
        r = _moveaxis(r, 0, c)
        if not tiled:
            return r
        out = list(aval(r).shape)
        out[c:c + 2] = [out[c] * out[c + 1]]
        return _reshape(r, out)
    return _per_leaf(one, x)


def pswapaxes(x: Any, axis_name: Any, axis: int, *, axis_index_groups: Any = None) -> Any:
    """all_to_all with split_axis = concat_axis = axis (jax.lax.pswapaxes)."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def axis_size(axis_name: Any) -> int:
    """The size of the named axis (the product over a tuple of names): a Python int."""
    return _size(_frames(axis_name, "axis_size")[1])


def axis_index(axis_name: Any) -> Any:
    """This member's index along the named axis, an s32 scalar (jax.lax.axis_index)."""
    names, frames = _frames(axis_name, "axis_index")
    index = None
    for name, frame in zip(names, frames):
        attrs = axis_env.retag({}, [name])
        pid = bind("partition-id", [], attrs, shape=Shape.scalar("u32"), name="partition-id")
        if frame.kind == "device":
            stride = axis_env.stride(name)
            if stride != 1:
                pid = bind("divide", [pid, np.asarray(stride, np.uint32)], name="div")
            pid = bind("remainder", [pid, np.asarray(frame.size, np.uint32)], name="rem")
        one = bind("convert", [pid], shape=Shape.scalar("s32"), name="convert")
        index = one if index is None else bind("add", [bind("multiply", [index, np.asarray(frame.size, np.int32)],
                                                            name="mul"), one], name="add")
    return index


def pbroadcast(x: Any, axis_name: Any, source: int) -> Any:
    """Every member gets the x of member `source` (jax.lax.pbroadcast)."""
    names, frames = _frames(axis_name, "pbroadcast")
    n = _size(frames)
    if not 0 <= int(source) < n:
        raise XlapyError(f"pbroadcast: source {source} is outside the axis {names} of size {n}")
    is_source = bind("compare", [axis_index(axis_name), np.asarray(int(source), np.int32)], {"direction": "EQ"},
                     name="compare")

    def one(leaf):
        a = aval(leaf)
        pred = bind("broadcast", [is_source], {"dimensions": ()}, shape=Shape.array("pred", a.shape), name="broadcast") \
            if a.shape else is_source
        zero = np.zeros(a.shape, a.dtype)
        return psum(bind("select", [pred, leaf, zero], name="select"), axis_name)
    return _per_leaf(one, x)


def pcast(x: Any, axis_name: Any, *, to: Any) -> Any:
    """x itself (jax.lax.pcast changes JAX's varying-manual-axes type, which xlapy does not track); the axes
    must be bound."""
    _frames(axis_name, "pcast")
    return x
