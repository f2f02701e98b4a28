"""XLA's recorded outputs of a corpus module, and the comparison of another run against them.

A training step returns the whole updated model (parameters, optimizer moments, batch statistics): committing
those arrays would blow the corpus's size budget (about 30 MB in all; the ~2,400 outputs of the training steps
kept whole up to 64K elements would take 45 MB), so each output is kept in one of two forms:

| output size | kept in NAME.npz | kept in NAME.json (per output) |
|---|---|---|
| <= FULL_LIMIT elements | `outK`: the whole array | shape, dtype, sum, sum_abs, max_abs, nonfinite |
| larger | `outK_sample`: SAMPLE_SIZE elements at indices from `sample_seed` | the same, plus sample_seed |

sum / sum_abs / max_abs are computed in float64 over the whole array, so a wrong element outside the sample
still moves them. Needs only numpy.
"""
from __future__ import annotations

import math
import zlib

import numpy as np

FULL_LIMIT = 1 << 13
SAMPLE_SIZE = 4096

# Comparison tolerance (tests/models/test_models.py explains the choice): relative to an output's magnitude,
# growing with the square root of the module's longest reduction, larger for training steps.
TOL_PER_TERM = 2e-6
TRAIN_FACTOR = 10.0


def tolerance(entry: dict) -> float:
    """The relative tolerance for module `entry` (a manifest entry with kind and longest_reduction)."""
    factor = TRAIN_FACTOR if entry["kind"].startswith("train") else 1.0
    return TOL_PER_TERM * math.sqrt(entry["longest_reduction"]) * factor


def sample_indices(size: int, seed: int) -> np.ndarray:
    """The flat indices a sampled output keeps: SAMPLE_SIZE distinct ones, sorted, from PCG64(seed)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    return np.sort(rng.choice(size, SAMPLE_SIZE, replace=False))


def _stats(a: np.ndarray) -> dict:
    wide = a.astype(np.float64).reshape(-1)
    finite = wide[np.isfinite(wide)]
    return {"sum": float(finite.sum()), "sum_abs": float(np.abs(finite).sum()),
            "max_abs": float(np.abs(finite).max()) if finite.size else 0.0,
            "nonfinite": int(wide.size - finite.size)}


def summarize(module_id: str, outputs: list[np.ndarray]) -> tuple[dict, list[dict]]:
    """(arrays for NAME.npz, one JSON record per output) for XLA's outputs of module `module_id`."""
    arrays, records = {}, []
    for k, out in enumerate(outputs):
        out = np.asarray(out)
        record = {"shape": list(out.shape), "dtype": out.dtype.name, **_stats(out)}
        if out.size <= FULL_LIMIT:
            record["kept"] = "full"
            arrays[f"out{k}"] = out
        else:
            record["kept"] = "sample"
            record["sample_seed"] = zlib.crc32(f"{module_id}/out{k}".encode())
            arrays[f"out{k}_sample"] = out.reshape(-1)[sample_indices(out.size, record["sample_seed"])]
        records.append(record)
    return arrays, records


def _float_problem(where: str, got: np.ndarray, want: np.ndarray, scale: float, tol: float) -> str | None:
    got, want = got.astype(np.float64), want.astype(np.float64)
    nan_got, nan_want = ~np.isfinite(got), ~np.isfinite(want)
    if (nan_got != nan_want).any():
        i = int(np.flatnonzero(nan_got != nan_want)[0])
        return f"{where}: non-finite values differ first at sampled/flat index {i}: {got[i]} vs XLA {want[i]}"
    err = np.abs(got - want)
    err[nan_want] = 0.0
    worst = int(np.argmax(err)) if err.size else 0
    if err.size and err[worst] > tol * max(scale, 1e-30):
        return (f"{where}: max |xlapy - XLA| = {err[worst]:.3g} at index {worst} ({got[worst]:.7g} vs "
                f"{want[worst]:.7g}) exceeds tol {tol:.2g} x max|XLA| {scale:.3g}")
    return None


def compare(got_outputs: list[np.ndarray], records: list[dict], expected: dict, tol: float) -> list[str]:
    """Problems (empty when all is well) of `got_outputs` against XLA's records and arrays.

    Integers and bools must match exactly. A float output must satisfy max|got - XLA| <= tol * max|XLA|
    elementwise (on the whole array or on the sample), and its sum, sum of |x| and max |x| must agree within the
    same relative tolerance of XLA's sum of |x| / max |x|."""
    if len(got_outputs) != len(records):
        return [f"{len(got_outputs)} outputs, XLA gave {len(records)}"]
    problems = []
    for k, (got, rec) in enumerate(zip(got_outputs, records)):
        got = np.asarray(got)
        where = f"out{k} {rec['dtype']}{rec['shape']}"
        if list(got.shape) != rec["shape"] or got.dtype.name != rec["dtype"]:
            problems.append(f"{where}: got {got.dtype.name}{list(got.shape)}")
            continue
        if rec["kept"] == "full":
            want, mine = expected[f"out{k}"], got
        else:
            want = expected[f"out{k}_sample"]
            mine = got.reshape(-1)[sample_indices(got.size, rec["sample_seed"])]
        if got.dtype.kind not in "fc":
            bad = np.flatnonzero(mine.reshape(-1) != want.reshape(-1))
            if bad.size:
                problems.append(f"{where}: {bad.size} of {want.size} elements differ, first at {bad[0]}: "
                                f"{mine.reshape(-1)[bad[0]]} vs XLA {want.reshape(-1)[bad[0]]}")
            continue
        problem = _float_problem(where, mine.reshape(-1), want.reshape(-1), rec["max_abs"], tol)
        mine_stats = _stats(got)
        if problem is None and mine_stats["nonfinite"] != rec["nonfinite"]:
            problem = f"{where}: {mine_stats['nonfinite']} non-finite values, XLA had {rec['nonfinite']}"
        for key, scale in (("sum", rec["sum_abs"]), ("sum_abs", rec["sum_abs"]), ("max_abs", rec["max_abs"])):
            if problem is None and abs(mine_stats[key] - rec[key]) > tol * max(scale, 1e-30):
                problem = f"{where}: {key} {mine_stats[key]:.7g} vs XLA {rec[key]:.7g} (tol {tol:.2g} x {scale:.3g})"
        if problem:
            problems.append(problem)
    return problems
