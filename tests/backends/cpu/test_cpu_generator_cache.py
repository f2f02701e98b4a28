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


def test_values_before_a_branch_are_reused_after_it():
    # regression: the cache was keyed by basic block, so every branching generator (pad, concatenate,
    # dynamic-update-slice) re-emitted everything computed before it; random.choice's sort-based shuffle
    # then grew without bound while compiling (gigabytes, minutes). Reuse now follows dominance.
    from xlapy import random
    fn = lambda k: random.choice(k, np.arange(20, dtype=np.int32).reshape(5, 4) * 2, (2,),   # noqa: E731
                                 replace=False, axis=0)
    key = random.PRNGKey(12)
    text = xlapy.jit(fn).lower(key).as_text()
    exe = xlapy.compile(xlapy.hlo.parse(text), backend="cpu")
    assert exe.llvm_ir.count("\n") < 20_000           # about 1,700 lines with the dominance-aware cache
    np.testing.assert_array_equal(exe(np.asarray(key)), xlapy.compile(xlapy.hlo.parse(text))(np.asarray(key)))
