"""Shape rules of computing ops: reductions, windows, sort, map, dot, convolution, batch-norm, linear
algebra, and the ops that call computations (while, conditional, call, fusion)."""
from __future__ import annotations

from typing import Sequence

from .attrs import Window, WindowDim
from .ir import Computation, Instruction
from .shape import PRIMITIVE_TYPES, Shape
from .shape_inference import (array, check_signature, computation_attr, expect_array, expect_dims_in_range,
                              expect_same_dims, expect_same_type, expect_scalar, fail, int_attr, ints_attr,
                              scalar, shapes_text, text, tuple_or_single)


def _same_ignoring_fp_precision(a: str, b: str) -> bool:
    return a == b or (PRIMITIVE_TYPES[a].is_float and PRIMITIVE_TYPES[b].is_float)


def _check_reducer(inst: Instruction, comp: Computation, init_types: Sequence[str],
                   input_types: Sequence[str]) -> list[str]:
    """A reducer takes N accumulators then N input elements (scalars) and returns N accumulators.

    Returns the accumulator element types (the result types of the reduction). Inputs may differ from the
    accumulators in floating-point precision only, as in XLA."""
    n = len(init_types)
    params = comp.parameters
    if len(params) != 2 * n:
        fail(inst, f"reducer {comp.name} takes {len(params)} parameters {shapes_text([p.shape for p in params])},"
                   f" but {2 * n} scalars are passed (accumulators {list(init_types)}, inputs {list(input_types)})")
    root = comp.root.shape
    accs = list(root.tuple_shapes) if n > 1 and root.is_tuple else [root]
    if len(accs) != n or any(a.is_tuple or a.dims for a in accs):
        fail(inst, f"reducer {comp.name} returns {text(root)}, but {n} scalar accumulator(s) are required")
    for i, acc in enumerate(accs):
        if not params[i].shape.compatible(acc):
            fail(inst, f"reducer {comp.name} parameter {i} has shape {text(params[i].shape)} but its result "
                       f"{i} has {text(acc)}")
        if not _same_ignoring_fp_precision(init_types[i], acc.element_type):
            fail(inst, f"init value {i} has element type {init_types[i]} but reducer {comp.name} accumulates "
                       f"{text(acc)}")
        p = params[n + i].shape
        if p.is_tuple or p.dims or not _same_ignoring_fp_precision(p.element_type, input_types[i]) \
                or not _same_ignoring_fp_precision(p.element_type, acc.element_type):
            fail(inst, f"reducer {comp.name} parameter {n + i} has shape {text(p)}, but input {i} has element "
                       f"type {input_types[i]}")
    return [a.element_type for a in accs]


def _split_inputs_inits(inst: Instruction, shapes: Sequence[Shape]) -> tuple[list[Shape], list[Shape]]:
    if not shapes or len(shapes) % 2:
        fail(inst, f"{inst.opcode} takes N inputs and N init values, got {len(shapes)} operands")
    n = len(shapes) // 2
    for i in range(n):
        expect_array(inst, shapes, i)
        expect_scalar(inst, shapes, n + i, "an init value")
    expect_same_dims(inst, shapes, range(n))
    return list(shapes[:n]), list(shapes[n:])


