"""Shape inference: the output shape of every opcode from its operands and attributes (XLA's ShapeInference).

A rule is `rule(inst, shapes) -> Shape | None`: `shapes` are the operand shapes; the result is the
inferred shape, or None where the declared shape is trusted (collectives, custom-calls, async ops ...).
A rule that finds its operands wrong raises HloVerifierError naming the instruction (see `fail`).
RULES merges the tables of the op-family files, so the rule for an opcode is found by reading one table:

  shape_inference.py           elementwise unary/binary/ternary, convert, simple and trusted ops
  shape_inference_movement.py  broadcast, reshape, transpose, slice, concatenate, pad, gather, scatter ...
  shape_inference_compute.py   reduce, windows, sort, map, dot, convolution, batch-norm, control flow, calls
"""
from __future__ import annotations

from typing import Callable, NoReturn, Sequence

from ..errors import HloVerifierError
from .ir import Computation, Instruction
from .shape import PRIMITIVE_TYPES, Shape
from .tables import merge_rule_tables, module_tables

Rule = Callable[[Instruction, Sequence[Shape]], "Shape | None"]


# -- helpers shared by the op-family files -------------------------------------------------------------
def text(shape: Shape) -> str:
    return shape.to_text(print_layout=False)


def shapes_text(shapes: Sequence[Shape]) -> str:
    return "(" + ", ".join(text(s) for s in shapes) + ")"


def fail(inst: Instruction, message: str) -> NoReturn:
    """Raise HloVerifierError as `name: message`; the opcode is added where the name does not show it."""
    who = inst.name if inst.opcode in inst.name else f"{inst.name} ({inst.opcode})"
    raise HloVerifierError(f"{who}: {message}")


def array(element_type: str, dims) -> Shape:
    return Shape(element_type, tuple(dims))


def scalar(element_type: str) -> Shape:
    return Shape(element_type, ())


def tuple_or_single(shapes: Sequence[Shape]) -> Shape:
    """One shape for one result, a tuple for several (variadic reduce, sort, scatter ...)."""
    return shapes[0] if len(shapes) == 1 else Shape.tuple_of(shapes)


def expect_array(inst: Instruction, shapes: Sequence[Shape], i: int) -> Shape:
    if i >= len(shapes):
        fail(inst, f"{inst.opcode} needs at least {i + 1} operands, got {len(shapes)}: {shapes_text(shapes)}")
    s = shapes[i]
    if s.is_tuple or not s.ptype.is_array_type:
        fail(inst, f"operand {i} must be an array, but has shape {text(s)}")
    return s


def expect_scalar(inst: Instruction, shapes: Sequence[Shape], i: int, what: str = "") -> Shape:
    s = expect_array(inst, shapes, i)
    if s.dims:
        fail(inst, f"operand {i}{' (' + what + ')' if what else ''} must be a scalar, but has shape {text(s)}")
    return s


def expect_same_type(inst: Instruction, shapes: Sequence[Shape], indices: Sequence[int]) -> str:
    first = indices[0]
    t = shapes[first].element_type
    for i in indices[1:]:
        if shapes[i].element_type != t:
            fail(inst, f"operand {i} has element type {shapes[i].element_type} but operand {first} has {t}"
                       f" (operand shapes {shapes_text(shapes)})")
    return t


def expect_same_dims(inst: Instruction, shapes: Sequence[Shape], indices: Sequence[int]) -> tuple[int, ...]:
    first = indices[0]
    dims = shapes[first].dims
    for i in indices[1:]:
        if shapes[i].dims != dims:
            fail(inst, f"operand {i} has shape {text(shapes[i])} but operand {first} has {text(shapes[first])};"
                       f" they must have the same dimensions")
    return dims


