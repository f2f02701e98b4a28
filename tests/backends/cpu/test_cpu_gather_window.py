"""gather, reduce-window, reduce-precision and rng-bit-generator on the CPU backend against the interpreter.

Each case is one HLO module run on both backends: gather dimension numbers (collapsed, offset, batching dims,
index vector dim in the middle or implicit), out-of-bounds starts (clamped), every index type; reduce-window
strides, padding, base and window dilation, the cumsum pattern, NaN in max windows, variadic reducers,
narrow floats; rng-bit-generator bit-exact for both algorithms, every output width, odd shapes."""
import ml_dtypes
import numpy as np
import pytest

from xlapy.testing import reducer


def _values(cpu, ty, shape, seed=0):
    n = int(np.prod(shape))
    return cpu.corners(ty, n, seed).reshape(shape) if ty != "pred" else (np.arange(n) % 3 == 0).reshape(shape)


# -- gather --------------------------------------------------------------------------------------------
# (operand shape, indices shape, output shape, dimension numbers, index values)
GATHERS = {
    "embedding": ((5, 3), (4,), (4, 3), "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
                  "index_vector_dim=1, slice_sizes={1,3}", [0, 4, -2, 9]),
    "take_rows_2d_idx": ((6, 4), (2, 3, 1), (2, 3, 4), "offset_dims={2}, collapsed_slice_dims={0}, "
                         "start_index_map={0}, index_vector_dim=2, slice_sizes={1,4}", [5, 0, 1, 7, -1, 3]),
    "window_2d": ((5, 6), (3, 2), (3, 2, 3), "offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, "
                  "index_vector_dim=1, slice_sizes={2,3}", [0, 0, 4, 5, -3, 2]),
    "point_2d_swapped_map": ((4, 5), (3, 2), (3,), "offset_dims={}, collapsed_slice_dims={0,1}, "
                             "start_index_map={1,0}, index_vector_dim=1, slice_sizes={1,1}", [4, 3, 0, 0, 9, -9]),
    "ivd_first": ((7,), (1, 4), (4, 2), "offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, "
                  "index_vector_dim=0, slice_sizes={2}", [0, 6, 3, -1]),
    "offset_dim_first": ((5, 3), (4,), (3, 4), "offset_dims={0}, collapsed_slice_dims={0}, start_index_map={0}, "
                         "index_vector_dim=1, slice_sizes={1,3}", [1, 2, 3, 4]),
    "batching": ((3, 5, 2), (3, 4, 1), (3, 4, 2), "offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, "
                 "operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, "
                 "slice_sizes={1,1,2}", list(range(-2, 10))),
    "batching_second": ((5, 3), (4, 3), (4, 3), "offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, "
                        "operand_batching_dims={1}, start_indices_batching_dims={1}, index_vector_dim=2, "
                        "slice_sizes={1,1}", [0, 1, 2, 3, 4, 5, -1, 2, 4, 1, 0, 3]),
}


@pytest.mark.parametrize("ty,ity", [("f32", "s32"), ("bf16", "s64"), ("s8", "u32"), ("pred", "s32"),
                                    ("c64", "s16"), ("u64", "u8")])
def test_gather(cpu, ty, ity):
    """Every GATHERS case in one module (one compile per element type)."""
    lines, roots, shapes, args = [], [], [], []
    for k, (oshape, ishape, out, dnums, idx) in enumerate(GATHERS.values()):
        idx = np.array(idx, dtype=np.int64)
        if ity.startswith("u"):
            idx = np.where(idx < 0, 200, idx)          # an out-of-range unsigned start
        lines += [f"  x{k} = {ty}[{cpu.dims_text(oshape)}] parameter({2 * k})",
                  f"  i{k} = {ity}[{cpu.dims_text(ishape)}] parameter({2 * k + 1})",
                  f"  g{k} = {ty}[{cpu.dims_text(out)}] gather(x{k}, i{k}), {dnums}"]
        roots.append(f"g{k}")
        shapes.append(f"{ty}[{cpu.dims_text(out)}]")
        x = _values(cpu, ty if ty != "c64" else "f32", oshape, seed=k).astype(cpu.DTYPES.get(ty, np.complex64))
        if ty == "c64":
            x = x + 1j * np.arange(x.size).reshape(oshape).astype(np.float32)
        args += [x, idx.astype(cpu.DTYPES[ity]).reshape(ishape)]
    text = ("HloModule g\nENTRY e {\n" + "\n".join(lines) +
            f"\n  ROOT t = ({', '.join(shapes)}) tuple({', '.join(roots)})\n}}")
    cpu.check(text, *args)


