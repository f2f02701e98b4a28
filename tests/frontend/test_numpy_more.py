"""xlapy.numpy's newer families (setops, polynomial, statistics, more_math, more_arrays): values against JAX's
outputs (api_data/jax_api_more.npz, from tools/gen_api_data.py) eagerly and under jit, and against numpy where
numpy defines the same function; data-dependent shapes raise ConcretizationError under jit; bad inputs raise
clear errors. Both backends."""
import sys
from pathlib import Path

import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.errors import ConcretizationError, XlapyError

sys.path.insert(0, str(Path(__file__).parent))     # pytest's importlib mode does not: the shared case table
from api_more_cases import NUMPY_CASES
from api_more_check import check_case

rng = np.random.default_rng(7)
X = rng.standard_normal((3, 5)).astype(np.float32)
A = np.array([3, 1, 3, 2, 7, 1, 5], np.int32)
B = np.array([1, 5, 9, 2], np.int32)


@pytest.mark.parametrize("case", NUMPY_CASES, ids=[c[0] for c in NUMPY_CASES])
def test_against_jax(case):
    check_case(case)


def _eq(got, want, **kw):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    if kw:
        np.testing.assert_allclose(got, want, **kw)
    else:
        np.testing.assert_array_equal(got, want)


# -- against numpy (eager, exact shapes) ------------------------------------------------------------------

def test_set_operations_eager_match_numpy():
    for name in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
        _eq(getattr(xnp, name)(A, B), getattr(np, name)(A, B))
    for got, want in zip(xnp.intersect1d(A, B, return_indices=True), np.intersect1d(A, B, return_indices=True)):
        _eq(got, want)
    for got, want in zip(xnp.unique_all(A), np.unique_all(A)):
        _eq(got, want)
    _eq(xnp.isin(A.reshape(7, 1), B), np.isin(A.reshape(7, 1), B))


def test_statistics_match_numpy():
    xn = X.copy()
    xn[1, 2] = np.nan
    for method in ("linear", "lower", "higher", "midpoint", "nearest"):
        _eq(xnp.quantile(X, [0.2, 0.7], axis=0, method=method), np.quantile(X, [0.2, 0.7], axis=0, method=method),
            rtol=1e-6)
    _eq(xnp.percentile(X, 40, axis=(0, 1)), np.percentile(X, 40, axis=(0, 1)), rtol=1e-6)
    _eq(xnp.nanmedian(xn, axis=1), np.nanmedian(xn, axis=1), rtol=1e-6)
    _eq(xnp.nanvar(xn, axis=0, ddof=1), np.nanvar(xn, axis=0, ddof=1), rtol=1e-5)
    _eq(xnp.cov(X, ddof=0, fweights=np.array([1, 2, 1, 3, 1])), np.cov(X, ddof=0, fweights=[1, 2, 1, 3, 1]),
        rtol=1e-5, atol=1e-6)
    _eq(xnp.corrcoef(X[0], X[1]), np.corrcoef(X[0], X[1]), rtol=1e-5, atol=1e-6)
    h, e = xnp.histogram(X, bins=4, range=(-1, 1))
    hn, en = np.histogram(X, bins=4, range=(-1, 1))
    _eq(h, hn.astype(np.float32))
    _eq(e, en.astype(np.float32), rtol=1e-6)
    _eq(xnp.histogram_bin_edges(X, 3), np.histogram_bin_edges(X, 3).astype(np.float32), rtol=1e-6)
    _eq(xnp.bincount(np.array([0, 1, 1, 3]), minlength=6), np.bincount([0, 1, 1, 3], minlength=6))


