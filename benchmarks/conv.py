"""Convolutions of ResNet-50 and MobileNetV2 (the shapes of benchmarks/models' scaled-down modules): forward, input
gradient and filter gradient, xlapy against XLA:CPU (JAX) and PyTorch's oneDNN convolutions, whichever the running
environment has, in one process.

    PYTHONPATH=. .venv-models/bin/python benchmarks/conv.py     # xlapy and JAX (XLA:CPU)
    PYTHONPATH=. .venv-torch/bin/python benchmarks/conv.py      # xlapy and PyTorch (oneDNN, channels_last)

Layouts are NHWC activations and HWIO filters (JAX's and Flax's; PyTorch runs channels_last, the same bytes).
Padding is symmetric (k // 2 on each side), so every implementation computes the same output shape. Each
gradient is a jitted vjp of the forward convolution with respect to one operand. Medians of interleaved rounds
(benchmarks/run.py's interleaved_medians); the ratio column is xlapy / the peer (below 1: xlapy faster).

`--thread-time` measures the calling thread's CPU time instead (`time.thread_time`, the minimum over the rounds,
xlapy and the peer alternating): with one thread each (OMP_NUM_THREADS=1 XLAPY_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1) it is the work each does, which other processes' load barely changes, where wall time
swings 2-5x on a shared machine.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import interleaved_medians  # noqa: E402

# (name, N, H, W, C_in, k, C_out, stride, groups)
SHAPES = [
    ("resnet50 stem 7x7/2", 8, 64, 64, 3, 7, 16, 2, 1),
    ("resnet50 1x1 64->16", 8, 16, 16, 64, 1, 16, 1, 1),
    ("resnet50 3x3 16->16", 8, 16, 16, 16, 3, 16, 1, 1),
    ("resnet50 3x3/2 32->32", 8, 16, 16, 32, 3, 32, 2, 1),
    ("resnet50 3x3 64->64", 8, 4, 4, 64, 3, 64, 1, 1),
    ("resnet50 1x1 256->512", 8, 4, 4, 256, 1, 512, 1, 1),
    ("mobilenetv2 depthwise 3x3 48", 8, 32, 32, 48, 3, 48, 1, 48),
    ("mobilenetv2 depthwise 3x3/2 96", 8, 16, 16, 96, 3, 96, 2, 96),
    ("mobilenetv2 pointwise 48->16", 8, 32, 32, 48, 1, 16, 1, 1),
]
KINDS = ("forward", "input grad", "filter grad")


def _data(n, h, w, c, k, co, stride, groups):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, h, w, c), np.float32)
    f = (rng.standard_normal((k, k, c // groups, co), np.float32) / np.sqrt(k * k * c / groups)).astype(np.float32)
    out = (h + 2 * (k // 2) - k) // stride + 1, (w + 2 * (k // 2) - k) // stride + 1
    ct = rng.standard_normal((n, *out, co), np.float32)
    return x, f, ct


def _jax_like_fns(jit, vjp, lax, put, shape, arrays):
    """Forward and both gradients of the convolution `shape`, jitted through a JAX-like API (xlapy's or JAX's)."""
    k, stride, groups = shape[5], shape[7], shape[8]
    pad = [(k // 2, k // 2)] * 2

    def conv(x, f):
        return lax.conv_general_dilated(x, f, (stride, stride), pad, dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                        feature_group_count=groups)
    fwd = jit(conv)
    dx = jit(lambda x, f, ct: vjp(lambda x: conv(x, f), x)[1](ct)[0])
    df = jit(lambda x, f, ct: vjp(lambda f: conv(x, f), f)[1](ct)[0])
    x, f, ct = [put(a) for a in arrays]
    return {"forward": lambda: fwd(x, f).block_until_ready(),
            "input grad": lambda: dx(x, f, ct).block_until_ready(),
            "filter grad": lambda: df(x, f, ct).block_until_ready()}


def xlapy_fns(shape, arrays):
    import xlapy
    import xlapy.lax as lax
    return _jax_like_fns(xlapy.jit, xlapy.vjp, lax, xlapy.numpy.asarray, shape, arrays)


def jax_fns(shape, arrays):
    import jax
    return _jax_like_fns(jax.jit, jax.vjp, jax.lax, jax.device_put, shape, arrays)


def torch_fns(shape, arrays):
    import torch
    k, stride, groups = shape[5], shape[7], shape[8]
    x, f, ct = arrays
    tx = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
    tw = torch.from_numpy(f).permute(3, 2, 0, 1).contiguous(memory_format=torch.channels_last)
    tct = torch.from_numpy(ct).permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
    conv = torch.nn.functional.conv2d
    back = torch.ops.aten.convolution_backward

    def grad(mask):
        return back(tct, tx, tw, None, [stride, stride], [k // 2, k // 2], [1, 1], False, [0, 0], groups, mask)
    with torch.no_grad():
        return {"forward": lambda: conv(tx, tw, None, stride, k // 2, 1, groups),
                "input grad": lambda: grad([True, False, False]),
                "filter grad": lambda: grad([False, True, False])}


def thread_time_minimums(fns: dict, repeat: int, min_time: float) -> dict:
    """Per function, the minimum over `repeat` alternating rounds (samples of about min_time/repeat) of the
    calling thread's CPU time per call; a fn that raises gets its error text, as interleaved_medians does."""
    best, out = {}, {}
    for name, fn in fns.items():
        try:
            fn()  # warm-up (compiles)
            best[name] = float("inf")
        except Exception as e:  # a peer that cannot run this case: say so, keep going
            out[name] = f"error: {type(e).__name__}: {str(e)[:80]}"
    for _ in range(repeat):
        for name in best:
            count, t0 = 0, time.thread_time()
            while time.thread_time() - t0 < min_time / repeat:
                fns[name]()
                count += 1
            best[name] = min(best[name], (time.thread_time() - t0) / count)
    out.update(best)
    return out