def test_gather_fuses_with_elementwise(cpu):
    """exp(gather(x + 1)) * 2 through the pipeline: gather is an index remapping inside the fusion."""
    text = """HloModule g
ENTRY e {
  x = f32[6,4] parameter(0)
  i = s32[5] parameter(1)
  one = f32[] constant(1)
  b1 = f32[6,4] broadcast(one), dimensions={}
  a = f32[6,4] add(x, b1)
  g = f32[5,4] gather(a, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  e = f32[5,4] exponential(g)
  two = f32[] constant(2)
  b2 = f32[5,4] broadcast(two), dimensions={}
  ROOT m = f32[5,4] multiply(e, b2)
}"""
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(6, 4)
    cpu.check(text, x, np.array([0, 5, -1, 100, 3], np.int32), pipeline=True)


# -- reduce-window ---------------------------------------------------------------------------------------
# (input shape, output shape, window)
WINDOWS = {
    "pool_2x2_stride2": ((6, 8), (3, 4), "size=2x2 stride=2x2"),
    "same_pad_3x3": ((5, 7), (5, 7), "size=3x3 pad=1_1x1_1"),
    "asym_pad_stride": ((7, 6), (3, 4), "size=3x2 stride=3x2 pad=2_1x0_2"),
    "base_dilation": ((4, 5), (7, 4), "size=2x3 lhs_dilate=2x2 pad=0_1x1_0 stride=1x2"),
    "window_dilation": ((9, 6), (5, 3), "size=3x2 rhs_dilate=2x4 pad=0_0x0_1"),
    "cumsum": ((3, 7), (3, 7), "size=1x7 pad=0_0x6_0"),
    "reverse_cumsum": ((7, 3), (7, 3), "size=7x1 pad=0_6x0_0"),
    "global": ((4, 6), (1, 1), "size=4x6"),
    "all_padding": ((2, 3), (2, 1), "size=5x6 stride=4x1 pad=6_4x2_1"),     # window 0 sees only padding
    # unpadded dims need no bounds, 1-wide ones no loop (elemental_window._window_loops)
    "nhwc_pool": ((2, 5, 5, 3), (2, 2, 2, 3), "size=1x3x3x1 stride=1x2x2x1"),
    "strided_pick": ((7, 4), (4, 4), "size=1x1 stride=2x1"),
    "unpadded_dilated": ((9, 6), (5, 1), "size=1x3 stride=2x2 rhs_dilate=1x2"),
}


# element type -> the reducers it is tested with (compile time grows with the count)
WINDOW_REDUCERS = {"f32": ("add", "max", "min"), "bf16": ("add", "max"), "s32": ("add", "min"), "u8": ("max",),
                   "f64": ("add",)}


