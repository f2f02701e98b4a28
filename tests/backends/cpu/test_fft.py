"""fft on the CPU backend against numpy.fft (computed in float64): FFT, IFFT, RFFT, IRFFT, c64/c128 (f32/f64 for the
real side), lengths that take every kernel (radix-2, the direct DFT, Bluestein), batch dimensions, 2-D and 3-D
transforms, a non-row-major operand. Accuracy is relative to the norm of the expected result (numpy's measure):
||got - want||_2 <= C * eps * log2(n) * ||want||_2."""
import math

import numpy as np
import pytest

import xlapy
from xlapy.testing import hlo_module

LENGTHS = [1, 2, 3, 5, 8, 12, 17, 64, 100, 257, 1024]
COMPLEX = {"f32": "c64", "f64": "c128"}
NUMPY = {"c64": np.complex64, "c128": np.complex128, "f32": np.float32, "f64": np.float64}
REFERENCE = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn, "IRFFT": np.fft.irfftn}


def _shapes(kind: str, real: str, shape: tuple, lengths: tuple):
    """(operand type, operand dims), (result type, result dims) of an fft of `kind` with this fft_length."""
    half = shape[:-1] + (shape[-1] // 2 + 1,)
    cplx = COMPLEX[real]
    return {"FFT": ((cplx, shape), (cplx, shape)), "IFFT": ((cplx, shape), (cplx, shape)),
            "RFFT": ((real, shape), (cplx, half)), "IRFFT": ((cplx, half), (real, shape))}[kind]


def _text(ty, dims, layout=None) -> str:
    text = f"{ty}[{','.join(map(str, dims))}]"
    return text + ("{" + ",".join(map(str, layout)) + "}" if layout is not None else "")


def _module(cases) -> str:
    """cases: [(kind, real type, shape, fft_length, operand layout)] -> one module returning every result."""
    lines, outs = [], []
    for i, (kind, real, shape, lengths, layout) in enumerate(cases):
        (ity, idims), (oty, odims) = _shapes(kind, real, shape, lengths)
        lines.append(f"  x{i} = {_text(ity, idims, layout)} parameter({i})")
        lines.append(f"  r{i} = {_text(oty, odims)} fft(x{i}), fft_type={kind}, "
                     f"fft_length={{{','.join(map(str, lengths))}}}")
        outs.append((f"r{i}", _text(oty, odims)))
    lines.append(f"  ROOT out = ({', '.join(t for _, t in outs)}) tuple({', '.join(n for n, _ in outs)})")
    return hlo_module("\n".join(lines), name="fft_test")


def _operand(kind, real, shape, lengths, seed):
    (ity, idims), _ = _shapes(kind, real, shape, lengths)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(idims)
    if ity.startswith("c"):
        x = x + 1j * rng.standard_normal(idims)
    return x.astype(NUMPY[ity])


def _check(cases) -> None:
    exe = xlapy.compile(xlapy.hlo.parse(_module(cases)), backend="cpu")
    args = [_operand(kind, real, shape, lengths, seed) for seed, (kind, real, shape, lengths, _) in enumerate(cases)]
    results = exe(*args)
    for (kind, real, shape, lengths, _), x, got in zip(cases, args, results):
        axes = tuple(range(len(shape) - len(lengths), len(shape)))
        wide = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
        want = REFERENCE[kind](wide, s=lengths, axes=axes)
        got = np.asarray(got)
        where = f"{kind} {real} shape={shape} fft_length={lengths}"
        assert got.shape == want.shape and got.dtype == NUMPY[_shapes(kind, real, shape, lengths)[1][0]], where
        eps = np.finfo(np.float32 if real == "f32" else np.float64).eps
        tol = 8 * eps * max(1.0, math.log2(max(math.prod(lengths), 2)))
        err = np.linalg.norm((got - want).ravel()) / max(np.linalg.norm(want.ravel()), np.finfo(np.float64).tiny)
        assert err <= tol, f"{where}: relative error {err:.3g} > {tol:.3g}"


@pytest.mark.parametrize("real", ["f32", "f64"])
@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
def test_fft_1d_lengths(kind, real):
    """Every length in one module: radix-2 (1, 2, 8, 64, 1024), direct (3, 5, 12, 17), Bluestein (100, 257)."""
    _check([(kind, real, (n,), (n,), None) for n in LENGTHS] + [(kind, real, (3, 2, 12), (12,), None)])


@pytest.mark.parametrize("real", ["f32", "f64"])
@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
def test_fft_multi_dimensional(kind, real):
    _check([(kind, real, (4, 8), (4, 8), None),
            (kind, real, (2, 5, 6), (5, 6), None),              # a batch dimension, odd and even lengths
            (kind, real, (3, 4, 8), (3, 4, 8), None),           # 3-D
            (kind, real, (2, 3, 100, 7), (3, 100, 7), None),    # 3-D with Bluestein in the middle, batched
            (kind, real, (5, 1, 9), (1, 9), None)])             # a length-1 axis


def test_fft_non_row_major_operand():
    _check([("FFT", "f32", (6, 8), (6, 8), (0, 1)),
            ("IFFT", "f64", (3, 5, 4), (4,), (1, 0, 2)),
            ("RFFT", "f32", (4, 10), (10,), (0, 1))])


def test_irfft_ignores_imaginary_dc_and_nyquist():
    """numpy's (and XLA's) C2R transform reads only the real part of the DC and, for an even length, the Nyquist
    term: changing their imaginary parts does not change the result."""
    text = _module([("IRFFT", "f64", (8,), (8,), None)])
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu")
    x = _operand("IRFFT", "f64", (8,), (8,), 0)
    y = x.copy()
    y[0] += 5j
    y[4] -= 3j
    np.testing.assert_array_equal(np.asarray(exe(x)[0]), np.asarray(exe(y)[0]))
    np.testing.assert_allclose(np.asarray(exe(x)[0]), np.fft.irfft(x, 8), rtol=1e-12, atol=1e-14)


def test_fft_empty_batch():
    """An empty batch compiles and returns an empty result of the right type."""
    text = ("HloModule m\nENTRY e {\n  x = c64[0,8] parameter(0)\n"
            "  ROOT r = c64[0,8] fft(x), fft_type=FFT, fft_length={8}\n}\n")
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu")
    got = np.asarray(exe(np.zeros((0, 8), np.complex64)))
    assert got.shape == (0, 8) and got.dtype == np.complex64


def test_fft_malformed_is_a_clear_error():
    """An fft whose shapes break XLA's rule (only reachable without the verifier) names the op, not a crash."""
    text = ("HloModule m\nENTRY e {\n  x = c64[8] parameter(0)\n"
            "  ROOT r = c64[8] fft(x), fft_type=RFFT, fft_length={8}\n}\n")
    with pytest.raises(xlapy.errors.UnimplementedError, match="cpu backend: fft r"):
        xlapy.compile(xlapy.hlo.parse(text), backend="cpu", verify=False)
