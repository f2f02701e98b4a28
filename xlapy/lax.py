"""xlapy.lax: JAX's lax API. Each function builds HLO through `bind` (see xlapy/frontend/__init__.py), so it
works traced under jit and eagerly on Arrays. Signatures and the HLO emitted follow JAX.

lax ops do not broadcast (except rank-0 operands) and do not promote dtypes, except that weakly typed
values (Python scalars) take the dtype of the other operands: `lax.add(x_f32, 1)` is f32.
Reductions, gather/scatter and sort live in frontend/lax_reduce.py, control flow in frontend/control_flow.py;
both are re-exported here.
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from .errors import XlapyError
from .hlo import Shape, type_name_of_dtype
from .hlo.attrs import ConvDimensionNumbers, PadDim, SliceRange, Window, WindowDim
from .frontend import dtypes
from .frontend.tracer import ShapedArray, Tracer, bind, concrete_value, user_frame


# -- operand helpers (used by every op library) -------------------------------------------------------

def aval(x: Any) -> ShapedArray:
    """The abstract value of any operand: a Tracer, an Array, a numpy value or a Python scalar."""
    a = getattr(x, "aval", None)
    if a is not None:
        return a
    if dtypes.is_python_scalar(x):
        t = dtypes.python_scalar_type(x)
        return ShapedArray((), t.dtype, t.weak)
    arr = concrete_value(x)
    return ShapedArray(tuple(arr.shape), arr.dtype, False)


def _shape_of(x: Any) -> tuple[int, ...]:
    return aval(x).shape


def _error(name: str, message: str) -> XlapyError:
    return XlapyError(f"lax.{name}: {message} (at {user_frame()})")


def _canon_axis(axis: int, ndim: int, name: str = "op") -> int:
    if not -ndim <= axis < builtins.max(ndim, 1):
        raise _error(name, f"axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim if ndim else 0


def _shape_text(x: Any) -> str:
    return str(aval(x))


def coerce_same(name: str, *xs: Any) -> tuple[list[Any], bool]:
    """lax's operand rule: equal dtypes, except weakly typed operands take the strong dtype; rank-0 operands
    broadcast to the common shape. Returns (operands, result is weak)."""
    avs = [aval(x) for x in xs]
    strong = [a.dtype for a in avs if not a.weak_type]
    if strong:
        target = strong[0]
        if any(d != target for d in strong):
            raise _error(name, "requires arguments to have the same dtypes, got "
                         + ", ".join(str(a.dtype) for a in avs))
        for a in avs:
            if a.weak_type and dtypes.promote(dtypes.DType(target), dtypes.DType(a.dtype, True)).dtype != target:
                raise _error(name, f"cannot combine a weakly typed {a.dtype} operand with {target} "
                                   f"(convert it explicitly)")
    else:
        target = dtypes.promote(*(dtypes.DType(a.dtype, True) for a in avs)).dtype
    shapes = {a.shape for a in avs if a.shape != ()}
    if len(shapes) > 1:
        raise _error(name, "shapes must be equal (lax does not broadcast), got "
                     + ", ".join(_shape_text(x) for x in xs))
    shape = shapes.pop() if shapes else ()
    out = []
    for x, a in zip(xs, avs):
        if a.dtype != target:
            x = _convert(x, target, a.weak_type)
        if a.shape != shape:
            x = bind("broadcast", [x], {"dimensions": ()}, shape=Shape.array(type_name_of_dtype(target), shape),
                     name="broadcast", weak_type=a.weak_type)
        out.append(x)
    return out, all(a.weak_type for a in avs)


def _convert(x: Any, dtype, weak: bool = False) -> Any:
    if not isinstance(x, Tracer) and not hasattr(x, "aval"):
        return np.asarray(concrete_value(x), dtype=dtype)     # a constant: convert in numpy
    return convert_element_type(x, dtype, weak_type=weak)


def _hlo_shape(dtype, dims) -> Shape:
    return Shape.array(type_name_of_dtype(np.dtype(dtype)), dims)


# -- elementwise ------------------------------------------------------------------------------------

def _unary(name: str, opcode: str, attrs: dict | None = None):
    def op(x):
        return bind(opcode, [x], attrs, name=name, weak_type=aval(x).weak_type)
    op.__name__ = name
    op.__doc__ = f"Elementwise `{opcode}` (lax.{name})."
    return op


def _binary(name: str, opcode: str, attrs: dict | None = None):
    def op(x, y):
        (x, y), weak = coerce_same(name, x, y)
        return bind(opcode, [x, y], attrs, name=name, weak_type=weak)
    op.__name__ = name
    op.__doc__ = f"Elementwise `{opcode}` (lax.{name}); operands share dtype and shape."
    return op


def _compare(name: str, direction: str):
    def op(x, y):
        (x, y), _ = coerce_same(name, x, y)
        return bind("compare", [x, y], {"direction": direction}, name=name)
    op.__name__ = name
    op.__doc__ = f"Elementwise comparison {direction} (lax.{name}) -> bool."
    return op


neg = _unary("neg", "negate")
abs = _unary("abs", "abs")
sign = _unary("sign", "sign")
floor = _unary("floor", "floor")
ceil = _unary("ceil", "ceil")
exp = _unary("exp", "exponential")
expm1 = _unary("expm1", "exponential-minus-one")
log = _unary("log", "log")
log1p = _unary("log1p", "log-plus-one")
logistic = _unary("logistic", "logistic")
tanh = _unary("tanh", "tanh")
sin = _unary("sin", "sine")
cos = _unary("cos", "cosine")
tan = _unary("tan", "tan")
sqrt = _unary("sqrt", "sqrt")
rsqrt = _unary("rsqrt", "rsqrt")
cbrt = _unary("cbrt", "cbrt")
erf = _unary("erf", "erf")
bitwise_not = _unary("not", "not")
population_count = _unary("population_count", "popcnt")
clz = _unary("clz", "count-leading-zeros")
real = _unary("real", "real")
imag = _unary("imag", "imag")


def is_finite(x):
    """Elementwise is-finite -> bool."""
    return bind("is-finite", [x], name="is_finite")


class RoundingMethod:
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x, rounding_method: int = RoundingMethod.AWAY_FROM_ZERO):
    opcode = "round-nearest-even" if int(rounding_method) == RoundingMethod.TO_NEAREST_EVEN else "round-nearest-afz"
    return bind(opcode, [x], name="round", weak_type=aval(x).weak_type)


add = _binary("add", "add")
sub = _binary("sub", "subtract")
mul = _binary("mul", "multiply")
div = _binary("div", "divide")
rem = _binary("rem", "remainder")
pow = _binary("pow", "power")
max = _binary("max", "maximum")
min = _binary("min", "minimum")
atan2 = _binary("atan2", "atan2")
bitwise_and = _binary("and", "and")
bitwise_or = _binary("or", "or")
bitwise_xor = _binary("xor", "xor")
shift_left = _binary("shift_left", "shift-left")
shift_right_arithmetic = _binary("shift_right_arithmetic", "shift-right-arithmetic")
shift_right_logical = _binary("shift_right_logical", "shift-right-logical")
complex = _binary("complex", "complex")
eq = _compare("eq", "EQ")
ne = _compare("ne", "NE")
lt = _compare("lt", "LT")
le = _compare("le", "LE")
gt = _compare("gt", "GT")
ge = _compare("ge", "GE")


def integer_pow(x, y: int):
    """x ** y for a static Python int y, by repeated multiplication (as JAX lowers it)."""
    if y == 0:
        return full_like(x, 1)
    acc, base, n = None, x, builtins.abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else mul(acc, base)
        n >>= 1
        if n:
            base = mul(base, base)
    return div(full_like(x, 1), acc) if y < 0 else acc




def select(pred, on_true, on_false):
    """Elementwise pred ? on_true : on_false (HLO select; JAX names it select_n)."""
    (on_true, on_false), weak = coerce_same("select", on_true, on_false)
    shape = aval(on_true).shape
    if aval(pred).dtype != np.bool_:
        raise _error("select", f"pred must be bool, got {aval(pred).dtype}")
    if aval(pred).shape != shape and aval(pred).shape == ():
        pred = broadcast(pred, shape)
    return bind("select", [pred, on_true, on_false], name="select_n", weak_type=weak)


def clamp(min, x, max):
    """Elementwise min(max(x, min), max); min and max may be scalars."""
    dt = aval(x).dtype
    lo = _convert(min, dt) if aval(min).dtype != dt else min
    hi = _convert(max, dt) if aval(max).dtype != dt else max
    return bind("clamp", [lo, x, hi], name="clamp", weak_type=aval(x).weak_type)


def convert_element_type(operand, new_dtype, weak_type: bool = False):
    """Convert to `new_dtype` (canonicalized: float64 -> float32 unless enable_x64)."""
    new_dtype = dtypes.canonicalize(new_dtype)
    a = aval(operand)
    if a.dtype == new_dtype and a.weak_type == weak_type and hasattr(operand, "aval"):
        return operand
    if not hasattr(operand, "aval"):
        operand = concrete_value(operand)
    if a.dtype == new_dtype:
        return _rebrand(operand, weak_type)
    return bind("convert", [operand], shape=_hlo_shape(new_dtype, a.shape), name="convert_element_type",
                weak_type=weak_type)


def _rebrand(x, weak_type: bool):
    """The same value with a different weak-type flag (no HLO)."""
    if isinstance(x, Tracer):
        return Tracer(x.trace, x.inst, weak_type)
    from .frontend.array import Array
    return Array(np.asarray(x), weak_type=weak_type)


def bitcast_convert_type(operand, new_dtype):
    """Reinterpret the bits; a narrower type adds a trailing dimension, a wider one consumes it."""
    a = aval(operand)
    new_dtype = np.dtype(new_dtype)
    old_bits, new_bits = a.dtype.itemsize, new_dtype.itemsize
    if new_bits == old_bits:
        dims = a.shape
    elif new_bits < old_bits:
        dims = a.shape + (old_bits // new_bits,)
    else:
        if not a.shape or a.shape[-1] != new_bits // old_bits:
            raise _error("bitcast_convert_type", f"cannot bitcast {a} to {new_dtype}: the last dimension must "
                                                 f"be {new_bits // old_bits}")
        dims = a.shape[:-1]
    return bind("bitcast-convert", [operand], shape=_hlo_shape(new_dtype, dims), name="bitcast_convert_type")


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    return bind("reduce-precision", [operand], {"exponent_bits": int(exponent_bits),
                                                "mantissa_bits": int(mantissa_bits)}, name="reduce_precision",
                weak_type=aval(operand).weak_type)


# -- shapes and data movement ----------------------------------------------------------------------

def broadcast_in_dim(operand, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    """operand dimension i becomes output dimension broadcast_dimensions[i] (size equal, or 1 to expand)."""
    a = aval(operand)
    shape, bdims = tuple(int(d) for d in shape), tuple(int(d) for d in broadcast_dimensions)
    if len(bdims) != a.ndim or any(not 0 <= d < len(shape) for d in bdims) or list(bdims) != sorted(set(bdims)):
        raise _error("broadcast_in_dim", f"broadcast_dimensions {bdims} do not map {a} into shape {shape}")
    for i, d in enumerate(bdims):
        if a.shape[i] not in (1, shape[d]):
            raise _error("broadcast_in_dim", f"operand {a} dimension {i} (size {a.shape[i]}) cannot broadcast "
                                             f"to size {shape[d]} of {shape}")
    if a.shape == shape and bdims == tuple(range(len(shape))):
        return operand
    keep = [i for i in range(a.ndim) if a.shape[i] == shape[bdims[i]]]
    if len(keep) != a.ndim:     # HLO broadcast cannot expand size-1 dims: reshape them away first
        operand = reshape(operand, tuple(a.shape[i] for i in keep))
        bdims = tuple(bdims[i] for i in keep)
    return bind("broadcast", [operand], {"dimensions": bdims}, shape=_hlo_shape(a.dtype, shape),
                name="broadcast_in_dim", weak_type=a.weak_type)


def broadcast(operand, sizes: Sequence[int]):
    """Prepend dimensions `sizes`."""
    a = aval(operand)
    sizes = tuple(sizes)
    return broadcast_in_dim(operand, sizes + a.shape, tuple(range(len(sizes), len(sizes) + a.ndim)))


def reshape(operand, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None):
    a = aval(operand)
    new_sizes = tuple(int(d) for d in new_sizes)
    if -1 in new_sizes:
        known = int(np.prod([d for d in new_sizes if d != -1]))
        new_sizes = tuple(a.size // known if d == -1 and known else d for d in new_sizes)
    if int(np.prod(new_sizes, dtype=np.int64)) != a.size:
        raise _error("reshape", f"cannot reshape {a} ({a.size} elements) to {new_sizes}")
    if dimensions is not None and tuple(dimensions) != tuple(range(a.ndim)):
        operand = transpose(operand, dimensions)
    elif new_sizes == a.shape:
        return operand
    return bind("reshape", [operand], shape=_hlo_shape(a.dtype, new_sizes), name="reshape",
                weak_type=a.weak_type)


def transpose(operand, permutation: Sequence[int]):
    a = aval(operand)
    perm = tuple(int(p) for p in permutation)
    if sorted(perm) != list(range(a.ndim)):
        raise _error("transpose", f"permutation {perm} is not a permutation of the dimensions of {a}")
    if perm == tuple(range(a.ndim)):
        return operand
    return bind("transpose", [operand], {"dimensions": perm}, name="transpose", weak_type=a.weak_type)


def squeeze(array, dimensions: Sequence[int]):
    a = aval(array)
    dims = {_canon_axis(d, a.ndim, "squeeze") for d in dimensions}
    for d in dims:
        if a.shape[d] != 1:
            raise _error("squeeze", f"dimension {d} of {a} has size {a.shape[d]}, not 1")
    return reshape(array, tuple(s for i, s in enumerate(a.shape) if i not in dims))


def expand_dims(array, dimensions: Sequence[int]):
    a = aval(array)
    out_ndim = a.ndim + len(dimensions)
    dims = sorted(_canon_axis(d, out_ndim, "expand_dims") for d in dimensions)
    shape = list(a.shape)
    for d in dims:
        shape.insert(d, 1)
    return reshape(array, shape)


def slice(operand, start_indices: Sequence[int], limit_indices: Sequence[int], strides: Sequence[int] | None = None):
    a = aval(operand)
    strides = tuple(strides) if strides is not None else (1,) * a.ndim
    if not len(start_indices) == len(limit_indices) == len(strides) == a.ndim:
        raise _error("slice", f"start {tuple(start_indices)}, limit {tuple(limit_indices)} and strides {strides} "
                              f"must each have one entry per dimension of {a}")
    ranges = tuple(SliceRange(int(s), int(l), int(st)) for s, l, st in zip(start_indices, limit_indices, strides))
    return bind("slice", [operand], {"slice": ranges}, name="slice", weak_type=a.weak_type)


def _index_operands(name: str, indices: Sequence[Any], ndim: int) -> list[Any]:
    if len(indices) != ndim:
        raise _error(name, f"needs {ndim} start indices, got {len(indices)}")
    out = []
    for i in indices:
        ia = aval(i)
        if ia.shape != ():
            raise _error(name, f"start indices must be scalars, got {ia}")
        if ia.dtype.kind not in "iu":
            raise _error(name, f"start indices must be integers, got {ia.dtype}")
        out.append(_convert(i, dtypes.int32) if ia.dtype != dtypes.int32 or ia.weak_type else i)
    return out


def dynamic_slice(operand, start_indices: Sequence[Any], slice_sizes: Sequence[int]):
    """A slice at runtime start indices (clamped so the slice stays in bounds)."""
    a = aval(operand)
    starts = _index_operands("dynamic_slice", list(start_indices), a.ndim)
    return bind("dynamic-slice", [operand] + starts, {"dynamic_slice_sizes": tuple(int(s) for s in slice_sizes)},
                name="dynamic_slice", weak_type=a.weak_type)


def dynamic_update_slice(operand, update, start_indices: Sequence[Any]):
    a = aval(operand)
    starts = _index_operands("dynamic_update_slice", list(start_indices), a.ndim)
    if aval(update).dtype != a.dtype:
        update = _convert(update, a.dtype)
    return bind("dynamic-update-slice", [operand, update] + starts, name="dynamic_update_slice",
                weak_type=a.weak_type)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True):
    a = aval(operand)
    axis = _canon_axis(axis, a.ndim, "dynamic_index_in_dim")
    starts = [0] * a.ndim
    starts[axis] = index
    sizes = list(a.shape)
    sizes[axis] = 1
    out = dynamic_slice(operand, starts, sizes)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_index_in_dim(operand, update, index, axis: int = 0):
    a = aval(operand)
    axis = _canon_axis(axis, a.ndim, "dynamic_update_index_in_dim")
    if aval(update).ndim == a.ndim - 1:
        update = expand_dims(update, (axis,))
    starts = [0] * a.ndim
    starts[axis] = index
    return dynamic_update_slice(operand, update, starts)


def concatenate(operands: Sequence[Any], dimension: int):
    operands = list(operands)
    if not operands:
        raise _error("concatenate", "needs at least one operand")
    operands, weak = coerce_same_dtype("concatenate", operands)
    return bind("concatenate", operands, {"dimensions": (int(dimension),)}, name="concatenate", weak_type=weak)


def coerce_same_dtype(name: str, xs: Sequence[Any]) -> tuple[list[Any], bool]:
    """Like coerce_same but without the shape check (for concatenate, pad)."""
    avs = [aval(x) for x in xs]
    strong = {a.dtype for a in avs if not a.weak_type}
    if len(strong) > 1:
        raise _error(name, "requires arguments to have the same dtypes, got " + ", ".join(str(a.dtype) for a in avs))
    target = strong.pop() if strong else dtypes.promote(*(dtypes.DType(a.dtype, True) for a in avs)).dtype
    return [x if a.dtype == target else _convert(x, target, a.weak_type) for x, a in zip(xs, avs)], \
        all(a.weak_type for a in avs)


def pad(operand, padding_value, padding_config: Sequence[tuple[int, int, int]]):
    """Pad with (low, high, interior) per dimension; negative low/high crop."""
    a = aval(operand)
    if aval(padding_value).dtype != a.dtype:
        padding_value = _convert(padding_value, a.dtype)
    cfg = tuple(PadDim(int(lo), int(hi), int(interior)) for lo, hi, interior in padding_config)
    return bind("pad", [operand, padding_value], {"padding": cfg}, name="pad", weak_type=a.weak_type)


def rev(operand, dimensions: Sequence[int]):
    return bind("reverse", [operand], {"dimensions": tuple(int(d) for d in dimensions)}, name="rev",
                weak_type=aval(operand).weak_type)


def iota(dtype, size: int):
    dtype = dtypes.canonicalize(dtype)
    return bind("iota", [], {"iota_dimension": 0}, shape=_hlo_shape(dtype, (int(size),)), name="iota")


def broadcasted_iota(dtype, shape: Sequence[int], dimension: int):
    dtype = dtypes.canonicalize(dtype)
    shape = tuple(int(s) for s in shape)
    return broadcast_in_dim(iota(dtype, shape[dimension]), shape, (dimension,))


def full(shape: Sequence[int], fill_value, dtype=None):
    dtype = dtypes.canonicalize(dtype) if dtype is not None else aval(fill_value).dtype
    weak = dtype is None and aval(fill_value).weak_type
    value = _convert(fill_value, dtype) if aval(fill_value).dtype != dtype else fill_value
    if not hasattr(value, "aval"):
        value = np.asarray(concrete_value(value), dtype=dtype)
    out = broadcast(value, tuple(shape)) if tuple(shape) else value
    return out if not weak else _rebrand(out, True)


def full_like(x, fill_value, dtype=None, shape=None):
    a = aval(x)
    return full(a.shape if shape is None else shape, fill_value, dtype or a.dtype)


def zeros_like_array(x):
    return full_like(x, 0)


# -- dot and convolution ---------------------------------------------------------------------------

class Precision:
    DEFAULT = "default"
    HIGH = "high"
    HIGHEST = "highest"


def _precision_attr(precision) -> dict:
    if precision is None:
        return {}
    pair = precision if isinstance(precision, (tuple, list)) else (precision, precision)
    words = tuple(str(getattr(p, "name", p)).lower() for p in pair)
    if words == ("default", "default"):
        return {}
    return {"operand_precision": words}


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)); the result is
    batch dims, then lhs free dims, then rhs free dims."""
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = (tuple(int(d) for d in v) for v in (lc, rc, lb, rb))
    (lhs, rhs), _ = coerce_same_dtype("dot_general", [lhs, rhs])
    la, ra = aval(lhs), aval(rhs)
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise _error("dot_general", f"dimension_numbers {dimension_numbers} pair unequal numbers of dimensions")
    for l, r, what in [(lc, rc, "contracting"), (lb, rb, "batch")]:
        for i, j in zip(l, r):
            if not (0 <= i < la.ndim and 0 <= j < ra.ndim) or la.shape[i] != ra.shape[j]:
                raise _error("dot_general", f"{what} dimensions {l} of {la} and {r} of {ra} do not match")
    free_l = [d for d in range(la.ndim) if d not in lc and d not in lb]
    free_r = [d for d in range(ra.ndim) if d not in rc and d not in rb]
    dims = [la.shape[d] for d in lb] + [la.shape[d] for d in free_l] + [ra.shape[d] for d in free_r]
    out_dtype = dtypes.canonicalize(preferred_element_type) if preferred_element_type is not None else la.dtype
    attrs = {}
    if lb:
        attrs["lhs_batch_dims"] = lb
    attrs["lhs_contracting_dims"] = lc
    if rb:
        attrs["rhs_batch_dims"] = rb
    attrs["rhs_contracting_dims"] = rc
    attrs.update(_precision_attr(precision))
    return bind("dot", [lhs, rhs], attrs, shape=_hlo_shape(out_dtype, dims), name="dot_general")


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix products: contracts the last dim of lhs with the first (rank 1) or second-to-last of rhs."""
    la, ra = aval(lhs), aval(rhs)
    if la.ndim not in (1, 2) or ra.ndim not in (1, 2):
        raise _error("dot", f"expects rank-1 or rank-2 operands, got {la} and {ra}")
    return dot_general(lhs, rhs, (((la.ndim - 1,), (0,)), ((), ())), precision, preferred_element_type)


def _conv_specs(dimension_numbers, ndim: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(lhs, rhs, out) specs as (batch/out-feature, feature/in-feature, spatial...) dimension indices."""
    if dimension_numbers is None:
        default = tuple(range(ndim))
        return default, default, default
    lhs, rhs, out = dimension_numbers
    if isinstance(lhs, str):
        if not len(lhs) == len(rhs) == len(out) == ndim:
            raise _error("conv_general_dilated", f"dimension_numbers {dimension_numbers} do not have rank {ndim}")
        spatial_rhs = [c for c in rhs if c not in "OI"]

        def spec(s: str, first: str, second: str) -> tuple[int, ...]:
            spatial = sorted((c for c in s if c not in (first, second)), key=lambda c: spatial_rhs.index(c))
            return (s.index(first), s.index(second)) + tuple(s.index(c) for c in spatial)
        return spec(lhs, "N", "C"), spec(rhs, "O", "I"), spec(out, "N", "C")
    return tuple(lhs), tuple(rhs), tuple(out)


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int], window_strides: Sequence[int],
                    padding: str) -> list[tuple[int, int]]:
    """'SAME' / 'SAME_LOWER' / 'VALID' -> (low, high) per spatial dimension, as JAX computes them."""
    p = padding.upper()
    if p == "VALID":
        return [(0, 0)] * len(in_shape)
    if p not in ("SAME", "SAME_LOWER"):
        raise _error("padding", f"unknown padding {padding!r}; use 'SAME', 'SAME_LOWER', 'VALID' or pairs")
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        out = -(-n // s)
        total = builtins.max(0, (out - 1) * s + w - n)
        lo = total // 2 if p == "SAME" else -(-total // 2)
        pads.append((lo, total - lo))
    return pads




def conv_general_dilated(lhs, rhs, window_strides: Sequence[int], padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count: int = 1, batch_group_count: int = 1,
                         precision=None, preferred_element_type=None):
    (lhs, rhs), _ = coerce_same_dtype("conv_general_dilated", [lhs, rhs])
    la, ra = aval(lhs), aval(rhs)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise _error("conv_general_dilated", f"lhs {la} and rhs {ra} must have equal rank >= 2")
    ls, rs, os_ = _conv_specs(dimension_numbers, la.ndim)
    nsp = la.ndim - 2
    strides = tuple(window_strides) or (1,) * nsp
    lhs_dil = tuple(lhs_dilation) if lhs_dilation else (1,) * nsp
    rhs_dil = tuple(rhs_dilation) if rhs_dilation else (1,) * nsp
    window = [ra.shape[d] for d in rs[2:]]
    if isinstance(padding, str):
        in_sp = [(la.shape[d] - 1) * lhs_dil[i] + 1 if la.shape[d] else 0 for i, d in enumerate(ls[2:])]
        win_sp = [(w - 1) * rhs_dil[i] + 1 for i, w in enumerate(window)]
        pads = padtype_to_pads(in_sp, win_sp, strides, padding)
    else:
        pads = [tuple(p) for p in padding]
    dnums = ConvDimensionNumbers.from_dims(ls[0], ls[1], ls[2:], rs[1], rs[0], rs[2:], os_[0], os_[1], os_[2:])
    win = Window(tuple(WindowDim(window[i], int(strides[i]), int(pads[i][0]), int(pads[i][1]), int(rhs_dil[i]),
                                 int(lhs_dil[i])) for i in range(nsp)))
    attrs = {"window": win, "dim_labels": dnums}
    if feature_group_count != 1:
        attrs["feature_group_count"] = int(feature_group_count)
    if batch_group_count != 1:
        attrs["batch_group_count"] = int(batch_group_count)
    attrs.update(_precision_attr(precision))
    dims = [0] * la.ndim
    dims[os_[0]] = la.shape[ls[0]] // int(batch_group_count)
    dims[os_[1]] = ra.shape[rs[0]]
    for i, d in enumerate(os_[2:]):
        w = win.dims[i]
        size = (la.shape[ls[2 + i]] - 1) * w.base_dilation + 1 + w.padding_low + w.padding_high
        span = (w.size - 1) * w.window_dilation + 1
        dims[d] = builtins.max(0, (size - span) // w.stride + 1) if size >= span else 0
    out_dtype = la.dtype if preferred_element_type is None else dtypes.canonicalize(preferred_element_type)
    shape = _hlo_shape(out_dtype, dims)
    return bind("convolution", [lhs, rhs], attrs, shape=shape, name="conv_general_dilated")



_CONV_TRANSPOSE_DEFAULT_DIMS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                                5: ("NHWDC", "HWDIO", "NHWDC")}


def _conv_transpose_padding(k: int, s: int, padding: str) -> tuple[int, int]:
    """JAX's padding of the dilated input for a transposed convolution with kernel extent k and stride s."""
    if padding == "SAME":
        total = k + s - 2
        low = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + builtins.max(k - s, 0)
        low = k - 1
    else:
        raise _error("conv_transpose", f"unknown padding {padding!r}; use 'SAME', 'VALID' or pairs")
    return low, total - low


def conv_transpose(lhs, rhs, strides: Sequence[int], padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None):
    """JAX's lax.conv_transpose: the gradient-of-convolution form, a convolution of the stride-dilated input
    (lhs_dilation = strides) with padding chosen so that 'SAME'/'VALID' invert a forward convolution's shapes.
    transpose_kernel flips the kernel's spatial dims and swaps its input and output feature dims."""
    la, ra = aval(lhs), aval(rhs)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise _error("conv_transpose", f"lhs {la} and rhs {ra} must have equal rank >= 2")
    if dimension_numbers is None:
        dimension_numbers = _CONV_TRANSPOSE_DEFAULT_DIMS.get(la.ndim)
    _, rs, _ = _conv_specs(dimension_numbers, la.ndim)
    nsp = la.ndim - 2
    rhs_dil = tuple(rhs_dilation) if rhs_dilation else (1,) * nsp
    kernel = [(ra.shape[d] - 1) * rhs_dil[i] + 1 for i, d in enumerate(rs[2:])]
    if isinstance(padding, str):
        pads = [_conv_transpose_padding(k, int(st), padding.upper()) for k, st in zip(kernel, strides)]
    else:
        pads = [tuple(p) for p in padding]
    if transpose_kernel:
        rhs = rev(rhs, rs[2:])
        perm = list(range(ra.ndim))
        perm[rs[0]], perm[rs[1]] = perm[rs[1]], perm[rs[0]]
        rhs = transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * nsp, pads, lhs_dilation=tuple(strides), rhs_dilation=rhs_dil,
                                dimension_numbers=dimension_numbers, precision=precision,
                                preferred_element_type=preferred_element_type)

