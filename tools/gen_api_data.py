"""Regenerates tests/frontend/api_data/jax_api_more.npz: JAX's outputs for the cases in
tests/frontend/api_more_cases.py (the lax, numpy and nn names that test_lax_more.py, test_numpy_more.py and
test_nn_more.py check against JAX).

Run with the environment that has real JAX (tools/setup_models_env.sh):

    .venv-models/bin/python tools/gen_api_data.py

For each case NAME the file holds its inputs (`NAME.in0`, ...) and JAX's outputs (`NAME.out0`, ...; a function
returning one array has one output); "__names__" lists the cases. A case JAX cannot run is reported and left
out (its test then fails, so the table and the file stay in step).
"""
from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "frontend" / "api_data" / "jax_api_more.npz"


def _cases():
    spec = importlib.util.spec_from_file_location("api_more_cases", ROOT / "tests" / "frontend" / "api_more_cases.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CASES


def _flatten(out):
    if isinstance(out, (tuple, list)):
        return [np.asarray(o) for o in out]
    return [np.asarray(out)]


def main() -> int:
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_platforms", "cpu")
    m = types.SimpleNamespace(lax=jax.lax, numpy=jnp, nn=jax.nn, grad=jax.grad)
    data: dict[str, np.ndarray] = {}
    names = []
    failed = []
    for name, fn, inputs, opts in _cases():
        try:
            outs = _flatten(fn(m, *inputs))
        except Exception as e:          # noqa: BLE001 -- report and go on
            failed.append(f"{name}: {type(e).__name__}: {e}")
            continue
        for i, x in enumerate(inputs):
            data[f"{name}.in{i}"] = np.asarray(x)
        for i, o in enumerate(outs):
            data[f"{name}.out{i}"] = o
        names.append(name)
    data["__names__"] = np.asarray(names)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **data)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(names)} cases")
    for f in failed:
        print("FAILED", f, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
