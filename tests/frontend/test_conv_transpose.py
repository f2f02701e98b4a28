"""lax.conv_transpose matches JAX's: the corpus records jax.lax.conv_transpose's outputs (tools/gen_corpus.py)."""
import numpy as np
import pytest

import xlapy
from xlapy.testing import CORPUS, assert_same
from xlapy.tools import npz

CASES = {
    "conv2d_transpose": dict(strides=(2, 2), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
    "conv2d_transpose_valid_kernel": dict(strides=(2, 1), padding="VALID", transpose_kernel=True,
                                          dimension_numbers=("NHWC", "HWIO", "NHWC")),
    "conv2d_transpose_pads_dilated": dict(strides=(2, 2), padding=((1, 2), (0, 1)), rhs_dilation=(1, 2),
                                          dimension_numbers=("NCHW", "OIHW", "NCHW")),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("jitted", [False, True])
def test_conv_transpose_matches_jax(name, jitted):
    data = npz.load(CORPUS / "jax" / f"{name}.npz")
    (x, w), (expected,) = npz.numbered(data, "arg"), npz.numbered(data, "out")
    fn = lambda a, b: xlapy.lax.conv_transpose(a, b, **CASES[name])   # noqa: E731
    got = (xlapy.jit(fn) if jitted else fn)(x, w)
    assert_same(np.asarray(got), expected, where=name, rtol=1e-5, atol=1e-5)


def test_conv_transpose_rejects_unknown_padding():
    x, w = np.zeros((1, 3, 3, 2), np.float32), np.zeros((3, 3, 2, 3), np.float32)
    with pytest.raises(xlapy.XlapyError, match="unknown padding"):
        xlapy.lax.conv_transpose(x, w, (2, 2), "FULL")
