"""Python operators and array methods shared by Tracer (traced) and Array (concrete): numpy semantics over lax.

Binary operators promote with JAX's rules (dtypes.py) and broadcast like numpy; the work is in operators.py,
imported lazily because it builds on lax which builds on the tracer. The methods JAX arrays have (`x.var()`,
`x.cumsum()`, `x.clip()` ...) call the xlapy.numpy function of the same name, imported lazily for the same reason.
"""
from __future__ import annotations


def _ops():
    from . import operators
    return operators


def _numpy():
    from .. import numpy
    return numpy


def _delegate(name: str, numpy_name: str | None = None):
    """A method `x.name(*args, **kwargs)` calling `xlapy.numpy.<numpy_name>(x, *args, **kwargs)`."""
    def method(self, *args, **kwargs):
        return getattr(_numpy(), numpy_name or name)(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"`xlapy.numpy.{numpy_name or name}(x, ...)` (as jax.Array.{name})."
    return method


def _binary(name: str, reflected: bool = False):
    def method(self, other):
        fn = getattr(_ops(), name)
        return fn(other, self) if reflected else fn(self, other)
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


class ArrayOps:
    """Operator methods; subclasses provide `aval`, `shape`, `dtype`, `ndim`."""
    __slots__ = ()

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("true_divide"), _binary("true_divide", True)
    __floordiv__, __rfloordiv__ = _binary("floor_divide"), _binary("floor_divide", True)
    __mod__, __rmod__ = _binary("mod"), _binary("mod", True)
    __pow__, __rpow__ = _binary("power"), _binary("power", True)
    __matmul__, __rmatmul__ = _binary("matmul"), _binary("matmul", True)
    __and__, __rand__ = _binary("bitwise_and"), _binary("bitwise_and", True)
    __or__, __ror__ = _binary("bitwise_or"), _binary("bitwise_or", True)
    __xor__, __rxor__ = _binary("bitwise_xor"), _binary("bitwise_xor", True)
    __lshift__, __rlshift__ = _binary("left_shift"), _binary("left_shift", True)
    __rshift__, __rrshift__ = _binary("right_shift"), _binary("right_shift", True)
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")

    def __neg__(self):
        return _ops().negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _ops().absolute(self)

    def __invert__(self):
        return _ops().invert(self)

    def __getitem__(self, index):
        from .indexing import getitem
        return getitem(self, index)

    @property
    def at(self):
        from .indexing import IndexUpdateHelper
        return IndexUpdateHelper(self)

    @property
    def T(self):
        return _ops().transpose(self)

    def astype(self, dtype):
        return _ops().astype(self, dtype)

    def reshape(self, *shape, order: str = "C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _ops().reshape(self, shape)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _ops().transpose(self, axes or None)

    def sum(self, axis=None, keepdims: bool = False, dtype=None):
        return _ops().reduction("sum", self, axis, keepdims, dtype)

    def mean(self, axis=None, keepdims: bool = False, dtype=None):
        return _ops().mean(self, axis, keepdims, dtype)

    def max(self, axis=None, keepdims: bool = False):
        return _ops().reduction("max", self, axis, keepdims)

    def min(self, axis=None, keepdims: bool = False):
        return _ops().reduction("min", self, axis, keepdims)

    def ravel(self, order: str = "C"):
        return _ops().reshape(self, (self.size,))

    def flatten(self, order: str = "C"):
        return self.ravel(order)

    def squeeze(self, axis=None):
        return _ops().squeeze(self, axis)

    any, all, prod = _delegate("any"), _delegate("all"), _delegate("prod")
    var, std = _delegate("var"), _delegate("std")
    cumsum, cumprod = _delegate("cumsum"), _delegate("cumprod")
    argmax, argmin = _delegate("argmax"), _delegate("argmin")
    sort, argsort = _delegate("sort"), _delegate("argsort")
    clip, round, take, dot = _delegate("clip"), _delegate("round"), _delegate("take"), _delegate("dot")
    swapaxes = _delegate("swapaxes")
    conj, conjugate = _delegate("conj", "conjugate"), _delegate("conjugate")

    @property
    def real(self):
        return _numpy().real(self)

    @property
    def imag(self):
        return _numpy().imag(self)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize
