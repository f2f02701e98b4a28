"""jax.numpy.vectorize over xlapy.vmap: the arguments are broadcast against each other over their loop
dimensions (all dimensions, or those left of the core dimensions a gufunc `signature` names), and `pyfunc`
is vmapped once per loop dimension."""
from __future__ import annotations

import functools
import re
from typing import Any, Callable

from ..errors import XlapyError
from ..frontend.transforms import vmap
from .creation import asarray
from .shape_ops import broadcast_shapes, broadcast_to

_DIMS = r"\((?:\w+(?:,\s*\w+)*)?\)"
_SIGNATURE = re.compile(rf"^\s*{_DIMS}(?:\s*,\s*{_DIMS})*\s*->\s*{_DIMS}(?:\s*,\s*{_DIMS})*\s*$")


def _parse_signature(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    if not _SIGNATURE.match(signature):
        raise XlapyError(f"vectorize: not a valid gufunc signature: {signature!r}")
    ins, outs = signature.split("->")

    def parts(text):
        return [tuple(d.strip() for d in g.split(",") if d.strip()) for g in re.findall(r"\(([^)]*)\)", text)]
    return parts(ins), parts(outs)


def vectorize(pyfunc: Callable, *, excluded: frozenset = frozenset(), signature: str | None = None) -> Callable:
    """A function that maps pyfunc over the broadcast loop dimensions of its arguments (jnp.vectorize).
    `excluded`: positions or keyword names passed to pyfunc unchanged; `signature`: core dimensions, e.g.
    "(n),(n)->()"."""
    core_in = _parse_signature(signature)[0] if signature is not None else None

    @functools.wraps(pyfunc)
    def wrapped(*args: Any, **kwargs: Any):
        fixed_kw = {k: v for k, v in kwargs.items() if k in excluded}
        mapped_kw = {k: v for k, v in kwargs.items() if k not in excluded}
        if mapped_kw:
            raise XlapyError(f"vectorize: keyword arguments must be excluded, got {sorted(mapped_kw)}")
        positions = [i for i in range(len(args)) if i not in excluded]
        arrays = [asarray(args[i]) for i in positions]
        if core_in is not None and len(core_in) != len(arrays):
            raise XlapyError(f"vectorize: the signature {signature!r} takes {len(core_in)} arguments, got "
                             f"{len(arrays)}")
        cores = [len(core_in[k]) if core_in is not None else 0 for k in range(len(arrays))]
        for a, c in zip(arrays, cores):
            if a.ndim < c:
                raise XlapyError(f"vectorize: an argument of shape {a.shape} has fewer dimensions than the "
                                 f"{c} core dimensions of {signature!r}")
        loop = broadcast_shapes(*[a.shape[:a.ndim - c] for a, c in zip(arrays, cores)]) if arrays else ()
        arrays = [broadcast_to(a, tuple(loop) + a.shape[a.ndim - c:]) for a, c in zip(arrays, cores)]

        def core(*xs):
            full = list(args)
            for i, x in zip(positions, xs):
                full[i] = x
            return pyfunc(*full, **fixed_kw)
        f = core
        for _ in range(len(loop)):
            f = vmap(f)
        return f(*arrays)
    return wrapped


__all__ = ["vectorize"]
