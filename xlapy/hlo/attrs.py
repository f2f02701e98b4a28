"""Typed values of the structured HLO attributes (window, dim_labels, slice, padding) with their text forms.

Each value type is a frozen dataclass with `parse(text)` and `to_text()`; to_text(parse(t)) == t for the
canonical text XLA prints. Parse failures raise ValueError; the text parser turns them into HloParseError.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class WindowDim:
    size: int
    stride: int = 1
    padding_low: int = 0
    padding_high: int = 0
    window_dilation: int = 1   # rhs_dilate
    base_dilation: int = 1     # lhs_dilate
    window_reversal: bool = False


@dataclass(frozen=True)
class Window:
    """`window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`."""
    dims: tuple[WindowDim, ...]

    @staticmethod
    def parse(text: str) -> "Window":
        body = text.strip()
        if not (body.startswith("{") and body.endswith("}")):
            raise ValueError("window must be enclosed in braces")
        fields: dict[str, list[str]] = {}
        for item in body[1:-1].split():
            key, eq, value = item.partition("=")
            if not eq or key not in ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal"):
                raise ValueError(f"unknown window field {item!r}")
            fields[key] = value.split("x")
        n = len(fields.get("size", []))
        for key, vals in fields.items():
            if len(vals) != n:
                raise ValueError(f"window field {key} has {len(vals)} entries, size has {n}")

        def ints(key, default):
            return [int(v) for v in fields[key]] if key in fields else [default] * n
        pads = [tuple(int(p) for p in v.split("_")) for v in fields["pad"]] if "pad" in fields else [(0, 0)] * n
        if any(len(p) != 2 for p in pads):
            raise ValueError("window pad entries must be low_high")
        size, stride, lhs, rhs, rev = (ints("size", 1), ints("stride", 1), ints("lhs_dilate", 1),
                                       ints("rhs_dilate", 1), ints("rhs_reversal", 0))
        return Window(tuple(WindowDim(size[i], stride[i], pads[i][0], pads[i][1], rhs[i], lhs[i], bool(rev[i]))
                            for i in range(n)))

    def to_text(self) -> str:
        d = self.dims
        parts = []
        if d:
            parts.append("size=" + "x".join(str(w.size) for w in d))
        if any(w.stride != 1 for w in d):
            parts.append("stride=" + "x".join(str(w.stride) for w in d))
        if any(w.padding_low or w.padding_high for w in d):
            parts.append("pad=" + "x".join(f"{w.padding_low}_{w.padding_high}" for w in d))
        if any(w.base_dilation != 1 for w in d):
            parts.append("lhs_dilate=" + "x".join(str(w.base_dilation) for w in d))
        if any(w.window_dilation != 1 for w in d):
            parts.append("rhs_dilate=" + "x".join(str(w.window_dilation) for w in d))
        if any(w.window_reversal for w in d):
            parts.append("rhs_reversal=" + "x".join(str(int(w.window_reversal)) for w in d))
        return "{" + " ".join(parts) + "}"

    @staticmethod
    def simple(sizes, strides=None, padding=None) -> "Window":
        n = len(sizes)
        strides = strides or [1] * n
        padding = padding or [(0, 0)] * n
        return Window(tuple(WindowDim(sizes[i], strides[i], padding[i][0], padding[i][1]) for i in range(n)))


@dataclass(frozen=True)
class ConvDimensionNumbers:
    """`dim_labels=b01f_01io->b01f`: which dimension of input, kernel and output is batch/feature/spatial.

    Spatial dimensions are listed in spatial order (digit 0, 1, ...). Labels containing '?' (allowed for
    custom-calls) keep their text but have no dimension numbers (`known` is False)."""
    text: str
    input_batch: int = -1
    input_feature: int = -1
    input_spatial: tuple[int, ...] = ()
    kernel_input_feature: int = -1
    kernel_output_feature: int = -1
    kernel_spatial: tuple[int, ...] = ()
    output_batch: int = -1
    output_feature: int = -1
    output_spatial: tuple[int, ...] = ()

    @property
    def known(self) -> bool:
        return "?" not in self.text

    @staticmethod
    @functools.lru_cache(maxsize=512)
    def parse(text: str) -> "ConvDimensionNumbers":
        # cached: the value is frozen, and conv_canonicalization asks for its five templates' labels per convolution
        # on every compile (mobilenetv2/fwd: 260 parses, 5.9 ms of a pass that changed nothing)
        m = re.fullmatch(r"([0-9a-z?]+)_([0-9a-z?]+)->([0-9a-z?]+)", text)
        if not m:
            raise ValueError(f"malformed dim_labels {text!r}")
        lhs, rhs, out = m.groups()
        if "?" in text:
            return ConvDimensionNumbers(text)

        def spatial(labels: str, what: str) -> tuple[int, ...]:
            digits = sorted((c, i) for i, c in enumerate(labels) if c.isdigit())
            if [c for c, _ in digits] != [str(k) for k in range(len(digits))]:
                raise ValueError(f"{what} labels {labels!r} must number spatial dims 0..n-1 once each")
            return tuple(i for _, i in digits)

        def find(labels: str, ch: str, what: str) -> int:
            if labels.count(ch) != 1:
                raise ValueError(f"{what} labels {labels!r} must contain {ch!r} exactly once")
            return labels.index(ch)

        for labels, allowed, what in ((lhs, "bf", "input"), (rhs, "io", "kernel"), (out, "bf", "output")):
            bad = [c for c in labels if not c.isdigit() and c not in allowed]
            if bad:
                raise ValueError(f"{what} labels {labels!r} contain unexpected {bad[0]!r}")
        if not (len(lhs) == len(rhs) == len(out)):
            raise ValueError(f"dim_labels {text!r}: input, kernel and output must have equal rank")
        return ConvDimensionNumbers(
            text, find(lhs, "b", "input"), find(lhs, "f", "input"), spatial(lhs, "input"),
            find(rhs, "i", "kernel"), find(rhs, "o", "kernel"), spatial(rhs, "kernel"),
            find(out, "b", "output"), find(out, "f", "output"), spatial(out, "output"))

    @staticmethod
    def from_dims(input_batch, input_feature, input_spatial, kernel_input_feature, kernel_output_feature,
                  kernel_spatial, output_batch, output_feature, output_spatial) -> "ConvDimensionNumbers":
        n = len(input_spatial) + 2

        def labels(specials: dict[int, str], spatial) -> str:
            out = ["?"] * n
            for i, c in specials.items():
                out[i] = c
            for k, i in enumerate(spatial):
                out[i] = str(k)
            return "".join(out)
        text = (labels({input_batch: "b", input_feature: "f"}, input_spatial) + "_"
                + labels({kernel_input_feature: "i", kernel_output_feature: "o"}, kernel_spatial) + "->"
                + labels({output_batch: "b", output_feature: "f"}, output_spatial))
        return ConvDimensionNumbers.parse(text)

    def to_text(self) -> str:
        return self.text


@dataclass(frozen=True)
class SliceRange:
    start: int
    limit: int
    stride: int = 1


def parse_slice(text: str) -> tuple[SliceRange, ...]:
    """`{[0:2], [1:7:2]}` -> ranges."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError("slice must be enclosed in braces")
    inner = body[1:-1].strip()
    if not inner:
        return ()
    ranges = []
    for part in re.findall(r"\[([^\]]*)\]", inner):
        nums = [int(x) for x in part.split(":")]
        if len(nums) not in (2, 3):
            raise ValueError(f"slice range [{part}] must be start:limit or start:limit:stride")
        ranges.append(SliceRange(*nums))
    if re.sub(r"\[[^\]]*\]", "", inner).replace(",", "").strip():
        raise ValueError(f"malformed slice {text!r}")
    return tuple(ranges)