def _reduce(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    inputs, inits = _split_inputs_inits(inst, shapes)
    dims = ints_attr(inst, "dimensions", ())
    expect_dims_in_range(inst, "dimensions", dims, inputs[0].rank)
    types = _check_reducer(inst, computation_attr(inst, "to_apply"), [s.element_type for s in inits],
                           [s.element_type for s in inputs])
    kept = [n for k, n in enumerate(inputs[0].dims) if k not in set(dims)]
    return tuple_or_single([array(t, kept) for t in types])


# -- windows -------------------------------------------------------------------------------------------
def _window_output_dims(inst: Instruction, base: Sequence[int], window: Window) -> list[int]:
    if len(window.dims) != len(base):
        fail(inst, f"window has {len(window.dims)} dimensions but the base shape has {len(base)}")
    out = []
    for n, w in zip(base, window.dims):
        if w.size <= 0 or w.stride <= 0 or w.base_dilation < 1 or w.window_dilation < 1:
            fail(inst, f"window {window.to_text()} has a non-positive size, stride or dilation")
        dilated_base = (n - 1) * w.base_dilation + 1 if n else 0
        padded = w.padding_low + dilated_base + w.padding_high
        dilated_window = (w.size - 1) * w.window_dilation + 1
        out.append(0 if padded < dilated_window else (padded - dilated_window) // w.stride + 1)
    return out


def _window(inst: Instruction, rank: int) -> Window:
    w = inst.attrs.get("window")
    if w is None:   # XLA prints no window for rank-0 operands
        return Window(tuple(WindowDim(1) for _ in range(rank)))
    return w


def _reduce_window(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    inputs, inits = _split_inputs_inits(inst, shapes)
    dims = _window_output_dims(inst, inputs[0].dims, _window(inst, inputs[0].rank))
    types = _check_reducer(inst, computation_attr(inst, "to_apply"), [s.element_type for s in inits],
                           [s.element_type for s in inputs])
    return tuple_or_single([array(t, dims) for t in types])


def _select_and_scatter(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    operand, source = expect_array(inst, shapes, 0), expect_array(inst, shapes, 1)
    init = expect_scalar(inst, shapes, 2, "the init value")
    expect_same_type(inst, shapes, (0, 1, 2))
    windowed = _window_output_dims(inst, operand.dims, _window(inst, operand.rank))
    if tuple(windowed) != source.dims:
        fail(inst, f"source {text(source)} must have the windowed shape {text(array(source.element_type, windowed))}"
                   f" of operand {text(operand)}")
    t = scalar(operand.element_type)
    check_signature(inst, computation_attr(inst, "select"), "select computation", [t, t], scalar("pred"))
    check_signature(inst, computation_attr(inst, "scatter"), "scatter computation", [t, t], scalar(init.element_type))
    return array(operand.element_type, operand.dims)


# -- sort, map -----------------------------------------------------------------------------------------
def _sort(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    if not shapes:
        fail(inst, "sort needs at least one operand")
    for i in range(len(shapes)):
        expect_array(inst, shapes, i)
    dims = expect_same_dims(inst, shapes, range(len(shapes)))
    expect_dims_in_range(inst, "dimensions", ints_attr(inst, "dimensions"), len(dims))
    params = [scalar(s.element_type) for s in shapes for _ in (0, 1)]
    check_signature(inst, computation_attr(inst, "to_apply"), "comparator", params, scalar("pred"))
    return tuple_or_single([array(s.element_type, s.dims) for s in shapes])


def _map(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    for i in range(len(shapes)):
        expect_array(inst, shapes, i)
    dims = expect_same_dims(inst, shapes, range(len(shapes))) if shapes else inst.shape.dims
    root = check_signature(inst, computation_attr(inst, "to_apply"), "mapped computation",
                           [scalar(s.element_type) for s in shapes])
    if root.is_tuple or root.dims:
        fail(inst, f"mapped computation must return a scalar, returns {text(root)}")
    return array(root.element_type, dims)


# -- dot and convolution ---------------------------------------------------------------------------------
def _result_type(inst: Instruction, lhs: Shape, rhs: Shape) -> str:
    """XLA's preferred element type: the declared type, unless it narrows integer operands."""
    declared = inst.shape
    if declared.is_tuple or not declared.ptype.is_array_type:
        fail(inst, f"{inst.opcode} must produce an array, but declares {text(declared)}")
    for s in (lhs, rhs):
        if not s.ptype.is_float and declared.ptype.bits < s.ptype.bits and declared.element_type != s.element_type:
            fail(inst, f"declared element type {declared.element_type} is narrower than operand {text(s)}")
    return declared.element_type


def _dot(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    lhs, rhs = expect_array(inst, shapes, 0), expect_array(inst, shapes, 1)
    lb, rb = ints_attr(inst, "lhs_batch_dims", ()), ints_attr(inst, "rhs_batch_dims", ())
    lc, rc = ints_attr(inst, "lhs_contracting_dims", ()), ints_attr(inst, "rhs_contracting_dims", ())
    expect_dims_in_range(inst, "lhs batch and contracting dims", lb + lc, lhs.rank)
    expect_dims_in_range(inst, "rhs batch and contracting dims", rb + rc, rhs.rank)
    if len(lb) != len(rb) or len(lc) != len(rc):
        fail(inst, f"lhs and rhs need as many batch dims ({len(lb)} vs {len(rb)}) and contracting dims "
                   f"({len(lc)} vs {len(rc)}) for {text(lhs)} <dot> {text(rhs)}")
    for what, ld, rd in (("contracting", lc, rc), ("batch", lb, rb)):
        for a, b in zip(ld, rd):
            if lhs.dims[a] != rhs.dims[b]:
                fail(inst, f"{what} dimension {a} of lhs {text(lhs)} (size {lhs.dims[a]}) does not match "
                           f"dimension {b} of rhs {text(rhs)} (size {rhs.dims[b]})")
    dims = [lhs.dims[d] for d in lb]
    dims += [n for k, n in enumerate(lhs.dims) if k not in lb and k not in lc]
    skip_rhs = set(rb) | set(rc) | set(ints_attr(inst, "rhs_group_dims", ()))
    dims += [n for k, n in enumerate(rhs.dims) if k not in skip_rhs]
    return array(_result_type(inst, lhs, rhs), dims)


def _ragged_dot(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    """lhs [m,k] (ragged in m), rhs [g,k,n] (group dim g), group_sizes [g] -> [m,n]. When the ragged
    dimension is contracting, each group gets its own output: [g,m,n]."""
    if len(shapes) != 3:
        fail(inst, f"ragged-dot takes lhs, rhs and group sizes, got {len(shapes)} operands")
    groups = expect_array(inst, shapes, 2)
    if not groups.ptype.is_integral or groups.rank < 1:
        fail(inst, f"group sizes {text(groups)} must be an integer array")
    dot = _dot(inst, shapes[:2])
    ragged = ints_attr(inst, "lhs_ragged_dims", ())
    if len(ragged) != 1:
        fail(inst, f"lhs_ragged_dims must name one dimension, got {list(ragged)}")
    if ragged[0] in ints_attr(inst, "lhs_contracting_dims", ()):
        return array(dot.element_type, (groups.dims[-1],) + dot.dims)
    return dot


def _convolution(inst: Instruction, shapes: Sequence[Shape]) -> Shape | None:
    lhs, rhs = expect_array(inst, shapes, 0), expect_array(inst, shapes, 1)
    dn = inst.attrs.get("dim_labels")
    if dn is None or not dn.known:
        return None
    if not (lhs.rank == rhs.rank == len(dn.input_spatial) + 2):
        fail(inst, f"input {text(lhs)} and kernel {text(rhs)} must both have rank {len(dn.input_spatial) + 2} "
                   f"for dim_labels={dn.text}")
    window = inst.attrs.get("window") or Window(tuple(WindowDim(rhs.dims[d]) for d in dn.kernel_spatial))
    fgc, bgc = int_attr(inst, "feature_group_count", 1), int_attr(inst, "batch_group_count", 1)
    batch, features = lhs.dims[dn.input_batch], lhs.dims[dn.input_feature]
    k_in, k_out = rhs.dims[dn.kernel_input_feature], rhs.dims[dn.kernel_output_feature]
    shapes_desc = f"input {text(lhs)}, kernel {text(rhs)}, dim_labels={dn.text}"
    if fgc < 1 or bgc < 1 or (fgc > 1 and bgc > 1):
        fail(inst, f"feature_group_count={fgc} and batch_group_count={bgc} must be >= 1 and not both > 1")
    if features % fgc or features // fgc != k_in:
        fail(inst, f"input features ({features}) / feature_group_count ({fgc}) must equal the kernel input "
                   f"features ({k_in}); {shapes_desc}")
    if k_out % fgc or k_out % bgc or batch % bgc:
        fail(inst, f"kernel output features ({k_out}) and batch ({batch}) must divide by the group counts; "
                   f"{shapes_desc}")
    for i, d in enumerate(dn.kernel_spatial):
        if i < len(window.dims) and window.dims[i].size != rhs.dims[d]:
            fail(inst, f"window size {window.dims[i].size} of spatial dimension {i} differs from the kernel's "
                       f"{rhs.dims[d]}; {shapes_desc}")
    spatial = _window_output_dims(inst, [lhs.dims[d] for d in dn.input_spatial], window)
    dims = [0] * lhs.rank
    dims[dn.output_batch], dims[dn.output_feature] = batch // bgc, k_out
    for d, n in zip(dn.output_spatial, spatial):
        dims[d] = n
    return array(_result_type(inst, lhs, rhs), dims)


# -- batch norm ----------------------------------------------------------------------------------------
def _batch_norm(inst: Instruction, shapes: Sequence[Shape], feature_operands: Sequence[int],
                full_operands: Sequence[int], result_is_tuple: bool) -> Shape:
    for i in range(len(shapes)):
        expect_array(inst, shapes, i)
    operand = shapes[0]
    t = expect_same_type(inst, shapes, range(len(shapes)))
    if not operand.ptype.is_float:
        fail(inst, f"operand {text(operand)} must have a floating-point element type")
    fi = int_attr(inst, "feature_index")
    if not 0 <= fi < operand.rank:
        fail(inst, f"feature_index={fi} is out of range for operand {text(operand)}")
    feature = array(t, (operand.dims[fi],))
    for i in feature_operands:
        if shapes[i].dims != feature.dims:
            fail(inst, f"operand {i} {text(shapes[i])} must have shape {text(feature)} (the feature dimension "
                       f"{fi} of {text(operand)})")
    for i in full_operands:
        if shapes[i].dims != operand.dims:
            fail(inst, f"operand {i} {text(shapes[i])} must have the shape of operand 0 {text(operand)}")
    out = array(t, operand.dims)
    return Shape.tuple_of((out, feature, feature)) if result_is_tuple else out


# -- control flow and calls ------------------------------------------------------------------------------
def _while(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    state = shapes[0]
    check_signature(inst, computation_attr(inst, "condition"), "condition", [state], scalar("pred"))
    check_signature(inst, computation_attr(inst, "body"), "body", [state], state)
    return state


def _conditional(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    selector = expect_scalar(inst, shapes, 0, "the branch selector")
    if "branch_computations" in inst.attrs:
        branches = list(inst.attrs["branch_computations"])
    else:
        branches = [computation_attr(inst, "true_computation"), computation_attr(inst, "false_computation")]
    if selector.element_type == "pred":
        if len(branches) != 2:
            fail(inst, f"a pred[] conditional needs 2 branches, got {len(branches)}")
    elif selector.element_type != "s32":
        fail(inst, f"branch selector {text(selector)} must be pred[] or s32[]")
    if len(shapes) != len(branches) + 1:
        fail(inst, f"conditional with {len(branches)} branches takes {len(branches) + 1} operands, got "
                   f"{len(shapes)}: {shapes_text(shapes)}")
    result = None
    for k, comp in enumerate(branches):
        root = check_signature(inst, comp, f"branch {k}", [shapes[k + 1]], result)
        result = result or root
    return result


def _call(key: str, what: str):
    def rule(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
        return check_signature(inst, computation_attr(inst, key), what, shapes)
    return rule


# -- random numbers and linear algebra ---------------------------------------------------------------------
def _rng_bit_generator(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    state, out = expect_array(inst, shapes, 0), inst.shape
    if not out.is_tuple or len(out.tuple_shapes) != 2 or out.tuple_shapes[1].is_tuple:
        fail(inst, f"rng-bit-generator must declare a (state, bits) tuple, declares {text(out)}")
    return Shape.tuple_of((state, out.tuple_shapes[1]))


def _fft(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s = expect_array(inst, shapes, 0)
    kind, lengths = inst.attrs.get("fft_type"), list(ints_attr(inst, "fft_length"))
    n = len(lengths)
    if not 1 <= n <= 3 or s.rank < n:
        fail(inst, f"fft_length {lengths} does not fit operand {text(s)}")
    head, tail = s.dims[:s.rank - n], list(s.dims[s.rank - n:])
    if kind in ("FFT", "IFFT"):
        if not s.ptype.is_complex or tail != lengths:
            fail(inst, f"{kind} needs a complex operand ending in {lengths}, got {text(s)}")
        return array(s.element_type, s.dims)
    if kind == "RFFT":
        if s.element_type not in ("f32", "f64") or tail != lengths:
            fail(inst, f"RFFT needs an f32/f64 operand ending in {lengths}, got {text(s)}")
        return array({"f32": "c64", "f64": "c128"}[s.element_type], head + tuple(lengths[:-1]) + (lengths[-1] // 2 + 1,))
    if kind == "IRFFT":
        want = lengths[:-1] + [lengths[-1] // 2 + 1]
        if not s.ptype.is_complex or tail != want:
            fail(inst, f"IRFFT needs a complex operand ending in {want}, got {text(s)}")
        return array({"c64": "f32", "c128": "f64"}[s.element_type], head + tuple(lengths))
    fail(inst, f"unknown fft_type {kind!r}")


def _square_matrices(inst: Instruction, s: Shape, i: int) -> None:
    if s.rank < 2 or s.dims[-1] != s.dims[-2] or not (s.ptype.is_float or s.ptype.is_complex):
        fail(inst, f"operand {i} {text(s)} must be a batch of square floating-point or complex matrices")


def _cholesky(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s = expect_array(inst, shapes, 0)
    _square_matrices(inst, s, 0)
    return s


def _triangular_solve(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    a, b = expect_array(inst, shapes, 0), expect_array(inst, shapes, 1)
    _square_matrices(inst, a, 0)
    expect_same_type(inst, shapes, (0, 1))
    left = inst.attrs.get("left_side") in (True, "true")
    k = b.dims[-2] if left and b.rank >= 2 else (b.dims[-1] if b.rank >= 2 else -1)
    if b.rank != a.rank or b.dims[:-2] != a.dims[:-2] or k != a.dims[-1]:
        fail(inst, f"a {text(a)} and b {text(b)} do not fit (left_side={left})")
    return b


def _topk(inst: Instruction, shapes: Sequence[Shape]) -> Shape:
    s, k = expect_array(inst, shapes, 0), int_attr(inst, "k")
    if s.rank < 1 or not 0 <= k <= s.dims[-1]:
        fail(inst, f"k={k} does not fit operand {text(s)}")
    dims = s.dims[:-1] + (k,)
    return Shape.tuple_of((array(s.element_type, dims), array("s32", dims)))


RULES = {
    "reduce": _reduce, "reduce-window": _reduce_window, "select-and-scatter": _select_and_scatter,
    "sort": _sort, "map": _map, "dot": _dot, "ragged-dot": _ragged_dot, "convolution": _convolution,
    "batch-norm-training": lambda inst, shapes: _batch_norm(inst, shapes, (1, 2), (), True),
    "batch-norm-inference": lambda inst, shapes: _batch_norm(inst, shapes, (1, 2, 3, 4), (), False),
    "batch-norm-grad": lambda inst, shapes: _batch_norm(inst, shapes, (1, 2, 3), (4,), True),
    "while": _while, "conditional": _conditional,
    "call": _call("to_apply", "called computation"), "fusion": _call("calls", "fused computation"),
    "rng-bit-generator": _rng_bit_generator, "fft": _fft, "cholesky": _cholesky,
    "triangular-solve": _triangular_solve, "topk": _topk,
}
