"""PyTorch twins of the real-model suite's modules: the same architecture at the same sizes, written with
torch.nn's own layers, so that `benchmarks/run_models.py --torch` can time torch (eager) and torch.compile
(inductor) beside XLA:CPU and xlapy on the models that exist in both (issue 11).

A twin is a timing twin, not a numerical one: its weights are PyTorch's default initialization (seed 0), its
data are drawn from the same distributions as the corpus's inputs, and nothing compares its outputs with
XLA's. What has to match is the work: layer for layer the same shapes, the same kinds of layers (BatchNorm in
training mode for the training steps, AdamW with global-norm clipping where optax clips), the same batch.

| module | twin | differs from the corpus module in |
|---|---|---|
| resnet50/fwd, /train | ResNet-50 bottlenecks (3-4-6-3), width 16, batch 8, 64x64 | NCHW tensors in channels_last memory (PyTorch's fast CPU layout) where Flax is NHWC; SGD(nesterov, weight_decay) as optax's chain |
| vit/fwd, /train | ViT: 4x4 patch conv, cls token, 6 pre-LN blocks (d=128, 4 heads, MLP 256, tanh GELU) | nn.MultiheadAttention packs q/k/v into one projection (nnx.MultiHeadAttention has three) |
| gpt2/train | GPT-2-shaped decoder: 6 layers, d=192, 6 heads, vocab 2048, tied embedding, batch 4 x 64 | attention by F.scaled_dot_product_attention(is_causal=True), the PyTorch way |
| gru/fwd, /train | Embedding(1000, 32), two GRU(128) (reset after, as Keras), Dense(5), batch 32 x 64 | cuDNN-style fused nn.GRU in place of Keras' per-step cell |
| mobilenetv2/fwd, /train | MobileNetV2(alpha=0.35): Keras' channel rounding, ReLU6, 64x64, 10 classes, batch 8 | symmetric padding on the stride-2 depthwise convs (Keras pads bottom/right) |

No twin for gpt2/sample (a KV-cache loop inside the compiled program), lstm (Flax's ragged nn.RNN), gnn
(segment sums) and unet (Equinox): a hand port would not be the same program.

`make(module_id)` returns (eager step, torch.compile'd step), two zero-argument callables over private copies
of one model: a forward under `torch.no_grad()` in eval mode, or a training step (zero_grad, forward, loss,
backward, optional clipping, optimizer step) with the model compiled and the optimizer eager (foreach), as
PyTorch's tutorials write it.
"""
from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn


# ---------------------------------------------------------------- ResNet-50 (width 16)

class Bottleneck(nn.Module):
    def __init__(self, cin: int, filters: int, stride: int):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, filters, 1, bias=False), nn.BatchNorm2d(filters, eps=1e-5, momentum=0.1)
        self.conv2 = nn.Conv2d(filters, filters, 3, stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(filters, eps=1e-5, momentum=0.1)
        self.conv3 = nn.Conv2d(filters, 4 * filters, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(4 * filters, eps=1e-5, momentum=0.1)
        self.short = None
        if stride != 1 or cin != 4 * filters:
            self.short = nn.Sequential(nn.Conv2d(cin, 4 * filters, 1, stride, bias=False),
                                       nn.BatchNorm2d(4 * filters, eps=1e-5, momentum=0.1))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu((x if self.short is None else self.short(x)) + y)


class ResNet50(nn.Module):
    def __init__(self, width: int = 16, classes: int = 100):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, padding=3, bias=False), nn.BatchNorm2d(width),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, padding=1))
        blocks, cin = [], width
        for stage, count in enumerate((3, 4, 6, 3)):
            for b in range(count):
                filters = width * 2 ** stage
                blocks.append(Bottleneck(cin, filters, 2 if stage > 0 and b == 0 else 1))
                cin = 4 * filters
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean(dim=(2, 3)))


# ---------------------------------------------------------------- ViT (flax.nnx twin)

class VitBlock(nn.Module):
    def __init__(self, d: int, heads: int, hidden: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class ViT(nn.Module):
    def __init__(self, image=32, patch=4, d=128, depth=6, heads=4, hidden=256, classes=10):
        super().__init__()
        self.embed = nn.Conv2d(3, d, patch, patch)
        tokens = (image // patch) ** 2 + 1
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, tokens, d) * 0.02)
        self.blocks = nn.Sequential(*[VitBlock(d, heads, hidden) for _ in range(depth)])
        self.norm, self.head = nn.LayerNorm(d, eps=1e-6), nn.Linear(d, classes)

    def forward(self, images):
        x = self.embed(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.blocks(x)[:, 0]))


# ---------------------------------------------------------------- GPT-2-shaped decoder (flax.linen twin)

