"""xlapy.numpy.fft and lax.fft against numpy.fft (whose values jax.numpy.fft matches), eager and under jit, on
both backends; dtypes as JAX gives them; gradients (through complex intermediates) against central finite
differences of the same function in numpy float64; bad arguments and their errors."""
from __future__ import annotations

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
import xlapy.numpy.fft as xfft
from xlapy import lax

RNG = np.random.default_rng(20261128)
R4 = RNG.standard_normal((3, 4, 5, 6)).astype(np.float32)
C4 = (RNG.standard_normal((3, 4, 5, 6)) + 1j * RNG.standard_normal((3, 4, 5, 6))).astype(np.complex64)
R64 = RNG.standard_normal((4, 6))
NORMS = [None, "backward", "ortho", "forward"]


def check(got, want, tol=2e-5):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale)


# (name, xlapy call, numpy call, expected dtype)
CALLS = [
    ("fft", lambda m, n: m.fft(C4, norm=n), "complex64"),
    ("fft_n_pad_axis0", lambda m, n: m.fft(C4, n=7, axis=0, norm=n), "complex64"),
    ("fft_n_crop", lambda m, n: m.fft(R4, n=4, norm=n), "complex64"),
    ("ifft", lambda m, n: m.ifft(C4, axis=1, norm=n), "complex64"),
    ("rfft_even", lambda m, n: m.rfft(R4, norm=n), "complex64"),
    ("rfft_odd_n_axis", lambda m, n: m.rfft(R4, n=5, axis=1, norm=n), "complex64"),
    ("irfft", lambda m, n: m.irfft(C4, norm=n), "float32"),
    ("irfft_odd_n", lambda m, n: m.irfft(C4, n=9, axis=2, norm=n), "float32"),
    ("hfft", lambda m, n: m.hfft(C4, norm=n), "float32"),
    ("hfft_n_axis0", lambda m, n: m.hfft(C4, n=5, axis=0, norm=n), "float32"),
    ("ihfft", lambda m, n: m.ihfft(R4, norm=n), "complex64"),
    ("ihfft_n", lambda m, n: m.ihfft(R4, n=7, axis=-2, norm=n), "complex64"),
    ("fft2", lambda m, n: m.fft2(C4, norm=n), "complex64"),
    ("fft2_s_axes", lambda m, n: m.fft2(C4, s=(3, 8), axes=(0, 2), norm=n), "complex64"),
    ("ifft2", lambda m, n: m.ifft2(C4, axes=(1, 3), norm=n), "complex64"),
    ("rfft2", lambda m, n: m.rfft2(R4, norm=n), "complex64"),
    ("irfft2_s", lambda m, n: m.irfft2(C4, s=(5, 7), norm=n), "float32"),
    ("fftn_4d", lambda m, n: m.fftn(C4, norm=n), "complex64"),
    ("fftn_s", lambda m, n: m.fftn(C4, s=(2, 6), axes=(1, 3), norm=n), "complex64"),
    ("ifftn_4d", lambda m, n: m.ifftn(C4, norm=n), "complex64"),
    ("ifftn_axes", lambda m, n: m.ifftn(C4, axes=(2, 0, 3), norm=n), "complex64"),
    ("rfftn_4d", lambda m, n: m.rfftn(R4, norm=n), "complex64"),
    ("rfftn_axes_s", lambda m, n: m.rfftn(R4, s=(3, 6, 4), axes=(3, 1, 0), norm=n), "complex64"),
    ("irfftn_4d", lambda m, n: m.irfftn(C4, norm=n), "float32"),
    ("irfftn_s_axes", lambda m, n: m.irfftn(C4, s=(4, 7), axes=(3, 0), norm=n), "float32"),
    ("fft_int_input", lambda m, n: m.fft(np.arange(12).reshape(3, 4), norm=n), "complex64"),
    ("rfft_f64_input_narrowed", lambda m, n: m.rfft(R64, norm=n), "complex64"),
]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name,call,dtype", CALLS, ids=[c[0] for c in CALLS])
def test_matches_numpy(name, call, dtype, norm):
    got = call(xfft, norm)
    assert np.asarray(got).dtype == np.dtype(dtype)
    check(got, call(np.fft, norm))


def test_s_without_axes_means_the_trailing_axes():
    check(xfft.fftn(C4, s=(2, 8)), np.fft.fftn(C4, s=(2, 8), axes=(2, 3)))
    check(xfft.irfftn(C4, s=(3, 4, 7)), np.fft.irfftn(C4, s=(3, 4, 7), axes=(1, 2, 3)))


@pytest.mark.parametrize("name,call,dtype", CALLS[::3], ids=[c[0] for c in CALLS[::3]])
def test_under_jit(name, call, dtype):
    got = xlapy.jit(lambda: call(xfft, "ortho"))()
    assert np.asarray(got).dtype == np.dtype(dtype)
    check(got, call(np.fft, "ortho"))


