"""The models of the PyTorch front end's tests and benchmark (benchmarks/torch_models.py loads this file): built
from code with random weights, nothing downloaded. Sizes are small enough to compile in seconds."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d: int, heads: int, dropout: float):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.drop(self.proj(a.transpose(1, 2).reshape(B, T, D)))
        return x + self.drop(self.fc2(F.gelu(self.fc(self.ln2(x)))))


class GPT(nn.Module):
    """A small GPT: token and position embeddings, pre-norm blocks with causal attention, tied-free head; it returns
    the cross-entropy loss of next-token targets."""

    def __init__(self, vocab: int = 64, d: int = 32, heads: int = 4, layers: int = 2, block: int = 16,
                 dropout: float = 0.0):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.blocks = nn.ModuleList(Block(d, heads, dropout) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def encoder(d: int = 32, heads: int = 4, ff: int = 64, layers: int = 2) -> nn.Module:
    layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


def gpt_inputs(batch: int = 2, block: int = 16, vocab: int = 64):
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(0, vocab, (batch, block), generator=g)
    return idx, torch.randint(0, vocab, (batch, block), generator=g)


def vision(name: str, classes: int = 10) -> nn.Module:
    import torchvision
    return getattr(torchvision.models, name)(num_classes=classes)
