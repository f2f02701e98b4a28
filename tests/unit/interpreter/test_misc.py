"""Interpreter: sort (every comparator strategy), topk, rng-bit-generator (bit-exact) and rng."""
import ml_dtypes
import numpy as np
import pytest

import xlapy
from xlapy.backends.interpreter import sorting
from xlapy.backends.interpreter.prng import philox4x32, threefry2x32

RNG = np.random.default_rng(1)


def run(text: str, *args):
    return xlapy.compile(xlapy.hlo.parse(text), backend="interpreter", verify=False)(*args)


def cmp_module(t: str, comparator_body: str, entry_params: str, sort_line: str, out: str) -> str:
    return (f"HloModule m\n\ncmp {{\n{comparator_body}\n}}\n\nENTRY e {{\n{entry_params}\n"
            f"  ROOT r = {out} {sort_line}, to_apply=cmp\n}}\n")


def simple_cmp(t: str, direction: str, kind: str = "", lhs: int = 0, rhs: int = 1, nparams: int = 2) -> str:
    params = "\n".join(f"  p{i} = {t if i < 2 else 's32'}[] parameter({i})" for i in range(nparams))
    type_attr = f", type={kind}" if kind else ""
    return f"{params}\n  ROOT c = pred[] compare(p{lhs}, p{rhs}), direction={direction}{type_attr}"


def total_order(x: np.ndarray) -> np.ndarray:
    return sorting.total_order_key(x)


# -- sort: the key strategy -------------------------------------------------------------------------

def test_sort_f32_totalorder_puts_nans_and_signed_zeros_in_place():
    x = np.array([3.0, -0.0, np.nan, 0.0, -np.inf, -np.nan, 1.0, -2.0], np.float32)
    text = cmp_module("f32", simple_cmp("f32", "LT", "TOTALORDER"), "  x = f32[8] parameter(0)",
                      "sort(x), dimensions={0}, is_stable=true", "f32[8]")
    got = run(text, x)
    want = x[np.argsort(total_order(x), kind="stable")]
    assert got.tobytes() == want.tobytes()
    assert np.signbit(got[0]) and np.isnan(got[0]) and np.isnan(got[-1]) and not np.signbit(got[-1])
    assert np.signbit(got[3]) and got[3] == 0 and not np.signbit(got[4])


@pytest.mark.parametrize("t, dtype", [("s32", np.int32), ("u8", np.uint8), ("f32", np.float32),
                                      ("bf16", ml_dtypes.bfloat16), ("f64", np.float64)])
@pytest.mark.parametrize("direction", ["LT", "GT"])
def test_sort_2d_along_each_dimension(t, dtype, direction):
    x = RNG.integers(0, 6, (5, 7)).astype(dtype)          # many ties
    for dim in (0, 1):
        text = cmp_module(t, simple_cmp(t, direction), f"  x = {t}[5,7] parameter(0)",
                          f"sort(x), dimensions={{{dim}}}", f"{t}[5,7]")
        got = run(text, x)
        want = np.sort(x.astype(np.float64), axis=dim)
        if direction == "GT":
            want = np.flip(want, axis=dim)
        np.testing.assert_array_equal(got.astype(np.float64), want)
        assert got.dtype == np.dtype(dtype)


def test_sort_key_value_is_stable_and_descending_keeps_tie_order():
    keys = np.array([2, 1, 2, 0, 1, 2], np.int32)
    vals = np.arange(6, dtype=np.int32)
    body = simple_cmp("s32", "GT", nparams=4)
    text = cmp_module("s32", body, "  k = s32[6] parameter(0)\n  v = s32[6] parameter(1)",
                      "sort(k, v), dimensions={0}, is_stable=true", "(s32[6], s32[6])")
    k, v = run(text, keys, vals)
    np.testing.assert_array_equal(k, [2, 2, 2, 1, 1, 0])
    np.testing.assert_array_equal(v, [0, 2, 5, 1, 4, 3])


