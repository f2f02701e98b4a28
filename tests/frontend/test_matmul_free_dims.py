"""matmul of a stack of matrices with one matrix (activations @ weights): the stack's leading dims are free dims
of one dot_general, as in JAX, not a batch the matrix is broadcast over. Values against numpy for every rank
mix (both `@` and xlapy.numpy.matmul), and the weight gradient is one dot contracting the leading dims, with no
batched dot and sum over the batch (which cost a column-reduce kernel per weight in every training step)."""
import numpy as np
import pytest

import xlapy
import xlapy.numpy as xnp

SHAPES = [((4,), (4,)), ((4,), (4, 3)), ((5, 4), (4,)), ((8, 5, 4), (4,)), ((8, 5, 4), (4, 3)),
          ((4,), (2, 4, 3)), ((2, 1, 5, 4), (3, 4, 2)), ((5, 4), (4, 3)), ((7, 2, 5, 4), (4, 3))]


@pytest.mark.parametrize("matmul", [lambda x, y: x @ y, xnp.matmul], ids=["operator", "xlapy.numpy"])
def test_values_match_numpy(matmul):
    rng = np.random.default_rng(0)
    for xs, ys in SHAPES:
        x, y = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ys).astype(np.float32)
        got = np.asarray(xlapy.jit(matmul)(x, y))
        assert got.shape == (x @ y).shape, (xs, ys)
        np.testing.assert_allclose(got, x @ y, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("matmul", [lambda x, y: x @ y, xnp.matmul], ids=["operator", "xlapy.numpy"])
def test_weight_gradient_is_one_dot(matmul):
    x = np.random.default_rng(1).standard_normal((8, 5, 4)).astype(np.float32)
    w = np.random.default_rng(2).standard_normal((4, 3)).astype(np.float32)
    grad = xlapy.jit(xlapy.grad(lambda w, x: xnp.sum(matmul(x, w))))
    text = grad.lower(w, x).as_text()
    dots = [line for line in text.splitlines() if " dot(" in line]
    assert len(dots) == 2 and not any("batch_dims" in line for line in dots), text
    assert not any("reduce(" in line and "f32[8,4,3]" in line for line in text.splitlines()), text
    np.testing.assert_allclose(np.asarray(grad(w, x)), np.broadcast_to(x.sum((0, 1))[:, None], (4, 3)), rtol=1e-5)


def test_contracting_mismatch_is_an_error():
    with pytest.raises(xlapy.XlapyError, match="contracting"):
        xlapy.jit(lambda x, w: x @ w)(np.zeros((2, 3, 4), np.float32), np.zeros((5, 3), np.float32))
