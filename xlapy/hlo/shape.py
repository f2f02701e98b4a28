"""Element types, layouts and shapes: the value types of the IR (frozen dataclasses)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class PrimitiveType:
    """One HLO element type. `kind` is one of: pred, int, uint, float, complex, token, opaque."""
    name: str
    kind: str
    bits: int
    dtype: np.dtype | None

    @property
    def is_float(self) -> bool: return self.kind == "float"
    @property
    def is_integral(self) -> bool: return self.kind in ("int", "uint")
    @property
    def is_signed(self) -> bool: return self.kind in ("int", "float", "complex")
    @property
    def is_unsigned(self) -> bool: return self.kind == "uint"
    @property
    def is_complex(self) -> bool: return self.kind == "complex"
    @property
    def is_pred(self) -> bool: return self.kind == "pred"
    @property
    def is_array_type(self) -> bool: return self.dtype is not None


def _t(name: str, kind: str, bits: int, dtype) -> tuple[str, PrimitiveType]:
    return name, PrimitiveType(name, kind, bits, None if dtype is None else np.dtype(dtype))


# name -> PrimitiveType. The f8/4-bit types are parsed and kept; numpy dtypes come from ml_dtypes.
PRIMITIVE_TYPES: dict[str, PrimitiveType] = dict([
    _t("pred", "pred", 8, np.bool_),
    _t("s2", "int", 2, ml_dtypes.int2), _t("s4", "int", 4, ml_dtypes.int4),
    _t("s8", "int", 8, np.int8), _t("s16", "int", 16, np.int16),
    _t("s32", "int", 32, np.int32), _t("s64", "int", 64, np.int64),
    _t("u2", "uint", 2, ml_dtypes.uint2), _t("u4", "uint", 4, ml_dtypes.uint4),
    _t("u8", "uint", 8, np.uint8), _t("u16", "uint", 16, np.uint16),
    _t("u32", "uint", 32, np.uint32), _t("u64", "uint", 64, np.uint64),
    _t("f16", "float", 16, np.float16), _t("bf16", "float", 16, ml_dtypes.bfloat16),
    _t("f32", "float", 32, np.float32), _t("f64", "float", 64, np.float64),
    _t("f8e5m2", "float", 8, ml_dtypes.float8_e5m2), _t("f8e4m3fn", "float", 8, ml_dtypes.float8_e4m3fn),
    _t("f8e4m3b11fnuz", "float", 8, ml_dtypes.float8_e4m3b11fnuz),
    _t("f8e5m2fnuz", "float", 8, ml_dtypes.float8_e5m2fnuz),
    _t("f8e4m3fnuz", "float", 8, ml_dtypes.float8_e4m3fnuz),
    _t("f8e4m3", "float", 8, ml_dtypes.float8_e4m3), _t("f8e3m4", "float", 8, ml_dtypes.float8_e3m4),
    _t("f4e2m1fn", "float", 4, ml_dtypes.float4_e2m1fn), _t("f8e8m0fnu", "float", 8, ml_dtypes.float8_e8m0fnu),
    _t("c64", "complex", 64, np.complex64), _t("c128", "complex", 128, np.complex128),
    _t("token", "token", 0, None), _t("opaque", "opaque", 0, None),
])

_BY_DTYPE: dict[np.dtype, str] = {}
INT64_MAX = (1 << 63) - 1      # the most elements (and bytes) an array may have, as in XLA
for _p in PRIMITIVE_TYPES.values():
    if _p.dtype is not None:
        _BY_DTYPE.setdefault(_p.dtype, _p.name)


def primitive_type(name: str) -> PrimitiveType:
    return PRIMITIVE_TYPES[name]


def type_name_of_dtype(dtype) -> str:
    """The HLO element type name of a numpy dtype (np.float32 -> 'f32')."""
    dt = np.dtype(dtype)
    if dt not in _BY_DTYPE:
        raise TypeError(f"no HLO element type for numpy dtype {dt}")
    return _BY_DTYPE[dt]


@dataclass(frozen=True)
class Layout:
    """minor_to_major plus the text after ':' (tiles T(..), element size E(..), memory space S(..), ...), kept verbatim."""
    minor_to_major: tuple[int, ...]
    tail: str = ""

    @property
    def memory_space(self) -> int:
        import re
        m = re.search(r"S\((\d+)\)", self.tail)
        return int(m.group(1)) if m else 0

    def to_text(self) -> str:
        s = ",".join(str(d) for d in self.minor_to_major)
        return "{" + s + (":" + self.tail if self.tail else "") + "}"


@dataclass(frozen=True)
class Shape:
    """An array shape (element_type, dims, optional layout) or a tuple shape (element_type == 'tuple')."""
    element_type: str
    dims: tuple[int, ...] = ()
    layout: Layout | None = None
    tuple_shapes: tuple["Shape", ...] = ()
    # Per-dimension dynamic flags: `f32[<=4]` is a dynamic dimension with bound 4; `?` is unbounded (-1).
    dynamic: tuple[bool, ...] = field(default=())

    # -- construction --------------------------------------------------------------------------------
    @staticmethod
    def array(element_type: str, dims=(), layout: Layout | tuple | None = None) -> "Shape":
        if element_type not in PRIMITIVE_TYPES:
            raise ValueError(f"unknown element type {element_type!r}")
        if isinstance(layout, tuple):
            layout = Layout(layout)
        return Shape(element_type, tuple(int(d) for d in dims), layout)

    @staticmethod
    def tuple_of(shapes) -> "Shape":
        return Shape("tuple", (), None, tuple(shapes))

    @staticmethod
    def token() -> "Shape":
        return Shape("token")

    @staticmethod
    def scalar(element_type: str) -> "Shape":
        return Shape.array(element_type, ())

    @staticmethod
    def of(array) -> "Shape":
        """The shape of a numpy array (row-major layout left unset)."""
        a = np.asarray(array)
        return Shape.array(type_name_of_dtype(a.dtype), a.shape)

    # -- queries -------------------------------------------------------------------------------------
    @property
    def is_tuple(self) -> bool: return self.element_type == "tuple"
    @property
    def is_token(self) -> bool: return self.element_type == "token"
    @property
    def is_array(self) -> bool: return not self.is_tuple and self.ptype.is_array_type
    @property
    def rank(self) -> int: return len(self.dims)
    @property
    def ptype(self) -> PrimitiveType: return PRIMITIVE_TYPES[self.element_type]
    @property
    def dtype(self) -> np.dtype:
        if not self.is_array:
            raise TypeError(f"shape {self} has no numpy dtype")
        return self.ptype.dtype

    @cached_property
    def numel(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @cached_property
    def array_bytes(self) -> int:
        """The bytes of its array leaves (at least one per element): fusion's size rules ask this of the same
        shapes many times, a loop state's tuple of a hundred elements among them."""
        return sum(s.numel * max(1, s.ptype.bits // 8) for s in self.leaves() if s.is_array)

    def size_overflow(self) -> str | None:
        """Why this array shape cannot exist, or None: its element count or byte size does not fit int64 (XLA's
        "size may overflow int64_t"). Unbounded dynamic dims (-1) count as 0."""
        count = 1
        for d in self.dims:
            count *= max(d, 0)
        if count > INT64_MAX:
            return f"{count} elements: more than int64 can count ({INT64_MAX})"
        nbytes = -(-count * self.ptype.bits // 8)
        if nbytes > INT64_MAX:
            return f"{count} elements of {self.ptype.bits} bits = {nbytes} bytes: more than int64 can count"
        return None

    def is_dynamic_dim(self, i: int) -> bool:
        return bool(self.dynamic) and self.dynamic[i]

    def leaves(self) -> list["Shape"]:
        """Array/token leaves of a (possibly nested) tuple shape, in order."""
        if not self.is_tuple:
            return [self]
        return [leaf for s in self.tuple_shapes for leaf in s.leaves()]

    def with_layout(self, layout: Layout | None) -> "Shape":
        return Shape(self.element_type, self.dims, layout, self.tuple_shapes, self.dynamic)

    def without_layout(self) -> "Shape":
        if self.is_tuple:
            return Shape.tuple_of(s.without_layout() for s in self.tuple_shapes)
        return self.with_layout(None)

    def with_element_type(self, element_type: str) -> "Shape":
        return Shape(element_type, self.dims, self.layout, self.tuple_shapes, self.dynamic)

    def with_dims(self, dims) -> "Shape":
        return Shape(self.element_type, tuple(dims), None, (), ())

    def compatible(self, other: "Shape") -> bool:
        """Equal ignoring layouts (XLA's ShapeUtil::Compatible)."""
        if self.is_tuple or other.is_tuple:
            return (self.is_tuple and other.is_tuple and len(self.tuple_shapes) == len(other.tuple_shapes)
                    and all(a.compatible(b) for a, b in zip(self.tuple_shapes, other.tuple_shapes)))
        return self.element_type == other.element_type and self.dims == other.dims

    def default_layout(self) -> Layout:
        return Layout(tuple(range(self.rank - 1, -1, -1)))

    # -- text ----------------------------------------------------------------------------------------
    def to_text(self, print_layout: bool = True) -> str:
        """The shape's HLO text. Made once per shape (and per `print_layout`): a Shape is a frozen value, and the
        same shapes are printed over and over (the printer, kernel replay's structure keys, cache keys)."""
        key = "_text" if print_layout else "_text_without_layout"
        text = self.__dict__.get(key)
        if text is None:
            text = self.__dict__[key] = self._make_text(print_layout)
        return text

    def _make_text(self, print_layout: bool) -> str:
        if self.is_tuple:
            return "(" + ", ".join(s.to_text(print_layout) for s in self.tuple_shapes) + ")"
        dims = []
        for i, d in enumerate(self.dims):
            if self.is_dynamic_dim(i):
                dims.append("?" if d < 0 else f"<={d}")
            else:
                dims.append(str(d))
        s = f"{self.element_type}[{','.join(dims)}]"
        if print_layout and self.layout is not None and (self.rank > 0 or self.layout.tail):
            s += self.layout.to_text()
        return s

    def __str__(self) -> str:
        return self.to_text()
