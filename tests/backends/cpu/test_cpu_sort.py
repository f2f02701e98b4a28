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


def _flat(value):
    return [leaf for v in value for leaf in _flat(v)] if isinstance(value, tuple) else [value]


def run_both(text, *args):
    module = xlapy.hlo.parse(text)
    xlapy.hlo.verify(module)
    got = xlapy.compile(module, backend="cpu", run_pipeline=False)(*args)
    want = xlapy.compile(module, backend="interpreter")(*args)
    for i, (g, w) in enumerate(zip(_flat(got), _flat(want), strict=True)):
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


def sort_module(types, cases, body, layout="") -> str:
    """One module sorting several (shape, dim) cases with the same comparator; operands case by case."""
    params = "\n".join(f"  p{2 * k} = {t}[] parameter({2 * k})\n  p{2 * k + 1} = {t}[] parameter({2 * k + 1})"
                       for k, t in enumerate(types))
    lines, results, number = [], [], 0
    for c, (shape, dim) in enumerate(cases):
        shapes = [f"{t}[{_dims(shape)}]{layout}" for t in types]
        for k, s in enumerate(shapes):
            lines.append(f"  x{c}_{k} = {s} parameter({number})")
            number += 1
        result = shapes[0] if len(types) == 1 else "(" + ", ".join(shapes) + ")"
        operands = ", ".join(f"x{c}_{k}" for k in range(len(types)))
        lines.append(f"  s{c} = {result} sort({operands}), dimensions={{{dim}}}, is_stable=true, to_apply=cmp")
        results.append(result)
    lines.append(f"  ROOT out = ({', '.join(results)}) tuple({', '.join(f's{c}' for c in range(len(cases)))})")
    return f"HloModule m\n\ncmp {{\n{params}\n{body}\n}}\n\nENTRY e {{\n" + "\n".join(lines) + "\n}\n"


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
    cases = [((1,), 0), ((20,), 0), ((300,), 0), ((7, 33), 1), ((33, 7), 0), ((3, 17, 4), 1)]
    text = sort_module([ty], cases, JAX_FLOAT_LT.format(t=ty, d=direction))
    run_both(text, *[_values(ty, shape) for shape, _ in cases])


@pytest.mark.parametrize("ty", ["s32", "u8", "s8", "u32", "s64", "pred"])
@pytest.mark.parametrize("direction", ["LT", "GT"])
def test_sort_integers(ty, direction):
    body = f"  ROOT lt = pred[] compare(p0, p1), direction={direction}"
    cases = [((50,), 0), ((5, 40), 1), ((40, 5), 0)]
    run_both(sort_module([ty], cases, body), *[_values(ty, shape) for shape, _ in cases])


def test_sort_total_order_distinguishes_signed_zeros():
    body = "  ROOT lt = pred[] compare(p0, p1), direction=LT, type=TOTALORDER"
    run_both(sort_module(["f32"], [((64,), 0)], body), _values("f32", (64,)))


def test_sort_multi_operand_is_stable():
    """Keys with many ties carry values and an iota along; ties keep their input order."""
    body = "  ROOT lt = pred[] compare(p0, p1), direction=LT"
    cases = [((1000,), 0), ((6, 70), 1), ((70, 6), 0)]
    args = []
    for shape, dim in cases:
        args += [_values("s32", shape, ties=True), _values("f32", shape), np.indices(shape)[dim].astype(np.int32)]
    run_both(sort_module(["s32", "f32", "s32"], cases, body), *args)


def test_sort_lexicographic_and_second_operand_keys():
    """Two keys (the second descending); and an argsort-like comparator that reads only operand 1."""
    two_keys = """  lt0 = pred[] compare(p0, p1), direction=LT
  eq0 = pred[] compare(p0, p1), direction=EQ
  gt1 = pred[] compare(p2, p3), direction=GT
  and = pred[] and(eq0, gt1)
  ROOT or = pred[] or(lt0, and)"""
    shape = (4, 100)
    keys2 = np.nan_to_num(_values("bf16", shape, ties=True).astype(np.float32)).astype(ml_dtypes.bfloat16)
    run_both(sort_module(["u8", "bf16"], [(shape, 1)], two_keys), _values("u8", shape, ties=True), keys2)
    second = "  ROOT lt = pred[] compare(p2, p3), direction=GT"
    shape = (9, 31)
    vals = np.nan_to_num(_values("f32", shape, ties=True))
    run_both(sort_module(["s32", "f32"], [(shape, 1)], second), _values("s32", shape), vals)


def test_sort_non_row_major_layout():
    cases = [((5, 6, 7), dim) for dim in (0, 1, 2)]
    text = sort_module(["f32"], cases, JAX_FLOAT_LT.format(t="f32", d="LT"), layout="{0,2,1}")
    run_both(text, *[_values("f32", shape) for shape, _ in cases])


def topk_module(ty, cases, largest=True) -> str:
    lines, results = [], []
    for c, (shape, k) in enumerate(cases):
        out = _dims(list(shape[:-1]) + [k])
        lines.append(f"  x{c} = {ty}[{_dims(shape)}] parameter({c})")
        lines.append(f"  t{c} = ({ty}[{out}], s32[{out}]) topk(x{c}), k={k}, largest={'true' if largest else 'false'}")
        results.append(f"({ty}[{out}], s32[{out}])")
    lines.append(f"  ROOT out = ({', '.join(results)}) tuple({', '.join(f't{c}' for c in range(len(cases)))})")
    return "HloModule m\nENTRY e {\n" + "\n".join(lines) + "\n}\n"


@pytest.mark.parametrize("ty", ["f32", "bf16", "s32", "u8"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(ty, largest):
    """Ties (repeated values, -0.0 vs +0.0 in total order, NaNs) go to the lower index."""
    cases = [((8,), 3), ((3, 40), 1), ((3, 40), 40), ((2, 5, 100), 7)]
    run_both(topk_module(ty, cases, largest), *[_values(ty, shape, ties=True) for shape, _ in cases])


def test_sort_large_row():
    text = sort_module(["f32"], [((200_000,), 0)], JAX_FLOAT_LT.format(t="f32", d="LT"))
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu", run_pipeline=False)
    x = RNG.standard_normal(200_000).astype(np.float32)
    (got,) = exe(x)
    same_bits(got, np.sort(x))
