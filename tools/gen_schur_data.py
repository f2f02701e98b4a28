"""Regenerates tests/frontend/schur_data/: jax.scipy.linalg's Schur-based functions (schur, hessenberg, rsf2csf,
sqrtm, funm) on small inputs, and JAX-lowered HLO modules with the `lapack_?gees_ffi` / `lapack_?gehrd_ffi`
custom-calls, for tests/frontend/test_scipy_linalg_schur.py (which needs no JAX).

    .venv-models/bin/python tools/gen_schur_data.py

jax_schur.npz: per case `KEY.in0`, ... and JAX's outputs `KEY.out0`, ...; "__cases__" is the JSON table
(function, keyword arguments, funm's function by name, x64). NAME.hlo (`jax.jit(f).lower(x).as_text(
dialect="hlo")`) with NAME.npz (arg0, out0, ...: tests/corpus/README.md's convention) per module.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "frontend" / "schur_data"

rs = np.random.RandomState(7)
A4 = rs.randn(4, 4)                       # two conjugate pairs or one: a real Schur form with 2x2 blocks
B233 = rs.randn(2, 3, 3)
C3 = rs.randn(3, 3) + 1j * rs.randn(3, 3)
SPD = (lambda m: m @ m.T + 4 * np.eye(4))(rs.randn(4, 4))
T_RSF = np.array([[1.0, 2.0, 0.5, 1.0], [-3.0, 1.0, 0.2, 0.0], [0.0, 0.0, 2.0, 1.5], [0.0, 0.0, 0.0, -1.0]])
Z_RSF = np.linalg.qr(rs.randn(4, 4))[0]


def case(name, fn, arrays, kwargs=None, x64=(False, True), func=None, complex_in=False):
    return [{"key": f"{name}.{'f64' if x else 'f32'}", "fn": fn, "kwargs": kwargs or {}, "x64": x, "func": func,
             "arrays": arrays, "complex": complex_in} for x in x64]


CASES = sum([
    case("schur", "schur", [A4]),
    case("schur_batch", "schur", [B233], x64=(False,)),
    case("schur_complex", "schur", [A4], {"output": "complex"}),
    case("schur_cin", "schur", [C3], complex_in=True),
    case("hessenberg", "hessenberg", [A4], {"calc_q": True}),
    case("hessenberg_h", "hessenberg", [B233], x64=(True,)),
    case("hessenberg_cin", "hessenberg", [C3], {"calc_q": True}, complex_in=True, x64=(True,)),
    case("rsf2csf", "rsf2csf", [T_RSF, Z_RSF]),
    case("sqrtm", "sqrtm", [SPD]),
    case("sqrtm_general", "sqrtm", [A4], x64=(True,)),
    case("funm_exp", "funm", [A4], func="exp", x64=(False,)),
    case("funm_log", "funm", [A4], func="log", x64=(True,)),
    case("funm_err", "funm", [SPD], {"disp": False}, func="exp", x64=(True,)),
], [])

MODULES = {                    # name: (function of jax.scipy.linalg, kwargs, input, dtype)
    "schur_f32": ("schur", {}, A4, np.float32),
    "schur_batch_f64": ("schur", {}, B233, np.float64),
    "schur_complex_c64": ("schur", {"output": "complex"}, A4, np.float32),
    "hessenberg_c128": ("hessenberg", {"calc_q": True}, C3, np.complex128),
    "hessenberg_f32": ("hessenberg", {"calc_q": True}, A4, np.float32),
}


def _dtype(x64: bool, complex_in: bool):
    return {(False, False): np.float32, (True, False): np.float64, (False, True): np.complex64,
            (True, True): np.complex128}[(x64, complex_in)]


def main():
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    from jax.scipy import linalg
    arrays, table = {}, []
    for c in CASES:
        dt = _dtype(c["x64"], c["complex"])
        ins = [np.asarray(a).astype(dt) for a in c["arrays"]]
        kw = dict(c["kwargs"])
        if c["func"]:
            kw["func"] = getattr(jnp, c["func"])
        out = getattr(linalg, c["fn"])(*ins, **kw)
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        for k, a in enumerate(ins):
            arrays[f"{c['key']}.in{k}"] = a
        for k, o in enumerate(outs):
            arrays[f"{c['key']}.out{k}"] = np.asarray(o)
        table.append({"key": c["key"], "fn": c["fn"], "kwargs": c["kwargs"], "func": c["func"], "x64": c["x64"],
                      "n_in": len(ins), "n_out": len(outs)})
    arrays["__cases__"] = np.asarray(json.dumps(table))
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez(OUT / "jax_schur.npz", **arrays)
    for name, (fn, kw, x, dt) in MODULES.items():
        x = np.asarray(x).astype(dt)
        f = jax.jit(lambda a, fn=fn, kw=kw: getattr(linalg, fn)(a, **kw))
        (OUT / f"{name}.hlo").write_text(f.lower(x).as_text(dialect="hlo"))
        outs = f(x)
        np.savez(OUT / f"{name}.npz", arg0=x, **{f"out{k}": np.asarray(o) for k, o in enumerate(outs)})
    print(f"wrote {len(table)} cases and {len(MODULES)} modules to {OUT}")


if __name__ == "__main__":
    main()
