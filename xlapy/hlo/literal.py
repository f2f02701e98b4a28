"""Literal text <-> numpy arrays, in XLA's format.

Text forms (XLA's Literal::ToString, one line):
  rank 0        `42`, `true`, `(1, 2)` (complex), `nan`, `-inf`
  rank 1        `{1, 2, 3}`
  rank 2, 3     `{ { 1, 2 }, { 3, 4 } }`    an innermost row of one element is `{5}`
  rank >= 4     `{ { /*i0=0*/ { /*i1=0*/ { 1, 2 } } } }`  (index comments on the outer levels)
  tuple         `( {1, 2}, 3 )`
  elided        `{...}` (the values are unknown: ir.ELIDED)
Arrays of pred print as 0/1, scalars as true/false. Floats print with the fewest significant digits
(digits10, else max_digits10 of the type) that parse back to the same value; -nan keeps its sign.
Numbers are tokenized in bulk with one regex, so a million-element constant parses in well under a second.
"""
from __future__ import annotations

import math
import re
import warnings

import ml_dtypes
import numpy as np

from .ir import ELIDED
from .lexer import FLOAT, INT
from .shape import Shape

_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_BRACE = re.compile(r"[{}]")
_ALLOWED = re.compile(r"[\s{}(),\w.+\-]*")
_ATOM = re.compile(r"[^\s{}(),]+")
_COMPLEX = re.compile(r"\(\s*([^\s{}(),]+)\s*,\s*([^\s{}(),]+)\s*\)")
_INTS = re.compile(r"(?:[-+]?\d+ )*")
_BOOL = {"true": True, "false": False, "1": True, "0": False}


class LiteralError(ValueError):
    """A malformed literal; `offset` is relative to the literal's first character."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset


# -- parsing ---------------------------------------------------------------------------------------
def scan_literal_end(text: str, start: int) -> int:
    """The index just past the brace-balanced literal body starting with '{' at `start`."""
    depth, pos = 0, start
    find = text.find
    while True:
        c = find("}", pos)
        if c < 0:
            raise LiteralError("unterminated literal: missing '}'", 0)
        o = find("{", pos, c)
        if o >= 0:
            depth, pos = depth + 1, o + 1
        else:
            depth, pos = depth - 1, c + 1
            if depth == 0:
                return pos


def _brace_pattern(dims: tuple[int, ...]) -> str:
    if len(dims) == 1:
        return "{}"
    return "{" + _brace_pattern(dims[1:]) * dims[0] + "}"


def _brace_count(dims: tuple[int, ...]) -> tuple[int, int]:
    n, total = 1, 0
    for d in dims:
        total += n
        n *= d
    return total, total


def _convert_atoms(atoms: list[str], shape: Shape) -> np.ndarray:
    p = shape.ptype
    dtype = p.dtype
    if p.is_pred:
        try:
            return np.array([_BOOL[a] for a in atoms], dtype=np.bool_)
        except KeyError as e:
            raise LiteralError(f"invalid pred value {e.args[0]!r}") from None
    if p.is_integral:
        if atoms and not _INTS.fullmatch(" ".join(atoms) + " "):
            bad = next(a for a in atoms if not INT.fullmatch(a))
            raise LiteralError(f"invalid {shape.element_type} value {bad!r}")
        info = np.iinfo(dtype) if dtype.kind in "iu" else ml_dtypes.iinfo(dtype)
        lo, hi = int(info.min), int(info.max)
        if len(atoms) <= 4096:
            vals = [int(a) for a in atoms]
            for v in vals:
                if v < lo or v > hi:
                    raise LiteralError(f"value {v} is out of range for {shape.element_type}")
            wide = np.array(vals, dtype=np.uint64 if hi > 2**63 else np.int64)
        else:
            if p.is_unsigned and any(a.startswith("-") for a in atoms):
                raise LiteralError(f"negative value in a {shape.element_type} literal")
            try:
                wide = np.array(atoms).astype(np.uint64 if hi > 2**63 else np.int64)
            except (ValueError, OverflowError):
                raise LiteralError(f"a value is out of range for {shape.element_type}") from None
            if wide.size and (int(wide.min()) < lo or int(wide.max()) > hi):
                raise LiteralError(f"a value is out of range for {shape.element_type}")
        return wide.astype(dtype)
    if p.is_float:
        return _parse_floats(atoms, dtype, shape.element_type)
    raise LiteralError(f"literals of type {shape.element_type} are not supported")


def _parse_floats(atoms: list[str], dtype: np.dtype, type_name: str) -> np.ndarray:
    for a in atoms[:1] + atoms[-1:]:
        if not FLOAT.fullmatch(a):
            raise LiteralError(f"invalid {type_name} value {a!r}")
    try:
        wide = np.array(atoms).astype(np.float64) if atoms else np.zeros(0)
    except ValueError:
        bad = next(a for a in atoms if not FLOAT.fullmatch(a))
        raise LiteralError(f"invalid {type_name} value {bad!r}") from None
    return _narrow_floats(wide, dtype, type_name)


def _narrow_floats(wide: np.ndarray, dtype: np.dtype, type_name: str) -> np.ndarray:
    """float64 values -> `dtype`, rejecting finite values the type cannot hold and keeping -nan's sign."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = wide.astype(dtype)
    if out.size:
        finite_in = np.isfinite(wide)
        finite_out = np.isfinite(out.astype(np.float64))
        if (finite_in & ~finite_out).any():
            v = wide[finite_in & ~finite_out][0]
            raise LiteralError(f"value {v:g} is out of range for {type_name}")
        nan_in = np.isnan(wide)
        if nan_in.any() and np.signbit(wide[nan_in]).any():
            # keep the sign of -nan (numpy's casts may drop it)
            neg = nan_in & np.signbit(wide)
            out[neg] = -np.abs(out[neg])
    return out