def test_sort_with_swapped_parameters_is_descending():
    x = np.array([1, 5, 3, 5, 0], np.int32)
    text = cmp_module("s32", simple_cmp("s32", "LT", lhs=1, rhs=0, nparams=4),
                      "  x = s32[5] parameter(0)\n  i = s32[5] iota(), iota_dimension=0",
                      "sort(x, i), dimensions={0}", "(s32[5], s32[5])")
    k, i = run(text, x)
    np.testing.assert_array_equal(k, [5, 5, 3, 1, 0])
    np.testing.assert_array_equal(i, [1, 3, 2, 0, 4])


def test_sort_by_value_operand_key():
    """The comparator may order by any operand, here operand 1 of 2."""
    a = np.array([10, 20, 30, 40], np.int32)
    b = np.array([0.5, -1.0, 0.25, -3.0], np.float32)
    body = ("  p0 = s32[] parameter(0)\n  p1 = s32[] parameter(1)\n  p2 = f32[] parameter(2)\n"
            "  p3 = f32[] parameter(3)\n  ROOT c = pred[] compare(p2, p3), direction=LT")
    text = cmp_module("s32", body, "  a = s32[4] parameter(0)\n  b = f32[4] parameter(1)",
                      "sort(a, b), dimensions={0}", "(s32[4], f32[4])")
    ra, rb = run(text, a, b)
    np.testing.assert_array_equal(ra, [40, 20, 30, 10])
    np.testing.assert_array_equal(rb, [-3.0, -1.0, 0.25, 0.5])


JAX_FLOAT_CMP = """  p0 = f32[] parameter(0)
  ne0 = pred[] compare(p0, p0), direction=NE
  nan = f32[] constant(nan)
  zero = f32[] constant(0)
  eq0 = pred[] compare(p0, zero), direction=EQ
  s0 = f32[] select(eq0, zero, p0)
  c0 = f32[] select(ne0, nan, s0)
  p1 = f32[] parameter(1)
  ne1 = pred[] compare(p1, p1), direction=NE
  eq1 = pred[] compare(p1, zero), direction=EQ
  s1 = f32[] select(eq1, zero, p1)
  c1 = f32[] select(ne1, nan, s1)
  p2 = s32[] parameter(2)
  p3 = s32[] parameter(3)
  ROOT lt = pred[] compare(c0, c1), direction=LT, type=TOTALORDER"""


def test_sort_jax_canonicalizing_float_comparator_argsort():
    """jnp.argsort: -0.0 ties +0.0 and every NaN sorts last, stable."""
    x = np.array([0.0, np.nan, -1.0, -0.0, -np.nan, 2.0, 0.0], np.float32)
    text = cmp_module("f32", JAX_FLOAT_CMP, "  x = f32[7] parameter(0)\n  i = s32[7] iota(), iota_dimension=0",
                      "sort(x, i), dimensions={0}, is_stable=true", "(f32[7], s32[7])")
    _, idx = run(text, x)
    np.testing.assert_array_equal(idx, [2, 0, 3, 6, 5, 1, 4])


def test_sort_large_uses_key_path_quickly():
    x = RNG.standard_normal(200_000).astype(np.float32)
    text = cmp_module("f32", JAX_FLOAT_CMP, "  x = f32[200000] parameter(0)\n  i = s32[200000] iota(), "
                      "iota_dimension=0", "sort(x, i), dimensions={0}, is_stable=true", "(f32[200000], s32[200000])")
    v, i = run(text, x)
    np.testing.assert_array_equal(v, np.sort(x))
    np.testing.assert_array_equal(i, np.argsort(x, kind="stable"))


TWO_KEY_CMP = """  a0 = s32[] parameter(0)
  a1 = s32[] parameter(1)
  b0 = f32[] parameter(2)
  b1 = f32[] parameter(3)
  v0 = s32[] parameter(4)
  v1 = s32[] parameter(5)
  lt_a = pred[] compare(a0, a1), direction=LT
  eq_a = pred[] compare(a0, a1), direction=EQ
  gt_b = pred[] compare(b0, b1), direction=GT, type=TOTALORDER
  both = pred[] and(eq_a, gt_b)
  ROOT r = pred[] or(lt_a, both)"""