def expect_dims_in_range(inst: Instruction, attr: str, dims: Sequence[int], rank: int, unique: bool = True) -> None:
    for d in dims:
        if not 0 <= d < rank:
            fail(inst, f"{attr}={{{','.join(map(str, dims))}}} has dimension {d} out of range for rank {rank}")
    if unique and len(set(dims)) != len(dims):
        fail(inst, f"{attr}={{{','.join(map(str, dims))}}} repeats a dimension")


def int_attr(inst: Instruction, key: str, default: int | None = None) -> int:
    v = inst.attrs.get(key, default)
    if v is None:
        fail(inst, f"missing attribute {key}")
    return int(v)


def ints_attr(inst: Instruction, key: str, default: tuple[int, ...] | None = None) -> tuple[int, ...]:
    v = inst.attrs.get(key, default)
    if v is None:
        fail(inst, f"missing attribute {key}")
    if isinstance(v, int):
        return (v,)
    return tuple(v)


def computation_attr(inst: Instruction, key: str) -> Computation:
    c = inst.attrs.get(key)
    if isinstance(c, list) and len(c) == 1:
        c = c[0]
    if not isinstance(c, Computation):
        fail(inst, f"attribute {key} must name a computation, got {c!r}")
    return c


def check_signature(inst: Instruction, comp: Computation, what: str, params: Sequence[Shape],
                    result: Shape | None = None) -> Shape:
    """The called computation takes `params` (and returns `result` if given); returns its root's shape."""
    got = comp.parameters
    if len(got) != len(params):
        fail(inst, f"{what} {comp.name} takes {len(got)} parameters {shapes_text([p.shape for p in got])}, "
                   f"but the op passes {len(params)} {shapes_text(params)}")
    for i, (p, want) in enumerate(zip(got, params)):
        if not p.shape.compatible(want):
            fail(inst, f"{what} {comp.name} parameter {i} has shape {text(p.shape)}, but the op passes "
                       f"{text(want)}")
    if comp.root is None:
        fail(inst, f"{what} {comp.name} has no root")
    root = comp.root.shape
    if result is not None and not root.compatible(result):
        fail(inst, f"{what} {comp.name} returns {text(root)}, but {text(result)} is required")
    return root


