"""Every elementwise op on the CPU backend against the interpreter, per element type, with corner values
(NaN, -0.0, inf, INT_MIN, division by zero, shifts past the width). Each test compiles one module holding a
whole row family (a tuple of results), so the table stays large while the compiles stay few."""
import numpy as np
import pytest

FLOATS = ["f32", "f64", "bf16", "f16"]
INTS = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"]
N = 48

FLOAT_UNARY = ["abs", "negate", "sign", "ceil", "floor", "round-nearest-afz", "round-nearest-even", "exponential",
               "log", "sqrt", "rsqrt", "sine", "cosine", "tan", "tanh", "log-plus-one", "exponential-minus-one",
               "cbrt", "erf", "logistic"]
INT_UNARY = ["abs", "negate", "sign", "not", "popcnt", "count-leading-zeros"]
ARITH = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power"]
INT_ONLY = ["and", "or", "xor", "shift-left", "shift-right-logical", "shift-right-arithmetic"]
DIRECTIONS = ["EQ", "NE", "LT", "LE", "GT", "GE"]
CONVERT_TYPES = ["pred", "s8", "s16", "s32", "s64", "u8", "u32", "u64", "f16", "bf16", "f32", "f64"]


def _pairs(cpu, ty, seed=1):
    """x and y arrays that cover corner x corner combinations (and, for ints, shifts by >= width)."""
    a = cpu.corners(ty, N, seed)
    b = np.roll(cpu.corners(ty, N, seed + 1), 5)
    if ty.startswith(("s", "u")):
        bits = np.iinfo(np.dtype(cpu.DTYPES[ty])).bits
        b[:6] = np.array([0, 1, bits - 1, bits, bits + 3, 0], dtype=object).astype(b.dtype)
        b[6:10] = 0                      # division / remainder by zero
        b[10] = b.dtype.type(-1) if ty.startswith("s") else b[10]
        a[10] = np.iinfo(b.dtype).min    # INT_MIN / -1
        a[11], b[11] = -1 if ty.startswith("s") else 1, np.iinfo(b.dtype).max
    return a, b


def _unary_rows(ops, ty, out=None):
    return [(f"{op}.{ty}", f"{out or ty}[{N}]", f"{op}(x)") for op in ops]


def _binary_rows(ops, ty, out=None, attrs=""):
    return [(f"{op}.{ty}", f"{out or ty}[{N}]", f"{op}(x, y){attrs}") for op in ops]


@pytest.mark.parametrize("ty", FLOATS)
def test_float_unary(cpu, ty):
    rows = _unary_rows(FLOAT_UNARY, ty) + [("is-finite", f"pred[{N}]", "is-finite(x)")]
    cpu.check_ops([("x", f"{ty}[{N}]")], rows, cpu.corners(ty, N))


@pytest.mark.parametrize("ty", INTS + ["pred"])
def test_int_unary(cpu, ty):
    cpu.check_ops([("x", f"{ty}[{N}]")], _unary_rows(INT_UNARY, ty), cpu.corners(ty, N))


@pytest.mark.parametrize("ty", FLOATS + INTS + ["pred"])
def test_binary(cpu, ty):
    x, y = _pairs(cpu, ty)
    ops = ["and", "or", "xor", "maximum", "minimum", "power"] if ty == "pred" else ARITH + INT_ONLY + ["atan2"]
    rows = _binary_rows(ops, ty)
    cpu.check_ops([("x", f"{ty}[{N}]"), ("y", f"{ty}[{N}]")], rows, x, y)


@pytest.mark.parametrize("ty", FLOATS + ["s32", "u8", "s64", "u64", "pred"])
def test_compare(cpu, ty):
    x, y = _pairs(cpu, ty)
    x[::3] = y[::3]      # equal pairs
    rows = [(f"compare.{d}", f"pred[{N}]", f"compare(x, y), direction={d}") for d in DIRECTIONS]
    if ty in FLOATS:
        rows += [(f"compare.{d}.totalorder", f"pred[{N}]", f"compare(x, y), direction={d}, type=TOTALORDER")
                 for d in DIRECTIONS]
    if ty in ("s32", "u64"):
        rows += [(f"compare.{d}.{k}", f"pred[{N}]", f"compare(x, y), direction={d}, type={k}")
                 for d in ("LT", "GE") for k in ("SIGNED", "UNSIGNED")]
    cpu.check_ops([("x", f"{ty}[{N}]"), ("y", f"{ty}[{N}]")], rows, x, y)


