"""Regenerates tests/frontend/scipy_linalg_data/jax_scipy_linalg.npz: jax.scipy.linalg's outputs for the special
matrices and the decompositions built over xlapy's existing ones (polar, qr_multiply, expm_frechet,
eigh_tridiagonal, solve_sylvester), so that tests/frontend/test_scipy_linalg_more.py compares xlapy.scipy.linalg against JAX
without JAX installed.

    .venv-models/bin/python tools/gen_scipy_linalg_data.py

Per case: inputs `KEY.in0`, ... (arrays), JAX's outputs `KEY.out0`, ...; "__cases__" holds the table (function,
static positional arguments, keyword arguments, x64 or not) as JSON.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "frontend" / "scipy_linalg_data" / "jax_scipy_linalg.npz"

rs = np.random.RandomState(0)
A43 = rs.randn(4, 3)
A34 = rs.randn(3, 4)
SQ = rs.randn(4, 4) * 0.7
E4 = rs.randn(4, 4)
C24 = rs.randn(2, 4)
C3 = rs.randn(3, 2)
B3 = rs.randn(3, 3) + 2 * np.eye(3)
C43 = rs.randn(4, 3)


def case(name, fn, arrays=(), static=(), kwargs=None, x64=(False, True), int_arrays=False):
    """arrays: float inputs (cast to the case's float dtype); static: Python values appended after them."""
    return [{"key": f"{name}.{'f64' if x else 'f32'}", "fn": fn, "arrays": [np.asarray(a).tolist() for a in arrays],
             "static": list(static), "kwargs": kwargs or {}, "x64": x} for x in x64]


CASES = sum([
    case("toeplitz", "toeplitz", [[1., 2., 3.], [4., 5., 6., 7.]]),
    case("toeplitz_c", "toeplitz", [[1., -2., 3.5]]),
    case("toeplitz_batch", "toeplitz", [[[1., 2.], [3., 4.]], [[5., 6., 7.], [8., 9., 10.]]]),
    case("hankel", "hankel", [[1., 2., 3.], [4., 5., 6., 7.]]),
    case("hankel_c", "hankel", [[1., 2., 3.]]),
    case("circulant", "circulant", [[1., 2., 3., 4.]]),
    case("circulant_batch", "circulant", [[[1., 2., 3.], [4., 5., 6.]]]),
    case("leslie", "leslie", [[0.1, 2.0, 1.0, 0.1], [0.2, 0.8, 0.7]]),
    case("companion", "companion", [[2., -3., 4., 5.]]),
    case("fiedler", "fiedler", [[1., 4., 12., 45., 77.]]),
    case("fiedler_companion", "fiedler_companion", [[1., -10., 31., -30., 4., 2.]]),
    case("fiedler_companion_2", "fiedler_companion", [[2., 3.]]),
    case("convolution_full", "convolution_matrix", [[1., 2., 3.]], static=[5]),
    case("convolution_same", "convolution_matrix", [[1., 2., 3., 4.]], static=[3], kwargs={"mode": "same"}),
    case("convolution_valid", "convolution_matrix", [[1., 2., 3.]], static=[6], kwargs={"mode": "valid"}),
    case("hilbert", "hilbert", static=[5]), case("invhilbert", "invhilbert", static=[5]),
    case("pascal", "pascal", static=[5]), case("pascal_lower", "pascal", static=[4], kwargs={"kind": "lower"}),
    case("invpascal", "invpascal", static=[5]),
    case("invpascal_upper", "invpascal", static=[4], kwargs={"kind": "upper"}),
    case("helmert", "helmert", static=[5]), case("helmert_full", "helmert", static=[4], kwargs={"full": True}),
    case("hadamard", "hadamard", static=[8]), case("dft", "dft", static=[5]),
    case("dft_sqrtn", "dft", static=[4], kwargs={"scale": "sqrtn"}),
    case("polar", "polar", [A43]), case("polar_left", "polar", [A34], kwargs={"side": "left"}),
    case("polar_svd", "polar", [SQ], kwargs={"method": "svd"}),
    case("qr_multiply", "qr_multiply", [A43, C24]),
    case("qr_multiply_left", "qr_multiply", [A43, C3], kwargs={"mode": "left"}),
    case("expm_frechet", "expm_frechet", [SQ, E4]),
    case("eigh_tridiagonal", "eigh_tridiagonal", [[1., 2., 3., 4., -1.], [0.5, 0.3, -0.2, 1.1]],
         kwargs={"eigvals_only": True}),
    case("eigh_tridiagonal_i", "eigh_tridiagonal", [[1., 2., 3., 4., -1.], [0.5, 0.3, -0.2, 1.1]],
         kwargs={"eigvals_only": True, "select": "i", "select_range": [1, 3]}),
    case("solve_sylvester", "solve_sylvester", [SQ, B3, C43]),
    case("solve_sylvester_eigen", "solve_sylvester", [SQ, B3, C43], kwargs={"method": "eigen"}),
    case("solve_sylvester_batch", "solve_sylvester", [np.stack([SQ, SQ.T]), B3, C43]),
], [])


def main():
    import jax
    jax.config.update("jax_enable_x64", True)
    from jax.scipy import linalg
    arrays = {}
    for c in CASES:
        jax.config.update("jax_enable_x64", c["x64"])
        dt = np.float64 if c["x64"] else np.float32
        ins = [np.asarray(a, dt) for a in c["arrays"]]
        kw = dict(c["kwargs"])
        if "select_range" in kw:
            kw["select_range"] = tuple(kw["select_range"])
        out = getattr(linalg, c["fn"])(*ins, *c["static"], **kw)
        outs = out if isinstance(out, tuple) else (out,)
        for k, i in enumerate(ins):
            arrays[f"{c['key']}.in{k}"] = i
        for k, o in enumerate(outs):
            arrays[f"{c['key']}.out{k}"] = np.asarray(o)
        c["n_in"], c["n_out"] = len(ins), len(outs)
    arrays["__cases__"] = np.asarray(json.dumps([{k: v for k, v in c.items() if k != "arrays"} for c in CASES]))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
