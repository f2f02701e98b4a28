"""Regenerates tests/backends/cpu/complex_math_data/xla_complex_math.npz: XLA:CPU's (JAX 0.10.2's) values of the
complex elementwise ops on c64 and c128 over a fixed grid of finite arguments (small, moderate, large parts,
signed zeros), for tests/backends/cpu/test_complex_math.py (which needs no JAX).

    .venv-models/bin/python tools/gen_complex_math_data.py

Arrays: `z`, `w` (complex128; power's operands are z / 10 and w / 10); per op and type, `OPCODE.c64` /
`OPCODE.c128` (the HLO opcode's name).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "backends" / "cpu" / "complex_math_data" / "xla_complex_math.npz"


def arguments() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    parts = np.concatenate([rng.standard_normal(14) * 3, rng.standard_normal(4) * 30,
                            [0.0, -0.0, 1e-9, -1e-7, 50.0, -60.0, 300.0, 700.0]])
    re, im = np.meshgrid(parts, parts[::-1])
    z = (re + 1j * im).ravel()
    return z, np.roll(z, 3)


def main():
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    ops = {"sine": jnp.sin, "cosine": jnp.cos, "tan": jnp.tan, "tanh": jnp.tanh, "exponential-minus-one": jnp.expm1,
           "log-plus-one": jnp.log1p, "rsqrt": jax.lax.rsqrt, "exponential": jnp.exp, "log": jnp.log,
           "sqrt": jnp.sqrt}
    z, w = arguments()
    out = {"z": z, "w": w}
    for t, dt in (("c64", np.complex64), ("c128", np.complex128)):
        for name, f in ops.items():
            out[f"{name}.{t}"] = np.asarray(jax.jit(f)(z.astype(dt)))
        out[f"power.{t}"] = np.asarray(jax.jit(jax.lax.pow)((z / 10).astype(dt), (w / 10).astype(dt)))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