# -- elementwise -------------------------------------------------------------------------------------
def _unary(allowed: Callable[[str], bool], requirement: str, result_type: Callable[[str], str] | None = None) -> Rule:
    def rule(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
        s = expect_array(inst, shapes, 0)
        if not allowed(s.element_type):
            fail(inst, f"operand 0 has shape {text(s)}; {inst.opcode} needs {requirement} elements")
        return array(result_type(s.element_type) if result_type else s.element_type, s.dims)
    return rule


def _binary(allowed: Callable[[str], bool], requirement: str, result_type: Callable[[str], str] | None = None) -> Rule:
    def rule(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
        expect_array(inst, shapes, 0)
        expect_array(inst, shapes, 1)
        t = expect_same_type(inst, shapes, (0, 1))
        dims = expect_same_dims(inst, shapes, (0, 1))
        if not allowed(t):
            fail(inst, f"operands {shapes_text(shapes)}; {inst.opcode} needs {requirement} elements")
        return array(result_type(t) if result_type else t, dims)
    return rule


def _kind(*kinds: str) -> Callable[[str], bool]:
    return lambda t: PRIMITIVE_TYPES[t].kind in kinds


_COMPONENT = {"c64": "f32", "c128": "f64"}
_COMPLEX_OF = {"f32": "c64", "f64": "c128"}
_FLOAT, _FLOAT_COMPLEX = _kind("float"), _kind("float", "complex")
_INTEGRAL, _INT_OR_PRED = _kind("int", "uint"), _kind("int", "uint", "pred")
_SIGNED = _kind("int", "float", "complex")
_NUMERIC = _kind("int", "uint", "float", "complex")
_ANY = _kind("int", "uint", "float", "complex", "pred")


def _component(t: str) -> str:
    return _COMPONENT.get(t, t)


UNARY_RULES: dict[str, Rule] = {
    **{op: _unary(_FLOAT_COMPLEX, "floating-point or complex") for op in (
        "exponential", "exponential-minus-one", "log", "log-plus-one", "sine", "cosine", "tan", "tanh",
        "rsqrt", "sqrt", "cbrt", "logistic")},
    **{op: _unary(_FLOAT, "floating-point") for op in (
        "erf", "round-nearest-afz", "round-nearest-even", "ceil", "floor")},
    "is-finite": _unary(_FLOAT, "floating-point", lambda t: "pred"),
    "abs": _unary(_SIGNED, "signed, floating-point or complex", _component),
    "sign": _unary(_SIGNED, "signed, floating-point or complex"),
    "negate": _unary(_NUMERIC, "integral, floating-point or complex"),
    "not": _unary(_INT_OR_PRED, "pred or integral"),
    "popcnt": _unary(_INTEGRAL, "integral"),
    "count-leading-zeros": _unary(_INTEGRAL, "integral"),
    "real": _unary(_FLOAT_COMPLEX, "floating-point or complex", _component),
    "imag": _unary(_FLOAT_COMPLEX, "floating-point or complex", _component),
}

BINARY_RULES: dict[str, Rule] = {
    **{op: _binary(_ANY, "array") for op in ("add", "multiply", "maximum", "minimum")},
    **{op: _binary(_NUMERIC, "arithmetic (not pred)") for op in ("subtract", "divide", "remainder", "power")},
    **{op: _binary(_INTEGRAL, "integral") for op in ("shift-left", "shift-right-arithmetic", "shift-right-logical")},
    **{op: _binary(_INT_OR_PRED, "pred or integral") for op in ("and", "or", "xor")},
    "atan2": _binary(_FLOAT_COMPLEX, "floating-point or complex"),
    "complex": _binary(lambda t: t in _COMPLEX_OF, "f32 or f64", lambda t: _COMPLEX_OF[t]),
}

_DIRECTIONS = frozenset({"EQ", "NE", "LT", "LE", "GT", "GE"})
_COMPARISON_TYPES = frozenset({"FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"})


def _compare(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    direction = inst.attrs.get("direction")
    if direction not in _DIRECTIONS:
        fail(inst, f"compare needs direction= one of {sorted(_DIRECTIONS)}, got {direction!r}")
    ctype = inst.attrs.get("type")
    if ctype is not None and ctype not in _COMPARISON_TYPES:
        fail(inst, f"compare type={ctype} is not one of {sorted(_COMPARISON_TYPES)}")
    return _binary(_ANY, "array", lambda t: "pred")(inst, shapes)


def _select(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    pred = expect_array(inst, shapes, 0)
    on_true = expect_array(inst, shapes, 1)
    expect_array(inst, shapes, 2)
    if pred.element_type != "pred":
        fail(inst, f"operand 0 (the predicate) has shape {text(pred)}; it must have element type pred")
    expect_same_type(inst, shapes, (1, 2))
    expect_same_dims(inst, shapes, (1, 2))
    if pred.dims and pred.dims != on_true.dims:
        fail(inst, f"predicate {text(pred)} must be a scalar or have the dimensions of {text(on_true)}")
    return array(on_true.element_type, on_true.dims)


def _clamp(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    for i in range(3):
        expect_array(inst, shapes, i)
    expect_same_type(inst, shapes, (1, 0, 2))
    operand = shapes[1]
    for i in (0, 2):
        if shapes[i].dims and shapes[i].dims != operand.dims:
            fail(inst, f"operand {i} {text(shapes[i])} must be a scalar or have the dimensions of operand 1 "
                       f"{text(operand)}")
    return array(operand.element_type, operand.dims)


# -- conversions ---------------------------------------------------------------------------------------
def _convert(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s = expect_array(inst, shapes, 0)
    if inst.shape.is_tuple or not inst.shape.ptype.is_array_type:
        fail(inst, f"convert must produce an array, but declares {text(inst.shape)}")
    return array(inst.shape.element_type, s.dims)


def _bitcast_convert(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s = expect_array(inst, shapes, 0)
    out = inst.shape
    if out.is_tuple or not out.ptype.is_array_type:
        fail(inst, f"bitcast-convert must produce an array, but declares {text(out)}")
    src, dst = s.ptype, out.ptype
    if src.is_complex != dst.is_complex:
        fail(inst, f"bitcast-convert between complex and real types: {text(s)} => {dst.name}")
    a, b = src.bits, dst.bits
    if max(a, b) % min(a, b):
        fail(inst, f"bitcast-convert {text(s)} => {dst.name}: bit widths {a} and {b} do not divide")
    if a == b:
        return array(dst.name, s.dims)
    if a > b:                                   # one wide element becomes a minor dimension of narrow ones
        return array(dst.name, s.dims + (a // b,))
    if not s.dims or s.dims[-1] != b // a:
        fail(inst, f"bitcast-convert {text(s)} => {dst.name}: the last dimension must be {b // a}")
    return array(dst.name, s.dims[:-1])


def _reduce_precision(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s = expect_array(inst, shapes, 0)
    if not s.ptype.is_float:
        fail(inst, f"operand 0 has shape {text(s)}; reduce-precision needs floating-point elements")
    if int_attr(inst, "exponent_bits") < 1 or int_attr(inst, "mantissa_bits") < 0:
        fail(inst, "reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0")
    return array(s.element_type, s.dims)


def _stochastic_convert(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s, r = expect_array(inst, shapes, 0), expect_array(inst, shapes, 1)
    if not s.ptype.is_float or not r.ptype.is_unsigned or s.ptype.bits != r.ptype.bits or s.dims != r.dims:
        fail(inst, f"stochastic-convert needs a float operand and unsigned random bits of the same width and "
                   f"dimensions, got {shapes_text(shapes)}")
    return array(inst.shape.element_type, s.dims)


# -- simple and trusted ops ---------------------------------------------------------------------------
def _same_as_operand(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    return shapes[0]


def _trusted(inst: Instruction, shapes: Sequence[Shape]) -> None:
    return None


def _constant(inst: Instruction, shapes: Sequence[Shape]) -> None:
    lit, out = inst.literal, inst.shape
    if lit is None or isinstance(lit, tuple) or not hasattr(lit, "shape") or not out.is_array:
        return None   # elided `{...}`, tuple constants: nothing to compare against
    if lit.size != out.numel or (lit.ndim > 1 and tuple(lit.shape) != out.dims):
        fail(inst, f"literal has dimensions {list(lit.shape)} but the instruction declares {text(out)}")
    if lit.dtype != out.dtype:
        fail(inst, f"literal has numpy dtype {lit.dtype} but the instruction declares {text(out)}")
    return None


def _rng(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    out = inst.shape
    if out.is_tuple or not out.ptype.is_array_type:
        fail(inst, f"rng must produce an array, but declares {text(out)}")
    for i in range(len(shapes)):
        s = expect_scalar(inst, shapes, i, "a distribution parameter")
        if s.element_type != out.element_type:
            fail(inst, f"operand {i} {text(s)} must have the declared element type {out.element_type}")
    return array(out.element_type, out.dims)


def _token(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    return Shape.token()   # operands of any shape only order the token after them


def _get_dimension_size(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s = expect_array(inst, shapes, 0)
    expect_dims_in_range(inst, "dimensions", ints_attr(inst, "dimensions"), s.rank)
    return scalar("s32")


def _set_dimension_size(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    """XLA's rule: the operand's shape with the dimension made dynamic (its size is the bound). A dump may declare
    it static, XLA's RemoveDynamicDimension; the verifier compares shapes without their dynamic flags."""
    s = expect_array(inst, shapes, 0)
    size = expect_scalar(inst, shapes, 1, "the size")
    if size.element_type != "s32":
        fail(inst, f"the size must be an s32 scalar, got {text(size)}")
    dims = ints_attr(inst, "dimensions")
    if len(dims) != 1:
        fail(inst, f"dimensions must name one dimension, got {list(dims)}")
    expect_dims_in_range(inst, "dimensions", dims, s.rank)
    dynamic = [s.is_dynamic_dim(i) or i == dims[0] for i in range(s.rank)]
    return Shape(s.element_type, s.dims, None, (), tuple(dynamic))


def _dynamic_reshape(inst: Instruction, shapes: Sequence[Shape]) -> None:
    """dynamic-reshape(x, size...): one s32 scalar size per result dimension; the result's bounds are declared, not
    inferred, so the rule checks the operands and trusts the declared shape."""
    s = expect_array(inst, shapes, 0)
    out = inst.shape
    if not out.is_array:
        return None
    if len(shapes) != 1 + out.rank:
        fail(inst, f"needs one size per result dimension ({out.rank}), got {len(shapes) - 1}")
    for i in range(1, len(shapes)):
        if expect_scalar(inst, shapes, i, f"size {i - 1}").element_type != "s32":
            fail(inst, f"size {i - 1} must be an s32 scalar, got {text(shapes[i])}")
    if out.element_type != s.element_type:
        fail(inst, f"the result type {out.element_type} differs from the operand's {s.element_type}")
    return None


def _copy_done(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s = shapes[0]
    if not s.is_tuple or not s.tuple_shapes:
        fail(inst, f"copy-done takes the tuple made by copy-start, got {text(s)}")
    return s.tuple_shapes[0]


_TRUSTED = (
    "async-start", "async-update", "async-done", "send",
    "send-done", "recv", "recv-done", "infeed", "outfeed", "custom-call", "copy-start", "parameter", "scan",
)

BASIC_RULES: dict[str, Rule] = {
    **{op: _trusted for op in _TRUSTED},
    "compare": _compare, "select": _select, "clamp": _clamp,
    "convert": _convert, "bitcast-convert": _bitcast_convert, "reduce-precision": _reduce_precision,
    "stochastic-convert": _stochastic_convert,
    "copy": _same_as_operand, "domain": _same_as_operand, "opt-barrier": _same_as_operand,
    "add-dependency": _same_as_operand, "copy-done": _copy_done,
    "constant": _constant, "after-all": _token, "rng": _rng,
    "partition-id": lambda inst, shapes: scalar("u32"), "replica-id": lambda inst, shapes: scalar("u32"),
    "rng-get-and-update-state": lambda inst, shapes: array("u64", (2,)),
    "get-dimension-size": _get_dimension_size, "set-dimension-size": _set_dimension_size,
    "dynamic-reshape": _dynamic_reshape,
}


# -- the table ------------------------------------------------------------------------------------------
_RULES: dict[str, Rule] | None = None


def rule_table() -> dict[str, Rule]:
    """opcode -> rule, merged from the op-family tables (each opcode in exactly one)."""
    global _RULES
    if _RULES is None:
        from . import shape_inference_collectives, shape_inference_compute, shape_inference_movement
        here = __name__
        _RULES = merge_rule_tables(
            "shape rules", (f"{here}.UNARY_RULES", UNARY_RULES), (f"{here}.BINARY_RULES", BINARY_RULES),
            (f"{here}.BASIC_RULES", BASIC_RULES),
            *module_tables("RULES", shape_inference_movement, shape_inference_compute, shape_inference_collectives))
    return _RULES


def infer_shape(inst: Instruction) -> Shape | None:
    """The shape `inst` must have given its operands and attributes; None where the declared one is trusted."""
    rule = rule_table().get(inst.opcode)
    if rule is None:
        fail(inst, f"no shape inference rule for opcode {inst.opcode}")
    return rule(inst, [o.shape for o in inst.operands])