def test_jit_on_traced_input_round_trip():
    f = xlapy.jit(lambda v: xfft.irfftn(xfft.rfftn(v), s=v.shape))
    check(f(R4), R4)
    g = xlapy.jit(lambda z: xfft.ifft2(xfft.fft2(z, axes=(0, 3)), axes=(0, 3)))
    check(g(C4), C4)


def test_x64_keeps_double_precision(x64):
    got = xfft.fft(R64)
    assert np.asarray(got).dtype == np.complex128
    np.testing.assert_allclose(np.asarray(got), np.fft.fft(R64), rtol=0, atol=1e-12)
    assert np.asarray(xfft.irfft(np.fft.rfft(R64))).dtype == np.float64
    assert np.asarray(xfft.fft(np.arange(4))).dtype == np.complex128


@pytest.mark.parametrize("n,d", [(1, 1.0), (7, 0.25), (8, 2.0)])
def test_frequencies(n, d):
    got = xfft.fftfreq(n, d)
    assert np.asarray(got).dtype == np.float32
    check(got, np.fft.fftfreq(n, d))
    check(xfft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    assert np.asarray(xfft.fftfreq(n, d, dtype=np.float16)).dtype == np.float16
    check(xlapy.jit(lambda dd: xfft.fftfreq(n, dd))(np.float32(d)), np.fft.fftfreq(n, d))


@pytest.mark.parametrize("axes", [None, 0, (1, 3), [-1]])
def test_shifts(axes):
    check(xfft.fftshift(R4, axes), np.fft.fftshift(R4, axes))
    check(xfft.ifftshift(R4, axes), np.fft.ifftshift(R4, axes))
    check(xfft.ifftshift(xfft.fftshift(R4[0, 0], axes=None)), R4[0, 0])


def test_public_api_is_jax_numpy_fft():
    names = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn", "ifftshift", "ihfft",
             "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]      # dir(jax.numpy.fft), 0.10.2
    assert sorted(xfft.__all__) == names
    assert xnp.fft is xfft and all(callable(getattr(xnp.fft, n)) for n in names)
    assert lax.FftType.RFFT == 2 and [t.name for t in lax.FftType] == ["FFT", "IFFT", "RFFT", "IRFFT"]


# -- lax.fft -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["FFT", "fft", lax.FftType.FFT])
def test_lax_fft_type_spellings(kind):
    check(lax.fft(C4, kind, (5, 6)), np.fft.fftn(C4, axes=(2, 3)))


def test_lax_fft_kinds_and_dtypes():
    r = lax.fft(R4, "RFFT", (4, 5, 6))
    assert np.asarray(r).dtype == np.complex64 and r.shape == (3, 4, 5, 4)
    check(r, np.fft.rfftn(R4, axes=(1, 2, 3)))
    back = lax.fft(r, "IRFFT", (4, 5, 6))
    assert np.asarray(back).dtype == np.float32
    check(back, R4)
    check(lax.fft(C4, lax.FftType.IFFT, (6,)), np.fft.ifft(C4))
    assert np.asarray(lax.fft(R4, "FFT", (6,))).dtype == np.complex64       # real operands become complex
    assert np.asarray(lax.fft(R4, "FFT", ())).dtype == np.complex64         # no lengths: only the conversion
    assert np.asarray(lax.fft(np.arange(4), "RFFT", (4,))).dtype == np.complex64


# -- gradients ----------------------------------------------------------------------------------------------
X6 = RNG.standard_normal((4, 6)).astype(np.float32)
W6 = RNG.standard_normal((4, 6)).astype(np.float32)

# f(numpy module, fft module) -> scalar; evaluated by xlapy (grad) and by numpy in float64 (finite differences)
GRAD_CASES = {
    "rfft_abs": lambda m, F: m.sum(m.abs(F.rfft(X)) * W6[:, :4]),
    "irfft_of_scaled_rfft": lambda m, F: m.sum(F.irfft(F.rfft(X) * (1 + 2j), n=6) * W6),
    "fft2_real_ifft_imag": lambda m, F: m.sum(m.real(F.fft2(X)) * W6 + m.imag(F.ifft(X, n=6)) ** 2),
    "hfft_sine": lambda m, F: m.sum(m.sin(F.hfft(X[:, :4] + 0.5j * X[:, 1:5])) * W6[:, :6]),
    "ihfft_rfftn": lambda m, F: m.sum(m.abs(F.ihfft(X)) + m.abs(F.rfftn(X, s=(3, 5), axes=(0, 1)))[0, 0]),
    "fftn_4d_power": lambda m, F: m.sum(m.abs(F.fftn(m.reshape(X, (2, 2, 3, 2)), norm="ortho")) ** 2 * 0.1),
    "irfftn_odd": lambda m, F: m.sum(F.irfftn(F.rfftn(X, s=(4, 5), axes=(0, 1)) ** 2, s=(4, 5), axes=(0, 1)) * W6[:, :5]),
}
X = None        # the input GRAD_CASES read, set around each evaluation


def _eval(name, x, m, F):
    global X
    X = x
    try:
        return GRAD_CASES[name](m, F)
    finally:
        X = None


def _numpy_fd(name, x, eps=1e-6):
    x = x.astype(np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (_eval(name, x + e, np, np.fft) - _eval(name, x - e, np, np.fft)) / (2 * eps)
    return g


def _as_fn(name):
    def f(v):
        global X
        X = v
        try:
            return GRAD_CASES[name](xnp, xfft)
        finally:
            X = None
    return f


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_grad_matches_finite_differences(name):
    want = _numpy_fd(name, X6)
    got = xlapy.grad(_as_fn(name))(X6)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(want).max()))
    got_jit = xlapy.jit(xlapy.grad(_as_fn(name)))(X6)
    np.testing.assert_allclose(np.asarray(got_jit), np.asarray(got), rtol=1e-5, atol=1e-5)