def peers():
    out = {}
    try:
        import jax  # noqa: F401
        out["XLA (jax)"] = jax_fns
    except ImportError:
        pass
    try:
        import torch  # noqa: F401
        out["PyTorch"] = torch_fns
    except ImportError:
        pass
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--min-time", type=float, default=0.3)
    p.add_argument("--only", help="a substring of the shape names")
    p.add_argument("--thread-time", action="store_true", help="the calling thread's CPU time, min over rounds")
    a = p.parse_args(argv)
    others = peers()
    names = ["xlapy", *others]
    what = "thread-time minimums" if a.thread_time else "medians"
    print(f"{what} of {a.repeat} interleaved rounds; ratio = xlapy / peer (below 1: xlapy faster)")
    head = " | ".join(names) + " | " + " | ".join(f"xlapy / {n}" for n in others)
    print(f"| shape | kind | {head} |")
    print("|---|---|" + "---|" * (len(names) + len(others)))
    ratios = {n: [] for n in others}
    for shape in SHAPES:
        if a.only and a.only not in shape[0]:
            continue
        arrays = _data(*shape[1:])
        impls = {"xlapy": xlapy_fns(shape, arrays)}
        impls.update({n: make(shape, arrays) for n, make in others.items()})
        for kind in KINDS:
            measure = thread_time_minimums if a.thread_time else interleaved_medians
            times = measure({n: impls[n][kind] for n in names}, a.repeat, a.min_time)
            cells = [f"{times[n] * 1e6:.0f} us" if isinstance(times[n], float) else str(times[n])[:40]
                     for n in names]
            rs = []
            for n in others:
                ok = isinstance(times[n], float) and isinstance(times["xlapy"], float)
                r = times["xlapy"] / times[n] if ok else None
                if r is not None:
                    ratios[n].append(r)
                rs.append(f"{r:.2f}x" if r is not None else "-")
            print(f"| {shape[0]} | {kind} | {' | '.join(cells)} | {' | '.join(rs)} |", flush=True)
    for n, rs in ratios.items():
        if rs:
            print(f"geometric mean xlapy / {n}: {float(np.exp(np.mean(np.log(rs)))):.2f}x over {len(rs)} cases; "
                  f"xlapy at least as fast on {sum(r <= 1.0 for r in rs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
