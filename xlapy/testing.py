"""Helpers for tests (like numpy.testing / jax test_util): comparisons with XLA's recorded results, HLO text
builders, test inputs that include each element type's corner values, and `check_rewrite`, the pass-test
harness (XLA's RunAndFilecheckHloRewrite). Its FileCheck engine lives in xlapy/filecheck.py."""
from __future__ import annotations

import difflib
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence, Union

import ml_dtypes
import numpy as np

from .filecheck import FileCheckError, filecheck

if TYPE_CHECKING:
    from .hlo import Module
    from .passes import Pass

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPUS = REPO / "tests" / "corpus"

# Relative tolerance per floating element type: XLA:CPU uses its own polynomial approximations of the
# transcendental functions, so results agree to a few ulp, not bit for bit.
RTOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-12,
        "complex64": 2e-5, "complex128": 1e-12}


def load_file(path: str | Path, name: str):
    """The Python file at `path` (absolute, or relative to the repository) run as a module named `name`: a benchmark
    script or a table of another test file, which are not packages. sys.path is restored after (a script may put its
    folder there on import)."""
    import importlib.util
    import sys
    saved = list(sys.path)
    spec = importlib.util.spec_from_file_location(name, REPO / path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    return module


def shared_path(*parts: str) -> Path | None:
    """A path under ../shared, or None where ../shared is absent (tests then skip)."""
    p = SHARED.joinpath(*parts)
    return p if p.exists() else None


def assert_same(actual, expected, where: str = "", rtol: float | None = None, atol: float | None = None) -> None:
    """Exact for integers and bools; NaN-aware allclose for floats; shapes and dtypes must match."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != expected {expected.shape}"
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != expected {expected.dtype}"
    if expected.dtype.kind in "biu" or expected.dtype == np.bool_:
        mismatch = np.flatnonzero(actual.reshape(-1) != expected.reshape(-1))
        assert mismatch.size == 0, (f"{where}: {mismatch.size} of {expected.size} elements differ; first at flat "
                                    f"index {mismatch[0]}: {actual.reshape(-1)[mismatch[0]]} != "
                                    f"{expected.reshape(-1)[mismatch[0]]}")
        return
    name = expected.dtype.name
    wide = np.complex128 if expected.dtype.kind == "c" else np.float64
    with np.errstate(invalid="ignore", over="ignore"):
        a, e = actual.astype(wide), expected.astype(wide)
    r = RTOL.get(name, 1e-2) if rtol is None else rtol
    tol_abs = r if atol is None else atol
    np.testing.assert_allclose(a, e, rtol=r, atol=tol_abs, equal_nan=True, err_msg=where)


def dynamic_prefix(got: np.ndarray, want: np.ndarray, declared: "Shape", where: str = "") -> np.ndarray:
    """The part of a result that a producer trimming dynamic dimensions (TensorFlow, XLA's runtime) returned: xlapy
    returns a dynamic result at its bound with the valid elements first, so compare the leading `want.shape`
    elements of each dimension `declared` marks dynamic (`<=N`); every other dimension must agree exactly."""
    if got.shape == want.shape:
        return got
    dynamic = {d for d in range(declared.rank) if declared.is_dynamic_dim(d)}
    for d, (g, w) in enumerate(zip(got.shape, want.shape)):
        assert g == w or (d in dynamic and g > w), f"{where}: shape {got.shape}, the reference gave {want.shape}"
    return got[tuple(slice(0, n) for n in want.shape)]


def assert_bitwise_same(actual, expected, where: str = "") -> None:
    """Same shape, dtype and bits; NaNs are equal whatever their payload (an op may quiet a NaN)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != expected {expected.shape}"
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != expected {expected.dtype}"
    parts = 2 if _kind(expected.dtype) == "complex" else 1
    a, e = _real_parts(actual), _real_parts(expected)
    differ = a.view(f"u{a.dtype.itemsize}") != e.view(f"u{e.dtype.itemsize}")
    if _kind(e.dtype) == "float":
        with np.errstate(invalid="ignore"):
            differ &= ~(np.isnan(a.astype(np.float64)) & np.isnan(e.astype(np.float64)))
    bad = np.flatnonzero(differ)
    if bad.size:
        i = bad[0] // parts
        raise AssertionError(f"{where}: {len(set(bad // parts))} of {expected.size} values differ bit for bit; "
                             f"first at flat index {i}: {actual.reshape(-1)[i]!r} != expected "
                             f"{expected.reshape(-1)[i]!r}")


def _real_parts(a: np.ndarray) -> np.ndarray:
    """A flat view: complex arrays as their (real, imaginary) float pairs, other arrays as they are."""
    a = np.ascontiguousarray(a).reshape(-1)
    if a.dtype.kind == "c":
        return a.view(np.float32 if a.dtype == np.complex64 else np.float64)
    return a


def numerical_grad(f, x, eps: float = 1e-6) -> np.ndarray:
    """Central differences of a scalar f at the numpy array x (f evaluated compiled, in float64: the autodiff
    tests run with x64 on)."""
    import xlapy
    f = xlapy.jit(f)
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (float(f(x + d)) - float(f(x - d))) / (2 * eps)
    return g



# -- HLO text builders ----------------------------------------------------------------------------------------
# The standard scalar reducers, by short name: the computation `reducer("max")` makes is `max`, computing
# maximum(x, y) on f32; `reducer("add_s32")` is `add_s32` on s32.
REDUCER_OPS = {"add": "add", "max": "maximum", "min": "minimum", "mul": "multiply", "and": "and", "or": "or"}


def reducer(name: str) -> str:
    """The text of a standard scalar reducer computation: "add", "max", "min", "mul", "and" or "or", on f32,
    or on the element type after an underscore ("add_s32", "max_f64", "or_pred")."""
    kind, _, element_type = name.partition("_")
    if kind not in REDUCER_OPS:
        raise ValueError(f"unknown reducer {name!r}; known: {', '.join(REDUCER_OPS)} (optionally _TYPE)")
    t = element_type or "f32"
    return (f"{name} {{\n  x = {t}[] parameter(0)\n  y = {t}[] parameter(1)\n"
            f"  ROOT s = {t}[] {REDUCER_OPS[kind]}(x, y)\n}}\n")


def hlo_module(entry: str, *computations: str, params: Sequence[str] = (), reducers: Iterable[str] = (),
               name: str = "m", entry_name: str = "e") -> str:
    """The text of a module around the body of its ENTRY computation.

    entry:         the ENTRY's instructions, one a line (their indentation does not matter)
    computations:  other computations as text (called computations, fused computations), before the ENTRY
    params:        shapes of leading parameters: ["f32[4]", "s32[]"] adds `p0 = f32[4] parameter(0)` and
                   `p1 = s32[] parameter(1)` before the body
    reducers:      standard scalar reducers to add, by name (see `reducer`)
    """
    lines = [f"p{i} = {shape} parameter({i})" for i, shape in enumerate(params)]
    lines += [line.strip() for line in entry.strip().splitlines()]
    called = [reducer(r) for r in reducers] + [c.strip("\n") + "\n" for c in computations if c.strip()]
    body = "\n  ".join(lines)
    return f"HloModule {name}\n\n" + "\n".join(called) + f"\nENTRY {entry_name} {{\n  {body}\n}}\n"


def _module_of(hlo: str | Module) -> Module:
    import xlapy
    return xlapy.hlo.parse(hlo) if isinstance(hlo, str) else hlo


# -- test inputs ------------------------------------------------------------------------------------------------
def _kind(dtype: np.dtype) -> str:
    """pred, int, uint, float or complex: the HLO element type's kind of a numpy dtype."""
    from .hlo import PRIMITIVE_TYPES, type_name_of_dtype
    return PRIMITIVE_TYPES[type_name_of_dtype(dtype)].kind


def corner_values(dtype) -> np.ndarray:
    """The values where rewrites go wrong, for one element type. Floats: ±0, ±1, ±inf, NaN, the smallest
    denormal and normal, the largest finite value (types without inf give NaN for it); integers: 0, 1, -1 and
    the extremes; pred: both. Complex: the float corners as real parts, with a few as imaginary parts too."""
    dtype = np.dtype(dtype)
    kind = _kind(dtype)
    if kind == "pred":
        return np.array([False, True])
    if kind in ("int", "uint"):
        info = ml_dtypes.iinfo(dtype)
        values = [0, 1, info.max, info.max - 1] + ([-1, info.min, info.min + 1] if kind == "int" else [])
        return np.array(values).astype(dtype)
    real = np.float32 if dtype == np.complex64 else np.float64 if dtype == np.complex128 else dtype
    info = ml_dtypes.finfo(real)
    values = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, float(info.smallest_subnormal),
              -float(info.smallest_subnormal), float(info.tiny), float(info.max), -float(info.max)]
    with np.errstate(invalid="ignore", over="ignore"):
        floats = np.array(values, np.float64).astype(real)
    if kind == "complex":
        values = np.zeros(len(floats), dtype)
        values.real, values.imag = floats, np.roll(floats, 3)
        return values
    return floats


def random_array(dtype, dims: Sequence[int], rng: np.random.Generator, int_range: tuple[int, int] = (-5, 6),
                 positive: bool = False) -> np.ndarray:
    """Random values: standard normals for floats (their absolute values where `positive`), integers in
    [int_range), random bools."""
    dtype = np.dtype(dtype)
    kind = _kind(dtype)
    if kind == "pred":
        return rng.integers(0, 2, dims).astype(bool)
    if kind in ("int", "uint"):
        info = ml_dtypes.iinfo(dtype)
        lo, hi = max(int_range[0], int(info.min)), min(int_range[1], int(info.max) + 1)
        return rng.integers(lo, hi, dims).astype(dtype)
    values = rng.standard_normal(dims)
    if kind == "complex":
        values = values + 1j * rng.standard_normal(dims)
    return (np.abs(values) if positive else values).astype(dtype)


def random_args(hlo, seed: int = 0, *, int_range: tuple[int, int] = (-5, 6),
                positive: Callable[[str], bool] = lambda name: False) -> list:
    """Random arguments for a module's ENTRY parameters (HLO text or a Module); tuple-shaped parameters get
    tuples. positive(parameter name) says which float parameters must be positive (a variance)."""
    rng = np.random.default_rng(seed)

    def make(shape, name):
        if shape.is_tuple:
            return tuple(make(s, name) for s in shape.tuple_shapes)
        return random_array(shape.dtype, shape.dims, rng, int_range, positive(name))
    return [make(p.shape, p.name) for p in _module_of(hlo).entry.parameters]


def corner_args(hlo, round_: int) -> list:
    """Arguments made only of corner values: every array takes the corner values of its type in turn, starting
    at a corner that differs from parameter to parameter and from round to round (so binary ops meet
    different pairs of corners), and continuing from where the previous round stopped."""
    arrays = 0

    def make(shape):
        nonlocal arrays
        if shape.is_tuple:
            return tuple(make(s) for s in shape.tuple_shapes)
        corners = corner_values(shape.dtype)
        n = shape.numel
        start = round_ * n + arrays * 5 * (round_ + 1)
        arrays += 1
        return corners[(start + np.arange(n)) % len(corners)].reshape(shape.dims)
    return [make(p.shape) for p in _module_of(hlo).entry.parameters]


def argument_sets(hlo, seed: int = 0, random_rounds: int = 2, corners: bool = True, **random_options) -> list[list]:
    """The argument sets a semantics check runs: with `corners`, enough rounds of corner_args for the smallest
    array to take every corner value of its type (at most 12), then `random_rounds` of random_args."""
    module = _module_of(hlo)
    leaves = [leaf for p in module.entry.parameters for leaf in p.shape.leaves() if leaf.is_array]
    sets = []
    if corners and leaves:
        rounds = max(math.ceil(len(corner_values(s.dtype)) / max(s.numel, 1)) for s in leaves)
        sets += [corner_args(module, r) for r in range(min(rounds, 12))]
    sets += [random_args(module, seed + r, **random_options) for r in range(random_rounds if leaves else 1)]
    return sets


# -- the pass-test harness --------------------------------------------------------------------------------------
def assert_same_semantics(original, rewritten, args: Sequence[Sequence] | None = None, *, seed: int = 0,
                          rtol: float | None = None, atol: float | None = None, corners: bool = True,
                          **random_options) -> None:
    """A pass test's semantics check: the original module (HLO text or a Module) and the rewritten Module give
    the same results on the interpreter for every argument set (default: argument_sets, corner values and
    random ones). Bit for bit, NaNs equal; with rtol or atol, within those tolerances (assert_same).

    A denormal result equals the zero of its sign: the interpreter, like XLA:CPU, runs with denormals-are-zero
    and flush-to-zero, so every later arithmetic op reads it as that zero, and rewrites such as `x + -0 => x`
    (whose result is x itself, denormal or not) are exact in every way a program can tell."""
    import xlapy
    from .errors import XlapyError
    from .tools import npz
    before = _module_of(original)
    try:
        run_before = xlapy.compile(before, backend="interpreter")
    except XlapyError as e:
        raise AssertionError(f"the interpreter cannot run the original module ({e}); a test of a module it "
                             "cannot run turns the semantics check off (semantics=False)") from e
    run_after = xlapy.compile(rewritten, backend="interpreter")
    sets = argument_sets(before, seed, corners=corners, **random_options) if args is None else args
    for k, arg_set in enumerate(sets):
        want = [_flushed(w) for w in npz.flatten(run_before(*arg_set))]
        got = [_flushed(g) for g in npz.flatten(run_after(*arg_set))]
        assert len(got) == len(want), f"{len(got)} results after the rewrite, {len(want)} before"
        for i, (g, w) in enumerate(zip(got, want)):
            where = f"after the rewrite, output {i} for argument set {k} ({_describe(arg_set)})"
            if rtol is None and atol is None:
                assert_bitwise_same(g, w, where)
            else:
                assert_same(g, w, where, rtol=rtol, atol=atol)


def _flushed(x: np.ndarray) -> np.ndarray:
    """x with denormals replaced by zeros of their sign, as the interpreter's arithmetic reads them."""
    from .backends.interpreter.element_types import flush_denormals, ptype_of
    if _kind(x.dtype) != "float":
        return x
    return flush_denormals(ptype_of(x), x.astype(np.float64)).astype(x.dtype)


def _describe(arg_set: Sequence) -> str:
    """Arguments on one line: the first few values of each array."""
    def one(a):
        if isinstance(a, tuple):
            return "(" + ", ".join(one(x) for x in a) + ")"
        flat = np.asarray(a).reshape(-1)
        values = ", ".join(str(v) for v in flat[:6]) + (", ..." if flat.size > 6 else "")
        return f"[{values}]" if np.ndim(a) else values
    return "; ".join(one(a) for a in arg_set) or "no arguments"


PassSpec = Union[str, "Pass", Callable[[], "Pass"]]


def _passes(spec: PassSpec | Sequence[PassSpec], log: list[str]) -> list:
    """Pass objects for one run: registry names (comma-separated as in `xlapy opt --passes`) and factories
    (a Pass class, a lambda) make new passes on every run; Pass objects are used as they are."""
    from .passes import Pass, Pipeline
    from .passes.registry import make_pass
    specs = list(spec) if isinstance(spec, (list, tuple)) else [spec]
    made = []
    for s in specs:
        if isinstance(s, str):
            made += [make_pass(name.strip()) for name in s.split(",") if name.strip()]
        elif isinstance(s, Pass):
            made.append(s)
        elif callable(s):
            made.append(s())
        else:
            raise TypeError(f"check_rewrite: {s!r} is not a pass, a pass name or a pass factory")
    for p in made:
        if not isinstance(p, Pass):
            raise TypeError(f"check_rewrite: a pass factory returned {p!r}, not a Pass")
    return [p if isinstance(p, Pipeline) else _report(p, log) for p in made]


def _report(inner, log: list[str]):
    """A pass that runs `inner`, insists that it returns a bool (XLA's StatusOr<bool>), and logs its name (once)
    when it changed the module."""
    from .errors import XlapyError
    from .passes import Pass

    class Reporting(Pass):
        name = inner.name

        def run(self, module) -> bool:
            did = inner.run(module)
            if not isinstance(did, bool):
                raise XlapyError(f"pass {inner.name} returned {did!r}; run() must return True or False")
            if did and inner.name not in log:
                log.append(inner.name)
            return did
    return Reporting()


def _run(module, passes, fixed_point: bool, log: list[str]) -> bool:
    from .passes import FixedPoint, Pipeline
    kind = FixedPoint if fixed_point else Pipeline
    return kind("check_rewrite", _passes(passes, log), check_invariants=True).run(module)


def _diff(before: str, after: str) -> str:
    return "\n".join(difflib.unified_diff(before.splitlines(), after.splitlines(), "before", "after", lineterm=""))


def check_rewrite(hlo, passes: PassSpec | Sequence[PassSpec], checks: str | None = None, *,
                  fixed_point: bool = False, semantics: bool = True, args: Sequence[Sequence] | None = None,
                  corners: bool = True, rtol: float | None = None, atol: float | None = None,
                  idempotent: bool = True, print_options: Mapping[str, Any] | None = None,
                  **random_options) -> Module:
    """Run `passes` on `hlo` (HLO text, or a Module, which is left as it is) and check the result as XLA's
    pass tests do (RunAndFilecheckHloRewrite), in five steps:

    1. the module verifies, and the passes run with the verifier after every pass that changes it;
    2. with `checks`: a pass reported a change, the text changed, and the printed result matches the CHECK
       lines (xlapy.filecheck); with checks=None: no pass reported a change and the text is as it was (XLA's
       "must not change" cases; steps 3 to 5 then have nothing to add);
    3. the printed result (in full, and as the CHECK lines see it) parses back to the same text;
    4. semantics: the interpreter gives the same results before and after, bit for bit with NaNs equal, on the
       corner values of each element type and on random values (assert_same_semantics);
    5. idempotence: the passes, run again on the printed result, report no change and change nothing.

    passes: a Pass, a pass factory (a Pass class, a lambda), a registry name ("algsimp", or "algsimp,dce" as
    `xlapy opt --passes` takes them), or a list of these. Names and factories make new passes for every run
    (step 5 runs them again); a Pass object is reused. Returns the rewritten module.

    Options:
      fixed_point     run the passes again until none changes anything (XLA's HloPassFix), as simplification
                      pipelines do; otherwise once, in order
      semantics       False skips step 4, for modules the interpreter cannot run (custom calls, collectives) or
                      whose results are random (rng)
      args            the argument sets of step 4 instead of argument_sets(): for inputs that bound a loop's trip
                      count, which corner values would make endless
      corners         False: step 4 uses random values only, for rewrites that are exact only up to rounding
      rtol, atol      step 4 compares within these tolerances (assert_same), not bit for bit
      random_options  int_range=, positive= for step 4's random values (random_args)
      idempotent      False skips step 5
      print_options   Module.to_text options for the text the CHECK lines see (print_operand_shape=False: XLA:CPU's
                      dumps of fused modules)
    """
    import xlapy
    before = _module_of(hlo)
    xlapy.hlo.verify(before)
    original = before.to_text()
    module = xlapy.hlo.parse(hlo) if isinstance(hlo, str) else before.clone()
    log: list[str] = []
    changed = _run(module, passes, fixed_point, log)
    xlapy.hlo.verify(module)
    after = module.to_text()
    if checks is None:
        if changed or after != original:
            raise AssertionError(f"the module must not change, but {', '.join(log) or 'a pass'} changed it "
                                 f"(reported change: {changed}):\n{_diff(original, after)}")
        return module
    if not changed or after == original:
        what = "left the text as it was" if changed else "reported no change"
        raise AssertionError(f"the CHECK lines expect a rewrite, but the passes {what}:\n{after}")
    printing = dict(print_options or {})
    checked = module.to_text(**printing)
    filecheck(checked, checks)
    for text, options in ((after, {}), (checked, printing)):
        reparsed = xlapy.hlo.parse(text).to_text(**options)
        assert reparsed == text, f"the result does not print back the same after parsing:\n{_diff(text, reparsed)}"
    if semantics:
        assert_same_semantics(before, module, args, corners=corners, rtol=rtol, atol=atol, **random_options)
    if idempotent:
        again, log = xlapy.hlo.parse(after), []
        if _run(again, passes, fixed_point, log) or again.to_text() != after:
            who = ", ".join(log) or "no pass reported it"
            raise AssertionError(f"running the passes again changed the module ({who}):\n"
                                 f"{_diff(after, again.to_text())}")
    return module


# Convolution configurations both backends are tested on (interpreter and CPU), one table:
# (lhs dims, rhs dims, dim_labels, window, feature_group_count, batch_group_count)
CONV_CASES = [
    ((2, 5, 6, 3), (3, 3, 3, 4), "b01f_01io->b01f", "{size=3x3}", 1, 1),
    ((2, 5, 6, 3), (3, 3, 3, 4), "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}", 1, 1),
    ((2, 3, 7, 6), (4, 3, 3, 3), "bf01_oi01->bf01", "{size=3x3 stride=2x1 pad=1_1x0_2}", 1, 1),
    ((2, 3, 5, 6), (4, 3, 3, 2), "bf01_oi01->bf01",
     "{size=3x2 stride=2x1 pad=-1_2x1_-1 lhs_dilate=2x3 rhs_dilate=1x2 rhs_reversal=1x0}", 1, 1),
    ((1, 6, 6, 2), (3, 3, 2, 3), "b01f_01io->b01f", "{size=3x3 pad=2_2x2_2 lhs_dilate=2x2}", 1, 1),
    ((1, 7, 7, 6), (3, 3, 1, 6), "b01f_01io->b01f", "{size=3x3 pad=1_1x1_1}", 6, 1),        # depthwise
    ((1, 7, 7, 4), (3, 3, 1, 8), "b01f_01io->b01f", "{size=3x3 stride=2x2}", 4, 1),         # multiplier 2
    ((1, 7, 7, 6), (3, 3, 2, 9), "b01f_01io->b01f", "{size=3x3 stride=2x2 pad=0_1x0_1}", 3, 1),
    ((4, 5, 5, 3), (3, 3, 3, 6), "b01f_01io->b01f", "{size=3x3}", 1, 2),
    ((2, 5, 5, 6), (2, 5, 5, 6), "f01b_i01o->01bf", "{size=5x5 pad=2_2x2_2}", 1, 3),       # kernel grad
    ((2, 9, 3), (3, 3, 4), "b0f_0io->b0f", "{size=3 stride=2 rhs_dilate=2}", 1, 1),         # 1-D
    ((2, 4, 5, 6, 3), (2, 2, 3, 3, 4), "b012f_012io->b012f", "{size=2x2x3 stride=1x2x1 pad=1_0x0_0x1_1}", 1, 1),
    ((2, 3), (3, 4), "bf_io->bf", "{}", 1, 1),                                                 # no spatial dims
    ((1, 2, 3, 2), (3, 3, 2, 2), "b01f_01io->b01f", "{size=3x3}", 1, 1),                     # empty output
]


__all__ = ["REPO", "SHARED", "CORPUS", "RTOL", "CONV_CASES", "shared_path", "assert_same", "assert_bitwise_same",
           "numerical_grad", "REDUCER_OPS", "reducer", "hlo_module", "corner_values", "random_array", "random_args",
           "corner_args", "argument_sets", "assert_same_semantics", "check_rewrite", "filecheck", "FileCheckError"]
