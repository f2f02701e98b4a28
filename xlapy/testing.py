"""Helpers for tests that compare xlapy with XLA's recorded results (like numpy.testing / jax test_util)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPUS = REPO / "tests" / "corpus"

# Relative tolerance per floating element type: XLA:CPU uses its own polynomial approximations of the
# transcendental functions, so results agree to a few ulp, not bit for bit.
RTOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-12,
        "complex64": 2e-5, "complex128": 1e-12}


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


def assert_same_semantics(original_text: str, rewritten, seed: int = 1) -> None:
    """A pass test's semantics check: the module `original_text` and its rewritten Module give the same
    results on the interpreter for random f32 arguments."""
    import xlapy
    from xlapy.tools import npz
    before = xlapy.hlo.parse(original_text)
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(p.shape.dims).astype(np.float32) for p in before.entry.parameters]
    want = npz.flatten(xlapy.compile(before, backend="interpreter")(*args))
    got = npz.flatten(xlapy.compile(rewritten, backend="interpreter")(*args))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, where=f"output {i}")


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


def filecheck(text: str, checks: str) -> None:
    """A small FileCheck. `CHECK: s` must match after the previous match (later on the same line counts);
    `CHECK-NEXT: s` must be on the line after the previous match; `CHECK-NOT: s` must not appear between
    the neighbouring matches (or after the last one)."""
    lines = text.splitlines()
    line, col = 0, 0            # search position: where the previous match ended
    pending_not: list[str] = []

    def region(end_line: int, end_col: int) -> str:
        if end_line == line:
            return lines[line][col:end_col] if line < len(lines) else ""
        parts = [lines[line][col:]] + lines[line + 1:end_line] + [lines[end_line][:end_col] if end_line < len(lines) else ""]
        return "\n".join(parts)

    for raw in checks.strip().splitlines():
        raw = raw.strip()
        if not raw:
            continue
        kind, _, pat = raw.partition(":")
        pat = pat.strip()
        if kind == "CHECK-NOT":
            pending_not.append(pat)
            continue
        assert kind in ("CHECK", "CHECK-NEXT"), f"unknown check kind {kind!r}"
        found = None
        candidates = [line + 1] if kind == "CHECK-NEXT" else range(line, len(lines))
        for i in candidates:
            if i >= len(lines):
                break
            start = col if i == line else 0
            j = lines[i].find(pat, start)
            if j >= 0:
                found = (i, j)
                break
        if found is None:
            raise AssertionError(f"{kind} {pat!r} not found after line {line + 1}:\n{text}")
        between = region(*found)
        for n in pending_not:
            assert n not in between, f"CHECK-NOT {n!r} found before {pat!r}:\n{text}"
        pending_not = []
        line, col = found[0], found[1] + len(pat)
    if pending_not:
        rest = region(len(lines), 0) if line < len(lines) else ""
        for n in pending_not:
            assert n not in rest, f"CHECK-NOT {n!r} found after the last match:\n{text}"


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
