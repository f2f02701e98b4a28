"""Runs one case of api_more_cases.py with xlapy and compares it with JAX's outputs in api_data/jax_api_more.npz
(used by test_lax_more.py, test_numpy_more.py and test_nn_more.py)."""
from __future__ import annotations

import types
from pathlib import Path

import numpy as np

import xlapy
import xlapy.lax
import xlapy.nn
import xlapy.numpy

DATA = np.load(Path(__file__).parent / "api_data" / "jax_api_more.npz")
XLAPY = types.SimpleNamespace(lax=xlapy.lax, numpy=xlapy.numpy, nn=xlapy.nn, grad=xlapy.grad)


def _flatten(out):
    if isinstance(out, (tuple, list)):
        return [np.asarray(o) for o in out]
    return [np.asarray(out)]


def check_case(case) -> None:
    name, fn, _inputs, opts = case
    n_in = sum(1 for k in DATA.files if k.startswith(name + ".in"))
    n_out = sum(1 for k in DATA.files if k.startswith(name + ".out"))
    assert n_out, f"{name}: no JAX outputs in jax_api_more.npz (rerun tools/gen_api_data.py)"
    inputs = [DATA[f"{name}.in{i}"] for i in range(n_in)]
    expected = [DATA[f"{name}.out{i}"] for i in range(n_out)]
    runs = [("eager", lambda *a: fn(XLAPY, *a))]
    if opts.get("jit", True):
        runs.append(("jit", xlapy.jit(lambda *a: fn(XLAPY, *a))))
    for how, f in runs:
        got = _flatten(f(*inputs))
        assert len(got) == len(expected), f"{name} ({how}): {len(got)} outputs, JAX has {len(expected)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            where = f"{name} ({how}) output {i}"
            assert g.shape == e.shape, f"{where}: shape {g.shape}, JAX {e.shape}"
            if e.dtype.kind in "fc" and g.dtype.kind in "fc" or e.dtype.kind in "iub":
                assert g.dtype == e.dtype, f"{where}: dtype {g.dtype}, JAX {e.dtype}"
            if opts.get("exact"):
                np.testing.assert_array_equal(g, e, err_msg=where)
            else:
                np.testing.assert_allclose(g, e, rtol=opts.get("rtol", 1e-6), atol=opts.get("atol", 0),
                                           err_msg=where)