@pytest.mark.parametrize("n", [10, 5000])
def test_sort_two_keys_lexicographic(n):
    a = RNG.integers(0, 4, n).astype(np.int32)
    b = RNG.integers(0, 3, n).astype(np.float32)
    v = np.arange(n, dtype=np.int32)
    text = cmp_module("s32", TWO_KEY_CMP,
                      f"  a = s32[{n}] parameter(0)\n  b = f32[{n}] parameter(1)\n  v = s32[{n}] parameter(2)",
                      "sort(a, b, v), dimensions={0}, is_stable=true", f"(s32[{n}], f32[{n}], s32[{n}])")
    _, _, got = run(text, a, b, v)
    np.testing.assert_array_equal(got, np.lexsort((v, -b, a)))


# -- sort: general comparators (matrix strategy and merge sort) ---------------------------------------

SUM_CMP = """  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  p2 = s32[] parameter(2)
  p3 = s32[] parameter(3)
  l = s32[] add(p0, p2)
  r = s32[] add(p1, p3)
  ROOT c = pred[] compare(l, r), direction=LT"""


def _sum_sort_text(n):
    return cmp_module("s32", SUM_CMP, f"  a = s32[3,{n}] parameter(0)\n  b = s32[3,{n}] parameter(1)",
                      "sort(a, b), dimensions={1}, is_stable=true", f"(s32[3,{n}], s32[3,{n}])")


def _sum_sort_expected(a, b):
    order = np.argsort(a + b, axis=1, kind="stable")
    return np.take_along_axis(a, order, 1), np.take_along_axis(b, order, 1)


def test_sort_general_comparator_matrix_strategy():
    a, b = RNG.integers(0, 5, (3, 40)).astype(np.int32), RNG.integers(0, 5, (3, 40)).astype(np.int32)
    got = run(_sum_sort_text(40), a, b)
    for g, w in zip(got, _sum_sort_expected(a, b)):
        np.testing.assert_array_equal(g, w)


def test_sort_general_comparator_merge_sort_fallback(monkeypatch):
    monkeypatch.setattr(sorting, "_MATRIX_MAX_N", 0)
    a, b = RNG.integers(0, 5, (3, 12)).astype(np.int32), RNG.integers(0, 5, (3, 12)).astype(np.int32)
    got = run(_sum_sort_text(12), a, b)
    for g, w in zip(got, _sum_sort_expected(a, b)):
        np.testing.assert_array_equal(g, w)


# -- topk -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("largest", ["true", "false"])
def test_topk_ties_by_lower_index(largest):
    x = np.array([[1.0, 3.0, 3.0, -1.0, 7.0, 1.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]], np.float32)
    text = ("HloModule m\n\nENTRY e {\n  x = f32[2,6] parameter(0)\n"
            f"  ROOT t = (f32[2,3], s32[2,3]) topk(x), k=3, largest={largest}\n}}\n")
    values, idx = run(text, x)
    if largest == "true":
        np.testing.assert_array_equal(idx, [[4, 1, 2], [0, 1, 2]])
    else:
        np.testing.assert_array_equal(idx, [[3, 0, 5], [0, 1, 2]])
    np.testing.assert_array_equal(values, np.take_along_axis(x, idx, 1))
    assert idx.dtype == np.int32


# -- rng-bit-generator ----------------------------------------------------------------------------

