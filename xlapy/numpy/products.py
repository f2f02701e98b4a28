"""Products: matmul (batched, broadcasting), dot, vdot, inner, outer, tensordot, einsum, kron. Everything
lowers to one dot_general per pair of operands plus transposes, reshapes and reductions."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ._util import arr, aval, broadcast_to_shape, dtypes, error, lax


def _promoted(name: str, *xs) -> list[Any]:
    xs = [arr(x) for x in xs]
    target = dtypes.result_type(*xs)
    return [x if aval(x).dtype == target else lax.convert_element_type(x, target) for x in xs]


def _dot_general(x, y, contract, batch, precision, preferred_element_type):
    return lax.dot_general(x, y, (contract, batch), precision=precision,
                           preferred_element_type=preferred_element_type)


def matmul(a, b, *, precision=None, preferred_element_type=None) -> Any:
    """numpy matmul: 1-D operands are promoted to matrices and the added axis removed; batch dims broadcast."""
    x, y = _promoted("matmul", a, b)
    xa, ya = aval(x), aval(y)
    if xa.ndim == 0 or ya.ndim == 0:
        raise error("matmul", f"operands must not be scalars, got {xa} and {ya}")
    x2 = lax.reshape(x, (1,) + xa.shape) if xa.ndim == 1 else x
    y2 = lax.reshape(y, ya.shape + (1,)) if ya.ndim == 1 else y
    xs, ys = aval(x2).shape, aval(y2).shape
    if xs[-1] != ys[-2]:
        raise error("matmul", f"contracting dimensions differ: {xa} @ {ya} ({xs[-1]} != {ys[-2]})")
    try:
        batch = tuple(np.broadcast_shapes(xs[:-2], ys[:-2]))
    except ValueError:
        raise error("matmul", f"batch dimensions of {xa} and {ya} do not broadcast") from None
    if len(ys) == 2:
        # a stack of matrices times one matrix (activations @ weights): x's leading dims are free dims of one
        # dot, as in JAX, not a batch the matrix is broadcast over (whose gradient would be a batched dot and a
        # sum over the batch, against one dot contracting the leading dims)
        out = _dot_general(x2, y2, ((len(xs) - 1,), (0,)), ((), ()), precision, preferred_element_type)
        return _drop_added_axes(out, xa, ya)
    nb = len(batch)
    if nb:
        x2 = broadcast_to_shape(x2, batch + xs[-2:])
        y2 = broadcast_to_shape(y2, batch + ys[-2:])
    b = tuple(range(nb))
    out = _dot_general(x2, y2, ((nb + 1,), (nb,)), (b, b), precision, preferred_element_type)
    return _drop_added_axes(out, xa, ya)


def _drop_added_axes(out, xa, ya) -> Any:
    """matmul's result without the axes added to 1-D operands."""
    shape = aval(out).shape
    if xa.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if ya.ndim == 1:
        shape = shape[:-1]
    return lax.reshape(out, shape)


def dot(a, b, *, precision=None, preferred_element_type=None) -> Any:
    """numpy dot: scalars multiply; otherwise contract a's last axis with b's second-to-last (or only) axis."""
    x, y = _promoted("dot", a, b)
    xa, ya = aval(x), aval(y)
    if xa.ndim == 0 or ya.ndim == 0:
        from .elementwise import multiply
        return multiply(x, y)
    yc = 0 if ya.ndim == 1 else ya.ndim - 2
    if xa.shape[-1] != ya.shape[yc]:
        raise error("dot", f"shapes {xa} and {ya} are not aligned: {xa.shape[-1]} (dim {xa.ndim - 1}) != "
                           f"{ya.shape[yc]} (dim {yc})")
    return _dot_general(x, y, ((xa.ndim - 1,), (yc,)), ((), ()), precision, preferred_element_type)


