"""Groups of ATen ops beyond the models' (each group one function: one forward and one backward compile), against
eager PyTorch; gradients of a random projection of the outputs."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import xlapy.torch as xt  # noqa: E402


def pools(x, w):
    y = F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1)
    a = F.avg_pool2d(y, 3, 2, 1, ceil_mode=True, count_include_pad=False)
    b = F.adaptive_avg_pool2d(y, 3)
    c = F.max_pool2d(F.hardswish(y), 2, ceil_mode=True)
    return a.sum((2, 3)) + b.amax((2, 3)) + F.hardsigmoid(c).mean((2, 3))


def indexing(x, idx):
    g = torch.gather(x, 1, idx)
    s = torch.zeros_like(x).scatter(1, idx, 1.0) * x
    p = x.index_put((idx[:, 0],), torch.ones(x.shape[1]), accumulate=True)
    m = x.masked_fill(x > 0.5, -1.0)
    parts = torch.split(F.pad(x, (1, 2)), 2, dim=1)
    return torch.cat([g, s, p, m, torch.flip(parts[0], (0,)), x[:, 1:5:2]], 1)


def reductions(x):
    return torch.stack([x.var(1), x.amax(1), torch.logsumexp(x, 1), x.cumsum(1)[:, -1],
                        x.argmax(1).float(), F.silu(x).mean(1), F.elu(x).sum(1), F.log_softmax(x, 1)[:, 0]])


def images(x, w):
    y = F.group_norm(F.conv2d(x, w, padding=1), 2)
    y = F.interpolate(F.leaky_relu(y, 0.1), scale_factor=2, mode="nearest")
    y = F.pad(y, (1, 1, 2, 0), mode="reflect") + F.pad(y, (1, 1, 2, 0), mode="replicate")
    top = torch.topk(y.flatten(1), 5).values
    srt = torch.sort(y.flatten(1), dim=1, descending=True).values[:, :5]
    return top + srt + y.mean((1, 2, 3))[:, None]


CASES = {
    "images": (images, lambda: (torch.randn(2, 3, 4, 4), torch.randn(4, 3, 3, 3))),
    "pools": (pools, lambda: (torch.randn(2, 4, 5, 5), torch.randn(4, 3, 3, 3))),
    "indexing": (indexing, lambda: (torch.rand(4, 6), torch.randint(0, 4, (4, 3)))),
    "reductions": (reductions, lambda: (torch.randn(3, 7),)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_group_forward_and_backward(case):
    fn, make = CASES[case]
    torch.manual_seed(0)
    args = make()
    mine = [a.clone().requires_grad_(a.is_floating_point()) for a in args]
    ref = [a.clone().requires_grad_(a.is_floating_point()) for a in args]
    out = torch.compile(fn, backend="xlapy")(*mine)
    expected = fn(*ref)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    proj = torch.randn(expected.shape, generator=torch.Generator().manual_seed(1))
    (out * proj).sum().backward()
    (expected * proj).sum().backward()
    for a, b in zip(mine, ref):
        if b.grad is not None:
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)
    assert xt.report() == []