@pytest.mark.parametrize("ty", WINDOW_REDUCERS)
def test_reduce_window(cpu, ty):
    """Every WINDOWS case in one module per element type."""
    lines = [f"  zero = {ty}[] constant(0)", f"  low = {ty}[] constant({'0' if ty.startswith('u') else '-100'})",
             f"  high = {ty}[] constant(100)"]
    roots, shapes, args = [], [], []
    for k, (shape, out, window) in enumerate(WINDOWS.values()):
        o = f"{ty}[{cpu.dims_text(out)}]"
        lines.append(f"  x{k} = {ty}[{cpu.dims_text(shape)}] parameter({k})")
        for name in WINDOW_REDUCERS[ty]:
            init = {"add": "zero", "max": "low", "min": "high"}[name]
            lines.append(f"  {name}{k} = {o} reduce-window(x{k}, {init}), window={{{window}}}, to_apply={name}_{ty}")
            roots.append(f"{name}{k}")
            shapes.append(o)
        x = _values(cpu, ty, shape, seed=k)
        if ty.startswith("f") or ty == "bf16":
            x = np.where(np.isfinite(x.astype(np.float64)), x, 1.5).astype(x.dtype)   # sums stay comparable
            x.reshape(-1)[min(5, x.size - 1)] = np.nan                                # NaN wins max and min
        args.append(x)
    reducers = "".join(reducer(f"{op}_{ty}") for op in ("add", "max", "min"))
    text = ("HloModule rw\n" + reducers + "ENTRY e {\n" + "\n".join(lines) +
            f"\n  ROOT t = ({', '.join(shapes)}) tuple({', '.join(roots)})\n}}")
    cpu.check(text, *args)


def test_reduce_window_variadic_argmax(cpu):
    """A (value, index) reducer: the max and the first index holding it, NaN-aware, over padded windows."""
    text = """HloModule rw
argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v0, v1), direction=GT
  nan = pred[] compare(v0, v0), direction=NE
  eq = pred[] compare(v0, v1), direction=EQ
  lt = pred[] compare(i0, i1), direction=LT
  tie = pred[] and(eq, lt)
  keep0 = pred[] or(gt, nan)
  keep = pred[] or(keep0, tie)
  v = f32[] select(keep, v0, v1)
  i = s32[] select(keep, i0, i1)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[6,5] parameter(0)
  idx = s32[6,5] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  m1 = s32[] constant(-1)
  ROOT r = (f32[3,5], s32[3,5]) reduce-window(x, idx, ninf, m1), window={size=3x2 stride=2x1 pad=1_0x0_1}, to_apply=argmax
}"""
    x = np.round(np.random.default_rng(1).standard_normal((6, 5)), 1).astype(np.float32)
    x[2, 3] = np.nan
    cpu.check(text, x)


def test_reduce_window_pred_and_scalar(cpu):
    text = """HloModule rw
or_ {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT r = pred[] or(a, b)
}
mul {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] multiply(a, b)
}
ENTRY e {
  p = pred[9] parameter(0)
  x = f32[] parameter(1)
  f = pred[] constant(false)
  one = f32[] constant(2)
  a = pred[5] reduce-window(p, f), window={size=3 stride=2 pad=1_1}, to_apply=or_
  s = f32[] reduce-window(x, one), to_apply=mul
  ROOT t = (pred[5], f32[]) tuple(a, s)
}"""
    cpu.check(text, np.array([0, 0, 0, 1, 0, 0, 0, 0, 1], bool), np.float32(3.5))


# -- reduce-precision -------------------------------------------------------------------------------------
@pytest.mark.parametrize("ty", ["f32", "f64", "bf16", "f16"])
def test_reduce_precision(cpu, ty):
    formats = [(5, 10), (8, 7), (4, 3), (5, 2), (8, 23), (11, 52), (3, 1), (2, 0)]
    formats = [(e, m) for e, m in formats if ty == "f64" or (e <= 8 and m <= 23)]
    n = 64
    x = cpu.corners(ty, n, 2)
    extra = np.array([65504.0, 65520.0, 1e-5, 6e-8, 3.0e38, 1.0009765625, 1.00048828125, 448.0, 480.0, -1e-30])
    with np.errstate(over="ignore"):
        x[-len(extra):] = extra.astype(x.dtype)
    rows = [(f"rp.{e}.{m}", f"{ty}[{n}]", f"reduce-precision(x), exponent_bits={e}, mantissa_bits={m}")
            for e, m in formats]
    cpu.check_ops([("x", f"{ty}[{n}]")], rows, x)


