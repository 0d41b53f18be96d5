"""Modules a user would import (tests/test_import.py): a transformer MLP block and a ResNet basic block."""
import torch
from torch import nn
import torch.nn.functional as F

class TransformerMLP(nn.Module):
    def __init__(self, d=64, h=256):
        super().__init__(); self.ln = nn.LayerNorm(d); self.fc1 = nn.Linear(d, h); self.fc2 = nn.Linear(h, d)
    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))

class BasicBlock(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False); self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False); self.bn2 = nn.BatchNorm2d(c)
    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class Conv1dBlock(nn.Module):
    """1-D convolutions (one padded, one strided), a group norm and a 1-D max pooling: NCW in PyTorch."""

    def __init__(self, c=8):
        super().__init__()
        self.a = nn.Conv1d(c, 16, 5, padding=2)
        self.norm = nn.GroupNorm(16, 16)
        self.b = nn.Conv1d(16, 16, 3, stride=2)
        self.pool = nn.MaxPool1d(2)

    def forward(self, x):
        return self.pool(torch.relu(self.b(torch.relu(self.norm(self.a(x))))))


class UpBlock(nn.Module):
    """A U-Net decoder step: a 2x2 stride-2 transposed convolution, the skip concatenated, a 3x3 conv."""

    def __init__(self, c=8):
        super().__init__()
        self.down = nn.Conv2d(c, 2 * c, 3, 2, 1)
        self.up = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.merge = nn.Conv2d(2 * c, c, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.merge(torch.cat([self.up(torch.relu(self.down(x))), x], dim=1)))


class GroupedBlock(nn.Module):
    """A ResNeXt-style grouped 3x3 convolution (4 groups of 8 channels) between 1x1 convolutions."""

    def __init__(self, c=32):
        super().__init__()
        self.a = nn.Conv2d(16, c, 1)
        self.g = nn.Conv2d(c, c, 3, padding=1, groups=4)
        self.b = nn.Conv2d(c, 16, 1)

    def forward(self, x):
        return x + self.b(torch.relu(self.g(torch.relu(self.a(x)))))


class RMSNormSwiGLU(nn.Module):
    """An RMSNorm (x.pow(2): math.fpowi) and a SwiGLU feed-forward."""

    def __init__(self, d=64, h=128):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))
        self.gate, self.up, self.down = nn.Linear(d, h, bias=False), nn.Linear(d, h, bias=False), nn.Linear(h, d, bias=False)

    def forward(self, x):
        n = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w
        return x + self.down(F.silu(self.gate(n)) * self.up(n))
