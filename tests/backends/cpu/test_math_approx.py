"""The branch-free math approximations (xlapy/backends/cpu/math_approx.py): each one is emitted into a loop
`void f(T* in0, [T* in1,] T* out, i64 n)`, optimized at -O3 for the host, JIT-compiled with MCJIT, run on ~1M
inputs through ctypes and compared with numpy in ulps; the optimized loop must hold SIMD vector types.

Reference: numpy (math.erf for erf) in f64 rounded to f32 for f32 results; numpy in long double rounded to f64
for f64 results (erf: libm f64). Run with -s to see the
measured max ulp per function.
"""
from __future__ import annotations

import ctypes
import functools
import math
import re

import numpy as np
import pytest
from llvmlite import binding as llvm
from llvmlite import ir

from xlapy.backends.cpu.math_approx import APPROXIMATIONS

N = 1 << 20
NP = {"f32": np.float32, "f64": np.float64}
IR = {"f32": ir.FloatType(), "f64": ir.DoubleType()}
CT = {"f32": ctypes.c_float, "f64": ctypes.c_double}

_erf = np.frompyfunc(math.erf, 1, 1)


def _ref_erf(x):
    return _erf(x).astype(np.float64)


def _ref_logistic(x):
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _ref_power(x, y):
    return np.where((x == 1) | (y == 0), 1.0, np.power(x, y))


# opcode -> (reference on f64 arrays, ulp bound f32, ulp bound f64, domain scale of the "uniform" inputs)
CASES = {
    "exponential": (np.exp, 2, 2, 110.0),
    "exponential-minus-one": (np.expm1, 3, 3, 30.0),
    "log": (np.log, 2, 2, 1e3),
    "log-plus-one": (np.log1p, 3, 3, 10.0),
    "tanh": (np.tanh, 3, 4, 12.0),      # f32: 2 ulp measured with FMA
    "logistic": (_ref_logistic, 4, 4, 110.0),
    "erf": (_ref_erf, 1, 4, 7.0),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 1, 1, 1e3),
    "cbrt": (np.cbrt, 1, 1, 1e3),
    "sine": (np.sin, 1, None, 1e4),
    "cosine": (np.cos, 1, None, 1e4),
    "tan": (np.tan, 1, None, 1e4),
    "power": (_ref_power, 1, None, 30.0),
}
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0]


# -- harness ---------------------------------------------------------------------------------------------
@functools.cache
def _target_machine():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(), opt=3)


