"""ATen's view, layout and indexing ops over xlapy.numpy and xlapy.lax (rows as in aten_elementwise.py).

Views become values: AOTAutograd has already functionalized the graph, so no rule has to preserve aliasing.
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..frontend.transforms import vjp

_BIG = 1 << 62


def _shape(x):
    return tuple(jnp.shape(x))


def _dim(d, n):
    return d + n if d < 0 else d


def _view(x, size):
    return jnp.reshape(x, tuple(size))


def _expand(x, size, implicit=False):
    shape = _shape(x)
    lead = len(size) - len(shape)
    out = tuple(s if s != -1 else shape[i - lead] for i, s in enumerate(size))
    return jnp.broadcast_to(x, out)


def _squeeze(x, dims=None):
    shape = _shape(x)
    if dims is None:
        dims = range(len(shape))
    elif isinstance(dims, int):
        dims = [dims]
    axes = tuple(sorted({_dim(d, len(shape)) for d in dims if shape[_dim(d, len(shape))] == 1}))
    return lax.squeeze(jnp.asarray(x), axes) if axes else x


def _unsqueeze(x, dim):
    return jnp.expand_dims(x, _dim(dim, len(_shape(x)) + 1))


def _slice(x, dim=0, start=None, end=None, step=1):
    shape = _shape(x)
    dim = _dim(dim, len(shape))
    n = shape[dim]
    start = 0 if start is None else start
    end = n if end is None or end >= _BIG else end
    start = builtins.min(builtins.max(start + n if start < 0 else start, 0), n)
    end = builtins.min(builtins.max(end + n if end < 0 else end, 0), n)
    end = builtins.max(end, start)
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    starts[dim], limits[dim], strides[dim] = start, end, step
    return lax.slice(jnp.asarray(x), starts, limits, strides)


def _select(x, dim, index):
    shape = _shape(x)
    dim = _dim(dim, len(shape))
    index = index + shape[dim] if index < 0 else index
    return lax.squeeze(_slice(x, dim, index, index + 1), (dim,))


def _cat(tensors, dim=0):
    tensors = [t for t in tensors if _shape(t) != (0,)]     # torch skips legacy empty 1-D tensors
    return jnp.concatenate(tensors, axis=dim)


def _split_with_sizes(x, sizes, dim=0):
    dim = _dim(dim, len(_shape(x)))
    out, start = [], 0
    for s in sizes:
        out.append(_slice(x, dim, start, start + s))
        start += s
    return out


def _split(x, split_size, dim=0):
    n = _shape(x)[_dim(dim, len(_shape(x)))]
    sizes = [builtins.min(split_size, n - i) for i in range(0, n, split_size)] or [0]
    return _split_with_sizes(x, sizes, dim)


def _unbind(x, dim=0):
    dim = _dim(dim, len(_shape(x)))
    return [_select(x, dim, i) for i in range(_shape(x)[dim])]


def _transpose(x, d0, d1):
    n = len(_shape(x))
    perm = list(range(n))
    a, b = _dim(d0, n), _dim(d1, n)
    perm[a], perm[b] = perm[b], perm[a]
    return jnp.transpose(x, perm)


def _t(x):
    return jnp.transpose(x) if len(_shape(x)) == 2 else x


def _grids(index, dim):
    """Index arrays for every axis of `index`, with `index` itself at `dim` (torch.gather/scatter)."""
    shape = _shape(index)
    dim = _dim(dim, len(shape))
    return tuple(index if d == dim else lax.broadcasted_iota(np.int32, shape, d) for d in range(len(shape)))


def _gather(x, dim, index, sparse_grad=False):
    return jnp.asarray(x)[_grids(jnp.asarray(index).astype(np.int32), dim)]


def _scatter(x, dim, index, src):
    idx = _grids(jnp.asarray(index).astype(np.int32), dim)
    src = src if not hasattr(src, "shape") or not _shape(src) else _slice_to(src, _shape(index))
    return jnp.asarray(x).at[idx].set(src)


def _scatter_add(x, dim, index, src):
    return jnp.asarray(x).at[_grids(jnp.asarray(index).astype(np.int32), dim)].add(_slice_to(src, _shape(index)))


def _slice_to(src, shape):
    if _shape(src) == tuple(shape):
        return src
    return lax.slice(jnp.asarray(src), [0] * len(shape), list(shape))


def _index_key(indices):
    return tuple(slice(None) if i is None else jnp.asarray(i) for i in indices)


def _check_int_indices(indices, op):
    for i in indices:
        if i is not None and jnp.asarray(i).dtype == np.bool_:
            from .errors import TranslationError
            raise TranslationError(op, "a boolean mask index has a data-dependent shape")


def _index(x, indices):
    _check_int_indices(indices, "aten.index.Tensor")
    return jnp.asarray(x)[_index_key(indices)]


def _index_put(x, indices, values, accumulate=False):
    _check_int_indices(indices, "aten.index_put.default")
    ref = jnp.asarray(x).at[_index_key(indices)]
    return ref.add(values) if accumulate else ref.set(values)


def _index_select(x, dim, index):
    return jnp.take(x, jnp.asarray(index).astype(np.int32), axis=dim)


def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return jnp.take(weight, jnp.asarray(indices).astype(np.int32), axis=0)


def _constant_pad_nd(x, pad, value=0):
    n = len(_shape(x))
    config = [(0, 0, 0)] * n
    for i in range(len(pad) // 2):
        config[n - 1 - i] = (pad[2 * i], pad[2 * i + 1], 0)
    x = jnp.asarray(x)
    return lax.pad(x, jnp.asarray(value, dtype=x.dtype), config)


def _repeat(x, repeats):
    x = jnp.asarray(x)
    x = jnp.reshape(x, (1,) * (len(repeats) - x.ndim) + _shape(x))
    return jnp.tile(x, tuple(repeats))


def _diagonal(x, offset=0, dim1=0, dim2=1):
    return jnp.diagonal(x, offset, dim1, dim2)


def _tril(x, diagonal=0):
    return jnp.tril(x, diagonal)


def _triu(x, diagonal=0):
    return jnp.triu(x, diagonal)


def _slice_key(shape, dim, start=None, end=None, step=1):
    n = shape[dim]
    start = 0 if start is None else (start + n if start < 0 else start)
    end = n if end is None or end >= _BIG else (end + n if end < 0 else end)
    start, end = builtins.min(builtins.max(start, 0), n), builtins.min(builtins.max(end, 0), n)
    return tuple(slice(start, end, step) if d == dim else slice(None) for d in range(len(shape)))


def _slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    shape = _shape(x)
    dim = _dim(dim, len(shape))
    return jnp.asarray(x).at[_slice_key(shape, dim, start, end, step)].set(src)


def _select_scatter(x, src, dim, index):
    shape = _shape(x)
    dim = _dim(dim, len(shape))
    index = index + shape[dim] if index < 0 else index
    key = tuple(index if d == dim else slice(None) for d in range(len(shape)))
    return jnp.asarray(x).at[key].set(src)


_SCATTER_REDUCE = {"sum": "add", "prod": "multiply", "amax": "max", "amin": "min"}


def _scatter_reduce(x, dim, index, src, reduce, include_self=True):
    if reduce not in _SCATTER_REDUCE or not include_self:
        from .errors import TranslationError
        raise TranslationError("aten.scatter_reduce.two", f"reduce={reduce!r}, include_self={include_self}")
    ref = jnp.asarray(x).at[_grids(jnp.asarray(index).astype(np.int32), dim)]
    return getattr(ref, _SCATTER_REDUCE[reduce])(_slice_to(src, _shape(index)))


def _embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    if scale_grad_by_freq:
        from .errors import TranslationError
        raise TranslationError("aten.embedding_dense_backward.default", "scale_grad_by_freq")
    idx = jnp.reshape(jnp.asarray(indices).astype(np.int32), (-1,))
    g = jnp.reshape(grad, (-1, _shape(grad)[-1]))
    if padding_idx is not None and padding_idx >= 0:
        g = jnp.where(jnp.expand_dims(jnp.equal(idx, padding_idx), 1), 0, g)
    return jnp.zeros((num_weights, _shape(grad)[-1]), jnp.asarray(grad).dtype).at[idx].add(g)


def _pad_mode(mode):
    def rule(x, padding):
        n = len(_shape(x))
        widths = [(0, 0)] * n
        for i in range(len(padding) // 2):
            widths[n - 1 - i] = (padding[2 * i], padding[2 * i + 1])
        return jnp.pad(x, widths, mode=mode)
    return rule


def _pad_mode_backward(mode):
    forward = _pad_mode(mode)

    def rule(grad, x, padding):
        _, pullback = vjp(lambda a: forward(a, padding), x)
        return pullback(grad)[0]
    return rule


def _upsample_nearest(x, output_size, scale_factors=None):
    shape = _shape(x)
    spatial = shape[2:]
    if output_size is None:
        output_size = [int(s * f) for s, f in zip(spatial, scale_factors)]
    for axis, (size, out) in enumerate(zip(spatial, output_size), start=2):
        scale = size / out if scale_factors is None else 1.0 / scale_factors[axis - 2]
        src = np.minimum(np.floor(np.arange(out) * scale).astype(np.int32), size - 1)
        x = jnp.take(x, jnp.asarray(src), axis=axis)
    return x


def _sort(x, dim=-1, descending=False, stable=False):
    x = jnp.asarray(x)
    dim = _dim(dim, x.ndim)
    idx = lax.broadcasted_iota(np.int32, _shape(x), dim)
    keys = jnp.negative(x) if descending else x
    _, values, indices = lax.sort((keys, x, idx), dimension=dim, is_stable=True, num_keys=1)
    return values, indices


def _topk(x, k, dim=-1, largest=True, sorted=True):
    x = jnp.asarray(x)
    dim = _dim(dim, x.ndim)
    moved = jnp.moveaxis(x, dim, -1)
    values, indices = lax.top_k(moved if largest else jnp.negative(moved), k)
    values = values if largest else jnp.negative(values)
    return jnp.moveaxis(values, -1, dim), jnp.moveaxis(indices, -1, dim)


TABLE = {
    "aten.slice_scatter.default": _slice_scatter,
    "aten.select_scatter.default": _select_scatter,
    "aten.scatter_reduce.two": _scatter_reduce,
    "aten.embedding_dense_backward.default": _embedding_dense_backward,
    "aten.reflection_pad1d.default": _pad_mode("reflect"),
    "aten.reflection_pad2d.default": _pad_mode("reflect"),
    "aten.reflection_pad3d.default": _pad_mode("reflect"),
    "aten.replication_pad2d.default": _pad_mode("edge"),
    "aten.replication_pad3d.default": _pad_mode("edge"),
    "aten.reflection_pad1d_backward.default": _pad_mode_backward("reflect"),
    "aten.reflection_pad2d_backward.default": _pad_mode_backward("reflect"),
    "aten.reflection_pad3d_backward.default": _pad_mode_backward("reflect"),
    "aten.replication_pad2d_backward.default": _pad_mode_backward("edge"),
    "aten.replication_pad3d_backward.default": _pad_mode_backward("edge"),
    "aten.upsample_nearest2d.vec": _upsample_nearest,
    "aten.sort.default": _sort,
    "aten.topk.default": _topk,
    "aten.view.default": _view,
    "aten._unsafe_view.default": _view,
    "aten.reshape.default": _view,
    "aten.view.dtype": lambda x, dtype: lax.bitcast_convert_type(jnp.asarray(x), dtype),
    "aten.expand.default": _expand,
    "aten.permute.default": lambda x, dims: jnp.transpose(x, tuple(dims)),
    "aten.transpose.int": _transpose,
    "aten.t.default": _t,
    "aten.squeeze.default": _squeeze,
    "aten.squeeze.dim": _squeeze,
    "aten.squeeze.dims": _squeeze,
    "aten.unsqueeze.default": _unsqueeze,
    "aten.slice.Tensor": _slice,
    "aten.select.int": _select,
    "aten.cat.default": _cat,
    "aten.stack.default": lambda tensors, dim=0: jnp.stack(tensors, axis=dim),
    "aten.split_with_sizes.default": _split_with_sizes,
    "aten.split.Tensor": _split,
    "aten.unbind.int": _unbind,
    "aten.gather.default": _gather,
    "aten.scatter.value": _scatter,
    "aten.scatter.src": _scatter,
    "aten.scatter_add.default": _scatter_add,
    "aten.index.Tensor": _index,
    "aten.index_put.default": _index_put,
    "aten.index_select.default": _index_select,
    "aten.embedding.default": _embedding,
    "aten.constant_pad_nd.default": _constant_pad_nd,
    "aten.flip.default": lambda x, dims: jnp.flip(x, tuple(dims)),
    "aten.repeat.default": _repeat,
    "aten.diagonal.default": _diagonal,
    "aten.tril.default": _tril,
    "aten.triu.default": _triu,
}