# -- rng-bit-generator ------------------------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ["rng_three_fry", "rng_philox"])
@pytest.mark.parametrize("state_words", [2, 3])
def test_rng_bit_generator(cpu, algorithm, state_words):
    outputs = [("u32", "4,6"), ("u32", "3,5"), ("u32", ""), ("u64", "7"), ("u8", "2,3,5"), ("u16", "9"),
               ("s32", "5,3"), ("f32", "4"), ("s64", "2,3"), ("u32", "1")]
    lines, names, shapes = [], [], []
    for k, (t, d) in enumerate(outputs):
        lines.append(f"  r{k} = (u64[{state_words}], {t}[{d}]) rng-bit-generator(s), algorithm={algorithm}")
        lines.append(f"  b{k} = {t}[{d}] get-tuple-element(r{k}), index=1")
        lines.append(f"  s{k} = u64[{state_words}] get-tuple-element(r{k}), index=0")
        names += [f"b{k}", f"s{k}"]
        shapes += [f"{t}[{d}]", f"u64[{state_words}]"]
    text = (f"HloModule rng\nENTRY e {{\n  s = u64[{state_words}] parameter(0)\n" + "\n".join(lines) +
            f"\n  ROOT t = ({', '.join(shapes)}) tuple({', '.join(names)})\n}}")
    # counters near 2^32 and 2^64 exercise the carries between words
    state = np.array([0x123456789ABCDEF0, 0xFFFFFFFFFFFFFFFE, 0x00000000FFFFFFFF][:state_words], np.uint64)
    got, want = cpu.run_both(text, state)
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, k
        assert (g.reshape(-1).view(np.uint8) == w.reshape(-1).view(np.uint8)).all(), f"output {k} differs:\n{g}\n{w}"


# -- complex, f8, sub-byte ints ------------------------------------------------------------------------------
def _complex_values(n, dt):
    rng = np.random.default_rng(4)
    special = [0, 1, -1, 1j, -1j, 3 + 4j, -2.5 - 0.5j, 1e-3 + 1e3j, complex(np.inf, 0), complex(0, np.nan),
               -0.0 + 0j, 4 + 0j, -4 + 0j, -4 - 0.0j]
    rand = rng.standard_normal(n) * 3 + 1j * rng.standard_normal(n) * 3
    return np.concatenate([np.array(special), rand])[:n].astype(dt)


@pytest.mark.parametrize("ty", ["c64", "c128"])
def test_complex_ops(cpu, ty):
    n = 32
    ft = "f32" if ty == "c64" else "f64"
    dt = np.complex64 if ty == "c64" else np.complex128
    x = _complex_values(n, dt)
    y = np.roll(_complex_values(n, dt), 3)
    y[:3] = [0, 1e-30, 2 + 0j]                  # division by zero and by tiny numbers
    rows = [(op, f"{ty}[{n}]", f"{op}(x, y)") for op in ("add", "subtract", "multiply", "divide")]
    rows += [(op, f"{ty}[{n}]", f"{op}(x)") for op in ("negate", "exponential", "log", "sqrt", "sign")]
    rows += [(op, f"{ft}[{n}]", f"{op}(x)") for op in ("abs", "real", "imag")]
    rows += [(f"compare.{d}", f"pred[{n}]", f"compare(x, y), direction={d}") for d in ("EQ", "NE")]
    rows += [("compare.self", f"pred[{n}]", "compare(x, x), direction=EQ")]
    rows += [(f"convert.{t}", f"{t}[{n}]", "convert(x)") for t in ("c64", "c128", "f32", "s32", "pred")]
    cpu.check_ops([("x", f"{ty}[{n}]"), ("y", f"{ty}[{n}]")], rows, x, y)


