"""TensorFlow's HLO on both backends against XLA: every tests/corpus/tf module (tools/gen_tf_corpus.py: image
resizes with every align_corners / half_pixel_centers form, their gradients, image ops, sorts along every axis,
scatters; `NAME.hlo` as TF lowers it, `NAME.opt.hlo` as XLA:CPU optimized it) runs on its recorded inputs and
must match TF's XLA:CPU outputs (a dynamic result on the valid prefix TF returned: testing.dynamic_prefix).

A module that uses an op a backend does not implement yet xfails with the backend's error naming the op, so the
missing ops are listed in the report. KNOWN holds the modules that run but differ from XLA, with the reason.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import xlapy
from xlapy.backends.cpu.elemental_contract import fused_on_host
from xlapy.errors import ExecutionError, UnimplementedError
from xlapy.testing import CORPUS, assert_same, dynamic_prefix
from xlapy.tools import npz

TF = CORPUS / "tf"

# XLA:CPU contracts a multiply and a subtract into a fused multiply-add inside its fusions, and so does xlapy's
# CPU backend (elemental_contract.py). Resizing 5 rows to 9 with half-pixel centers computes
# (i + 0.5) * 0.555555582 - 1 - 0.5 before a ceil: for i = 4 IEEE arithmetic op by op gives 1.0 exactly (the
# interpreter; XLA itself with XLA_FLAGS=--xla_cpu_max_isa=AVX; xlapy's CPU backend with XLAPY_FP_CONTRACT=0),
# the FMA 1.00000012, so XLA and the CPU backend read source row 2 where the interpreter reads row 1.
_FMA = ("XLA:CPU contracts a*b-c into an FMA in fused code, the interpreter evaluates op by op; at a half-pixel "
        "sample that lands on a pixel centre (5 -> 9 rows) the ceil of the source coordinate differs (XLA with "
        "--xla_cpu_max_isa=AVX gives the interpreter's numbers)")
# (module: file name without .hlo, backend) -> why it differs from XLA today
KNOWN = {(stem, backend): _FMA
         for name in ("resize_bilinear_up_halfpx", "resize_bilinear_grad_halfpx", "image_resize_bilinear")
         for stem in (name, name + ".opt")
         for backend in (("interpreter",) if fused_on_host() else ("interpreter", "cpu"))}   # no FMA: op by op


def _cases():
    out = []
    for hlo in sorted(TF.glob("*.hlo")):
        stem = hlo.name[:-len(".hlo")]
        for backend in ("interpreter", "cpu"):
            known = KNOWN.get((stem, backend))
            marks = [pytest.mark.xfail(strict=True, reason=known)] if known else []
            out.append(pytest.param(hlo, backend, id=f"{stem}-{backend}", marks=marks))
    return out


def _missing_op(e: Exception) -> bool:
    return isinstance(e, UnimplementedError) or (isinstance(e, ExecutionError) and "not supported" in str(e))


@pytest.mark.parametrize("hlo_path, backend", _cases())
def test_tf_module_matches_xla(hlo_path: Path, backend: str):
    data = npz.load(TF / (hlo_path.name.split(".")[0] + ".npz"))
    args, expected = npz.numbered(data, "arg"), npz.numbered(data, "out")
    module = xlapy.hlo.parse(hlo_path.read_text())
    declared = module.entry.root.shape.leaves()
    try:
        result = npz.flatten(xlapy.compile(module, backend=backend)(*args))
    except (UnimplementedError, ExecutionError) as e:
        if not _missing_op(e):
            raise
        pytest.xfail(str(e))
    assert len(result) == len(expected), f"{len(result)} outputs, XLA gave {len(expected)}"
    for i, (got, want) in enumerate(zip(result, expected)):
        where = f"{hlo_path.name} out{i}"
        assert_same(dynamic_prefix(got, want, declared[i], where), want, where=where)


def test_tf_corpus_is_there():
    names = {p.name.split(".")[0] for p in TF.glob("*.hlo")}
    assert {"resize_bilinear_up_align", "resize_nearest_down_halfpx", "sort_axis0", "embedding_grad"} <= names
    assert all((TF / f"{n}.npz").exists() and (TF / f"{n}.opt.hlo").exists() for n in names)
