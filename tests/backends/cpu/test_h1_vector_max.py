"""elemental_reduce's vector max/min (llvm.maximum / llvm.minimum accumulators, 1, 2 or 4 chains by the row's
length, whole vectors of the rest, a two-lane tail) against the interpreter, bit for bit: NaN from any place,
-0 < +0, denormals flushed once on the result (flushing commutes with max/min), infinities. One module per
element type holds every row length, raw and through a fused producer."""
import numpy as np
import pytest

import xlapy

LENGTHS = (16, 23, 77, 200)          # chains 1, 1, 2, 4; 77 = 64 + a whole vector + 5; 200 = 192 + 8


def _module(ty: str) -> str:
    params, outs, body = [], [], []
    for k, n in enumerate(LENGTHS):
        params.append(f"  x{k} = {ty}[6,{n}] parameter({k})")
        body.append(f"  two{k} = {ty}[6,{n}] broadcast(two), dimensions={{}}")
        body.append(f"  s{k} = {ty}[6,{n}] multiply(x{k}, two{k})")
        for op, init in (("mx", "lo"), ("mn", "hi")):
            for src in (f"x{k}", f"s{k}"):
                body.append(f"  {op}{src} = {ty}[6] reduce({src}, {init}), dimensions={{1}}, to_apply={op}")
                outs.append(f"{op}{src}")
    return "\n".join([
        "HloModule m",
        f"mx {{ a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  ROOT r = {ty}[] maximum(a, b) }}",
        f"mn {{ a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  ROOT r = {ty}[] minimum(a, b) }}",
        "ENTRY e {", *params, f"  lo = {ty}[] constant(-inf)", f"  hi = {ty}[] constant(inf)",
        f"  two = {ty}[] constant(2)", *body,
        f"  ROOT t = ({', '.join([f'{ty}[6]'] * len(outs))}) tuple({', '.join(outs)}) }}"])


def _rows(n: int, dtype, seed: int) -> np.ndarray:
    tiny = np.finfo(dtype).tiny / 4                       # a denormal
    x = np.random.default_rng(seed).standard_normal((6, n)).astype(dtype)
    x[0, n - 1] = np.nan                                   # the tail (or the last vector)
    x[1, n // 2] = np.nan                                  # inside a chain
    x[2] = -0.0
    x[2, n - 2] = 0.0                                      # +0 beats -0 for max; -0 for min
    x[3] = tiny
    x[3, 3] = -tiny                                        # denormals only: +0 and -0
    x[4] = -np.inf
    x[4, n - 1] = np.inf
    x[5, 1::3] = -tiny
    return x


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_vector_max_min_rows_bit_for_bit(ty):
    dtype = np.float32 if ty == "f32" else np.float64
    module = xlapy.hlo.parse(_module(ty))
    args = [_rows(n, dtype, k) for k, n in enumerate(LENGTHS)]
    exe = xlapy.compile(module, backend="cpu", cache=False)
    got = exe(*args)
    want = xlapy.compile(module, backend="interpreter")(*args)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        same = (np.isnan(g) & np.isnan(w)) | ((g == w) & (np.signbit(g) == np.signbit(w)))
        assert same.all(), f"output {k}: {g[~same]} != {w[~same]} at rows {np.flatnonzero(~same)}"
    suffix = "f32" if ty == "f32" else "f64"
    assert f"llvm.maximum.v8{suffix}" in exe.llvm_ir and f"llvm.minimum.v8{suffix}" in exe.llvm_ir