def _module(opcode: str, ty: str) -> ir.Module:
    fty = IR[ty]
    arity = 2 if opcode == "power" else 1
    module = ir.Module(name=f"{opcode}_{ty}")
    module.triple = llvm.get_default_triple()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [fty.as_pointer()] * (arity + 1) + [ir.IntType(64)]),
                     "f")
    for a in fn.args[:-1]:
        a.add_attribute("noalias")
    *ins, out, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    entry, loop, done = b.block, fn.append_basic_block("loop"), fn.append_basic_block("done")
    b.cbranch(b.icmp_signed(">", n, ir.Constant(ir.IntType(64), 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(ir.IntType(64))
    i.add_incoming(ir.Constant(ir.IntType(64), 0), entry)
    xs = [b.load(b.gep(p, [i], inbounds=True)) for p in ins]
    b.store(APPROXIMATIONS[(opcode, ty)](b, *xs), b.gep(out, [i], inbounds=True))
    nxt = b.add(i, ir.Constant(ir.IntType(64), 1), flags=["nsw", "nuw"])
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)
    b.ret_void()
    return module


_engines = []


@functools.cache
def compiled(opcode: str, ty: str):
    """(ctypes function, optimized IR text)."""
    tm = _target_machine()
    mod = llvm.parse_assembly(str(_module(opcode, ty)))
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    _engines.append(engine)
    arity = 2 if opcode == "power" else 1
    ptr = ctypes.POINTER(CT[ty])
    proto = ctypes.CFUNCTYPE(None, *([ptr] * (arity + 1)), ctypes.c_int64)
    return proto(engine.get_function_address("f")), str(mod)


def run(opcode: str, ty: str, *xs: np.ndarray) -> np.ndarray:
    fn, _ = compiled(opcode, ty)
    xs = [np.ascontiguousarray(x, dtype=NP[ty]) for x in xs]
    out = np.empty_like(xs[0])
    ptr = ctypes.POINTER(CT[ty])
    fn(*(x.ctypes.data_as(ptr) for x in xs), out.ctypes.data_as(ptr), len(out))
    return out


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in units in the last place (via the monotone integer order of floats); NaN vs NaN is 0."""
    ity = np.int32 if got.dtype == np.float32 else np.int64
    mask = np.iinfo(ity).max

    def key(v):   # exact in long double (64-bit mantissa on x86)
        k = v.view(ity).astype(np.int64)
        return np.where(k < 0, -(k & mask), k).astype(np.longdouble)
    both_nan = np.isnan(got) & np.isnan(want)
    one_nan = np.isnan(got) != np.isnan(want)
    d = np.abs(key(got) - key(want)).astype(np.float64)
    return np.where(both_nan, 0, np.where(one_nan, np.inf, d))


def inputs(ty: str, scale: float, n: int = N, seed: int = 0) -> np.ndarray:
    """Random bit patterns (every magnitude), uniform on [-scale, scale], log-uniform magnitudes, specials."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(NP[ty])
    ity = np.uint32 if ty == "f32" else np.uint64
    q = n // 4
    raw = rng.integers(0, np.iinfo(ity).max, q, dtype=ity, endpoint=True).view(dt)
    uniform = rng.uniform(-scale, scale, q).astype(dt)
    small = rng.uniform(-1, 1, q).astype(dt)
    lo = np.log(np.finfo(dt).tiny)
    logu = (np.exp(rng.uniform(lo, np.log(np.finfo(dt).max), n - 3 * q)) * rng.choice([-1, 1], n - 3 * q)).astype(dt)
    x = np.concatenate([np.array(SPECIALS, dt), raw, uniform, small, logu])[:n]
    return x


def reference(opcode: str, ty: str, *xs: np.ndarray) -> np.ndarray:
    """numpy in f64 for f32 results; in long double (64-bit mantissa) for f64 results, except erf (libm f64)."""
    wide = np.longdouble if ty == "f64" and opcode != "erf" else np.float64
    with np.errstate(all="ignore"):
        return CASES[opcode][0](*(x.astype(wide) for x in xs)).astype(NP[ty])


def measure(opcode: str, ty: str, n: int = N):
    """(max ulp, worst input(s)) over the standard inputs."""
    scale = CASES[opcode][3]
    x = inputs(ty, scale, n)
    if opcode == "power":
        y = inputs(ty, 12.0, n, seed=1)
        # exponents: many integers (negative bases), small reals, the specials
        head = np.nan_to_num(y[: n // 3], nan=0.0, posinf=0.0, neginf=0.0)
        y[: n // 3] = np.round(np.fmod(head, 20))
        xs = (x, y)
    else:
        xs = (x,)
    got = run(opcode, ty, *xs)
    want = reference(opcode, ty, *xs)
    d = ulps(got, want)
    k = int(np.argmax(d))
    return float(d[k]), tuple(v[k] for v in xs), got[k], want[k]


# -- tests -----------------------------------------------------------------------------------------------
PAIRS = sorted(APPROXIMATIONS)


@pytest.mark.parametrize("opcode,ty", PAIRS, ids=[f"{o}-{t}" for o, t in PAIRS])
def test_accuracy(opcode, ty):
    bound = CASES[opcode][1 if ty == "f32" else 2]
    worst, at, got, want = measure(opcode, ty)
    print(f"\n{opcode:>24} {ty}: max {worst:g} ulp (at {at}: got {got!r}, numpy {want!r})")
    assert worst <= bound, f"{opcode} {ty}: {worst} ulp at {at}: got {got!r}, want {want!r}"


@pytest.mark.parametrize("opcode,ty", PAIRS, ids=[f"{o}-{t}" for o, t in PAIRS])
def test_vectorizes(opcode, ty):
    _, text = compiled(opcode, ty)
    lanes = [int(m) for m in re.findall(r"<(\d+) x (?:float|double)>", text)]
    assert lanes and max(lanes) >= 4, f"{opcode} {ty}: the loop was not vectorized"
    calls = set(re.findall(r"call [^@]*@([\w.]+)", text))
    assert all(c.startswith("llvm.") for c in calls), f"{opcode} {ty}: the loop calls {calls}"


SIGNED_ZERO = {   # opcode -> f(-0.0) (sign matters)
    "exponential-minus-one": -0.0, "log-plus-one": -0.0, "tanh": -0.0, "erf": -0.0, "sine": -0.0, "tan": -0.0,
    "cbrt": -0.0, "rsqrt": -np.inf, "exponential": 1.0, "logistic": 0.5, "cosine": 1.0, "log": -np.inf,
}


@pytest.mark.parametrize("opcode,ty", [p for p in PAIRS if p[0] != "power"],
                         ids=[f"{o}-{t}" for o, t in PAIRS if o != "power"])
def test_special_values(opcode, ty):
    dt = NP[ty]
    x = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0], dt)
    got = run(opcode, ty, x)
    want = reference(opcode, ty, x)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (opcode, ty, got, want)
    ok = ~np.isnan(want)
    assert np.array_equal(got[ok], want[ok]) and np.array_equal(np.signbit(got[ok]), np.signbit(want[ok])), \
        (opcode, ty, got, want)
    minus_zero = got[5]
    assert minus_zero == SIGNED_ZERO[opcode] and np.signbit(minus_zero) == np.signbit(SIGNED_ZERO[opcode])


def test_exp_overflow_underflow():
    x = np.array([88.7, 88.73, 89.0, 1e30, -87.0, -103.0, -104.0, -1e30], np.float32)
    got = run("exponential", "f32", x)
    assert np.isinf(got[1:4]).all() and ulps(got[:1], np.exp(x[:1].astype(np.float64)).astype(np.float32)) <= 1
    assert (got[6:] == 0).all() and got[5] > 0
    assert np.isnan(run("log", "f32", np.array([-1.0, -np.inf, -1e-30], np.float32))).all()


POW_SPECIAL = [(x, y) for x in [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, np.inf, -np.inf, np.nan, -8.0]
               for y in [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.5, -0.5, np.inf, -np.inf, np.nan, 1 / 3]]


def test_power_special_values():
    x = np.array([p[0] for p in POW_SPECIAL], np.float32)
    y = np.array([p[1] for p in POW_SPECIAL], np.float32)
    got = run("power", "f32", x, y)
    with np.errstate(all="ignore"):
        want = np.where((x == 1) | (y == 0), np.float32(1), np.power(x, y))
    for k, (a, c) in enumerate(zip(got, want)):
        same = (np.isnan(a) and np.isnan(c)) or (a == c and np.signbit(a) == np.signbit(c))
        assert same, f"pow({x[k]}, {y[k]}) = {a}, numpy {c}"


def test_vector_values():
    """The emitters also accept <N x float> values (straight-line code, no loop)."""
    for opcode in ("exponential", "log", "tanh", "sine", "erf"):
        module = ir.Module()
        vty = ir.VectorType(ir.FloatType(), 8)
        fn = ir.Function(module, ir.FunctionType(vty, [vty]), "g")
        b = ir.IRBuilder(fn.append_basic_block())
        b.ret(APPROXIMATIONS[(opcode, "f32")](b, fn.args[0]))
        llvm.parse_assembly(str(module)).verify()
