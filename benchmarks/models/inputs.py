"""Deterministic inputs for the real-model corpus, made from the manifest's input specs.

Inputs are never committed: every environment that needs them (the JAX venv that records XLA's outputs, the
TensorFlow venv, xlapy's test venv, the benchmark) rebuilds them from the spec with numpy's
Generator(PCG64(seed)), so all of them get the same arrays bit for bit. This file needs only numpy (and
ml_dtypes for the bf16-style names, which the corpus does not use today).

A spec is a JSON object:

    {"name": "params/Conv_0/kernel", "shape": [3, 3, 3, 16], "dtype": "float32", "seed": 123,
     "init": {"kind": "normal", "mean": 0.0, "scale": 0.19}}

| init kind | values | used for |
|---|---|---|
| normal  | mean + scale * standard_normal | weights (scale = the library initializer's std, so fan-in scaled), images, moments |
| uniform | lo + (hi - lo) * random         | variances (positive), Adam's second moments, diffusion times |
| int     | integers in [lo, hi], both ends included | token ids, labels, step counters, PRNG keys, segment ids |
| const   | value everywhere                | learning rates, step counters the model reads as scalars |
"""
from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import numpy as np

CORPUS = Path(__file__).resolve().parent


def _rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


def _normal(rng, shape, init):
    return init.get("mean", 0.0) + init["scale"] * rng.standard_normal(shape)


def _uniform(rng, shape, init):
    return init["lo"] + (init["hi"] - init["lo"]) * rng.random(shape)


def _int(rng, shape, init):
    return rng.integers(init["lo"], init["hi"], size=shape, endpoint=True, dtype=np.int64)


def _const(rng, shape, init):
    return np.full(shape, init["value"])


MAKERS = {"normal": _normal, "uniform": _uniform, "int": _int, "const": _const}


def make_input(spec: dict) -> np.ndarray:
    """One input array from its spec (values drawn in float64 / int64, then cast to the spec's dtype)."""
    shape = tuple(spec["shape"])
    init = spec["init"]
    values = MAKERS[init["kind"]](_rng(spec["seed"]), shape, init)
    dtype = np.dtype(spec["dtype"])
    if dtype.kind == "u" and init["kind"] == "int":
        return values.astype(np.uint64).astype(dtype)   # keys up to 2**32-1 fit uint64 without wrapping
    return np.asarray(values).astype(dtype)


def make_inputs(entry: dict) -> list[np.ndarray]:
    """The module's arguments, in ENTRY parameter order."""
    return [make_input(spec) for spec in entry["inputs"]]


# How a parameter the library initialized to a constant is drawn instead (first matching rule wins). Constant
# initial values (zero biases, unit scales, zero moments) would hide wrong indexing, so each gets a spread that
# keeps its meaning: variances and second moments stay positive, scales stay near 1, first moments stay small
# so that a training step's new moments are dominated by (and so check) the gradients.
CONSTANT_INIT_RULES = [
    (r"(^|[/._])(nu|velocity)([/._]|$)", {"kind": "uniform", "lo": 0.0, "hi": 1e-6}),
    (r"(^|[/._])(mu|momentum|momentums|trace)([/._]|$)", {"kind": "normal", "scale": 1e-3}),
    (r"var(iance)?$", {"kind": "uniform", "lo": 0.5, "hi": 1.5}),
    (r"(scale|gamma|weight)$", {"kind": "normal", "scale": 0.1}),
    (r"", {"kind": "normal", "scale": 0.05}),      # biases, means, offsets, cls tokens
]


def _significant(x: float) -> float:
    return float(f"{x:.4g}")


def spec_from_init(model: str, name: str, value: np.ndarray) -> dict:
    """The spec of a parameter or optimizer-state leaf, from the value the library initialized it to.

    A leaf the library drew at random keeps its initializer's mean and standard deviation (so weights stay
    scaled by fan-in, as the library scales them); scalars keep their value (learning rates, step counts);
    integer leaves (step counters, seeds) keep their value; constant tensors follow CONSTANT_INIT_RULES.
    The seed depends on the model and the leaf's name, so a model's forward and training modules share weights."""
    value = np.asarray(value)
    spec = {"name": name, "shape": list(value.shape), "dtype": value.dtype.name,
            "seed": zlib.crc32(f"{model}/{name}".encode())}
    wide = value.astype(np.float64)
    if value.dtype.kind in "iub":
        lo, hi = (int(value.min()), int(value.max())) if value.size else (0, 0)
        spec["init"] = {"kind": "int", "lo": lo, "hi": hi}
    elif value.size > 1 and wide.std() > 0:
        spec["init"] = {"kind": "normal", "mean": _significant(wide.mean()), "scale": _significant(wide.std())}
    elif value.size <= 1:
        spec["init"] = {"kind": "const", "value": float(wide.reshape(-1)[0]) if value.size else 0.0}
    else:
        spec["init"] = next(dict(init) for pattern, init in CONSTANT_INIT_RULES if re.search(pattern, name))
        if spec["init"]["kind"] == "normal":        # centred on the library's constant (a zero-init scale stays small)
            spec["init"]["mean"] = float(wide.flat[0])
    return spec


def data_spec(model: str, name: str, shape, dtype: str, init: dict) -> dict:
    """The spec of a data input (images, tokens, labels, keys) with an explicit distribution."""
    return {"name": name, "shape": list(shape), "dtype": np.dtype(dtype).name,
            "seed": zlib.crc32(f"{model}/{name}".encode()), "init": dict(init)}


def module_ids() -> list[str]:
    """Every module of the corpus as "model/kind" (a folder per model, a NAME.json manifest per module)."""
    return sorted(f"{p.parent.name}/{p.stem}" for p in CORPUS.glob("*/*.json"))


def load_entry(module_id: str) -> dict:
    """The manifest entry of "model/kind", with the paths of its files filled in (hlo_path, expected_path)."""
    folder = CORPUS / module_id.split("/")[0]
    entry = json.loads((folder / (module_id.split("/")[1] + ".json")).read_text())
    entry["hlo_path"] = folder / entry["hlo"]
    entry["expected_path"] = folder / (entry.get("expected_from", entry["kind"]) + ".npz")
    return entry
