"""ArrayOps, the base class of Tracer (traced) and Array (concrete): the Python operators and array methods that
JAX arrays have, declared here and defined by xlapy.numpy.

`x + y`, `x[i]`, `x.at[i].set(v)`, `x.T`, `x.sum()`, `x.var()` ... have numpy semantics, written over lax in the
layers above the core: frontend/operators.py and frontend/indexing.py, and xlapy.numpy. The core (tracer.py,
array.py) must not import those layers, so, as jax/_src/numpy/array_methods.py does for jax.Array,
xlapy/numpy/array_methods.py attaches the definitions with `attach_array_methods` when xlapy.numpy is imported
(`import xlapy` imports it, so does importing any xlapy module). Until then each of them raises an XlapyError
that says so, rather than Python's "unsupported operand type".
"""
from __future__ import annotations

from typing import Callable, Mapping

from ..errors import XlapyError

# Every method and property that xlapy.numpy attaches (attach_array_methods checks that it gets exactly these).
ARRAY_METHODS = (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
    "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__",
    "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__lshift__", "__rlshift__", "__rshift__",
    "__rrshift__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__neg__", "__abs__", "__invert__",
    "__getitem__",
    "astype", "reshape", "transpose", "ravel", "squeeze", "sum", "mean", "max", "min", "any", "all", "prod", "var",
    "std", "cumsum", "cumprod", "argmax", "argmin", "sort", "argsort", "clip", "round", "take", "dot", "swapaxes",
    "conj", "conjugate",
)
ARRAY_PROPERTIES = ("at", "T", "real", "imag")


class ArrayOps:
    """Operator methods; subclasses provide `aval`, `shape`, `dtype`, `ndim`, `size`. The names in ARRAY_METHODS
    and ARRAY_PROPERTIES are set on this class by `attach_array_methods`."""
    __slots__ = ()
    __hash__ = None     # it has __eq__ (attached): subclasses say how they hash, as before

    def __pos__(self):
        return self

    def flatten(self, order: str = "C"):
        return self.ravel(order)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize


def attach_array_methods(methods: Mapping[str, Callable], properties: Mapping[str, Callable]) -> None:
    """Set the array methods (ARRAY_METHODS: name -> function of self, ...) and properties (ARRAY_PROPERTIES:
    name -> getter) on ArrayOps; each table must name exactly those."""
    for table, declared in ((methods, ARRAY_METHODS), (properties, ARRAY_PROPERTIES)):
        missing, unknown = set(declared) - set(table), set(table) - set(declared)
        if missing or unknown:
            raise XlapyError(f"attach_array_methods: missing {sorted(missing)}, not declared {sorted(unknown)}")
    for name, method in methods.items():
        setattr(ArrayOps, name, method)
    for name, getter in properties.items():
        setattr(ArrayOps, name, property(getter))


def _not_attached(name: str) -> Callable:
    def method(self, *args, **kwargs):
        raise XlapyError(f"{type(self).__name__}.{name} is defined by xlapy.numpy, which is not imported yet "
                         f"(import xlapy, or xlapy.numpy, before using array operators and methods)")
    method.__name__ = name
    return method


def _declare() -> None:
    """Until xlapy.numpy attaches them, every declared method and property raises `_not_attached`'s error."""
    attach_array_methods({name: _not_attached(name) for name in ARRAY_METHODS},
                         {name: _not_attached(name) for name in ARRAY_PROPERTIES})


_declare()