def test_block_ciphers_known_answers():
    """Random123's known-answer vectors for Threefry-2x32-20 and Philox-4x32-10."""
    u = lambda *v: [np.array([x], np.uint32) for x in v]  # noqa: E731
    assert [int(v[0]) for v in threefry2x32(*u(0x243F6A88, 0x85A308D3), 0x13198A2E, 0x03707344)] == \
        [0xC4923A9C, 0x483DF7A0]
    assert [int(v[0]) for v in threefry2x32(*u(0, 0), 0, 0)] == [0x6B200159, 0x99BA4EFE]
    assert [int(v[0]) for v in philox4x32(u(0, 0, 0, 0), 0, 0)] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert [int(v[0]) for v in philox4x32(u(0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
                                          0xA4093822, 0x299F31D0)] == [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def _state(*words32):
    return np.array(words32, np.uint32).view(np.uint64)


# Recorded from XLA:CPU (JAX's lax.rng_bit_generator); states are u64[2] given as u32 word pairs.
RBG_CASES = [
    ("rng_philox", "u32[4,5]", _state(5, 6, 7, 8), _state(5, 6, 12, 8),
     [[3743192318, 359737254, 4242654944, 68420325, 795682556],
      [2323091853, 2593545811, 2999725314, 560249431, 3385592226],
      [1715641557, 1425509900, 2235894589, 4143424825, 2860417636],
      [3435120888, 2816781024, 945796830, 2026569343, 1742232211]]),
    ("rng_three_fry", "u32[4,5]", _state(1, 2, 3, 4), _state(1, 2, 13, 4),
     [[1576285164, 740599976, 2436392515, 1335360347, 3981753173],
      [2249660814, 2425682526, 1497962777, 2260235687, 3953550934],
      [3812192618, 2959620048, 3014899208, 1878941568, 3405818142],
      [2023144656, 1759477693, 3167314751, 3159671019, 3736842863]]),
    ("rng_three_fry", "u8[3,3]", _state(9, 8, 7, 6), _state(9, 8, 13, 6),
     [[21, 156, 193], [208, 25, 139], [128, 205, 253]]),
    ("rng_philox", "u64[5]", _state(1, 2, 3, 4), _state(1, 2, 6, 4),
     [5574906407289874532, 3272025663544478142, 7043725020835825787, 9254853183523022196, 14929923424383677111]),
    ("rng_three_fry", "u64[3]", _state(1, 2, 3, 4), _state(1, 2, 6, 4),
     [9662219624799024108, 10418227120389269672, 6433701140276733507]),
]


@pytest.mark.parametrize("algorithm, out, state, new_state, bits", RBG_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in RBG_CASES])
def test_rng_bit_generator_matches_xla(algorithm, out, state, new_state, bits):
    text = ("HloModule m\n\nENTRY e {\n  s = u64[2] parameter(0)\n"
            f"  ROOT r = (u64[2], {out}) rng-bit-generator(s), algorithm={algorithm}\n}}\n")
    got_state, got_bits = run(text, state)
    np.testing.assert_array_equal(got_state, new_state)
    np.testing.assert_array_equal(got_bits, np.array(bits, got_bits.dtype))
    assert got_bits.dtype == {"u32": np.uint32, "u8": np.uint8, "u64": np.uint64}[out.split("[")[0]]


def test_rng_bit_generator_default_is_philox_and_three_word_state():
    two = "HloModule m\n\nENTRY e {\n  s = u64[2] parameter(0)\n  ROOT r = (u64[2], u32[7]) " \
          "rng-bit-generator(s), algorithm=ALG\n}\n"
    s = _state(5, 6, 7, 8)
    d, p = run(two.replace("ALG", "rng_default"), s), run(two.replace("ALG", "rng_philox"), s)
    np.testing.assert_array_equal(d[1], p[1])
    # A u64[3] state carries the whole 128-bit counter: [key, low, high]; [k, c] means low=c, high=k.
    three = two.replace("u64[2]", "u64[3]").replace("ALG", "rng_philox")
    s3 = np.array([s[0], s[1], s[0]], np.uint64)
    st3, bits3 = run(three, s3)
    np.testing.assert_array_equal(bits3, p[1])
    np.testing.assert_array_equal(st3, [s[0], s[1] + np.uint64(2), s[0]])


# -- rng ------------------------------------------------------------------------------------------

def test_rng_uniform_and_normal_shapes_and_ranges():
    text = ("HloModule m\n\nENTRY e {\n  a = f32[] constant(2)\n  b = f32[] constant(3)\n"
            "  u = f32[1000] rng(a, b), distribution=rng_uniform\n  n = f32[1000] rng(a, b), distribution=rng_normal\n"
            "  lo = s32[] constant(-3)\n  hi = s32[] constant(4)\n  i = s32[1000] rng(lo, hi), distribution=rng_uniform\n"
            "  ROOT t = (f32[1000], f32[1000], s32[1000]) tuple(u, n, i)\n}\n")
    u, n, i = run(text)
    assert u.dtype == np.float32 and ((u >= 2) & (u < 3)).all()
    assert abs(float(n.mean()) - 2) < 0.5 and 2 < float(n.std()) < 4
    assert i.dtype == np.int32 and i.min() >= -3 and i.max() < 4
