#!/usr/bin/env python3
"""TensorFlow programs that use cholesky, triangular-solve, XLA's QR custom-calls (Qr,
ProductOfElementaryHouseholderReflectors) and dynamic shapes (set-dimension-size, get-dimension-size,
dynamic-reshape, bounded `<=N` dimensions), lowered by TF's XLA bridge, with XLA:CPU's outputs: tests/corpus/tf_ops.

    .venv-tf/bin/python tools/gen_tf_ops_corpus.py              # every program
    .venv-tf/bin/python tools/gen_tf_ops_corpus.py mask_sum qr   # some

For each program NAME: `NAME.hlo` is `f.experimental_get_compiler_ir(*args)(stage='hlo')` of a
`tf.function(jit_compile=True)`, `NAME.opt.hlo` the same after XLA:CPU's pipeline (stage='optimized_hlo'), and
`NAME.npz` holds the arguments (arg0..) and what TF returned (out0.., computed by XLA:CPU). A dynamic result
comes back from TF at its dynamic size; xlapy returns it at its bound, valid elements first, so the test
compares that prefix. Metadata is dropped from the HLO text; a module with an elided constant (`{...}`) is
refused. Inputs are deterministic: a generator seeded by the program's name.
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "corpus" / "tf_ops"


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(int(hashlib.sha256(name.encode()).hexdigest()[:8], 16))


def _normal(r, *shape, dtype=np.float32):
    x = r.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * r.standard_normal(shape)
    return x.astype(dtype)


def _spd(r, n, batch=(), dtype=np.float32):
    a = _normal(r, *batch, n, n, dtype=np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def _not_pd(r):
    a = _spd(r, 3, (3,))
    a[1] = [[1, 2, 0], [2, 1, 0], [0, 0, 1]]        # indefinite: the middle matrix fails, the others do not
    return a


def _triangular(r, n, batch=(), dtype=np.float32):
    return (_normal(r, *batch, n, n, dtype=dtype) + 4 * np.eye(n)).astype(dtype)


def programs():
    import tensorflow as tf
    la = tf.linalg

    def masked(x):
        return tf.boolean_mask(x, x > 0)

    def masked_rows(x):
        return tf.boolean_mask(x, x[:, 0] > 0)

    def cholesky_grad(a):
        with tf.GradientTape() as tape:
            tape.watch(a)
            loss = tf.reduce_sum(tf.square(la.cholesky(a)) * 1.5)
        return tape.gradient(loss, a)

    v8 = lambda r: [_normal(r, 8)]
    rows = lambda r: [_normal(r, 6, 3)]
    return {
        # linear algebra
        "cholesky_batched": (la.cholesky, lambda r: [_spd(r, 6, (3,))]),
        "cholesky_f64_blocked": (la.cholesky, lambda r: [_spd(r, 130, dtype=np.float64)]),
        "cholesky_c64": (la.cholesky, lambda r: [_spd(r, 4, (2,), np.complex64)]),
        "cholesky_not_pd": (la.cholesky, lambda r: [_not_pd(r)]),
        "cholesky_grad": (cholesky_grad, lambda r: [_spd(r, 3)]),     # larger: TF elides a constant
        "triangular_solve_lower": (lambda a, b: la.triangular_solve(a, b, lower=True),
                                   lambda r: [_triangular(r, 5, (2,)), _normal(r, 2, 5, 3)]),
        "triangular_solve_upper_adjoint": (lambda a, b: la.triangular_solve(a, b, lower=False, adjoint=True),
                                           lambda r: [_triangular(r, 5), _normal(r, 5, 4)]),
        "triangular_solve_c64_adjoint": (lambda a, b: la.triangular_solve(a, b, lower=True, adjoint=True),
                                         lambda r: [_triangular(r, 4, (), np.complex64),
                                                    _normal(r, 4, 2, dtype=np.complex64)]),
        "qr_reduced": (la.qr, lambda r: [_normal(r, 5, 3)]),
        "qr_full_wide": (lambda a: la.qr(a, full_matrices=True), lambda r: [_normal(r, 2, 3, 5)]),
        "qr_c64": (la.qr, lambda r: [_normal(r, 4, 3, dtype=np.complex64)]),
        "qr_f64_square": (la.qr, lambda r: [_normal(r, 6, 6, dtype=np.float64)]),
        "matrix_inverse": (la.inv, lambda r: [_triangular(r, 4)]),
        "matrix_solve": (la.solve, lambda r: [_triangular(r, 4), _normal(r, 4, 2)]),
        "lstsq": (la.lstsq, lambda r: [_normal(r, 5, 3), _normal(r, 5, 2)]),
        "cholesky_solve": (lambda a, b: la.cholesky_solve(la.cholesky(a), b),
                           lambda r: [_spd(r, 4), _normal(r, 4, 2)]),
        # dynamic shapes (boolean_mask and where make a dimension <= its bound)
        "where": (lambda x: tf.where(x > 0), v8),
        "mask_sum": (lambda x: tf.reduce_sum(masked(x)), v8),
        "mask_max": (lambda x: tf.reduce_max(masked(x)), v8),
        "mask_mean": (lambda x: tf.reduce_mean(masked(x)), v8),
        "mask_size": (lambda x: tf.size(masked(x)), v8),
        "mask_argmax": (lambda x: tf.argmax(masked(x)), v8),
        "mask_softmax": (lambda x: tf.nn.softmax(masked(x)), v8),
        "mask_sort": (lambda x: tf.sort(masked(x)), v8),
        "mask_concat": (lambda x: tf.concat([masked(x), x], 0), v8),
        "mask_gather": (lambda x: tf.gather(x, tf.where(x > 0)[:, 0]), v8),
        "mask_slice": (lambda x: masked(x)[1:], v8),
        "mask_rows_sum": (lambda x: tf.reduce_sum(masked_rows(x), axis=0) * 2.0, rows),
        "mask_rows_exp": (lambda x: tf.exp(masked_rows(x)), rows),
        "mask_rows_matmul": (lambda x: tf.matmul(masked_rows(x), masked_rows(x), transpose_a=True), rows),
        "mask_rows_reshape": (lambda x: tf.reshape(masked_rows(x), [-1]), rows),
        "mask_rows_add_broadcast": (lambda x: masked_rows(x) + tf.constant([1.0, 2.0, 3.0]), rows),
        "mask_rows_transpose": (lambda x: tf.transpose(masked_rows(x)), rows),
        "unique": (lambda x: tf.unique(x)[0], lambda r: [r.integers(0, 4, 6).astype(np.int32)]),
    }


def _strip(hlo: str) -> str:
    return re.sub(r", metadata=\{[^}]*\}", "", hlo)


def generate(name: str, fn, make_args) -> None:
    import tensorflow as tf
    args = make_args(_rng(name))
    f = tf.function(lambda *xs: fn(*xs), jit_compile=True)      # a bare tf op would take `name` too
    hlo = f.experimental_get_compiler_ir(*args)(stage="hlo")
    opt = f.experimental_get_compiler_ir(*args)(stage="optimized_hlo")
    for text in (hlo, opt):
        if "{...}" in text:
            raise RuntimeError(f"{name}: the HLO text has elided constants ({{...}}); never commit those")
    result = f(*args)
    outs = result if isinstance(result, (tuple, list)) else [result]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.hlo").write_text(_strip(hlo))
    (OUT / f"{name}.opt.hlo").write_text(_strip(opt))
    arrays = {f"arg{i}": np.asarray(a) for i, a in enumerate(args)}
    arrays.update({f"out{i}": np.asarray(o) for i, o in enumerate(outs)})
    np.savez(OUT / f"{name}.npz", **arrays)


def main(argv: list[str]) -> int:
    table = programs()
    names = argv or list(table)
    for name in names:
        generate(name, *table[name])
        print(f"{name}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