@pytest.mark.parametrize("src", CONVERT_TYPES)
def test_convert(cpu, src):
    x = cpu.corners(src, N)
    if src in FLOATS:
        extra = np.array([1e10, -1e10, 3e9, -3e9, 255.5, 256.0, -129.0, 2.0 ** 63, 2.0 ** 64, 1e-40, 65519.0, 1e5])
        with np.errstate(over="ignore"):
            x[-len(extra):] = extra.astype(x.dtype)
    rows = [(f"convert.{src}->{dst}", f"{dst}[{N}]", "convert(x)") for dst in CONVERT_TYPES]
    cpu.check_ops([("x", f"{src}[{N}]")], rows, x)


@pytest.mark.parametrize("ty", FLOATS + ["s32", "u8", "pred"])
def test_select_and_clamp(cpu, ty):
    x, y = _pairs(cpu, ty)
    params = [("p", f"pred[{N}]"), ("x", f"{ty}[{N}]"), ("y", f"{ty}[{N}]"), ("lo", f"{ty}[]"), ("hi", f"{ty}[]")]
    rows = [("select", f"{ty}[{N}]", "select(p, x, y)"), ("clamp.scalar", f"{ty}[{N}]", "clamp(lo, x, hi)"),
            ("clamp.array", f"{ty}[{N}]", "clamp(y, x, y)")]
    lo, hi = sorted([x[3], x[13]]) if ty != "pred" else (x[3], x[13])
    cpu.check_ops(params, rows, cpu.corners("pred", N, 3), x, y, np.asarray(lo), np.asarray(hi))


@pytest.mark.parametrize("src, dst, out_dims", [("f32", "s32", "48"), ("s32", "f32", "48"), ("f64", "u64", "48"),
                                                ("f32", "u8", "48,4"), ("bf16", "s16", "48"), ("f16", "u16", "48"),
                                                ("u16", "bf16", "48"), ("s8", "pred", "48")])
def test_bitcast_convert(cpu, src, dst, out_dims):
    x = cpu.corners(src, N)
    if src in FLOATS:
        x = np.where(np.isnan(x), 0, x).astype(x.dtype)    # NaN payloads are not portable
    if dst == "pred":
        x = (x & 1).astype(x.dtype)
    cpu.check_ops([("x", f"{src}[{N}]")], [("bitcast-convert", f"{dst}[{out_dims}]", "bitcast-convert(x)")], x)


def test_bitcast_convert_widening(cpu):
    x = np.arange(24, dtype=np.uint8).reshape(6, 4) * 7
    cpu.check_ops([("x", "u8[6,4]")], [("widen", "f32[6]", "bitcast-convert(x)")], x)


def test_denormals_flush_like_xla(cpu):
    x = np.array([1e-42, -1e-42, 1e-39, 2.0, -1e-30], np.float32)
    y = np.array([1e-42, 0.5, 1e-42, 1e-40, 1e-42], np.float32)
    rows = [(op, "f32[5]", f"{op}(x, y)") for op in ("add", "multiply", "maximum", "minimum", "power", "divide")]
    rows += [("log", "f32[5]", "log(x)"), ("exp", "f32[5]", "exponential(x)"), ("sqrt", "f32[5]", "sqrt(x)"),
             ("abs", "f32[5]", "abs(x)"), ("lt", "pred[5]", "compare(x, y), direction=LT"),
             ("to_f64", "f64[5]", "convert(x)"), ("to_bf16", "bf16[5]", "convert(x)")]
    cpu.check_ops([("x", "f32[5]"), ("y", "f32[5]")], rows, x, y)


def test_kernels_run_under_the_entry_mxcsr():
    """A kernel sets no MXCSR of its own (the entry installs FTZ/DAZ once); only pow, which XLA computes without
    flushing, switches FTZ/DAZ off around its call (scalar_ops.ieee_call), and its denormal operand and result
    survive at O3 (with llvm.pow, code generation moved the call out of the switch: pow(1e-20, 2) gave 0)."""
    import xlapy
    exe = xlapy.compile("""HloModule m
ENTRY e { x = f32[64] parameter(0)
  y = f32[64] parameter(1)
  p = f32[64] power(x, y)
  n = f32[64] negate(x)
  ROOT t = (f32[64], f32[64]) tuple(p, n) }
""", backend="cpu")
    kernels = [f for f in exe.llvm_ir.split("\ndefine ") if f.startswith("internal void @\"xlapy_kernel.")]
    assert len(kernels) == 2 and [('@"powf"' in k, "stmxcsr" in k) for k in kernels] == [(True, True), (False, False)]
    x, y = np.full(64, 1e-20, np.float32), np.full(64, 2.0, np.float32)
    x[1], y[1] = 1e-42, 0.5                  # a denormal operand, not read as zero
    p, n = exe(x, y)
    assert abs(p[0] - 1e-40) < 1e-42 and abs(p[1] / 1e-21 - 1) < 1e-3 and n[0] == -x[0]


