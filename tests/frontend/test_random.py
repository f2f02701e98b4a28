"""xlapy.random against jax.random: bit-exact keys, split, fold_in, bits and samplers, eager and under jit.

The expected values were produced once by jax 0.10.2 (default threefry2x32, partitionable mode) and are
pasted below as literals; the corpus programs tests/corpus/jax/prng_*.hlo carry XLA's own outputs.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xlapy
from xlapy import random
from xlapy.testing import CORPUS
from xlapy.tools.npz import load

K = random.PRNGKey
U32 = np.uint32

REF = {
    'key_0': ('uint32', (2,), [0, 0]),
    'key_42': ('uint32', (2,), [0, 42]),
    'key_-1': ('uint32', (2,), [0, 4294967295]),
    'key_4294967299': ('uint32', (2,), [0, 3]),
    'key_i32_-5': ('uint32', (2,), [0, 4294967291]),
    'split2': ('uint32', (2, 2), [[1832780943, 270669613], [64467757, 2916123636]]),
    'split3': ('uint32', (3, 2), [[1832780943, 270669613], [64467757, 2916123636], [2465931498, 255383827]]),
    'split23': ('uint32', (2, 3, 2), [[[1797259609, 2579123966], [928981903, 3453687069], [4146024105,
        2718843009]], [[2467461003, 3840466878], [2285895361, 433833334], [1524306142, 1887795613]]]),
    'fold0': ('uint32', (2,), [1832780943, 270669613]),
    'fold12345': ('uint32', (2,), [605133419, 3761158475]),
    'fold_big': ('uint32', (2,), [4006827317, 911798682]),
    'bits7': ('uint32', (7,), [2098992034, 2919706841, 2646866425, 2409546199, 1935504149, 2516274904, 321304473]),
    'bits_u8': ('uint8', (2, 3), [[162, 217, 249], [215, 21, 216]]),
    'bits_u16': ('uint16', (5,), [5026, 12505, 63993, 49623, 29461]),
    'bits_scalar': ('uint32', (), 2098992034),
    'uniform10': ('float32', (10,), [0.48870956897735596, 0.6797971725463867, 0.6162714958190918,
        0.5610160827636719, 0.4506446123123169, 0.58586585521698, 0.07480943202972412, 0.7751333713531494,
        0.698959231376648, 0.8186336755752563]),
    'uniform_f16': ('float16', (6,), [0.076171875, 0.1904296875, 0.9755859375, 0.7568359375, 0.44921875,
        0.3076171875]),
    'uniform_bf16': ('bfloat16', (6,), [0.6328125, 0.84375, 0.96875, 0.8359375, 0.078125, 0.84375]),
    'uniform_range': ('float32', (4,), [0.5090599060058594, 1.2700233459472656, 0.5673465728759766,
        0.5071706771850586]),
    'uniform_arr': ('float32', (2, 3), [[0.6407910585403442, 2.801203966140747, 3.840272903442383],
        [0.8816101551055908, 1.836463451385498, 3.6185741424560547]]),
    'uniform_scalar': ('float32', (), 0.07405257225036621),
    'normal10': ('float32', (10,), [-0.02830461598932743, 0.4671318531036377, 0.2957029640674591,
        0.15354591608047485, -0.12403281778097153, 0.21692314743995667, -1.440878987312317, 0.755859911441803,
        0.5214096307754517, 0.9101703763008118]),
    'normal_f16': ('float16', (5,), [-1.4296875, -0.87548828125, 1.974609375, 0.69677734375, -0.1270751953125]),
    'normal_bf16': ('bfloat16', (5,), [0.34375, 1.015625, 1.890625, 0.984375, -1.40625]),
    'normal_2x3': ('float32', (2, 3), [[0.4512351453304291, 1.9534509181976318, -0.5162394642829895],
        [-0.14094029366970062, 0.6154966950416565, 0.3343164920806885]]),
    'bern': ('bool', (10,), [False, False, False, False, False, False, True, False, False, False]),
    'bern_arr': ('bool', (4,), [False, False, True, True]),
    'bern_high': ('bool', (8,), [False, True, True, True, False, True, True, True]),
    'randint': ('int32', (8,), [4, 4, 1, 9, 9, 9, 7, 7]),
    'randint_i8': ('int8', (6,), [-1, -1, -4, 4, 4, 4]),
    'randint_u8': ('uint8', (6,), [1, 161, 184, 125, 227, 66]),
    'randint_i16': ('int16', (5,), [2464, 21358, 24606, -945, -20665]),
    'randint_empty': ('int32', (3,), [5, 5, 5]),
    'randint_arr': ('int32', (2, 3), [[3, 16, 305], [2, 15, 444]]),
    'randint_full': ('int32', (4,), [473836373, -2147290925, 9328016, -30786304]),
    'perm10': ('int32', (10,), [7, 4, 2, 5, 3, 6, 8, 9, 0, 1]),
    'perm_arr': ('float32', (6,), [0.0, 7.5, 6.0, 3.0, 1.5, 4.5]),
    'perm_2d': ('int32', (3, 4), [[1, 3, 0, 2], [5, 7, 4, 6], [9, 11, 8, 10]]),
    'perm_indep': ('int32', (3, 4), [[1, 3, 0, 2], [6, 4, 7, 5], [8, 9, 11, 10]]),
    'choice_norep': ('int32', (3,), [7, 4, 2]),
    'choice_rep': ('int32', (4,), [4, 4, 1, 9]),
    'choice_arr': ('int32', (2, 4), [[8, 10, 12, 14], [24, 26, 28, 30]]),
    'trunc': ('float32', (6,), [0.14770005643367767, 0.5684449076652527, 0.42102551460266113,
        0.29997000098228455, 0.0691138207912445, 0.3537633717060089]),
    'u_jit': ('float32', (5,), [0.23133409023284912, 0.3165394067764282, 0.7916358709335327, 0.5347088575363159,
        0.9393322467803955]),
}

REF_X64 = {
    'key64_big': ('uint32', (2,), [256, 7]),
    'key64_neg': ('uint32', (2,), [4294967295, 4294967295]),
    'bits_u64': ('uint64', (4,), [7871734211187709741, 276886910877598708, 10591095138341673235,
        13462782411356743825]),
    'uniform_f64': ('float64', (5,), [0.4267275666499091, 0.015010069515314584, 0.5741444178995352,
        0.7298188969046309, 0.687800341230566]),
    'normal_f64': ('float64', (6,), [-0.18471174528191162, -2.169824560397754, 0.18693555179382582,
        0.6122653570510959, 0.4896249504757018, 0.36900430470828355]),
    'randint_i64': ('int64', (4,), [464050701877, -395020523842, 848944880791, -449936457681]),
    'split_x64': ('uint32', (2, 2), [[1832780943, 270669613], [64467757, 2916123636]]),
}


# name -> (seed, fn(key)); the key is PRNGKey(seed), passed as an argument so that under jit it is traced
CASES = {
    "split2": (42, lambda k: random.split(k)),
    "split3": (42, lambda k: random.split(k, 3)),
    "split23": (0, lambda k: random.split(k, (2, 3))),
    "fold0": (42, lambda k: random.fold_in(k, 0)),
    "fold12345": (42, lambda k: random.fold_in(k, 12345)),
    "fold_big": (42, lambda k: random.fold_in(k, 2 ** 31 + 5)),
    "bits7": (42, lambda k: random.bits(k, (7,))),
    "bits_u8": (42, lambda k: random.bits(k, (2, 3), np.uint8)),
    "bits_u16": (42, lambda k: random.bits(k, (5,), np.uint16)),
    "bits_scalar": (42, lambda k: random.bits(k)),
    "uniform10": (42, lambda k: random.uniform(k, (10,))),
    "uniform_f16": (42, lambda k: random.uniform(k, (6,), np.float16)),
    "uniform_bf16": (42, lambda k: random.uniform(k, (6,), ml_dtypes.bfloat16)),
    "uniform_range": (1, lambda k: random.uniform(k, (4,), minval=-3, maxval=5)),
    "uniform_arr": (2, lambda k: random.uniform(k, (2, 3), minval=np.array([0., 1., 2.], np.float32),
                                                maxval=np.array([1., 3., 10.], np.float32))),
    "uniform_scalar": (3, lambda k: random.uniform(k)),
    "normal10": (42, lambda k: random.normal(k, (10,))),
    "normal_f16": (42, lambda k: random.normal(k, (5,), np.float16)),
    "normal_bf16": (42, lambda k: random.normal(k, (5,), ml_dtypes.bfloat16)),
    "normal_2x3": (7, lambda k: random.normal(k, (2, 3))),
    "bern": (42, lambda k: random.bernoulli(k, 0.3, (10,))),
    "bern_arr": (5, lambda k: random.bernoulli(k, np.array([0.1, 0.5, 0.9, 0.99], np.float32))),
    "bern_high": (6, lambda k: random.bernoulli(k, 0.5, (8,), mode="high")),
    "randint": (42, lambda k: random.randint(k, (8,), 0, 10)),
    "randint_i8": (42, lambda k: random.randint(k, (6,), -5, 5, np.int8)),
    "randint_u8": (9, lambda k: random.randint(k, (6,), 0, 256, np.uint8)),
    "randint_i16": (9, lambda k: random.randint(k, (5,), -32768, 32767, np.int16)),
    "randint_empty": (9, lambda k: random.randint(k, (3,), 5, 5)),
    "randint_arr": (10, lambda k: random.randint(k, (2, 3), np.array([0, 10, 100], np.int32),
                                                 np.array([5, 20, 1000], np.int32))),
    "randint_full": (11, lambda k: random.randint(k, (4,), -2 ** 31, 2 ** 31 - 1)),
    "perm10": (42, lambda k: random.permutation(k, 10)),
    "perm_arr": (3, lambda k: random.permutation(k, np.arange(6, dtype=np.float32) * 1.5)),
    "perm_2d": (4, lambda k: random.permutation(k, np.arange(12, dtype=np.int32).reshape(3, 4), axis=1)),
    "perm_indep": (4, lambda k: random.permutation(k, np.arange(12, dtype=np.int32).reshape(3, 4), axis=1,
                                                   independent=True)),
    "choice_norep": (42, lambda k: random.choice(k, 10, (3,), replace=False)),
    "choice_rep": (42, lambda k: random.choice(k, 10, (4,))),
    "choice_arr": (12, lambda k: random.choice(k, np.arange(20, dtype=np.int32).reshape(5, 4) * 2, (2,),
                                               replace=False, axis=0)),
    "trunc": (42, lambda k: random.truncated_normal(k, -1., 2., (6,))),
}
# outputs that pass through erf_inv / erf: the backend's log1p, sqrt and erf may differ from XLA:CPU's by an ulp
APPROX = {"normal10", "normal_f16", "normal_bf16", "normal_2x3", "trunc"}


def _expected(name: str) -> np.ndarray:
    dt, shape, values = REF[name] if name in REF else REF_X64[name]
    dtype = ml_dtypes.bfloat16 if dt == "bfloat16" else np.dtype(dt)
    out = np.asarray(values, dtype=np.float64 if dt == "bfloat16" else dtype).astype(dtype)
    assert out.shape == tuple(shape)
    return out


def _check(name: str, actual) -> None:
    expected = _expected(name)
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (name, actual.dtype, actual.shape)
    if name in APPROX:
        ulp = 2 * float(ml_dtypes.finfo(expected.dtype).eps)
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=ulp, atol=ulp,
                                   err_msg=name)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=name)


@pytest.mark.parametrize("seed", [0, 42, -1, 2 ** 32 + 3])
def test_prng_key_matches_jax(seed):
    _check(f"key_{seed}", K(seed))
    _check(f"key_{seed}", random.key(seed))


def test_prng_key_from_int32_array():
    _check("key_i32_-5", K(np.int32(-5)))
    _check("key_i32_-5", xlapy.jit(K)(np.int32(-5)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_matches_jax(name):
    seed, fn = CASES[name]
    _check(name, fn(K(seed)))


@pytest.mark.parametrize("name", ["split3", "fold12345", "bits_u8", "uniform_arr", "uniform_bf16", "normal10",
                                  "bern_high", "randint_i8", "randint_arr", "perm_2d", "choice_arr", "trunc"])
def test_jit_matches_jax(name):
    seed, fn = CASES[name]
    _check(name, xlapy.jit(fn)(K(seed)))


def test_jit_with_traced_seed_and_fold_in():
    f = xlapy.jit(lambda s: random.uniform(random.fold_in(K(s), 3), (5,)))
    _check("u_jit", f(np.int32(7)))
    assert "rng" not in f.lower(np.int32(7)).as_text()      # threefry is plain integer HLO


def test_permutation_two_shuffle_rounds():
    out = np.asarray(random.permutation(K(8), 2000))         # 2000 elements take two sort rounds
    assert out[:16].tolist() == [285, 302, 1915, 1616, 931, 1493, 264, 1074, 464, 206, 253, 448, 80, 1897, 927, 324]
    assert int(np.sum(np.arange(2000, dtype=np.int64) * out)) == 2014794504
    assert sorted(out.tolist()) == list(range(2000))


def test_x64_matches_jax(x64):
    _check("key64_big", K(2 ** 40 + 7))
    _check("key64_neg", K(-1))
    k = K(42)
    _check("bits_u64", random.bits(k, (4,)))
    _check("uniform_f64", random.uniform(k, (5,), np.float64))
    _check("randint_i64", random.randint(k, (4,), -10 ** 12, 10 ** 12, np.int64))
    _check("split_x64", random.split(k))
    np.testing.assert_allclose(np.asarray(random.normal(k, (6,), np.float64)), _expected("normal_f64"),
                               rtol=1e-15, atol=1e-15)


# -- the corpus: JAX's programs with XLA's own outputs ---------------------------------------------

def _corpus(name: str) -> dict:
    return load(CORPUS / "jax" / f"{name}.npz")


def test_corpus_key_split():
    d = _corpus("prng_key_split")
    np.testing.assert_array_equal(np.asarray(random.split(K(d["arg0"]), 3)), d["out0"])


def test_corpus_uniform_and_raw_key_data():
    d = _corpus("prng_uniform")
    np.testing.assert_array_equal(np.asarray(random.uniform(K(d["arg0"]), (4, 5), minval=-1, maxval=2)), d["out0"])
    d = _corpus("prng_raw_key_data")
    np.testing.assert_array_equal(np.asarray(random.uniform(d["arg0"], (6,))), d["out0"])
    np.testing.assert_array_equal(np.asarray(random.bits(d["arg0"], (4,))), d["out1"])


def test_corpus_normal():
    d = _corpus("prng_normal")
    out = xlapy.jit(lambda s: random.normal(K(s), (12,)))(d["arg0"])
    np.testing.assert_allclose(np.asarray(out), d["out0"], rtol=3e-7, atol=3e-7)


def test_corpus_bernoulli_randint():
    d = _corpus("prng_bernoulli_randint")
    s = d["arg0"]
    np.testing.assert_array_equal(np.asarray(random.bernoulli(K(s), 0.3, (10,))), d["out0"])
    np.testing.assert_array_equal(np.asarray(random.randint(random.fold_in(K(s), 3), (10,), -5, 17)), d["out1"])


def test_corpus_permutation():
    d = _corpus("prng_permutation")
    s = d["arg0"]
    np.testing.assert_array_equal(np.asarray(random.permutation(K(s), d["arg1"])), d["out0"])
    np.testing.assert_array_equal(np.asarray(random.permutation(K(s + 1), 10)), d["out1"])


def test_corpus_x64_uniform_normal(x64):
    d = _corpus("x64_prng_uniform_f64")
    s = d["arg0"]
    np.testing.assert_array_equal(np.asarray(random.uniform(K(s), (6,), np.float64)), d["out0"])
    np.testing.assert_allclose(np.asarray(random.normal(K(s), (4,), np.float64)), d["out1"], rtol=1e-15)


# -- distributions and errors ----------------------------------------------------------------------

def test_normal_moments():
    x = np.asarray(random.normal(K(0), (10000,)), np.float64)
    assert abs(x.mean()) < 0.03 and abs(x.std() - 1) < 0.03
    assert np.isfinite(x).all()


def test_uniform_range_and_moments():
    u = np.asarray(random.uniform(K(1), (10000,), minval=2., maxval=4.))
    assert u.min() >= 2 and u.max() < 4 and abs(u.mean() - 3) < 0.03


def test_randint_and_bernoulli_frequencies():
    r = np.asarray(random.randint(K(2), (10000,), 0, 4))
    assert set(np.unique(r).tolist()) == {0, 1, 2, 3}
    assert np.abs(np.bincount(r) / 10000 - 0.25).max() < 0.03
    b = np.asarray(random.bernoulli(K(3), 0.2, (10000,)))
    assert abs(b.mean() - 0.2) < 0.02


def test_truncated_normal_stays_inside():
    x = np.asarray(random.truncated_normal(K(4), -0.5, 0.25, (2000,)))
    assert x.min() > -0.5 and x.max() < 0.25


def test_bad_key_is_a_clear_error():
    with pytest.raises(xlapy.XlapyError, match="expected a PRNG key"):
        random.uniform(np.zeros(3, np.uint32), (2,))
    with pytest.raises(xlapy.XlapyError, match="floating point"):
        random.uniform(K(0), (2,), np.int32)
    with pytest.raises(xlapy.XlapyError, match="replace=False"):
        random.choice(K(0), 3, (5,), replace=False)


def test_complex_normal_matches_jax():
    expected = np.array([-1.681740164756775 - 1.3740651607513428j, -1.2064419984817505 + 0.07411617785692215j,
                         -0.3474697470664978 - 0.03365090489387512j], np.complex64)
    out = np.asarray(random.normal(K(3), (3,), np.complex64))
    assert out.dtype == np.complex64
    np.testing.assert_allclose(out, expected, rtol=3e-7)
