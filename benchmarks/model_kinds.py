"""Models of the kinds users bring that benchmarks/model_zoo.py does not hold, in its form (a factory per
name, `MODELS` their input shapes): transposed convolution and concatenation (a U-Net decoder step),
a large-window depthwise convolution with a channels-last LayerNorm (a ConvNeXt block), a grouped
convolution (a ResNeXt block), a gated MLP (a SwiGLU feed-forward with RMSNorm), masked softmax (causal
self-attention), a small recurrent cell (a GRU cell over a few steps), squeeze-and-excitation with
hard-swish (a MobileNetV3 block) and gated dilated 1-D convolutions (a WaveNet stack). Batch 1 or 8,
CPU inference sizes; weights drawn at random after torch.manual_seed(0), as `tune` does.

    .venv/bin/python benchmarks/models.py --zoo benchmarks/model_kinds.py --minutes 3
"""

from __future__ import annotations

import torch
from torch import nn


class UNetUp(nn.Module):
    """A U-Net decoder step: the skip features go down a strided conv, come back up a transposed conv, are
    concatenated with the skip and merged by a 3x3 conv, batch norm and ReLU."""

    def __init__(self, c: int = 32) -> None:
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(c, 2 * c, 3, 2, 1, bias=False), nn.BatchNorm2d(2 * c), nn.ReLU())
        self.up = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.merge = nn.Sequential(nn.Conv2d(2 * c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())

    def forward(self, x):
        return self.merge(torch.cat([self.up(self.down(x)), x], dim=1))


class ConvNeXtBlock(nn.Module):
    """ConvNeXt (Liu et al. 2022): a 7x7 depthwise conv, LayerNorm over channels-last, a 4x MLP with GELU,
    layer scale and the residual."""

    def __init__(self, d: int = 64) -> None:
        super().__init__()
        self.dw = nn.Conv2d(d, d, 7, padding=3, groups=d)
        self.norm = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.gamma = nn.Parameter(torch.full((d,), 0.1))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.fc2(nn.functional.gelu(self.fc1(self.norm(y)))) * self.gamma
        return x + y.permute(0, 3, 1, 2)


class ResNeXtBlock(nn.Module):
    """ResNeXt (Xie et al. 2017) bottleneck: 1x1, a grouped 3x3 (cardinality 8), 1x1, batch norms, the
    projected residual."""

    def __init__(self, cin: int = 64, width: int = 128, cout: int = 128, groups: int = 8) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1, groups=groups, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return torch.relu(self.body(x) + self.proj(x))


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SwiGLU(nn.Module):
    """A LLaMA-style feed-forward: RMSNorm, gate and up projections, SiLU(gate) * up, the down projection and
    the residual, on 8 sequences of 16 tokens."""

    def __init__(self, d: int = 256, hidden: int = 688) -> None:
        super().__init__()
        self.norm = RMSNorm(d)
        self.gate, self.up = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


class CausalAttention(nn.Module):
    """Causal multi-head self-attention (GPT-style): the scores above the diagonal masked to -inf before the
    softmax, then the pre-norm MLP."""

    def __init__(self, d: int = 128, heads: int = 4, n: int = 64) -> None:
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.register_buffer("mask", torch.triu(torch.ones(n, n, dtype=torch.bool), 1))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.n1(x)).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        s = (q @ k.transpose(-1, -2)) * (d // self.heads) ** -0.5
        a = torch.softmax(s.masked_fill(self.mask, float("-inf")), dim=-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.n2(x))


class GRUSteps(nn.Module):
    """A GRU cell run over 8 time steps of a batch of 8 sequences (the loop unrolled at import), and a
    linear read-out of the last state."""

    def __init__(self, cin: int = 64, hidden: int = 128, steps: int = 8) -> None:
        super().__init__()
        self.cell, self.steps, self.hidden = nn.GRUCell(cin, hidden), steps, hidden
        self.out = nn.Linear(hidden, 32)

    def forward(self, x):
        h = torch.zeros(x.shape[0], self.hidden)
        for t in range(self.steps):
            h = self.cell(x[:, t], h)
        return self.out(h)


class MobileNetV3Block(nn.Module):
    """A MobileNetV3 (Howard et al. 2019) inverted residual: 1x1 expansion, a 5x5 depthwise conv, hard-swish,
    squeeze-and-excitation (global mean, two small FCs, hard-sigmoid, a channel scale), 1x1 projection."""

    def __init__(self, c: int = 40, expand: int = 4) -> None:
        super().__init__()
        mid = c * expand
        self.expand = nn.Sequential(nn.Conv2d(c, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(mid, mid, 5, padding=2, groups=mid, bias=False), nn.BatchNorm2d(mid),
                                nn.Hardswish())
        self.se = nn.Sequential(nn.Conv2d(mid, mid // 4, 1), nn.ReLU(), nn.Conv2d(mid // 4, mid, 1),
                                nn.Hardsigmoid())
        self.project = nn.Sequential(nn.Conv2d(mid, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        y = self.dw(self.expand(x))
        y = y * self.se(y.mean((2, 3), keepdim=True))
        return x + self.project(y)


class WaveNetStack(nn.Module):
    """WaveNet-style (van den Oord et al. 2016) gated dilated 1-D convolutions: tanh(filter) * sigmoid(gate),
    a 1x1 residual and skip per layer, dilations 1, 2, 4."""

    def __init__(self, c: int = 32, length_in: int = 32) -> None:
        super().__init__()
        self.inp = nn.Conv1d(length_in, c, 1)
        self.filt = nn.ModuleList([nn.Conv1d(c, c, 2, dilation=d, padding=d) for d in (1, 2, 4)])
        self.gate = nn.ModuleList([nn.Conv1d(c, c, 2, dilation=d, padding=d) for d in (1, 2, 4)])
        self.res = nn.ModuleList([nn.Conv1d(c, c, 1) for _ in range(3)])
        self.skip = nn.ModuleList([nn.Conv1d(c, c, 1) for _ in range(3)])

    def forward(self, x):
        x = self.inp(x)
        n = x.shape[2]
        skip = 0
        for f, g, r, s in zip(self.filt, self.gate, self.res, self.skip):
            z = torch.tanh(f(x)[:, :, :n]) * torch.sigmoid(g(x)[:, :, :n])
            x = x + r(z)
            skip = skip + s(z)
        return torch.relu(skip)


def unet_up() -> nn.Module:
    return UNetUp()


def convnext_block() -> nn.Module:
    return ConvNeXtBlock()


def resnext_block() -> nn.Module:
    return ResNeXtBlock()


def swiglu_mlp() -> nn.Module:
    return SwiGLU()


def causal_attention() -> nn.Module:
    return CausalAttention()


def gru_steps() -> nn.Module:
    return GRUSteps()


def mobilenet_v3_block() -> nn.Module:
    return MobileNetV3Block()


def wavenet_stack() -> nn.Module:
    return WaveNetStack()


#: name -> input shape (one input each)
MODELS = {
    "unet_up": "1x32x32x32",
    "convnext_block": "1x64x28x28",
    "resnext_block": "1x64x28x28",
    "swiglu_mlp": "8x16x256",
    "causal_attention": "1x64x128",
    "gru_steps": "8x8x64",
    "mobilenet_v3_block": "1x40x28x28",
    "wavenet_stack": "1x32x1024",
}