def vdot(a, b, *, precision=None, preferred_element_type=None) -> Any:
    from .elementwise import conjugate
    x, y = _promoted("vdot", a, b)
    x, y = lax.reshape(conjugate(x), (aval(x).size,)), lax.reshape(y, (aval(y).size,))
    if aval(x).shape != aval(y).shape:
        raise error("vdot", f"operands have different sizes: {aval(arr(a))} and {aval(arr(b))}")
    return _dot_general(x, y, ((0,), (0,)), ((), ()), precision, preferred_element_type)


def inner(a, b, *, precision=None, preferred_element_type=None) -> Any:
    x, y = _promoted("inner", a, b)
    xa, ya = aval(x), aval(y)
    if xa.ndim == 0 or ya.ndim == 0:
        from .elementwise import multiply
        return multiply(x, y)
    if xa.shape[-1] != ya.shape[-1]:
        raise error("inner", f"last dimensions of {xa} and {ya} differ")
    return _dot_general(x, y, ((xa.ndim - 1,), (ya.ndim - 1,)), ((), ()), precision, preferred_element_type)


def outer(a, b, out=None) -> Any:
    x, y = _promoted("outer", a, b)
    x = lax.reshape(x, (aval(x).size, 1))
    y = lax.reshape(y, (1, aval(y).size))
    from .elementwise import multiply
    return multiply(x, y)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None) -> Any:
    """Contract `axes` (an int: the last/first n axes; or a pair of axis sequences)."""
    x, y = _promoted("tensordot", a, b)
    xa, ya = aval(x), aval(y)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(xa.ndim, ya.ndim):
            raise error("tensordot", f"axes={n} is out of range for {xa} and {ya}")
        xc, yc = tuple(range(xa.ndim - n, xa.ndim)), tuple(range(n))
    else:
        xc, yc = axes
        xc = (xc,) if isinstance(xc, (int, np.integer)) else tuple(xc)
        yc = (yc,) if isinstance(yc, (int, np.integer)) else tuple(yc)
        if len(xc) != len(yc):
            raise error("tensordot", f"axes {axes} pair different numbers of axes")
        xc = tuple(int(i) % xa.ndim for i in xc)
        yc = tuple(int(i) % ya.ndim for i in yc)
    for i, j in zip(xc, yc):
        if xa.shape[i] != ya.shape[j]:
            raise error("tensordot", f"shape mismatch for sum: axis {i} of {xa} and axis {j} of {ya}")
    return _dot_general(x, y, (xc, yc), ((), ()), precision, preferred_element_type)


def kron(a, b) -> Any:
    from .elementwise import multiply
    x, y = _promoted("kron", a, b)
    nd = max(aval(x).ndim, aval(y).ndim)
    xs = (1,) * (nd - aval(x).ndim) + aval(x).shape
    ys = (1,) * (nd - aval(y).ndim) + aval(y).shape
    x = lax.reshape(x, tuple(v for s in xs for v in (s, 1)))
    y = lax.reshape(y, tuple(v for s in ys for v in (1, s)))
    return lax.reshape(multiply(x, y), tuple(p * q for p, q in zip(xs, ys)))


# -- einsum -----------------------------------------------------------------------------------------------

def _parse_einsum(subscripts: str, ndims: Sequence[int]) -> tuple[list[str], str]:
    """Input label strings and the output string, with '...' replaced by private labels (one per dim)."""
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        ins, out = spec.split("->")
        explicit = True
    else:
        ins, out, explicit = spec, "", False
    inputs = ins.split(",")
    if len(inputs) != len(ndims):
        raise error("einsum", f"subscripts {subscripts!r} name {len(inputs)} operands but {len(ndims)} were given")
    ell_labels = [chr(0x3B1 + i) for i in range(32)]     # greek letters never clash with ascii labels
    max_ell = 0
    expanded = []
    for term, nd in zip(inputs, ndims):
        if "..." in term:
            named = len(term) - 3
            k = nd - named
            if k < 0:
                raise error("einsum", f"operand {term!r} has rank {nd}, fewer than its labels")
            max_ell = max(max_ell, k)
            term = term.replace("...", "".join(ell_labels[32 - k:]) if k else "")
        elif len(term) != nd:
            raise error("einsum", f"operand subscripts {term!r} do not match its rank {nd}")
        for c in term:
            if not (c.isalpha()):
                raise error("einsum", f"invalid subscript {c!r} in {subscripts!r}")
        expanded.append(term)
    ell = "".join(ell_labels[32 - max_ell:])
    if explicit:
        out = out.replace("...", ell)     # ellipsis dims left out of an explicit output are summed
    else:
        counts: dict[str, int] = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    for c in out:
        if not any(c in t for t in expanded):
            raise error("einsum", f"output subscript {c!r} does not appear in the inputs of {subscripts!r}")
    return expanded, out


