"""Complex transcendentals on the CPU backend (backends/cpu/scalar_complex_math.py, scalar_complex.py's exp and
sqrt) against numpy and the interpreter: sine, cosine, tan, tanh, expm1, log1p, rsqrt, cbrt, logistic, exp,
log, sqrt, power and atan2 on c64 and c128, over a grid of 0, -0, tiny, large, overflowing, inf and NaN parts.

Special values must agree exactly (NaN positions, infinities and the signs of zeros: C99 Annex G as numpy gives
them); finite values within a few ulp of |result|. One compiled module per dtype computes every op. On finite
arguments the values are also within a few ulp of XLA:CPU's (JAX 0.10.2's, from tools/gen_complex_math_data.py).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xlapy

INF, NAN = np.inf, np.nan
PARTS = [0.0, -0.0, 1e-10, -1e-9, 0.5, 1.5, -2.0, 3.0, 10.0, -30.0, 95.0, 400.0, -800.0, 1e30, INF, -INF, NAN]
GRID = np.array([complex(a, b) for a in PARTS for b in PARTS])

UNARY = {
    "sine": np.sin, "cosine": np.cos, "tan": np.tan, "tanh": np.tanh, "exponential-minus-one": np.expm1,
    "log-plus-one": np.log1p, "rsqrt": lambda z: 1 / np.sqrt(z), "logistic": lambda z: 1 / (1 + np.exp(-z)),
    "exponential": np.exp, "log": np.log, "sqrt": np.sqrt, "cbrt": lambda z: np.power(z, 1 / 3)}
BINARY = {"power": np.power, "atan2": None}          # atan2: the interpreter's -i log((x + iy) / sqrt(x^2 + y^2))
TOL = {"c64": 4e-6, "c128": 2e-14}
NP = {"c64": np.complex64, "c128": np.complex128}


def _module(t: str, n: int) -> str:
    ops = list(UNARY) + list(BINARY)
    lines = [f"  p = {t}[{n}] parameter(0)", f"  q = {t}[{n}] parameter(1)"]
    lines += [f"  r{i} = {t}[{n}] {op}(p)" for i, op in enumerate(UNARY)]
    lines += [f"  r{len(UNARY) + i} = {t}[{n}] {op}(p, q)" for i, op in enumerate(BINARY)]
    shapes = ", ".join([f"{t}[{n}]"] * len(ops))
    lines.append(f"  ROOT t = ({shapes}) tuple({', '.join(f'r{i}' for i in range(len(ops)))})")
    return "HloModule complex_math\n\nENTRY e {\n" + "\n".join(lines) + "\n}\n"


def mismatches(got: np.ndarray, want: np.ndarray, tol: float) -> np.ndarray:
    """Indices where a part differs: NaN where want is NaN, the same infinity, zeros of the same sign (or within
    tol |want|), and finite parts within tol of |want| (of the part itself where |want| is infinite)."""
    ok = np.ones(got.shape, bool)
    with np.errstate(all="ignore"):
        mag = np.abs(want)
        for g, w in ((got.real, want.real), (got.imag, want.imag)):
            scale = np.where(np.isfinite(mag), mag, np.abs(w))
            same = (g == w) & (np.signbit(g) == np.signbit(w))
            close = np.abs(g - w) <= tol * scale
            ok &= np.where(np.isnan(w), np.isnan(g), np.where(np.isinf(w), same, np.where(w == 0, same | close, close)))
    return np.flatnonzero(~ok)


def _report(op, z, got, want, bad):
    return op + ": " + "; ".join(f"{z[i]} -> {got[i]}, want {want[i]}" for i in bad[:6])


@pytest.fixture(scope="module", params=["c64", "c128"])
def results(request):
    t = request.param
    z = GRID.astype(NP[t])
    w = np.roll(z, 7)
    module = xlapy.hlo.parse(_module(t, z.size))
    got = xlapy.compile(module, backend="cpu")(z, w)
    ref = xlapy.compile(module, backend="interpreter")(z, w)
    names = list(UNARY) + list(BINARY)
    return t, z, w, dict(zip(names, map(np.asarray, got))), dict(zip(names, map(np.asarray, ref)))


# Where numpy's formula is not the function's value, those arguments are checked on their own below:
# log1p: numpy's log(hypot(1 + x, y)) loses the real part for |z| << 1 (the CPU backend's is accurate);
# expm1: numpy's formula makes inf * 0 = NaN of a real argument whose exp overflows (expm1(x + 0i) is
# expm1(x) + 0i, as cexp's C99 value exp(x + 0i) = exp(x) + 0i) and of e^95 sin(1e-10) in f32 (finite);
# cbrt: numpy's cpow gives inf + NaN i of infinities where exp(log(z) / 3) gives the value (XLA's pow formula).
def _reference_rows(op: str, z: np.ndarray) -> np.ndarray:
    if op == "log-plus-one":
        return np.abs(z) > 1e-3
    if op == "cbrt":
        return np.isfinite(z)
    if op == "exponential-minus-one":
        return (z.imag != 0) & ~(np.isfinite(z.imag) & (z.real > 80))
    return np.ones(z.shape, bool)


def test_expm1_and_cbrt_where_numpys_formula_gives_nan(results):
    t, z, _, got, _ = results
    real_axis = z.imag == 0
    out = got["exponential-minus-one"][real_axis]
    with np.errstate(all="ignore"):
        want_re = np.expm1(z[real_axis].real)
    assert mismatches(out.real + 0j, want_re + 0j, TOL[t]).size == 0
    assert np.array_equal(np.signbit(out.imag), np.signbit(z[real_axis].imag)) and np.all(out.imag == 0)
    big = (z.real > 80) & (z.real < 1e3) & (z.imag != 0) & np.isfinite(z.imag) & (np.abs(z.imag) < 1e-8)
    with np.errstate(all="ignore"):
        want = np.exp(z[big].astype(np.complex128)).astype(z.dtype)
    assert big.sum() >= 2 and mismatches(got["exponential-minus-one"][big], want, TOL[t]).size == 0
    inf_re = np.isposinf(z.real) & np.isfinite(z.imag)
    cbrt = got["cbrt"][inf_re]
    assert np.all(cbrt.real == INF) and np.all(cbrt.imag == 0) and np.array_equal(np.signbit(cbrt.imag),
                                                                                  np.signbit(z[inf_re].imag))


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_matches_numpy(results, op):
    t, z, _, got, ref = results
    rows = _reference_rows(op, z)
    with np.errstate(all="ignore"):
        want = UNARY[op](z).astype(z.dtype)
    bad = mismatches(got[op][rows], want[rows], TOL[t])
    assert bad.size == 0, _report(op, z[rows], got[op][rows], want[rows], bad)
    bad = mismatches(got[op][rows], ref[op][rows], TOL[t])          # the interpreter is numpy here too
    assert bad.size == 0, _report(op + " (interpreter)", z[rows], got[op][rows], ref[op][rows], bad)


def test_log1p_small_arguments_are_accurate(results):
    t, z, _, got, _ = results
    rows = np.isfinite(z) & (np.abs(z) < 1e-6) & (z != 0)
    zz = z[rows].astype(np.complex128)
    want = (zz - zz * zz / 2 + zz ** 3 / 3).astype(z.dtype)
    bad = mismatches(got["log-plus-one"][rows], want, TOL[t])
    assert rows.sum() > 10 and bad.size == 0, _report("log1p", z[rows], got["log-plus-one"][rows], want, bad)


def test_cbrt_of_infinite_imaginary_part(results):
    _, z, _, got, _ = results
    rows = np.isinf(z.imag) & np.isfinite(z.real)
    out = got["cbrt"][rows]
    assert np.all(out.real == INF) and np.all(np.sign(out.imag) == np.sign(z[rows].imag))
    assert np.all(np.isinf(out.imag))


def test_tanh_and_sine_do_not_overflow_early(results):
    t, z, _, got, _ = results
    big = {"c64": 80.0, "c128": 700.0}[t]
    x = np.array([complex(big, 1.0), complex(-big, 2.0), complex(0.3, big)], NP[t])
    module = xlapy.hlo.parse(_module(t, 3))
    out = xlapy.compile(module, backend="cpu")(x, x)
    tanh, sine = np.asarray(out[list(UNARY).index("tanh")]), np.asarray(out[list(UNARY).index("sine")])
    assert np.allclose(tanh[:2], [1.0, -1.0]) and np.isfinite(tanh).all()
    with np.errstate(all="ignore"):
        assert mismatches(sine, np.sin(x), TOL[t]).size == 0


def test_power_matches_numpy_on_finite_values(results):
    t, z, w, got, ref = results
    rng = np.random.default_rng(1)
    finite = np.isfinite(z) & np.isfinite(w) & (np.abs(z) < 50) & (np.abs(w) < 4) & (np.abs(z) > 1e-3)
    special = (z == 1) | (w == 0)
    with np.errstate(all="ignore"):
        want = np.power(z, w)
    for rows in (finite, special):
        bad = mismatches(got["power"][rows], want[rows], TOL[t] * 50)     # exp(y log x): the error grows with |y log x|
        assert bad.size == 0, _report("power", z[rows], got["power"][rows], want[rows], bad)
    zero = (z == 0) & np.isfinite(w) & (w != 0)
    want_zero = np.where((w.real > 0) & (w.imag == 0), 0, complex(NAN, NAN))
    assert mismatches(got["power"][zero], want_zero[zero].astype(z.dtype), 0).size == 0
    del rng, ref


def test_atan2_matches_interpreter_on_moderate_values(results):
    t, z, w, got, ref = results
    rows = np.isfinite(z) & np.isfinite(w) & (np.abs(z) < 50) & (np.abs(w) < 50) & (np.abs(z) + np.abs(w) > 0.1)
    bad = mismatches(got["atan2"][rows], ref["atan2"][rows], TOL[t] * 100)
    assert rows.sum() > 20 and bad.size == 0, _report("atan2", z[rows], got["atan2"][rows], ref["atan2"][rows], bad)


# -- against XLA:CPU (tools/gen_complex_math_data.py) ------------------------------------------------------------
XLA = Path(__file__).parent / "complex_math_data" / "xla_complex_math.npz"
XLA_UNARY = ["sine", "cosine", "tan", "tanh", "exponential-minus-one", "log-plus-one", "rsqrt", "exponential", "log",
             "sqrt"]
# the most ulps (of |result|) between XLA's finite values and the CPU backend's: log near |z| = 1 (XLA uses log1p
# there); power is exp(y log x), whose rounding error is amplified by |y| (|log|x|| + pi): its bound is that
# many ulps, times 16, on results between 1e-20 and 1e20 (nearer the overflow, XLA's and xlapy's differ in
# where they round to inf)
XLA_ULPS = {"log": 32, "log-plus-one": 32}


def _xla_module(t: str, n: int) -> str:
    lines = [f"  z = {t}[{n}] parameter(0)", f"  x = {t}[{n}] parameter(1)", f"  y = {t}[{n}] parameter(2)"]
    lines += [f"  r{i} = {t}[{n}] {op}(z)" for i, op in enumerate(XLA_UNARY)]
    lines.append(f"  r{len(XLA_UNARY)} = {t}[{n}] power(x, y)")
    k = len(XLA_UNARY) + 1
    lines.append(f"  ROOT t = ({', '.join([f'{t}[{n}]'] * k)}) tuple({', '.join(f'r{i}' for i in range(k))})")
    return "HloModule complex_vs_xla\n\nENTRY e {\n" + "\n".join(lines) + "\n}\n"


@pytest.mark.parametrize("t", ["c64", "c128"])
def test_matches_xla_on_finite_arguments(t):
    data = np.load(XLA)
    z, w = data["z"], data["w"]
    dt = NP[t]
    exe = xlapy.compile(xlapy.hlo.parse(_xla_module(t, z.size)), backend="cpu")
    x, y = (z / 10).astype(dt), (w / 10).astype(dt)
    outs = dict(zip(XLA_UNARY + ["power"], map(np.asarray, exe(z.astype(dt), x, y))))
    eps = np.finfo(dt).eps
    for op, got in outs.items():
        want = data[f"{op}.{t}"]
        ulps = np.full(want.shape, float(XLA_ULPS.get(op, 8)))
        fin = np.isfinite(want)
        if op == "power":
            with np.errstate(divide="ignore"):
                ulps = 16 * (2 + np.abs(y) * (np.abs(np.log(np.abs(x))) + np.pi))
            fin &= (np.abs(want) > 1e-20) & (np.abs(want) < 1e20)
        else:
            assert np.array_equal(np.isfinite(got), fin), op
        err = np.abs(got[fin] - want[fin]) / np.maximum(np.abs(want[fin]), np.finfo(dt).tiny)
        worst = np.max(err / (ulps[fin] * eps))
        assert worst <= 1, f"{op} {t}: {worst:.2f} times the bound of ulps from XLA's"
