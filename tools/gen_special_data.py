"""Regenerates tests/frontend/special_data/jax_special.npz: jax.scipy.special's (and the lax special functions')
outputs on fixed inputs, in float32 and float64, so that tests/frontend/test_scipy_special.py compares
xlapy.scipy.special and xlapy.lax against JAX without JAX installed.

Run with the environment that has real JAX (tools/setup_models_env.sh):

    .venv-models/bin/python tools/gen_special_data.py

The .npz holds, per case, its inputs (`NAME.in0`, `NAME.in1`, ...) and JAX's output (`NAME.out`), and under
"__cases__" the case table as JSON (module, function, keyword arguments, dtype), so the test rebuilds each call
from the file itself.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "frontend" / "special_data" / "jax_special.npz"

POS = [0.05, 0.3, 0.5, 1.0, 1.5, 2.0, 2.5, 3.7, 5.0, 7.3, 10.0, 12.5, 25.0, 60.0]
REAL = [-7.3, -3.5, -2.5, -1.25, -0.6, -0.3, 0.0, 0.2, 0.5, 1.0, 1.7, 2.5, 4.0, 9.0, 31.0]
UNIT = [1e-6, 0.01, 0.05, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.95, 0.99, 0.999999]
ERF = [-3.5, -2.0, -1.0, -0.5, -0.1, 0.0, 0.1, 0.5, 0.99, 1.0, 1.5, 2.5, 4.0, 6.0]
NORMAL_X = [-30.0, -15.0, -9.0, -5.0, -2.0, -0.5, 0.0, 0.5, 2.0, 4.0, 6.0, 9.0]
BESSEL = [-20.0, -8.5, -3.0, -1.0, -0.01, 0.0, 0.01, 0.7, 2.0, 5.0, 7.99, 8.01, 15.0, 50.0]


def case(fn, *inputs, module="scipy.special", kwargs=None, dtypes=("float32", "float64"), name=None, int_inputs=()):
    """int_inputs: the positions of inputs passed as int32 (polygamma's n, sph_harm_y's n and m)."""
    return {"name": name or fn, "module": module, "fn": fn, "inputs": [list(np.ravel(i)) for i in inputs],
            "shapes": [list(np.shape(i)) for i in inputs], "kwargs": kwargs or {}, "dtypes": list(dtypes),
            "int_inputs": list(int_inputs)}


def _grid(a, b):
    A, B = np.meshgrid(np.asarray(a), np.asarray(b))
    return A.ravel(), B.ravel()


GA, GX = _grid([0.3, 1.0, 2.5, 7.0, 20.0], [0.1, 0.9, 2.0, 5.0, 12.0, 30.0])
BA, BB = _grid([0.4, 1.0, 3.0, 12.0], [0.5, 2.0, 8.0])
BX = np.resize(np.asarray([0.05, 0.3, 0.5, 0.7, 0.95, 0.2]), BA.shape)

CASES = [
    case("gammaln", REAL), case("gamma", REAL[:-1]), case("gammasgn", REAL + [-2.0, -0.0]), case("loggamma", REAL),
    case("digamma", REAL[:6] + REAL[7:]), case("betaln", *_grid([0.3, 2.0, 9.0, 40.0], [0.5, 3.0, 11.0])),
    case("beta", *_grid([0.3, 2.0, 5.5, -0.5], [0.5, 3.0, 7.0])), case("betainc", BA, BB, BX),
    case("gammainc", GA, GX), case("gammaincc", GA, GX),
    case("factorial", [0.0, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, -1.0]),
    case("comb", [10.0, 10.0, 7.0, 5.5, 30.0, 4.0], [3.0, 0.0, 7.0, 2.0, 15.0, 5.0]),
    case("comb", [10.0, 4.0, 6.0], [3.0, 2.0, 0.0], kwargs={"repetition": True}, name="comb_rep"),
    case("poch", [0.5, 1.0, 2.5, 4.0, 3.0], [2.0, 0.0, 1.5, 3.0, -1.0]),
    case("multigammaln", [3.0, 4.5, 10.0], kwargs={"d": 3}),
    case("polygamma", [0, 1, 2, 3, 1, 2], [2.5, 0.7, 3.0, 1.5, 10.0, 0.3], name="polygamma", int_inputs=(0,)),
    case("zeta", [2.0, 2.5, 3.0, 4.0, 1.5, 6.0], [1.0, 0.5, 2.0, 7.5, 3.0, 1.0]),
    case("erf", ERF), case("erfc", ERF), case("erfinv", [-0.999, -0.9, -0.5, -0.01, 0.0, 0.3, 0.7, 0.99, 0.99999]),
    case("ndtr", NORMAL_X), case("ndtri", UNIT), case("log_ndtr", NORMAL_X),
    case("log_ndtr", NORMAL_X, kwargs={"series_order": 5}, name="log_ndtr_5"),
    case("logit", UNIT), case("expit", REAL), case("xlogy", [0.0, 1.0, 2.5, 0.0, 3.0], [0.0, 2.0, 0.5, 3.0, 1.0]),
    case("xlog1py", [0.0, 1.0, 2.5, 0.0, 3.0], [-1.0, 2.0, 0.5, 3.0, 1e-5]),
    case("entr", [-1.0, 0.0, 0.3, 1.0, 2.5]), case("rel_entr", [0.0, 0.5, 1.0, 2.0, -1.0], [0.0, 0.25, 3.0, 2.0, 1.0]),
    case("kl_div", [0.0, 0.5, 1.0, 2.0, 0.3], [0.0, 0.25, 3.0, 2.0, 1.0]),
    case("boxcox", [0.5, 1.0, 2.0, 10.0], [0.0, 0.5, -1.0, 2.0]),
    case("boxcox1p", [0.5, 0.0, 2.0, 10.0], [0.0, 0.5, -1.0, 2.0]),
    case("i0", BESSEL[1:-1]), case("i0e", BESSEL), case("i1", BESSEL[1:-1]), case("i1e", BESSEL),
    case("spence", [0.0, 0.2, 0.5, 0.9, 1.0, 1.3, 1.7, 2.5, 10.0, -1.0]),
    case("erfcx", [-9.0, -3.0, -1.0, -0.2, 0.0, 0.3, 1.0, 2.5, 5.0, 12.0, 30.0, 1e4]),
    case("erfcx", [[0.5, 1.0], [-1.0, 0.3], [2.0, -3.0], [0.0, 4.0]], dtypes=("complex64", "complex128"),
         name="erfcx_complex"),
    case("dawsn", [-12.0, -4.0, -1.0, -0.01, 0.0, 0.2, 0.9, 2.0, 3.2, 3.3, 5.0, 6.2, 6.3, 10.0, 100.0]),
    case("wofz", [[1.0, 1.0], [-2.0, 0.5], [0.3, -2.0], [0.0, 3.0], [-1.0, -1.0], [5.0, 0.1], [0.0, 0.0],
                  [12.0, 7.0], [-0.5, -0.3]], dtypes=("complex64", "complex128")),
    case("expi", [-50.0, -10.0, -2.0, -0.5, -0.01, 0.01, 0.5, 1.9, 2.0, 3.0, 5.0, 9.0, 17.0, 33.0, 50.0, 70.0,
                  200.0]),
    case("exp1", [0.0, 0.01, 0.3, 1.0, 1.5, 2.5, 5.0, 10.0, 30.0, 70.0, -1.0]),
    case("expn", *_grid([0.0, 1.0, 2.0, 3.0, 7.0, 30.0], [0.0, 0.05, 0.7, 1.0, 1.3, 4.0, 20.0])),
    case("expn", [5000.0, 6000.0, -1.0], [2.0, 0.5, 1.0], name="expn_large_n"),
    case("sici", [-30.0, -4.0, -0.5, 0.0, 0.1, 1.0, 3.9, 4.1, 7.5, 8.5, 50.0, 1e3, 2e9]),
    case("hyp1f1", [0.5, 1.0, 2.0, -1.5, 3.0, 0.0, 2.0, 1.5, 0.7], [1.5, 2.0, 0.5, 2.5, 3.0, 1.0, 0.0, 3.5, 1.2],
         [0.3, -2.0, 5.0, 1.2, 150.0, 3.0, 1.0, 120.0, -0.8]),
    case("hyp2f1", [0.5, 1.0, 2.0, -2.0, 1.5, 0.3, 2.0, 0.0, 1.0, 0.5, 1.5, 2.0],
         [1.5, 2.0, 0.5, 2.5, 1.0, 0.7, 3.0, 1.0, 1.0, 0.5, 2.5, 3.0],
         [2.0, 3.0, 4.0, 1.5, 2.5, 1.0, 1.0, 2.0, 1.0, 3.0, 1.0, 3.0],
         [0.3, -0.5, 0.95, 0.5, 0.99, 0.95, -0.5, 0.4, 0.5, 1.0, 0.8, 0.6]),
    case("owens_t", [0.0, 0.5, 1.0, 2.0, -1.0, 3.0, 0.2, 1.5, 0.0], [0.5, 1.0, 2.0, 0.3, -5.0, 0.8, 10.0, 1.0, 3.0]),
    case("bessel_jn", [0.5, 1.0, 3.0, 10.0, 25.0], kwargs={"v": 3}),
    case("bessel_jn", [[0.2, 2.0], [7.0, 12.0]], kwargs={"v": 1, "n_iter": 60}, name="bessel_jn_2d"),
    case("sph_harm_y", [0, 1, 1, 2, 2, 3, 3, 4], [0, 0, 1, -1, 2, -3, 1, 2],
         [0.3, 1.0, 2.0, 0.5, 1.2, 2.8, 0.0, 1.7], [0.0, 0.5, 1.0, 2.0, -1.0, 3.0, 0.7, 4.0],
         int_inputs=(0, 1)),
    case("fresnel", [-3.0, -0.5, 0.0, 0.3, 1.0, 1.5, 1.6, 1.7, 3.0, 10.0, 100.0, 5e4]),
    case("softmax", np.linspace(-2, 3, 12).reshape(3, 4), kwargs={"axis": -1}),
    case("log_softmax", np.linspace(-2, 3, 12).reshape(3, 4), kwargs={"axis": 0}),
    case("logsumexp", np.linspace(-2, 3, 12).reshape(3, 4), kwargs={"axis": 1}),
    # lax's special functions directly
    case("lgamma", REAL, module="lax"), case("digamma", POS, module="lax", name="lax_digamma"),
    case("igamma", GA, GX, module="lax"), case("igammac", GA, GX, module="lax"),
    case("igamma_grad_a", GA, GX, module="lax"), case("random_gamma_grad", GA, GX, module="lax"),
    case("polygamma", [1.0, 2.0, 3.0, 0.0], [0.5, 2.0, 4.5, 3.0], module="lax", name="lax_polygamma"),
    case("bessel_i0e", BESSEL, module="lax"), case("bessel_i1e", BESSEL, module="lax"),
    case("erf_inv", [-0.9, -0.2, 0.0, 0.5, 0.999], module="lax"),
    case("erfc", ERF, module="lax", name="lax_erfc"),
]


def main():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import lax
    from jax.scipy import special
    arrays = {}
    table = []
    for c in CASES:
        mod = special if c["module"] == "scipy.special" else lax
        fn = getattr(mod, c["fn"])
        for dt in c["dtypes"]:
            key = f"{c['name']}.{dt}"
            # as the test runs them: x64 only for the double-precision cases (a float32 case under x64 would let
            # float64 constants promote its result)
            jax.config.update("jax_enable_x64", dt in ("float64", "complex128"))
            ins = []
            for k, (vals, shape) in enumerate(zip(c["inputs"], c["shapes"])):
                idt = "int32" if k in c["int_inputs"] else dt
                if np.dtype(dt).kind == "c":
                    vals = np.asarray(vals).reshape(-1, 2) @ np.asarray([1.0, 1.0j])
                    shape = shape[:-1]
                ins.append(np.asarray(vals, idt).reshape(shape))
            out = np.asarray(fn(*[jnp.asarray(i) for i in ins], **c["kwargs"]))
            for k, i in enumerate(ins):
                arrays[f"{key}.in{k}"] = i
            arrays[f"{key}.out"] = out
            table.append({"key": key, "module": c["module"], "fn": c["fn"], "kwargs": c["kwargs"], "dtype": dt,
                          "n_inputs": len(ins)})
    arrays["__cases__"] = np.asarray(json.dumps(table))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {len(table)} cases to {OUT}")


if __name__ == "__main__":
    main()
