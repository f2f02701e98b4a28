"""reduce-window shaped as a scan (cumsum, cumprod, cummax, cummin, forward and reverse) on the CPU backend's O(n)
scan emitter and the interpreter's accumulate path: both must agree bit for bit (NaNs compared as NaNs), also
with numpy.cumsum's sequential order; long rows (n = 100000) that the O(n^2) window loop would crawl through; the
windows that are not scans keep the elemental path."""
import ml_dtypes
import numpy as np
import pytest

import xlapy
from xlapy import lax
from xlapy.backends.cpu.scan_emitter import scan_axis
from xlapy.testing import reducer

IDENTITY = {"add": "0", "mul": "1", "max": "-inf", "min": "inf", "and": "true", "or": "false"}
INT_IDENTITY = {"s32": ("-2147483648", "2147483647"), "u8": ("0", "255"), "s64": ("-9223372036854775808",
                                                                                   "9223372036854775807")}
TYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "s32": np.int32, "u8": np.uint8,
         "s64": np.int64, "pred": np.bool_, "c64": np.complex64}


def _ops_for(ty: str) -> list[str]:
    if ty == "pred":
        return ["and", "or", "max", "min"]
    if ty == "c64":
        return ["add", "mul"]
    return ["add", "mul", "max", "min"]


def _init(ty: str, op: str) -> str:
    if ty == "pred":
        return {"and": "true", "or": "false", "max": "false", "min": "true"}[op]
    if ty in INT_IDENTITY and op in ("max", "min"):
        return INT_IDENTITY[ty][op == "min"]
    if ty == "c64":
        return {"add": "(0, 0)", "mul": "(1, 0)"}[op]
    return IDENTITY[op]


def _window(shape, axis: int, reverse: bool) -> str:
    n = shape[axis]
    size = "x".join(str(n) if d == axis else "1" for d in range(len(shape)))
    pad = "x".join((f"0_{n - 1}" if reverse else f"{n - 1}_0") if d == axis else "0_0" for d in range(len(shape)))
    return f"size={size} pad={pad}"


def _scan_module(ty: str, shape, rows, layout: str = "") -> str:
    """rows: [(op, axis, reverse, init text)] -> a module returning a tuple of reduce-windows of one parameter."""
    dims = ",".join(map(str, shape))
    text = "HloModule scans\n" + "".join(reducer(f"{op}_{ty}") for op in {r[0] for r in rows})
    lines = [f"  x = {ty}[{dims}]{layout} parameter(0)"]
    for i, (op, axis, reverse, init) in enumerate(rows):
        lines.append(f"  i{i} = {ty}[] constant({init})")
        lines.append(f"  r{i} = {ty}[{dims}] reduce-window(x, i{i}), window={{{_window(shape, axis, reverse)}}}, "
                     f"to_apply={op}_{ty}")
    lines.append(f"  ROOT out = ({', '.join([f'{ty}[{dims}]'] * len(rows))}) "
                 f"tuple({', '.join(f'r{i}' for i in range(len(rows)))})")
    return text + "ENTRY e {\n" + "\n".join(lines) + "\n}\n"


def _values(ty: str, shape, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if ty == "pred":
        return (rng.random(n) < 0.7).reshape(shape)
    dt = np.dtype(TYPES[ty])
    if dt.kind in "iu":
        return rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, n, dtype=dt, endpoint=True).reshape(shape)
    vals = rng.standard_normal(n) * 2
    vals[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5][:min(6, n)]
    rng.shuffle(vals)
    if ty == "c64":
        vals = vals + 1j * rng.standard_normal(n)
    return vals.astype(dt).reshape(shape)


def _bits(x: np.ndarray) -> np.ndarray:
    """Comparable bit patterns: every NaN alike, -0.0 and 0.0 apart."""
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return np.stack([_bits(x.real), _bits(x.imag)])
    if x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16:
        wide = x.astype(np.float64)
        return np.where(np.isnan(wide), np.nan, wide).view(np.int64)
    return x