def stop_gradient(x):
    """The identity, marked for autodiff: emits `copy` with metadata op_name="stop_gradient" (an HLO marker
    that autodiff treats as a constant; optimization removes the copy)."""
    from .frontend.pytree import tree_map
    return tree_map(lambda v: bind("copy", [v], {"metadata": '{op_name="stop_gradient"}'}, name="stop_gradient",
                                   weak_type=aval(v).weak_type), x)


def optimization_barrier(operand):
    """Stops the optimizer from moving computation across this point; takes and returns a pytree."""
    from .frontend.pytree import tree_flatten, tree_unflatten
    leaves, tree = tree_flatten(operand)
    return tree_unflatten(tree, _barrier_list(leaves))


def _barrier_list(leaves):
    from .frontend.tracer import current_trace, results_of
    from .passes.build import make
    trace = current_trace()
    if trace is None:       # eager: the barrier has no effect on values
        return leaves
    ops = [trace.lift(v) for v in leaves]
    tup = trace.comp.add_instruction(make("tuple", [o.inst for o in ops], name="optimization_barrier"))
    return results_of(trace, make("opt-barrier", [tup], name="optimization_barrier"))


def rng_bit_generator(key, shape: Sequence[int], dtype=np.uint32, algorithm: str = "default"):
    """(new_key, random bits of `shape`) from a u32[4] (or u64[2]) key, as JAX lowers it."""
    ka = aval(key)
    dtype = np.dtype(dtype)
    alg = {"default": "rng_default", "three_fry": "rng_three_fry", "threefry": "rng_three_fry",
           "philox": "rng_philox"}[str(getattr(algorithm, "name", algorithm)).lower()]
    state = key
    if ka.dtype == np.uint32:
        state = bitcast_convert_type(reshape(key, (ka.size // 2, 2)), np.uint64)
    state_shape = aval(state).hlo_shape
    out_shape = Shape.tuple_of([state_shape, _hlo_shape(dtype, tuple(shape))])
    new_state, bits = bind("rng-bit-generator", [state], {"algorithm": alg}, shape=out_shape,
                           name="rng_bit_generator")
    if ka.dtype == np.uint32:
        new_state = reshape(bitcast_convert_type(new_state, np.uint32), ka.shape)
    return new_state, bits


from .frontend.lax_reduce import *  # noqa: E402,F401,F403
from .frontend.lax_reduce import __all__ as _reduce_all  # noqa: E402
from .frontend.control_flow import *  # noqa: E402,F401,F403
from .frontend.control_flow import __all__ as _control_all  # noqa: E402