def _scalar(atom: str, shape: Shape):
    return _convert_atoms([atom], shape)[0]


_BULK = 4096
_TO_SPACES = str.maketrans("{},", "   ")


def _bulk(body: str, shape: Shape) -> np.ndarray | None:
    """Fast parse of a large numeric literal with numpy's C tokenizer; None -> use the checked slow path."""
    p = shape.ptype
    wide_type = np.float64 if p.is_float else (np.uint64 if p.is_unsigned and p.bits == 64 else np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            wide = np.fromstring(body.translate(_TO_SPACES), dtype=wide_type, sep=" ")
        except (DeprecationWarning, ValueError):
            return None
    if wide.size != shape.numel:
        return None
    if p.is_float:
        return _narrow_floats(wide, p.dtype, shape.element_type)
    info = np.iinfo(p.dtype) if p.dtype.kind in "iu" else ml_dtypes.iinfo(p.dtype)
    if wide.size and (int(wide.min()) < int(info.min) or int(wide.max()) > int(info.max)):
        return None
    return wide.astype(p.dtype)


def parse_array_literal(text: str, start: int, shape: Shape) -> tuple[np.ndarray, int]:
    """Parse the literal of array `shape` at text[start:]; returns (array, end index)."""
    p = shape.ptype
    if not shape.is_array:
        raise LiteralError(f"a constant of shape {shape} cannot have a literal")
    if shape.rank == 0:
        if p.is_complex:
            m = _COMPLEX.match(text, start)
            if not m:
                raise LiteralError("expected a complex value '(real, imag)'")
            parts = _parse_floats([m.group(1), m.group(2)], np.dtype(np.float64), shape.element_type)
            return np.array(complex(parts[0], parts[1]), dtype=p.dtype), m.end()
        m = _ATOM.match(text, start)
        if not m:
            raise LiteralError(f"expected a {shape.element_type} value")
        return np.array(_scalar(m.group(0), shape), dtype=p.dtype), m.end()
    if not text.startswith("{", start):
        raise LiteralError(f"expected '{{' to start the literal of {shape}")
    end = scan_literal_end(text, start)
    body = _COMMENT.sub(" ", text[start:end])
    large = shape.numel > _BULK
    if not large and not _ALLOWED.fullmatch(body):
        bad = re.search(r"[^\s{}(),\w.+\-]", body)
        raise LiteralError(f"unexpected character {bad.group(0)!r} in literal", bad.start() if bad else 0)
    if (_brace_count(shape.dims) != (body.count("{"), body.count("}")) if large
            else "".join(_BRACE.findall(body)) != _brace_pattern(shape.dims)):
        raise LiteralError(f"literal nesting does not match shape {shape.to_text(False)}")
    if p.is_complex:
        pairs = _COMPLEX.findall(body)
        flat = [x for pair in pairs for x in pair]
        if len(pairs) != shape.numel or len(_ATOM.findall(body)) != 2 * shape.numel:
            raise LiteralError(f"literal has {len(pairs)} complex values, shape {shape.to_text(False)} "
                               f"needs {shape.numel}")
        parts = _parse_floats(flat, np.dtype(np.float64), shape.element_type).reshape(-1, 2)
        arr = np.empty(shape.numel, dtype=p.dtype)
        arr.real, arr.imag = parts[:, 0], parts[:, 1]
        return arr.reshape(shape.dims), end
    if "(" in body:
        raise LiteralError("unexpected '(' in a non-complex literal")
    if large and (p.is_float or p.is_integral) and "nan" not in body:
        arr = _bulk(body, shape)
        if arr is not None:
            return arr.reshape(shape.dims), end
    atoms = _ATOM.findall(body)
    if len(atoms) != shape.numel:
        raise LiteralError(f"literal has {len(atoms)} values, shape {shape.to_text(False)} needs {shape.numel}")
    return _convert_atoms(atoms, shape).reshape(shape.dims), end


# -- printing --------------------------------------------------------------------------------------
def _digits(dtype: np.dtype) -> tuple[int, int]:
    """(digits10, max_digits10); XLA tries digits10 first only for f32 and f64."""
    p = ml_dtypes.finfo(dtype).nmant + 1
    long_ = math.ceil(1 + p * math.log10(2))
    if dtype in (np.float32, np.float64):
        return max(1, math.floor((p - 1) * math.log10(2))), long_
    return long_, long_


def _round_trip_text(value: float, dtype: np.dtype, digits: int) -> str:
    """'%.{digits}g' of value, or with more digits where reading that back into dtype gives another value:
    ml_dtypes rounds f32-subnormal inputs up for f8e8m0fnu, so its smallest value 2**-127 needs all 17."""
    text = f"%.{digits}g" % value
    with np.errstate(over="ignore", invalid="ignore"):
        if np.array([float(text)]).astype(dtype).astype(np.float64)[0] != value:
            text = "%.17g" % value
    return text


def format_floats(values: np.ndarray) -> list[str]:
    """Shortest round-tripping '%g' text of each value (XLA's RoundTripFpToString)."""
    flat = np.asarray(values).reshape(-1)
    if flat.size == 0:
        return []
    dtype = flat.dtype
    wide = flat.astype(np.float64)
    short, long_ = _digits(dtype)
    fmt = f"%.{short}g"
    out = [fmt % v for v in wide.tolist()]
    finite = np.isfinite(wide)
    if finite.any():          # long_ digits are not always enough either (_round_trip_text)
        back = np.fromstring(" ".join(out), dtype=np.float64, sep=" ")
        with np.errstate(over="ignore", invalid="ignore"):
            back = back.astype(dtype).astype(np.float64)
        bad = np.flatnonzero(finite & (back != wide))
        for i in bad.tolist():
            out[i] = _round_trip_text(wide[i], dtype, long_)
    nan = np.isnan(wide)
    if nan.any():
        for i in np.flatnonzero(nan & np.signbit(wide)):
            out[i] = "-nan"
    return out


def format_elements(arr: np.ndarray, scalar: bool = False) -> list[str]:
    arr = np.asarray(arr)
    kind = arr.dtype
    if kind == np.bool_:
        if scalar:
            return ["true" if bool(v) else "false" for v in arr.reshape(-1)]
        return ["1" if v else "0" for v in arr.reshape(-1).tolist()]
    if np.issubdtype(kind, np.complexfloating):
        part = np.float32 if kind == np.complex64 else np.float64
        re_ = format_floats(arr.real.astype(part))
        im = format_floats(arr.imag.astype(part))
        return [f"({a}, {b})" for a, b in zip(re_, im)]
    if kind.kind in "iu" or kind in (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2):
        return [str(v) for v in arr.reshape(-1).astype(np.int64 if kind != np.uint64 else np.uint64).tolist()]
    return format_floats(arr)


def _nest(strs: list[str], dims: tuple[int, ...]) -> str:
    rank = len(dims)
    if rank == 1:
        return "{" + ", ".join(strs) + "}"

    def rec(offset: int, level: int, stride: int, index: int) -> str:
        d = dims[level]
        if level == rank - 1:
            body = ", ".join(strs[offset:offset + d])
            return "{" + body + "}" if d <= 1 else "{ " + body + " }"
        sub = stride // d if d else 0
        head = "{"
        if rank > 3 and level > 0:
            head += f" /*i{level - 1}={index}*/"
        parts = [rec(offset + i * sub, level + 1, sub, i) for i in range(d)]
        if not parts:
            return head + " }"
        return head + " " + ", ".join(parts) + " }"

    total = 1
    for x in dims:
        total *= x
    return rec(0, 0, total, 0)


def literal_to_text(value, shape: Shape, print_shape: bool = False) -> str:
    """The text of a literal (array, tuple of arrays, or ELIDED) of `shape`, without the shape unless asked."""
    if value is ELIDED:
        return "{...}"
    if shape.is_tuple:
        parts = [literal_to_text(v, s, print_shape) for v, s in zip(value, shape.tuple_shapes)]
        return "( " + ", ".join(parts) + " )" if parts else "( )"
    if shape.is_token:
        return "token"
    arr = np.asarray(value)
    prefix = shape.to_text() + " " if print_shape else ""
    if arr.ndim == 0:
        return prefix + format_elements(arr, scalar=True)[0]
    return prefix + _nest(format_elements(arr), tuple(arr.shape))
