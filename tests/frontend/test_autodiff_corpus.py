"""xlapy's gradients of JAX-emitted forward programs agree with JAX's own gradients (f32).

autodiff_data/NAME.fwd.hlo is the loss JAX lowers for the corpus gradient program NAME, and NAME.npz is
the corpus record of that program: its inputs and what XLA computed for JAX's gradient program
(regenerate with autodiff_data/gen_forward.py). We differentiate the forward module with grad_module
and compare.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xlapy
from xlapy.frontend.autodiff import grad_module
from xlapy.hlo import parse

DATA = Path(__file__).resolve().parent / "autodiff_data"


def _sgd(params, grads, loss):
    """mlp_train_step returns (p - 0.1 * g for each param) + (loss,)."""
    return [p - np.float32(0.1) * g for p, g in zip(params, grads)] + [loss]


# name -> (argnums, how JAX's recorded outputs are made from (args, loss, grads))
CASES = {
    "mlp_train_step": ([0, 1, 2, 3], lambda args, loss, grads: _sgd(args[:4], grads, loss)),
    "cnn_fwd_bwd": ([0, 1, 2], lambda args, loss, grads: [loss] + grads),
    "conv2d_grads": ([0, 1], lambda args, loss, grads: grads),
    "max_pool_grad": ([0], lambda args, loss, grads: grads),
    "avg_pool_grad": ([0], lambda args, loss, grads: grads),
    "attention_grad": ([0, 1, 2], lambda args, loss, grads: grads),
    "layernorm_grad": ([0, 1, 2], lambda args, loss, grads: grads),
}


@pytest.mark.parametrize("name", list(CASES))
def test_gradient_matches_jax(name):
    argnums, expected_outputs = CASES[name]
    forward = parse((DATA / f"{name}.fwd.hlo").read_text())
    record = np.load(DATA / f"{name}.npz")
    args = [record[f"arg{i}"] for i in range(len(forward.entry.parameters))]
    grad = grad_module(forward, argnums, has_value=True)
    loss, grads = xlapy.compile(grad, backend="interpreter")(*args)
    ours = expected_outputs(args, loss, list(grads))
    for k, value in enumerate(ours):
        want = record[f"out{k}"]
        assert np.asarray(value).dtype == want.dtype
        np.testing.assert_allclose(value, want, rtol=2e-4, atol=2e-5, err_msg=f"{name} out{k}")
