"""sort and topk on the CPU backend against the interpreter: comparator computations (JAX's NaN-aware float
order, total order, descending, lexicographic), multi-operand stability, dims and layouts, element types.
Results are permutations of the inputs, so they must match bit for bit (-0.0 before +0.0, NaN payloads)."""
import ml_dtypes
import numpy as np
import pytest

import xlapy

RNG = np.random.default_rng(0)


def same_bits(got, want, where=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, where
    if got.dtype.itemsize and got.dtype.kind not in "b":
        got, want = got.view(f"u{got.dtype.itemsize}"), want.view(f"u{want.dtype.itemsize}")
    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    assert bad.size == 0, f"{where}: {bad.size} elements differ, first at {bad[0]}"


def run_both(text, *args):
    module = xlapy.hlo.parse(text)
    xlapy.hlo.verify(module)
    got = xlapy.compile(module, backend="cpu", run_pipeline=False)(*args)
    want = xlapy.compile(module, backend="interpreter")(*args)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for i, (g, w) in enumerate(zip(got, want)):
        same_bits(g, w, f"output {i}")


def _dims(shape):
    return ",".join(map(str, shape))


# JAX's comparator for floats: NaNs canonicalized, -0 == +0, then a total-order compare.
JAX_FLOAT_LT = """
  cz = {t}[] constant(0)
  cn = {t}[] constant(nan)
  e0 = pred[] compare(p0, cz), direction=EQ
  s0 = {t}[] select(e0, cz, p0)
  n0 = pred[] compare(p0, p0), direction=NE
  k0 = {t}[] select(n0, cn, s0)
  e1 = pred[] compare(p1, cz), direction=EQ
  s1 = {t}[] select(e1, cz, p1)
  n1 = pred[] compare(p1, p1), direction=NE
  k1 = {t}[] select(n1, cn, s1)
  ROOT lt = pred[] compare(k0, k1), direction={d}, type=TOTALORDER"""


def sort_module(types, shape, dim, body, layout="") -> str:
    params = "\n".join(f"  p{2 * k} = {t}[] parameter({2 * k})\n  p{2 * k + 1} = {t}[] parameter({2 * k + 1})"
                       for k, t in enumerate(types))
    args = "\n".join(f"  x{k} = {t}[{_dims(shape)}]{layout} parameter({k})" for k, t in enumerate(types))
    shapes = [f"{t}[{_dims(shape)}]{layout}" for t in types]
    result = shapes[0] if len(types) == 1 else "(" + ", ".join(shapes) + ")"
    operands = ", ".join(f"x{k}" for k in range(len(types)))
    return (f"HloModule m\n\ncmp {{\n{params}\n{body}\n}}\n\nENTRY e {{\n{args}\n"
            f"  ROOT s = {result} sort({operands}), dimensions={{{dim}}}, is_stable=true, to_apply=cmp\n}}\n")


def _values(ty, shape, ties=False):
    dt = np.dtype({"bf16": ml_dtypes.bfloat16}.get(ty, ty.replace("s", "int").replace("u", "uint").replace(
        "f", "float").replace("pred", "bool")))
    n = int(np.prod(shape))
    if ty == "pred":
        return RNG.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind in "iu":
        hi = 5 if ties else np.iinfo(dt).max
        lo = 0 if dt.kind == "u" or ties else np.iinfo(dt).min
        return RNG.integers(lo, hi, n, endpoint=True).astype(dt).reshape(shape)
    specials = np.array([np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, 1.0, 0.0, -0.0])
    vals = np.round(RNG.standard_normal(n) * 4, 0 if ties else 3)
    vals[:min(n, len(specials))] = specials[:min(n, len(specials))]
    return RNG.permutation(vals).astype(dt).reshape(shape)


def _float_ty(dt):
    return {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16"}[np.dtype(dt).name]


@pytest.mark.parametrize("ty", ["f32", "bf16", "f16", "f64"])
@pytest.mark.parametrize("direction", ["LT", "GT"])
def test_sort_floats_jax_comparator(ty, direction):
    """NaNs last (first descending), -0.0 and +0.0 tied so they keep their order."""
    for shape, dim in (((1,), 0), ((20,), 0), ((300,), 0), ((7, 33), 1), ((33, 7), 0), ((3, 17, 4), 1)):
        text = sort_module([ty], shape, dim, JAX_FLOAT_LT.format(t=ty, d=direction))
        run_both(text, _values(ty, shape))


@pytest.mark.parametrize("ty", ["s32", "u8", "s8", "u32", "s64", "pred"])
def test_sort_integers(ty):
    for direction in ("LT", "GT"):
        body = f"  ROOT lt = pred[] compare(p0, p1), direction={direction}"
        for shape, dim in (((50,), 0), ((5, 40), 1), ((40, 5), 0)):
            run_both(sort_module([ty], shape, dim, body), _values(ty, shape))


def test_sort_total_order_distinguishes_signed_zeros():
    body = "  ROOT lt = pred[] compare(p0, p1), direction=LT, type=TOTALORDER"
    x = _values("f32", (64,))
    run_both(sort_module(["f32"], (64,), 0, body), x)


def test_sort_multi_operand_is_stable():
    """Keys with many ties carry values and an iota along; ties keep their input order."""
    body = "  ROOT lt = pred[] compare(p0, p1), direction=LT"
    for shape, dim in (((1000,), 0), ((6, 70), 1), ((70, 6), 0)):
        keys = _values("s32", shape, ties=True)
        vals = _values("f32", shape)
        idx = np.indices(shape)[dim].astype(np.int32)
        run_both(sort_module(["s32", "f32", "s32"], shape, dim, body), keys, vals, idx)


def test_sort_two_keys_lexicographic():
    body = """  lt0 = pred[] compare(p0, p1), direction=LT
  eq0 = pred[] compare(p0, p1), direction=EQ
  gt1 = pred[] compare(p2, p3), direction=GT
  and = pred[] and(eq0, gt1)
  ROOT or = pred[] or(lt0, and)"""
    shape = (4, 100)
    run_both(sort_module(["u8", "bf16"], shape, 1, body), _values("u8", shape, ties=True),
             _values("bf16", shape, ties=True))


def test_sort_comparator_on_the_second_operand():
    """argsort-like: the comparator looks only at operand 1."""
    body = "  ROOT lt = pred[] compare(p2, p3), direction=GT"
    shape = (9, 31)
    run_both(sort_module(["s32", "f32"], shape, 1, body), _values("s32", shape), _values("f32", shape, ties=True))


def test_sort_non_row_major_layout():
    body = JAX_FLOAT_LT.format(t="f32", d="LT")
    for dim in (0, 1, 2):
        text = sort_module(["f32"], (5, 6, 7), dim, body, layout="{0,2,1}")
        run_both(text, _values("f32", (5, 6, 7)))


def topk_module(ty, shape, k, largest=True) -> str:
    out = list(shape[:-1]) + [k]
    return (f"HloModule m\nENTRY e {{\n  x = {ty}[{_dims(shape)}] parameter(0)\n"
            f"  ROOT t = ({ty}[{_dims(out)}], s32[{_dims(out)}]) topk(x), k={k}, "
            f"largest={'true' if largest else 'false'}\n}}\n")


@pytest.mark.parametrize("ty", ["f32", "bf16", "s32", "u8"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(ty, largest):
    """Ties (repeated values, -0.0 vs +0.0 in total order, NaNs) go to the lower index."""
    for shape, k in (((8,), 3), ((3, 40), 1), ((3, 40), 40), ((2, 5, 100), 7)):
        run_both(topk_module(ty, shape, k, largest), _values(ty, shape, ties=True))


def test_sort_large_row_is_fast():
    import time
    body = JAX_FLOAT_LT.format(t="f32", d="LT")
    text = sort_module(["f32"], (200_000,), 0, body)
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", run_pipeline=False)
    x = RNG.standard_normal(200_000).astype(np.float32)
    start = time.perf_counter()
    got = exe(x)
    elapsed = time.perf_counter() - start
    same_bits(got, np.sort(x))
    assert elapsed < 2.0