def test_jvp_and_vjp_of_rfft():
    x, t = X6, W6
    primal, tangent = xlapy.jvp(lambda v: xnp.abs(xfft.rfft(v)), (x,), (t,))
    eps = 1e-6
    fd = (np.abs(np.fft.rfft(x.astype(np.float64) + eps * t)) - np.abs(np.fft.rfft(x.astype(np.float64) - eps * t)))
    np.testing.assert_allclose(np.asarray(tangent), fd / (2 * eps), rtol=1e-3, atol=1e-3)
    out, pullback = xlapy.vjp(lambda v: xnp.real(xfft.irfft(xfft.rfft(v) * 1j)), x)
    (ct,) = pullback(np.ones_like(np.asarray(out)))
    assert np.asarray(ct).shape == x.shape


# -- errors -------------------------------------------------------------------------------------------------
ERRORS = [
    ("rfft of complex", lambda: xfft.rfft(C4), ValueError, "only real valued inputs supported for rfft"),
    ("lax rfft of complex", lambda: lax.fft(C4, "RFFT", (6,)), ValueError, "only real valued inputs"),
    ("unknown type string", lambda: lax.fft(C4, "DCT", (6,)), ValueError, "Unknown FFT type 'DCT'"),
    ("type not str or enum", lambda: lax.fft(C4, 7, (6,)), TypeError, "Unknown FFT type value"),
    ("lengths do not match", lambda: lax.fft(C4, "FFT", (5,)), ValueError, "minor dimensions must be equal"),
    ("irfft lengths", lambda: lax.fft(C4, "IRFFT", (6,)), ValueError, "IRFFT input shape"),
    ("too many lengths", lambda: lax.fft(C4[0, 0, 0], "FFT", (1, 6)), ValueError, "at least as many"),
    ("more than 3 lengths", lambda: lax.fft(C4, "FFT", (3, 4, 5, 6)), ValueError, "at most 3"),
    ("rfft of float16", lambda: lax.fft(R4.astype(np.float16), "RFFT", (6,)), ValueError, "float32 or float64"),
    ("bad norm", lambda: xfft.fft(C4, norm="both"), ValueError, "Invalid norm value both"),
    ("non-positive n", lambda: xfft.fft(C4, n=0), ValueError, "Shape should be positive"),
    ("s and axes lengths", lambda: xfft.fftn(C4, s=(2, 3), axes=(0,)), ValueError, "different lengths"),
    ("repeated axes", lambda: xfft.fftn(C4, axes=(1, -3)), ValueError, "does not support repeated axes"),
    ("axis out of bounds", lambda: xfft.fft(C4, axis=4), ValueError, "out of bounds"),
    ("1-D with axis list", lambda: xfft.fft(C4, axis=[0, 1]), ValueError, "does not support multiple axes"),
    ("2-D with 3 axes", lambda: xfft.fft2(C4, axes=(0, 1, 2)), ValueError, "only supports 2 axes"),
    ("list input", lambda: xfft.fft([1.0, 2.0]), TypeError, "requires ndarray or scalar arguments"),
    ("fftfreq list n", lambda: xfft.fftfreq([4]), ValueError, "only takes an int"),
    ("rfftfreq list d", lambda: xfft.rfftfreq(4, [1.0]), ValueError, "only takes a single value"),
]


@pytest.mark.parametrize("name,call,exc,match", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, call, exc, match):
    with pytest.raises(exc, match=match) as info:
        call()
    assert isinstance(info.value, xlapy.XlapyError)