def test_polynomials_match_numpy():
    p = np.array([1.0, -3.0, 2.0], np.float32)
    _eq(xnp.sort_complex(xnp.roots(p)), np.sort_complex(np.roots(p)), rtol=1e-5)
    _eq(xnp.vander(np.array([1, 2, 3]), 4, increasing=True), np.vander([1, 2, 3], 4, increasing=True))
    _eq(xnp.trim_zeros(np.array([0, 0, 1, 2, 0])), np.trim_zeros(np.array([0, 0, 1, 2, 0])))
    _eq(xnp.trim_zeros(np.array([0, 0, 1, 2, 0]), "f"), np.trim_zeros(np.array([0, 0, 1, 2, 0]), "f"))
    _eq(xnp.convolve(np.array([1, 2, 3]), np.array([0, 1, 0, 2])), np.convolve([1, 2, 3], [0, 1, 0, 2]))
    q, r = xnp.polydiv(np.array([1.0, -3, 2, 5], np.float32), np.array([1.0, 1], np.float32), trim_leading_zeros=True)
    qn, rn = np.polydiv([1.0, -3, 2, 5], [1.0, 1])
    _eq(q, qn.astype(np.float32), rtol=1e-6)
    _eq(r, rn.astype(np.float32), rtol=1e-6)
    c, cov = xnp.polyfit(np.arange(8.0, dtype=np.float32), X.ravel()[:8], 1, cov=True)
    cn, covn = np.polyfit(np.arange(8.0), X.ravel()[:8].astype(np.float64), 1, cov=True)
    _eq(c, cn.astype(np.float32), rtol=1e-4, atol=1e-5)
    _eq(cov, covn.astype(np.float32), rtol=1e-3, atol=1e-5)


def test_more_math_match_numpy():
    x = X.ravel()
    _eq(xnp.nextafter(x, np.float32(0)), np.nextafter(x, np.float32(0)))
    _eq(xnp.diff(X, 2, axis=1), np.diff(X, 2, axis=1), rtol=1e-6, atol=1e-6)
    _eq(xnp.diff(X, prepend=0, append=X[:, :1]), np.diff(X, prepend=0, append=X[:, :1]), rtol=1e-6, atol=1e-6)
    _eq(xnp.ediff1d(X, to_end=[9, 8], to_begin=-1), np.ediff1d(X, to_end=[9, 8], to_begin=-1), rtol=1e-6,
        atol=1e-6)
    coords = np.array([0, 1, 3, 4, 7], np.float32)
    _eq(xnp.gradient(X, coords, axis=1), np.gradient(X, coords, axis=1), rtol=1e-5, atol=1e-6)
    a3, b3 = X[:, :3], X[:, 2:]
    _eq(xnp.cross(a3, b3), np.cross(a3, b3), rtol=1e-5, atol=1e-6)
    _eq(xnp.cross(a3, b3, axisa=0, axisb=0, axisc=0), np.cross(a3, b3, axisa=0, axisb=0, axisc=0), rtol=1e-5,
        atol=1e-6)
    _eq(xnp.packbits(np.array([1, 0, 1, 1, 0, 0, 0, 1, 1], bool), bitorder="little"),
        np.packbits(np.array([1, 0, 1, 1, 0, 0, 0, 1, 1], bool), bitorder="little"))
    assert xnp.iscomplexobj(np.ones(2, np.complex64)) and xnp.isrealobj(X)
    _eq(xnp.iscomplex(np.array([1, 1j])), [False, True])
    _eq(xnp.isreal(np.array([1, 1j])), [True, False])


