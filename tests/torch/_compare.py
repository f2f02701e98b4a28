"""Compare a compiled module with its eager twin: outputs, gradients of a random projection of the output (a
plain sum or mean of squares can be nearly constant, leaving gradients that are rounding noise), and buffers."""
from __future__ import annotations

import copy

import torch


def run_both(model: torch.nn.Module, inputs: tuple, train: bool, backward: bool = True):
    """(compiled module, eager twin, compiled output, eager output); with backward, both have .grad set."""
    model.train(train)
    twin = copy.deepcopy(model)
    compiled = torch.compile(model, backend="xlapy")
    out = compiled(*inputs)
    ref = twin(*inputs)
    if backward:
        proj = torch.randn(ref.shape, generator=torch.Generator().manual_seed(5), dtype=ref.dtype)
        (out * proj).sum().backward()
        (ref * proj).sum().backward()
    return compiled, twin, out, ref


def assert_close_models(model: torch.nn.Module, twin: torch.nn.Module, rtol: float) -> None:
    """Every parameter's gradient and every buffer agree, relative to the largest magnitude of each (at least a
    thousandth of the largest gradient of all: some gradients are zero but for rounding, such as that of a bias
    just before a training-mode batch norm, which removes any per-channel shift)."""
    floor = 1e-3 * max(q.grad.abs().max() for q in twin.parameters() if q.grad is not None)
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert (p.grad is None) == (q.grad is None), name
        if q.grad is not None:
            err = (p.grad - q.grad).abs().max() / max(q.grad.abs().max(), floor)
            assert err < rtol, f"gradient of {name}: relative error {float(err):.2e}"
    for (name, b), c in zip(model.named_buffers(), twin.buffers()):
        if b.dtype.is_floating_point:
            torch.testing.assert_close(b, c, rtol=rtol, atol=rtol, msg=f"buffer {name}")
        else:
            assert torch.equal(b, c), f"buffer {name}"
