"""TensorFlow's linear algebra and dynamic shapes on both backends against XLA: every tests/corpus/tf_ops module
(tools/gen_tf_ops_corpus.py: cholesky, triangular-solve, the Qr / ProductOfElementaryHouseholderReflectors
custom-calls, matrix inverse and solve, lstsq; boolean_mask, where, unique and what follows them through
set-dimension-size, get-dimension-size, dynamic-reshape and `<=N` dimensions; `NAME.hlo` as TF lowers it,
`NAME.opt.hlo` as XLA:CPU optimized it) must match the outputs TF computed with XLA:CPU.

The interpreter runs static shapes, so it gets the module after the call-inliner and dynamic_padder passes (the
CPU pipeline runs them itself). A dynamic result comes back at its bound, the valid elements first, where TF returns only
those: the test compares that prefix, and only for results the module declares dynamic. Linear algebra is
compared within a tolerance: XLA's expanders and LAPACK round differently.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import xlapy
from xlapy.errors import UnimplementedError
from xlapy.passes.pipelines import passes_pipeline
from xlapy.testing import CORPUS, assert_same, dynamic_prefix
from xlapy.tools import npz

TF_OPS = CORPUS / "tf_ops"

# XLA:CPU's expansions against LAPACK (and f32 against the f64 a test would want): a few ulps of the condition
TOLERANCE = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-10, "complex128": 1e-10}


def _cases():
    return [pytest.param(hlo, backend, id=f"{hlo.name[:-4]}-{backend}")
            for hlo in sorted(TF_OPS.glob("*.hlo")) for backend in ("interpreter", "cpu")]


@pytest.mark.parametrize("hlo_path, backend", _cases())
def test_tf_ops_match_xla(hlo_path: Path, backend: str):
    data = npz.load(TF_OPS / (hlo_path.name.split(".")[0] + ".npz"))
    args, expected = npz.numbered(data, "arg"), npz.numbered(data, "out")
    module = xlapy.hlo.parse(hlo_path.read_text())
    declared = module.entry.root.shape.leaves()
    pipeline = passes_pipeline(["call-inliner", "dynamic_padder"]) if backend == "interpreter" else None
    try:
        exe = xlapy.compile(module, backend=backend, pipeline=pipeline)
    except UnimplementedError as e:
        pytest.xfail(str(e))
    result = npz.flatten(exe(*args))
    assert len(result) == len(expected), f"{len(result)} outputs, XLA gave {len(expected)}"
    for i, (got, want) in enumerate(zip(result, expected)):
        where = f"{hlo_path.name} out{i}"
        assert_same(dynamic_prefix(got, want, declared[i], where), want, where, rtol=TOLERANCE.get(want.dtype.name))


def test_every_program_has_both_forms():
    names = {p.name.split(".")[0] for p in TF_OPS.glob("*.npz")}
    assert names, "tests/corpus/tf_ops is empty: run tools/gen_tf_ops_corpus.py"
    for name in names:
        assert (TF_OPS / f"{name}.hlo").exists() and (TF_OPS / f"{name}.opt.hlo").exists(), name