def _diagonal_labels(x, labels: str):
    """Take the diagonal of repeated labels within one operand ('ii->i')."""
    while len(set(labels)) != len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        i = labels.index(c)
        j = labels.index(c, i + 1)
        from .shape_ops import diagonal
        x = diagonal(x, 0, i, j)
        labels = "".join(ch for k, ch in enumerate(labels) if k not in (i, j)) + c
    return x, labels


def _sum_labels(x, labels: str, keep: set[str]):
    drop = tuple(i for i, c in enumerate(labels) if c not in keep)
    if not drop:
        return x, labels
    return lax.reduce_sum(x, drop), "".join(c for c in labels if c in keep)


def einsum(subscripts: str, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None) -> Any:
    """Einstein summation: repeated labels within an operand take diagonals, labels absent from the output
    are summed, and operands are contracted left to right with dot_general (shared kept labels are batch)."""
    ops = _promoted("einsum", *operands)
    terms, out_labels = _parse_einsum(subscripts, [aval(o).ndim for o in ops])
    sizes: dict[str, int] = {}
    for o, t in zip(ops, terms):
        for c, s in zip(t, aval(o).shape):
            if sizes.get(c, 1) not in (1, s) and s != 1:
                raise error("einsum", f"size of label {c!r} differs between operands: {sizes[c]} and {s} "
                                      f"(operands {', '.join(str(aval(v)) for v in ops)})")
            sizes[c] = max(sizes.get(c, 1), s)
    # broadcast size-1 dims to the common size (numpy broadcasting of '...' dims)
    ops = [broadcast_labels(o, t, sizes) for o, t in zip(ops, terms)]
    pending = list(zip(ops, terms))
    pending = [_diagonal_labels(o, t) for o, t in pending]
    x, xl = pending[0]
    for idx in range(1, len(pending) + 1):
        later = set(out_labels).union(*(set(t) for _, t in pending[idx + 1:]))
        if idx == len(pending):
            x, xl = _sum_labels(x, xl, set(out_labels))
            break
        y, yl = pending[idx]
        keep_x = later | set(yl)
        keep_y = later | set(xl)
        x, xl = _sum_labels(x, xl, keep_x)
        y, yl = _sum_labels(y, yl, keep_y)
        shared = [c for c in xl if c in yl]
        batch = [c for c in shared if c in later]
        contract = [c for c in shared if c not in later]
        x = _dot_general(x, y, (tuple(xl.index(c) for c in contract), tuple(yl.index(c) for c in contract)),
                         (tuple(xl.index(c) for c in batch), tuple(yl.index(c) for c in batch)),
                         precision, preferred_element_type)
        xl = "".join(batch) + "".join(c for c in xl if c not in shared) + "".join(c for c in yl if c not in shared)
    perm = tuple(xl.index(c) for c in out_labels)
    return lax.transpose(x, perm)


def broadcast_labels(x, labels: str, sizes: dict[str, int]):
    target = tuple(sizes[c] for c in labels)
    if aval(x).shape == target:
        return x
    return lax.broadcast_in_dim(x, target, tuple(range(len(target))))
