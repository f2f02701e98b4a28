"""A value read several times inside a fusion is emitted once (the generated-value cache): y + y*y repeated
n times must emit n multiplies, not 2^n."""
import numpy as np

import xlapy


def _chain(n: int) -> str:
    lines = ["p = f32[8] parameter(0)"]
    prev = "p"
    for k in range(n):
        lines += [f"m{k} = f32[8] multiply({prev}, {prev})", f"a{k} = f32[8] add({prev}, m{k})"]
        prev = f"a{k}"
    lines[-1] = "ROOT " + lines[-1]
    return "HloModule chain\n\nENTRY e {\n  " + "\n  ".join(lines) + "\n}\n"


def test_reused_values_are_emitted_once():
    n = 16
    text = _chain(n)
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu")
    assert exe.llvm_ir.count(" fmul ") <= n          # one multiply per link (2^16 without the cache)
    x = np.full(8, 0.01, np.float32)
    np.testing.assert_allclose(exe(x), xlapy.compile(xlapy.hlo.parse(text))(x), rtol=1e-6)
