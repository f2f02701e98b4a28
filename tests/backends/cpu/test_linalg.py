"""cholesky, triangular-solve and the QR custom-calls on the CPU backend (linalg_emitter.py, linalg_loops.py,
qr_emitter.py, lapack.py) against the interpreter: every element type, every option, batches, layouts, and both
paths (LAPACK calls above the small-matrix thresholds, inline loops below them and without LAPACK)."""
import itertools

import ml_dtypes
import numpy as np
import pytest

import xlapy
from xlapy.backends.cpu import lapack, linalg_emitter, runtime
from xlapy.errors import UnimplementedError
from xlapy.testing import assert_same, hlo_module

TYPES = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128,
         "bf16": ml_dtypes.bfloat16, "f16": np.float16}
RTOL = {"f32": 2e-4, "c64": 2e-4, "f64": 1e-10, "c128": 1e-10, "bf16": 2e-2, "f16": 5e-3}
SMALL, LARGE = 4, linalg_emitter.SMALL_CHOLESKY + 21        # inline loops / LAPACK


def _normal(shape, ty, seed=0):
    rng = np.random.default_rng(seed)        # per call: a test's values do not depend on which tests ran before
    x = rng.standard_normal(shape)
    if ty.startswith("c"):
        x = x + 1j * rng.standard_normal(shape)
    return x


def _hermitian(n, batch, ty):
    a = _normal(batch + (n, n), ty)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(TYPES[ty])


def _dims(shape) -> str:
    return ",".join(map(str, shape))


def _both(text: str, *args):
    module = xlapy.hlo.parse(text)
    cpu = xlapy.compile(module, backend="cpu")
    return cpu, cpu(*args), xlapy.compile(module, backend="interpreter")(*args)


def _check(got, want, ty):
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _check(g, w, ty)
        return
    assert_same(got, want, rtol=RTOL[ty], atol=RTOL[ty] * 10)


@pytest.fixture
def no_lapack():
    """The process's BLAS provider set to none (the emitters' loops only), restored afterwards."""
    before = runtime.provider()
    runtime.use_provider("none")
    yield
    runtime.use_provider(before.name if before is not None else "none")


# -- cholesky ---------------------------------------------------------------------------------------------
def _cholesky_text(ty, shape, lower, layout=""):
    return hlo_module(f"ROOT r = {ty}[{_dims(shape)}] cholesky(p0), lower={lower}",
                      params=[f"{ty}[{_dims(shape)}]{layout}"])


@pytest.mark.parametrize("ty, n, lower", list(itertools.product(TYPES, (SMALL, LARGE), ("true", "false"))))
def test_cholesky(ty, n, lower):
    a = _hermitian(n, (3,), "c128" if ty.startswith("c") else "f64")
    a[1, 2, 2] = -100                     # the middle matrix is not positive definite: NaN
    if ty.startswith("c"):
        a[..., 1, 1] += 0.25j             # XLA's complex diagonal
    a = a.astype(TYPES[ty])
    exe, got, want = _both(_cholesky_text(ty, a.shape, lower), a)
    assert np.isnan(want[1].astype(np.complex128)).all()
    _check(got, want, ty)
    if n == LARGE and ty in ("f32", "f64", "c64", "c128") and lapack.lapack_function("potrf", ty) is not None:
        assert lapack.lapack_function("potrf", ty).symbol in exe.llvm_ir


def test_cholesky_reads_a_column_major_operand():
    a = _hermitian(LARGE, (), "f64")
    exe, got, want = _both(_cholesky_text("f64", a.shape, "true", "{0,1}"), a)
    _check(got, want, "f64")


def test_cholesky_without_lapack(no_lapack):
    a = _hermitian(LARGE, (2,), "c128").astype(np.complex64)
    exe, got, want = _both(_cholesky_text("c64", a.shape, "false"), a)
    assert "xlapy_f77" not in exe.llvm_ir
    _check(got, want, "c64")


def test_cholesky_empty_batch():
    a = np.zeros((0, 3, 3), np.float32)
    exe, got, want = _both(_cholesky_text("f32", a.shape, "true"), a)
    assert got.shape == (0, 3, 3)


# -- triangular-solve -------------------------------------------------------------------------------------
def _solve_text(ty, a_shape, b_shape, left, lower, unit, trans):
    return hlo_module(f"ROOT r = {ty}[{_dims(b_shape)}] triangular-solve(p0, p1), left_side={left}, lower={lower}, "
                      f"unit_diagonal={unit}, transpose_a={trans}",
                      params=[f"{ty}[{_dims(a_shape)}]", f"{ty}[{_dims(b_shape)}]"])


def _solve_args(ty, m, rhs, left, batch=(2,)):
    """A well-conditioned triangle, unit diagonal or not: small off-diagonal entries."""
    a = (_normal(batch + (m, m), ty) / m + 4 * np.eye(m)).astype(TYPES[ty])
    b = _normal(batch + ((m, rhs) if left == "true" else (rhs, m)), ty, seed=1).astype(TYPES[ty])
    return a, b


