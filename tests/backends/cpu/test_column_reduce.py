"""Column reductions (column_reduce.py): reduced dims all major to the kept ones. The output-as-accumulator loop
keeps each element's order init, x[0], x[1], ..., so results equal the interpreter's bit for bit."""
import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp
from xlapy.backends.cpu.column_reduce import is_column_reduction
from xlapy.passes.pipelines import cpu_pipeline


def both(fn, *args):
    cpu = xlapy.jit(fn, backend="cpu")(*args)
    ref = xlapy.jit(fn, backend="interpreter")(*args)
    return cpu, ref


def column_reduces(fn, *args) -> int:
    m = xlapy.jit(fn).lower(*args).module
    cpu_pipeline().run(m)
    return sum(is_column_reduction(i) for c in m.computations for i in c.instructions)


CASES = [
    ("sum_rows", lambda a: xnp.sum(a, axis=0), (128, 40)),
    ("max_rows", lambda a: xnp.max(a, axis=0), (33, 17)),
    ("min_two_major_dims", lambda a: xnp.min(a, axis=(0, 1)), (3, 5, 24)),
    ("bias_sgd_update", lambda a: 1.5 - 0.01 * xnp.sum(a, axis=0), (64, 48)),
    ("mean_then_square", lambda a: xnp.mean(a, axis=0) ** 2, (16, 9)),
]


@pytest.mark.parametrize("name,fn,shape", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_bit_identical_to_interpreter(name, fn, shape, dtype, monkeypatch):
    # the reduction's order is what is compared: multiply-adds after it stay op by op, as the interpreter does
    monkeypatch.setenv("XLAPY_FP_CONTRACT", "0")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 100).astype(dtype)
    if dtype == np.float32:
        x.flat[::7] = -0.0
        x.flat[5] = np.nan
        x.flat[11] = np.inf
    assert column_reduces(fn, x) >= 1
    got, want = both(fn, x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_not_a_column_reduction():
    """Row reductions, few outputs and narrow floats keep the other loops."""
    x = np.ones((16, 32), np.float32)
    assert column_reduces(lambda a: xnp.sum(a, axis=1), x) == 0
    assert column_reduces(lambda a: xnp.sum(a, axis=0), np.ones((16, 4), np.float32)) == 0
    import ml_dtypes
    assert column_reduces(lambda a: xnp.sum(a, axis=0), x.astype(ml_dtypes.bfloat16)) == 0