def _assert_identical(got, want, where: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, where
    bad = np.flatnonzero((_bits(got) != _bits(want)).reshape(-1))
    assert bad.size == 0, f"{where}: {bad.size} elements differ, first at {bad[0]}"


def _run_both(text: str, *args):
    module = xlapy.hlo.parse(text)
    return xlapy.compile(module, backend="cpu")(*args), xlapy.compile(module, backend="interpreter")(*args)


@pytest.mark.parametrize("ty", list(TYPES))
def test_scans_match_interpreter_bit_for_bit(ty):
    """Every op, along every axis, forward and reverse; a non-identity init too."""
    shape = (4, 9, 3)
    rows = [(op, axis, reverse, _init(ty, op)) for op in _ops_for(ty) for axis in range(3) for reverse in (False, True)]
    if ty in ("f32", "s32"):
        rows += [("add", 1, False, "3"), ("add", 1, True, "3"), ("mul", 0, False, "2")]
    x = _values(ty, shape)
    got, want = _run_both(_scan_module(ty, shape, rows), x)
    for (op, axis, reverse, init), g, w in zip(rows, got, want):
        _assert_identical(g, w, f"{ty} {op} axis={axis} reverse={reverse} init={init}")


def test_scan_non_row_major_operand():
    shape = (6, 5)
    rows = [("add", 0, False, "0"), ("max", 1, True, "-inf"), ("mul", 1, False, "1")]
    x = _values("f64", shape, 3)
    got, want = _run_both(_scan_module("f64", shape, rows, layout="{0,1}"), x)
    for row, g, w in zip(rows, got, want):
        _assert_identical(g, w, f"{row}")


def test_long_rows_are_linear():
    """n = 100000: the O(n^2) window loop would take minutes here. Forward float sums match numpy.cumsum's
    sequential order exactly."""
    n = 100000
    rows = [("add", 0, False, "0"), ("add", 0, True, "0"), ("max", 0, True, "-inf"), ("min", 0, False, "inf")]
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    got, want = _run_both(_scan_module("f32", (n,), rows), x)
    for row, g, w in zip(rows, got, want):
        _assert_identical(g, w, f"{row}")
    _assert_identical(got[0], np.cumsum(x), "cumsum vs numpy")
    _assert_identical(got[1], np.cumsum(x[::-1])[::-1], "reverse cumsum vs numpy")
    _assert_identical(got[2], np.maximum.accumulate(x[::-1])[::-1], "reverse cummax vs numpy")
    ints = np.random.default_rng(2).integers(-1000, 1000, (2, n), dtype=np.int32)
    rows = [("add", 1, False, "0"), ("mul", 1, True, "1")]
    got, want = _run_both(_scan_module("s32", (2, n), rows), ints)
    _assert_identical(got[0], np.cumsum(ints, axis=1, dtype=np.int32), "int cumsum vs numpy")
    _assert_identical(got[1], want[1], "int reverse cumprod")


def _argmax_and_subtract_module(n: int) -> str:
    scan, rscan = f"size=1x{n} pad=0_0x{n - 1}_0", f"size=1x{n} pad=0_0x0_{n - 1}"
    return f"""
HloModule running_argmax
argmax {{
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v1, v0), direction=GT
  v = f32[] select(gt, v1, v0)
  i = s32[] select(gt, i1, i0)
  ROOT r = (f32[], s32[]) tuple(v, i)
}}
sub {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] subtract(a, b)
}}
ENTRY e {{
  x = f32[3,{n}] parameter(0)
  idx = s32[3,{n}] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  m1 = s32[] constant(-1)
  run = (f32[3,{n}], s32[3,{n}]) reduce-window(x, idx, ninf, m1), window={{{scan}}}, to_apply=argmax
  v = f32[3,{n}] get-tuple-element(run), index=0
  i = s32[3,{n}] get-tuple-element(run), index=1
  half = f32[] constant(0.5)
  fwd = f32[3,{n}] reduce-window(x, half), window={{{scan}}}, to_apply=sub
  rev = f32[3,{n}] reduce-window(x, half), window={{{rscan}}}, to_apply=sub
  ROOT out = (f32[3,{n}], s32[3,{n}], f32[3,{n}], f32[3,{n}]) tuple(v, i, fwd, rev)
}}
"""


def test_variadic_and_non_commutative_reducers():
    """A forward scan takes any reducer (a running argmax; x - y, whose order matters); a reverse scan with a
    reducer that is not a commutative combiner keeps the elemental window loop."""
    n = 11
    x = _values("f32", (3, n), 5)
    got, want = _run_both(_argmax_and_subtract_module(n), x)
    for k, (g, w) in enumerate(zip(got, want)):
        _assert_identical(g, w, f"output {k}")
    expected = np.empty_like(x)
    acc = np.full(3, 0.5, np.float32)
    for j in range(n):
        acc = acc - x[:, j]
        expected[:, j] = acc
    _assert_identical(got[2], expected, "running subtract")
    expected_rev = np.empty_like(x)
    for j in range(n):
        acc = np.full(3, 0.5, np.float32)
        for k in range(j, n):
            acc = acc - x[:, k]
        expected_rev[:, j] = acc
    _assert_identical(got[3], expected_rev, "reverse subtract (left fold of each suffix)")


def test_scan_axis_recognizes_only_scans():
    text = """
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  x = f32[4,6] parameter(0)
  z = f32[] constant(0)
  scan = f32[4,6] reduce-window(x, z), window={size=1x6 pad=0_0x5_0}, to_apply=add
  rscan = f32[4,6] reduce-window(x, z), window={size=4x1 pad=0_3x0_0}, to_apply=add
  short = f32[4,6] reduce-window(x, z), window={size=1x3 pad=0_0x2_0}, to_apply=add
  strided = f32[4,3] reduce-window(x, z), window={size=1x6 stride=1x2 pad=0_0x5_0}, to_apply=add
  two = f32[4,6] reduce-window(x, z), window={size=4x6 pad=3_0x5_0}, to_apply=add
  ROOT out = (f32[4,6], f32[4,6], f32[4,6], f32[4,3], f32[4,6]) tuple(scan, rscan, short, strided, two)
}
"""
    module = xlapy.hlo.parse(text)
    by_name = {i.name: i for i in module.entry.instructions}
    assert scan_axis(by_name["scan"]) == (1, False)
    assert scan_axis(by_name["rscan"]) == (0, True)
    for name in ("short", "strided", "two"):        # must not change: the elemental window loop
        assert scan_axis(by_name[name]) is None
    x = _values("f32", (4, 6), 7)
    got, want = _run_both(text, x)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, equal_nan=True, err_msg=f"output {k}")


@pytest.mark.parametrize("fn,ref", [(lax.cumsum, np.add), (lax.cumprod, np.multiply),
                                    (lax.cummax, np.maximum), (lax.cummin, np.minimum)])
def test_lax_cumulative_on_cpu(fn, ref):
    x = np.random.default_rng(4).standard_normal((5, 8)).astype(np.float32)
    for axis in (0, 1):
        for reverse in (False, True):
            got = np.asarray(xlapy.jit(lambda v: fn(v, axis=axis, reverse=reverse), backend="cpu")(x))
            flip = (slice(None),) * axis + (slice(None, None, -1),)
            want = ref.accumulate(x[flip], axis=axis)[flip] if reverse else ref.accumulate(x, axis=axis)
            _assert_identical(got, want, f"{fn.__name__} axis={axis} reverse={reverse}")