def slice_to_text(ranges) -> str:
    """XLA prints the stride of every dimension as soon as one stride is not 1."""
    strided = any(r.stride != 1 for r in ranges)
    return "{" + ", ".join(f"[{r.start}:{r.limit}" + (f":{r.stride}]" if strided else "]") for r in ranges) + "}"


@dataclass(frozen=True)
class PadDim:
    low: int
    high: int
    interior: int = 0


def parse_padding(text: str) -> tuple[PadDim, ...]:
    """`0_1_2x3_4` (low_high[_interior] per dimension, 'x'-separated) -> PadDims."""
    if not text:
        return ()
    dims = []
    for part in text.split("x"):
        nums = [int(x) for x in re.findall(r"-?\d+", part)]
        if len(nums) not in (2, 3) or "_".join(str(n) for n in nums) != part:
            raise ValueError(f"malformed padding entry {part!r}")
        dims.append(PadDim(*nums))
    return tuple(dims)


def padding_to_text(dims) -> str:
    """XLA prints the interior padding of every dimension as soon as one is not 0."""
    interior = any(d.interior for d in dims)
    return "x".join(f"{d.low}_{d.high}" + (f"_{d.interior}" if interior else "") for d in dims)


def window_of(inst) -> Window:
    """The instruction's window; XLA omits `window={}` for scalar (rank-0) windows."""
    return inst.attrs.get("window") or Window(())
