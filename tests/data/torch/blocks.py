"""Common model blocks at the shapes of issue 13's table, for `mlir-rl-tui import` and
`benchmarks/vs_pytorch.py --blocks` (each class builds with no arguments; INPUTS gives its input)."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def _bn(c: int) -> nn.BatchNorm2d:
    bn = nn.BatchNorm2d(c)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 1.5)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
    return bn


class MLP(nn.Module):
    """3 linear layers with ReLU, batch 32."""

    def __init__(self, d: int = 256, h: int = 512) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(d, h), nn.Linear(h, h), nn.Linear(h, d)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class ResNetBlock(nn.Module):
    """ResNet basic block: 2 conv3x3 + BN + ReLU, 32 channels, 28x28."""

    def __init__(self, c: int = 32) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = _bn(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = _bn(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class InvertedResidual(nn.Module):
    """MobileNetV2 inverted residual: 1x1 expand, depthwise 3x3, 1x1 project; 24 channels x6, 28x28."""

    def __init__(self, c: int = 24, e: int = 6) -> None:
        super().__init__()
        h = c * e
        self.expand, self.bn1 = nn.Conv2d(c, h, 1, bias=False), _bn(h)
        self.dw, self.bn2 = nn.Conv2d(h, h, 3, padding=1, groups=h, bias=False), _bn(h)
        self.project, self.bn3 = nn.Conv2d(h, c, 1, bias=False), _bn(c)

    def forward(self, x):
        y = F.relu6(self.bn1(self.expand(x)))
        y = F.relu6(self.bn2(self.dw(y)))
        return x + self.bn3(self.project(y))


class Attention(nn.Module):
    """Multi-head self-attention: 4 heads, sequence 64, model width 64."""

    def __init__(self, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.h, self.dk = heads, d // heads
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):  # x: seq x d
        s, d = x.shape
        q, k, v = self.qkv(x).reshape(s, 3, self.h, self.dk).permute(1, 2, 0, 3)
        a = torch.softmax(torch.bmm(q, k.transpose(1, 2)) * self.dk ** -0.5, dim=-1)
        return self.out(torch.bmm(a, v).permute(1, 0, 2).reshape(s, d))


class LayerNormLinearGELU(nn.Module):
    """LayerNorm, Linear, GELU on 128 tokens of width 256."""

    def __init__(self, d: int = 256) -> None:
        super().__init__()
        self.ln, self.fc = nn.LayerNorm(d), nn.Linear(d, d)

    def forward(self, x):
        return F.gelu(self.fc(self.ln(x)))


class PoolStem(nn.Module):
    """ReLU then 3x3/2 max pooling, 64 channels, 112x112 (a ResNet stem's pooling)."""

    def forward(self, x):
        return F.max_pool2d(F.relu(x), 3, 2, padding=1)


INPUTS = {"MLP": "32x256", "ResNetBlock": "1x32x28x28", "InvertedResidual": "1x24x28x28",
          "Attention": "64x64", "LayerNormLinearGELU": "128x256", "PoolStem": "1x64x112x112"}