def test_more_arrays_match_numpy():
    a2 = np.arange(6).reshape(2, 3)
    _eq(xnp.insert(a2, [1, 1, 3], [7, 8, 9], axis=1), np.insert(a2, [1, 1, 3], [7, 8, 9], axis=1))
    _eq(xnp.insert(a2, 1, [[7, 8, 9]], axis=0), np.insert(a2, 1, [[7, 8, 9]], axis=0))
    _eq(xnp.delete(np.arange(10), slice(2, 8, 3)), np.delete(np.arange(10), slice(2, 8, 3)))
    _eq(xnp.r_[1:4, 0, np.array([7, 8])], np.r_[1:4, 0, np.array([7, 8])])
    _eq(xnp.r_[-1:1:5j], np.r_[-1:1:5j].astype(np.float32), rtol=1e-6)
    _eq(xnp.r_["0,2", [1, 2, 3], [4, 5, 6]], np.r_["0,2", [1, 2, 3], [4, 5, 6]])
    _eq(xnp.c_[np.array([1, 2, 3]), np.array([4, 5, 6])], np.c_[np.array([1, 2, 3]), np.array([4, 5, 6])])
    _eq(xnp.mgrid[0:3, 0:4], np.mgrid[0:3, 0:4])
    _eq(xnp.ogrid[0:3, 0:4][1], np.ogrid[0:3, 0:4][1])
    assert xnp.s_[1:3, ::2] == np.s_[1:3, ::2] and xnp.index_exp[2] == np.index_exp[2]
    _eq(xnp.ix_([0, 1], [2, 3, 4])[1], np.ix_([0, 1], [2, 3, 4])[1])
    _eq(xnp.mask_indices(3, xnp.triu, 1)[1], np.mask_indices(3, np.triu, 1)[1])
    _eq(xnp.tril_indices_from(np.ones((3, 4)), 1)[1], np.tril_indices_from(np.ones((3, 4)), 1)[1])
    _eq(xnp.diag_indices_from(np.ones((3, 3)))[0], np.diag_indices_from(np.ones((3, 3)))[0])
    _eq(xnp.dsplit(np.ones((2, 2, 5)), [2])[1], np.dsplit(np.ones((2, 2, 5)), [2])[1])
    _eq(xnp.unstack(X, axis=1)[2], np.unstack(X, axis=1)[2])
    _eq(xnp.rollaxis(np.ones((2, 3, 4)), 0, 3), np.rollaxis(np.ones((2, 3, 4)), 0, 3))
    put = X.copy()
    idx = np.argsort(X, axis=1)[:, :1]
    np.put_along_axis(put, idx, 99.0, 1)
    _eq(xnp.put_along_axis(X, idx, 99.0, 1, inplace=False), put)
    _eq(xnp.apply_along_axis(lambda v: v[:2] * v.sum(), 1, X), np.apply_along_axis(lambda v: v[:2] * v.sum(), 1, X),
        rtol=1e-5)
    _eq(xnp.apply_over_axes(xnp.sum, np.ones((2, 3, 4)), [0, 2]), np.apply_over_axes(np.sum, np.ones((2, 3, 4)),
                                                                                     [0, 2]))
    _eq(xnp.fromfunction(lambda i, j: i + 2 * j, (3, 4)), np.fromfunction(lambda i, j: i + 2 * j, (3, 4)))
    _eq(xnp.frombuffer(b"\x01\x02\x03\x04", dtype=np.uint8), np.frombuffer(b"\x01\x02\x03\x04", dtype=np.uint8))
    _eq(xnp.fromstring("1 2 3", dtype=np.float32, sep=" "), np.array([1, 2, 3], np.float32))
    assert bool(xnp.array_equiv([1, 2], [[1, 2], [1, 2]])) and not bool(xnp.array_equiv([1, 2], [1, 2, 3]))
    assert xnp.array_repr(np.arange(3)) == np.array_repr(np.arange(3)) and xnp.array_str(np.arange(3)) == "[0 1 2]"
    assert xnp.can_cast(np.int32, np.float64) and not xnp.can_cast(xnp.float32, xnp.int32)
    assert xnp.isdtype(xnp.bfloat16, "real floating") and xnp.isdtype(np.int8, ("bool", "integral"))
    assert not xnp.isdtype(np.int8, "real floating") and xnp.iterable([1]) and not xnp.iterable(1)
    assert xnp.einsum_path("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4)))[0] == ["einsum_path", (0, 1)]
    with xnp.printoptions(precision=2):
        assert xnp.get_printoptions()["precision"] == 2
    assert issubclass(xnp.ComplexWarning, Warning)


def test_ufunc_and_frompyfunc():
    add = xnp.frompyfunc(lambda a, b: a + b, 2, 1, identity=0)
    mul = xnp.frompyfunc(lambda a, b: a * b, 2, 1)
    _eq(add(np.arange(3), 10), np.arange(3) + 10)
    _eq(add.reduce(X, axis=1), X.sum(1), rtol=1e-5, atol=1e-6)
    _eq(mul.reduce(X, axis=(0, 1)), X.prod(), rtol=1e-4)
    _eq(add.accumulate(X, axis=1), np.cumsum(X, 1), rtol=1e-5, atol=1e-6)
    _eq(add.outer(np.arange(3), np.arange(4)), np.add.outer(np.arange(3), np.arange(4)))
    _eq(add.at(np.arange(5.0), np.array([0, 2]), 10.0, inplace=False), [10.0, 1, 12, 3, 4])
    _eq(add.reduceat(np.arange(8.0), [0, 4, 1, 5]), np.add.reduceat(np.arange(8.0), [0, 4, 1, 5]))
    assert repr(add).startswith("<xlapy.numpy.ufunc")
    f = xlapy.jit(lambda x: add.reduce(x, axis=0))
    _eq(f(X), X.sum(0), rtol=1e-5, atol=1e-6)


def test_save_and_load(tmp_path):
    xnp.save(tmp_path / "a.npy", xnp.arange(4))
    _eq(xnp.load(tmp_path / "a.npy"), np.arange(4))
    xnp.savez(tmp_path / "b.npz", xnp.ones(2), y=xnp.zeros(3))
    with np.load(tmp_path / "b.npz") as z:
        assert z["arr_0"].shape == (2,) and z["y"].shape == (3,)


# -- data-dependent shapes --------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda a, b: xnp.union1d(a, b), lambda a, b: xnp.intersect1d(a, b), lambda a, b: xnp.setdiff1d(a, b),
    lambda a, b: xnp.setxor1d(a, b), lambda a, b: xnp.unique_counts(a), lambda a, b: xnp.bincount(a),
    lambda a, b: xnp.compress(a > 2, b), lambda a, b: xnp.trim_zeros(a), lambda a, b: xnp.unique(a),
    lambda a, b: xnp.roots(a.astype(np.float32)),
], ids=["union1d", "intersect1d", "setdiff1d", "setxor1d", "unique_counts", "bincount", "compress", "trim_zeros",
        "unique", "roots"])