def test_complex_make_convert_dot_reduce(cpu):
    text = """HloModule c
add {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ROOT r = c64[] add(a, b)
}
ENTRY e {
  re = f32[3,4] parameter(0)
  im = f32[3,4] parameter(1)
  k = s32[4,2] parameter(2)
  z = c64[3,4] complex(re, im)
  w = c64[4,2] convert(k)
  c = c64[] constant((1, -2))
  cb = c64[4,2] broadcast(c), dimensions={}
  w2 = c64[4,2] multiply(w, cb)
  d = c64[3,2] dot(z, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = c64[] constant((0, 0))
  s = c64[3] reduce(z, zero), dimensions={1}, to_apply=add
  ROOT t = (c64[3,2], c64[3]) tuple(d, s)
}"""
    rng = np.random.default_rng(5)
    cpu.check(text, rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32),
              rng.integers(-5, 5, (4, 2)).astype(np.int32))


@pytest.mark.parametrize("ty", ["f8e4m3fn", "f8e5m2", "f8e4m3", "f8e3m4"])
def test_f8(cpu, ty):
    n = 64
    x = cpu.corners("f32", n, 6)
    extra = [448.0, 464.0, 465.0, 480.0, 57344.0, 61440.0, 1e6, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -11, 2.0 ** -16,
             2.0 ** -17, 1.0625, 1.1875, 15.5, 16.5, 0.1, -0.3, 240.0, 248.0]
    x[-len(extra):] = extra
    y = x.astype(ml_dtypes.finfo(getattr(ml_dtypes, ty.replace("f8", "float8_"))).dtype)
    text = f"""HloModule f8
ENTRY e {{
  x = f32[{n}] parameter(0)
  y = {ty}[{n}] parameter(1)
  a = {ty}[{n}] convert(x)
  b = f32[{n}] convert(y)
  c = {ty}[{n}] add(y, y)
  d = {ty}[{n}] multiply(y, a)
  e = s32[{n}] convert(y)
  f = bf16[{n}] convert(y)
  g = u8[{n}] bitcast-convert(y)
  ROOT t = ({ty}[{n}], f32[{n}], {ty}[{n}], {ty}[{n}], s32[{n}], bf16[{n}], u8[{n}]) tuple(a, b, c, d, e, f, g)
}}"""
    got, want = cpu.run_both(text, x, y)
    for k, (g, w) in enumerate(zip(got, want)):
        if g.dtype.itemsize == 1:      # f8 and raw bits: the same codes (any NaN code counts as NaN)
            gf, wf = g.astype(np.float32), w.astype(np.float32)
            same = (g.view(np.uint8) == w.view(np.uint8)) | (np.isnan(gf) & np.isnan(wf))
            assert same.all(), f"output {k}: {g[~same]} != {w[~same]} for inputs {x[~same]}"
        else:
            cpu.assert_same(g, w, where=f"output {k}")


@pytest.mark.parametrize("ty", ["s4", "u4"])
def test_sub_byte_ints(cpu, ty):
    dt = ml_dtypes.int4 if ty == "s4" else ml_dtypes.uint4
    lo, hi = (-8, 7) if ty == "s4" else (0, 15)
    vals = np.arange(lo, hi + 1)
    x, y = np.repeat(vals, len(vals)).astype(dt), np.tile(vals, len(vals)).astype(dt)
    n = x.size
    rows = [(op, f"{ty}[{n}]", f"{op}(x, y)") for op in ("add", "subtract", "multiply", "divide", "remainder",
                                                         "maximum", "and", "shift-right-arithmetic")]
    rows += [("negate", f"{ty}[{n}]", "negate(x)"), ("to_s32", f"s32[{n}]", "convert(x)"),
             ("to_f32", f"f32[{n}]", "convert(x)"), ("lt", f"pred[{n}]", "compare(x, y), direction=LT")]
    cpu.check_ops([("x", f"{ty}[{n}]"), ("y", f"{ty}[{n}]")], rows, x, y)