@pytest.mark.parametrize("ty", ["f32", "f64", "bf16"])
def test_max_min_clamp_against_literals(cpu, ty):
    """maximum/minimum with a literal side are one compare and one select (scalar_ops._KEEP_X), a literal is
    flushed in Python, and clamp between literals drops its NaN selects: the bits must stay those of the full
    IEEE form (NaN of x propagates, max(-0, +0) = +0, min(+0, -0) = -0, denormals flushed), both argument orders."""
    x = cpu.corners(ty, N)
    if ty != "bf16":
        x[20:24] = np.array([1e-42, -1e-42, 1e-310, -1e-310] if ty == "f64" else [1e-42, -1e-42, 1e-39, -1e-39])
    consts = {"zero": "0", "nzero": "-0", "six": "6", "ninf": "-inf", "nan": "nan", "tiny": "1e-40"}
    lines = [f"  x = {ty}[{N}] parameter(0)"]
    outs = []
    for name, lit in consts.items():
        lines += [f"  {name} = {ty}[] constant({lit})", f"  {name}.b = {ty}[{N}] broadcast({name}), dimensions={{}}"]
        for op in ("maximum", "minimum"):
            lines += [f"  {op}.{name}.r = {ty}[{N}] {op}(x, {name}.b)", f"  {op}.{name}.l = {ty}[{N}] {op}({name}.b, x)"]
            outs += [f"{op}.{name}.r", f"{op}.{name}.l"]
    lines += [f"  relu6 = {ty}[{N}] clamp(zero.b, x, six.b)", f"  nclamp = {ty}[{N}] clamp(nzero.b, x, zero.b)",
              f"  nanclamp = {ty}[{N}] clamp(nan.b, x, six.b)", f"  mixed = {ty}[{N}] clamp(x, six.b, x)"]
    outs += ["relu6", "nclamp", "nanclamp", "mixed"]
    shapes = ", ".join([f"{ty}[{N}]"] * len(outs))
    text = "HloModule m\nENTRY e {\n" + "\n".join(lines) + f"\n  ROOT t = ({shapes}) tuple({', '.join(outs)})\n}}\n"
    got, want = cpu.run_both(text, x, pipeline=True)
    for label, g, w in zip(outs, got, want):        # bit for bit: assert_same's allclose takes -0 for +0
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        same = (np.isnan(g) & np.isnan(w)) | ((g == w) & (np.signbit(g) == np.signbit(w)))
        assert same.all(), f"{label}: {g[~same][:4]} != {w[~same][:4]} at {np.flatnonzero(~same)[:4]}"


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_vector_max_min_reductions_flush_denormals(cpu, ty):
    """elemental_reduce's vector max/min flush each element on its bits: a denormal is the zero of its sign, so
    rows of denormals reduce to +0 or -0 (-0 < +0), and NaN and infinities pass (compared bit for bit)."""
    tiny = 1e-310 if ty == "f64" else 1e-39
    x = np.full((6, 40), 1.0, dtype=cpu.DTYPES[ty])
    x[0] = tiny
    x[1] = -tiny
    x[2] = -tiny
    x[2, 17] = -0.0
    x[3] = np.inf
    x[3, 39] = tiny
    x[4] = -np.inf
    x[4, 3] = -tiny
    x[5, 38] = np.nan
    text = f"""HloModule m
mx {{ a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT r = {ty}[] maximum(a, b) }}
mn {{ a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT r = {ty}[] minimum(a, b) }}
ENTRY e {{ x = {ty}[6,40] parameter(0)
  lo = {ty}[] constant(-inf)
  hi = {ty}[] constant(inf)
  a = {ty}[6] reduce(x, lo), dimensions={{1}}, to_apply=mx
  b = {ty}[6] reduce(x, hi), dimensions={{1}}, to_apply=mn
  ROOT t = ({ty}[6], {ty}[6]) tuple(a, b) }}
"""
    got, want = cpu.run_both(text, x)
    for g, w in zip(got, want):
        same = (np.isnan(g) & np.isnan(w)) | ((g == w) & (np.signbit(g) == np.signbit(w)))
        assert same.all(), (g, w)
