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