@pytest.mark.parametrize("ty, left, lower, unit, trans", list(itertools.product(
    ("f32", "c128"), ("true", "false"), ("true", "false"), ("true", "false"),
    ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"))))
@pytest.mark.parametrize("m, rhs", [(SMALL, 3), (LARGE, 70)])
def test_triangular_solve(ty, left, lower, unit, trans, m, rhs):
    a, b = _solve_args(ty, m, rhs, left)
    if unit == "true":
        a[..., np.arange(m), np.arange(m)] = np.nan          # never read
    exe, got, want = _both(_solve_text(ty, a.shape, b.shape, left, lower, unit, trans), a, b)
    _check(got, want, ty)


@pytest.mark.parametrize("ty", ["f64", "c64", "bf16", "f16"])
def test_triangular_solve_types(ty):
    a, b = _solve_args(ty, 8, 5, "true")
    exe, got, want = _both(_solve_text(ty, a.shape, b.shape, "true", "true", "false", "ADJOINT"), a, b)
    _check(got, want, ty)


def test_triangular_solve_without_lapack(no_lapack):
    a, b = _solve_args("f64", LARGE, 70, "false")
    exe, got, want = _both(_solve_text("f64", a.shape, b.shape, "false", "false", "false", "TRANSPOSE"), a, b)
    assert "xlapy_f77" not in exe.llvm_ir          # no LAPACK symbol: loops
    _check(got, want, "f64")


# -- Qr, ProductOfElementaryHouseholderReflectors ---------------------------------------------------------
def _qr_text(ty, shape):
    taus = shape[:-2] + (min(shape[-2:]),)
    return hlo_module(f'ROOT r = ({ty}[{_dims(shape)}], {ty}[{_dims(taus)}]) custom-call(p0), custom_call_target="Qr"',
                      params=[f"{ty}[{_dims(shape)}]"])


def _product_text(ty, shape, k):
    return hlo_module(f'ROOT r = {ty}[{_dims(shape)}] custom-call(p0, p1), '
                      f'custom_call_target="ProductOfElementaryHouseholderReflectors"',
                      params=[f"{ty}[{_dims(shape)}]", f"{ty}[{_dims(shape[:-2] + (k,))}]"])


@pytest.mark.parametrize("ty, mn", list(itertools.product(["f32", "f64", "c64", "c128", "bf16"],
                                                         [(5, 3), (3, 5), (4, 4), (60, 40)])))
def test_qr(ty, mn):
    if lapack.lapack_function("geqrf", "f32") is None:
        pytest.skip("no LAPACK in this process")
    a = _normal((2,) + mn, ty).astype(TYPES[ty])
    a[1, :, 0] = 0                                  # tau = 0
    exe, got, want = _both(_qr_text(ty, a.shape), a)
    _check(got, want, ty)
    if mn[0] >= mn[1]:
        h, taus = want
        exe, got, want = _both(_product_text(ty, h.shape, taus.shape[-1]), h, taus)
        _check(got, want, ty)


def test_qr_needs_lapack(no_lapack):
    with pytest.raises(UnimplementedError, match="cpu backend: custom-call .* needs LAPACK"):
        xlapy.compile(_qr_text("f32", (4, 3)), backend="cpu")


def test_unknown_custom_call_names_the_target():
    text = hlo_module('ROOT r = f32[4] custom-call(p0), custom_call_target="NoSuchTarget"', params=["f32[4]"])
    with pytest.raises(UnimplementedError, match="cpu backend: custom-call target 'NoSuchTarget'"):
        xlapy.compile(text, backend="cpu")


def test_slice_to_dynamic_and_pad_to_static():
    text = hlo_module('n = s32[] constant(2)\n'
                      'd = f32[<=4] custom-call(p0, n), custom_call_target="SliceToDynamic"\n'
                      'ROOT t = (f32[4], s32[]) custom-call(d), custom_call_target="PadToStatic"', params=["f32[4]"])
    x = np.arange(4, dtype=np.float32)
    exe, got, want = _both(text, x)
    for g, w in zip(got, want):
        assert_same(g, w)


def test_aot_objects_link_without_lapack_or_against_the_standard_names():
    """AOT without BLAS runs the loops (only libc is needed); with BLAS it calls spotrf_ / strsm_."""
    from xlapy.backends.cpu.aot import compile_aot
    text = hlo_module("c = f32[40,40] cholesky(p0), lower=true\n"
                      "ROOT t = f32[40,50] triangular-solve(c, p1), left_side=true, lower=true, "
                      "transpose_a=NO_TRANSPOSE", params=["f32[40,40]", "f32[40,50]"])
    module = xlapy.hlo.parse(text)
    assert not any("potrf" in s or "trsm" in s for s in compile_aot(module, "chol").undefined_symbols)
    try:
        with_blas = compile_aot(module, "chol", blas=True)
    except xlapy.errors.XlapyError as e:
        pytest.skip(str(e))              # no scipy: no Fortran BLAS to call
    assert {"spotrf_", "strsm_"} <= set(with_blas.undefined_symbols)
