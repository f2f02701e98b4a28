"""The Schur-based functions on the CPU backend against SciPy (the same LAPACK routines called directly): median
run times of xlapy.jit(f) and scipy.linalg's f on one random float64 matrix per size.

    .venv/bin/python benchmarks/schur.py [--sizes 16 64 256] [--repeat 7]

schur and hessenberg are one LAPACK call each (gees; gehrd + orgqr) plus xlapy's staging copies, so their ratio
is the cost of those copies and of the call; sqrtm is JAX's algorithm (Björck-Hammarling as nested fori_loops,
O(n^3) scalar steps), against SciPy's blocked one, so it shows the cost of JAX's formulation at larger n.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import scipy.linalg as sl

import xlapy
from xlapy.scipy import linalg

FUNCTIONS = {
    "schur": (lambda a: linalg.schur(a), lambda a: sl.schur(a)),
    "hessenberg": (lambda a: linalg.hessenberg(a, calc_q=True), lambda a: sl.hessenberg(a, calc_q=True)),
    "sqrtm": (lambda a: linalg.sqrtm(a), lambda a: sl.sqrtm(a)),
}


def median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    xlapy.config.update("jax_enable_x64", True)
    print("| function | n | xlapy (ms) | scipy (ms) | ratio |\n|---|---:|---:|---:|---:|")
    for name, (ours, theirs) in FUNCTIONS.items():
        for n in args.sizes:
            if name == "sqrtm" and n > 64:
                continue                       # n^2 / 2 fori_loop steps of O(n) each: minutes at n = 256
            a = np.random.RandomState(n).randn(n, n)
            f = xlapy.jit(ours)
            xlapy.block_until_ready(f(a))
            t_x = median_seconds(lambda: xlapy.block_until_ready(f(a)), args.repeat)
            t_s = median_seconds(lambda: theirs(a), args.repeat)
            print(f"| {name} | {n} | {t_x * 1e3:.3f} | {t_s * 1e3:.3f} | {t_x / t_s:.2f} |")


if __name__ == "__main__":
    main()
