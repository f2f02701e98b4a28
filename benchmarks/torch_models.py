"""PyTorch models through torch.compile (issue 17): eager PyTorch, inductor and xlapy side by side, in one process.

    .venv-torch/bin/python benchmarks/torch_models.py                       # every model, fwd and train step
    .venv-torch/bin/python benchmarks/torch_models.py --models gpt,encoder --repeat 10 --out /tmp/torch.md

For each model (tests/torch/models.py: resnet18 and mobilenet_v3_small from torchvision with random weights,
nn.TransformerEncoder with 2 layers, a small GPT) and each task, each backend compiles once (the first call's
time is its compile time, dynamo and AOTAutograd included) and is then timed: `fwd` is an eval-mode forward
under no_grad, `train` is forward + backward + an SGD step. Times are medians of --repeat calls, taken in
interleaved rounds (each backend once per round) so the machine's slow phases hit all alike. Ratios are
backend / eager: below 1 is faster than eager PyTorch. Dropout is off (p=0) so that every backend runs the same
arithmetic. Needs torch, and torchvision for the vision models (skipped without it).
"""
from __future__ import annotations

import argparse
import copy
import importlib.util
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import xlapy.torch  # noqa: E402,F401  (registers nothing: the entry point names the backend "xlapy")

_spec = importlib.util.spec_from_file_location("torch_test_models", ROOT / "tests" / "torch" / "models.py")
models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(models)

BACKENDS = ["eager", "inductor", "xlapy"]


def make(name: str, batch: int, size: int):
    """(model, inputs, loss(output) -> scalar) for `name`."""
    torch.manual_seed(0)
    if name == "gpt":
        return models.GPT(), models.gpt_inputs(batch), lambda out: out
    if name == "encoder":
        return models.encoder(), (torch.randn(batch, 16, 32),), lambda out: out.square().mean()
    model = models.vision(name)
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    return model, (torch.randn(batch, 3, size, size),), lambda out: out.square().mean()


def prepare(backend: str, model, inputs, loss, task: str):
    """A zero-argument step of `task` on a private copy of `model`, compiled by `backend`."""
    model = copy.deepcopy(model)
    fn = model if backend == "eager" else torch.compile(model, backend=backend)
    if task == "fwd":
        model.eval()

        def step():
            with torch.no_grad():
                return fn(*inputs)
        return step
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad(set_to_none=True)
        loss(fn(*inputs)).backward()
        opt.step()
    return step


def bench(name: str, task: str, args) -> dict:
    model, inputs, loss = make(name, args.batch, args.size)
    steps, compile_s = {}, {}
    for b in args.backends:
        torch._dynamo.reset()
        step = prepare(b, model, inputs, loss, task)
        t = time.perf_counter()
        step()
        step()          # the second call compiles the backward lazily too, and settles recompiles
        compile_s[b] = time.perf_counter() - t
        steps[b] = step
    times = {b: [] for b in args.backends}
    for _ in range(args.repeat):
        for b in args.backends:
            t = time.perf_counter()
            steps[b]()
            times[b].append(time.perf_counter() - t)
    return {"model": name, "task": task, "median": {b: statistics.median(v) for b, v in times.items()},
            "compile": compile_s}


def table(rows: list[dict], backends: list[str]) -> str:
    head = ("| model | task | " + " | ".join(f"{b} ms" for b in backends) + " | "
            + " | ".join(f"{b}/eager" for b in backends if b != "eager") + " | "
            + " | ".join(f"{b} first calls s" for b in backends if b != "eager") + " |")
    lines = [head, "|" + "---|" * (2 + len(backends) + 2 * (len(backends) - 1))]
    for r in rows:
        med, comp = r["median"], r["compile"]
        cells = [f"{med[b] * 1e3:.2f}" for b in backends]
        cells += [f"{med[b] / med['eager']:.2f}" for b in backends if b != "eager"]
        cells += [f"{comp[b]:.1f}" for b in backends if b != "eager"]
        lines.append(f"| {r['model']} | {r['task']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="resnet18,mobilenet_v3_small,encoder,gpt")
    p.add_argument("--tasks", default="fwd,train")
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--size", type=int, default=64, help="image side of the vision models")
    p.add_argument("--threads", type=int, help="threads for PyTorch (set_num_threads) and xlapy "
                   "(XLAPY_NUM_THREADS); default: each library's own")
    p.add_argument("--out", help="also write the table to this file")
    args = p.parse_args()
    args.backends = args.backends.split(",")
    if "eager" not in args.backends:
        args.backends.insert(0, "eager")
    if args.threads:
        torch.set_num_threads(args.threads)
        os.environ["XLAPY_NUM_THREADS"] = str(args.threads)
    rows = []
    for name in args.models.split(","):
        if name not in ("gpt", "encoder") and importlib.util.find_spec("torchvision") is None:
            print(f"{name}: skipped (no torchvision)")
            continue
        for task in args.tasks.split(","):
            rows.append(bench(name, task, args))
            print(table(rows[-1:], args.backends).splitlines()[-1], flush=True)
    text = (f"torch {torch.__version__}, {platform.machine()}, {torch.get_num_threads()} threads, batch "
            f"{args.batch}, images {args.size}x{args.size}, median of {args.repeat}\n\n" + table(rows, args.backends))
    print("\n" + text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