def test_data_dependent_shapes_need_size_under_jit(fn):
    with pytest.raises(ConcretizationError, match="data-dependent output shape"):
        xlapy.jit(fn)(A, B)


def test_jit_with_size_matches_eager():
    f = xlapy.jit(lambda a, b: (xnp.union1d(a, b, size=6), xnp.setdiff1d(a, b, size=2),
                                xnp.unique(a, return_counts=True, return_inverse=True, size=5)))
    u, d, (vals, inv, counts) = f(A, B)
    _eq(u, np.union1d(A, B))
    _eq(d, np.setdiff1d(A, B))
    v, i, c = np.unique(A, return_inverse=True, return_counts=True)
    _eq(vals, v)
    _eq(inv, i)
    _eq(counts, c)


# -- errors -----------------------------------------------------------------------------------------------

def test_errors():
    with pytest.raises(XlapyError, match="quantile: method must be one of"):
        xnp.quantile(X, 0.5, method="bogus")
    with pytest.raises(XlapyError, match="histogram: string bins"):
        xnp.histogram(X, bins="auto")
    with pytest.raises(XlapyError, match="bincount: x must be an integer array"):
        xnp.bincount(X[0])
    with pytest.raises(XlapyError, match="convolve: mode must be"):
        xnp.convolve(X[0], X[1], mode="wide")
    with pytest.raises(XlapyError, match="convolve: inputs cannot be empty"):
        xnp.convolve(np.zeros(0), X[1])
    with pytest.raises(XlapyError, match="polyder: the order of the derivative must be non-negative"):
        xnp.polyder(X[0], -1)
    with pytest.raises(XlapyError, match="fill_diagonal: xlapy arrays are immutable"):
        xnp.fill_diagonal(X, 1.0)
    with pytest.raises(XlapyError, match="put: xlapy arrays are immutable"):
        xnp.put(X, [0], 1.0)
    with pytest.raises(XlapyError, match="choose: invalid entry"):
        xnp.choose(np.array([0, 3]), [np.zeros(2), np.ones(2)])
    with pytest.raises(XlapyError, match="gradient: only edge_order=1"):
        xnp.gradient(X, edge_order=2)
    with pytest.raises(XlapyError, match="fromfile: not implemented"):
        xnp.fromfile("x.bin")
    with pytest.raises(XlapyError, match="cross: incompatible vector dimensions"):
        xnp.cross(np.ones(4), np.ones(3))
    with pytest.raises(XlapyError, match="interp: xp and fp must be 1-D of the same length"):
        xnp.interp(X[0], np.arange(3.0), np.arange(4.0))
    with pytest.raises(XlapyError, match="isdtype: unknown kind"):
        xnp.isdtype(np.int8, "integer-ish")
    with pytest.raises(XlapyError, match="block: list depths are mismatched"):
        xnp.block([[np.ones(2)], np.ones(2)])