class GptBlock(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab=2048, d=192, heads=6, layers=6, max_len=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(max_len, d) * 0.02)
        self.blocks = nn.Sequential(*[GptBlock(d, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(d, eps=1e-6)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        return self.norm(self.blocks(x)) @ self.embed.weight.T          # tied output embedding, as GPT-2


# ---------------------------------------------------------------- GRU classifier (Keras twin)

class GruClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(1000, 32)
        self.gru1, self.gru2 = nn.GRU(32, 128, batch_first=True), nn.GRU(128, 128, batch_first=True)
        self.dense = nn.Linear(128, 5)

    def forward(self, tokens):
        h, _ = self.gru1(self.embed(tokens))
        h, _ = self.gru2(h)
        return self.dense(h[:, -1])


# ---------------------------------------------------------------- MobileNetV2 (keras.applications twin)

def _divisible(v: float, divisor: int = 8) -> int:
    """Keras' _make_divisible: round to a multiple of divisor, never more than 10% down."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expansion: int):
        super().__init__()
        mid = cin * expansion
        layers = [] if expansion == 1 else [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid, eps=1e-3),
                                            nn.ReLU6()]
        layers += [nn.Conv2d(mid, mid, 3, stride, padding=1, groups=mid, bias=False), nn.BatchNorm2d(mid, eps=1e-3),
                   nn.ReLU6(), nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout, eps=1e-3)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1))            # (expansion, channels, repeats, first stride), as Keras' MobileNetV2

    def __init__(self, alpha: float = 0.35, classes: int = 10):
        super().__init__()
        cin = _divisible(32 * alpha)
        layers = [nn.Conv2d(3, cin, 3, 2, padding=1, bias=False), nn.BatchNorm2d(cin, eps=1e-3), nn.ReLU6()]
        for t, c, n, s in self.SETTINGS:
            cout = _divisible(c * alpha)
            for i in range(n):
                layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280, eps=1e-3), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(1280, classes)

    def forward(self, x):
        return self.head(self.features(x).mean(dim=(2, 3)))


# ---------------------------------------------------------------- the twins

def _images(batch: int, size: int) -> torch.Tensor:
    return torch.randn(batch, 3, size, size).contiguous(memory_format=torch.channels_last)


def _labels(batch: int, classes: int) -> torch.Tensor:
    return torch.randint(0, classes, (batch,))


# module id -> (model factory, inputs factory, loss(model, *inputs) or None for a forward, optimizer factory, clip)
TWINS = {
    "resnet50/fwd": (lambda: ResNet50(), lambda: (_images(8, 64),), None, None, None),
    "resnet50/train": (lambda: ResNet50(), lambda: (_images(8, 64), _labels(8, 100)),
                       lambda m, x, y: F.cross_entropy(m(x), y),
                       lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4), None),
    "vit/fwd": (lambda: ViT(), lambda: (torch.randn(8, 3, 32, 32),), None, None, None),
    "vit/train": (lambda: ViT(), lambda: (torch.randn(8, 3, 32, 32), _labels(8, 10)),
                  lambda m, x, y: F.cross_entropy(m(x), y),
                  lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.05), 1.0),
    "gpt2/train": (lambda: GPT(), lambda: (torch.randint(0, 2048, (4, 64)),),
                   lambda m, t: F.cross_entropy(m(t)[:, :-1].reshape(-1, 2048), t[:, 1:].reshape(-1)),
                   lambda p: torch.optim.AdamW(p, lr=3e-4, weight_decay=0.1), 1.0),
    "gru/fwd": (lambda: GruClassifier(), lambda: (torch.randint(0, 1000, (32, 64)),), None, None, None),
    "gru/train": (lambda: GruClassifier(), lambda: (torch.randint(0, 1000, (32, 64)), _labels(32, 5)),
                  lambda m, t, y: F.cross_entropy(m(t), y), lambda p: torch.optim.Adam(p, lr=1e-3), None),
    "mobilenetv2/fwd": (lambda: MobileNetV2(), lambda: (_images(8, 64),), None, None, None),
    "mobilenetv2/train": (lambda: MobileNetV2(), lambda: (_images(8, 64), _labels(8, 10)),
                          lambda m, x, y: F.cross_entropy(m(x), y),
                          lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), None),
}


def has_twin(module_id: str) -> bool:
    return module_id in TWINS


def _step(model: nn.Module, run: nn.Module, inputs: tuple, loss, optimizer, clip):
    if loss is None:
        model.eval()

        def forward():
            with torch.no_grad():
                return run(*inputs)
        return forward
    model.train()
    opt = optimizer(model.parameters())

    def train_step():
        opt.zero_grad(set_to_none=True)
        value = loss(run, *inputs)
        value.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        return value
    return train_step


def make(module_id: str):
    """(eager step, compiled step) for `module_id`: zero-argument callables, each over its own copy of one
    model (seed 0), with the same inputs. The compiled step compiles on its first call."""
    factory, make_inputs, loss, optimizer, clip = TWINS[module_id]
    torch.manual_seed(0)
    model = factory()
    if module_id.startswith(("resnet50", "mobilenetv2")):
        model = model.to(memory_format=torch.channels_last)
    inputs = make_inputs()
    eager, compiled = model, copy.deepcopy(model)
    return (_step(eager, eager, inputs, loss, optimizer, clip),
            _step(compiled, torch.compile(compiled), inputs, loss, optimizer, clip))


def parameter_count(module_id: str) -> int:
    torch.manual_seed(0)
    return sum(math.prod(p.shape) for p in TWINS[module_id][0]().parameters())
