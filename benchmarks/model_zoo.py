"""Whole models and blocks users run on CPUs, written out here (no torchvision): the set
`benchmarks/models.py` tunes. Each name is a factory with no arguments (what `mlir-rl-tui tune FILE.py:NAME`
builds); `MODELS` gives each one's input shape. Weights are drawn at random (`tune` draws them after
torch.manual_seed(0)); shapes are CPU inference sizes, batch 1.
"""

from __future__ import annotations

import torch
from torch import nn


# -- ResNet-18 (He et al. 2016), batch 1 ---------------------------------------------------------------
class _Basic(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, classes: int = 100) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [_Basic(cin, cout, stride), _Basic(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        return self.fc(self.layers(self.stem(x)).mean((2, 3)))


# -- MobileNetV2 (Sandler et al. 2018), width 0.5 ------------------------------------------------------
class _Inverted(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        mid = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU6()]
        layers += [nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid), nn.ReLU6(),
                   nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.res = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.res else y


class MobileNetV2(nn.Module):
    def __init__(self, classes: int = 100) -> None:
        super().__init__()
        cfg = [(1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 3, 2), (6, 32, 4, 2), (6, 48, 3, 1), (6, 80, 3, 2), (6, 160, 1, 1)]
        layers: list[nn.Module] = [nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6()]
        cin = 16
        for t, c, n, s in cfg:
            for i in range(n):
                layers.append(_Inverted(cin, c, s if i == 0 else 1, t))
                cin = c
        layers += [nn.Conv2d(cin, 640, 1, bias=False), nn.BatchNorm2d(640), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(640, classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


# -- a small ViT: patch embedding and a stack of pre-norm encoder layers --------------------------------
class _Encoder(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.n1(x)).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-1, -2) * (d // self.heads) ** -0.5, dim=-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.n2(x))


class TinyViT(nn.Module):
    def __init__(self, d: int = 96, depth: int = 2, heads: int = 3, classes: int = 10) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, d, 4, 4)
        self.pos = nn.Parameter(torch.randn(1, 64, d) * 0.02)
        self.blocks = nn.Sequential(*[_Encoder(d, heads) for _ in range(depth)])
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.norm(self.blocks(x)).mean(1))


# -- 1-D convolutions -----------------------------------------------------------------------------------
class Conv1dNet(nn.Module):
    """A temporal convolution classifier (keyword spotting style): 1-D convs, batch norms, ReLUs, pooling."""

    def __init__(self, cin: int = 40, classes: int = 12) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for c_in, c_out in ((cin, 64), (64, 64), (64, 96), (96, 96)):
            layers += [nn.Conv1d(c_in, c_out, 5, padding=2, bias=False), nn.BatchNorm1d(c_out), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.fc = nn.Linear(96, classes)

    def forward(self, x):
        return self.fc(self.body(x).mean(2))


class SpeechFrontEnd(nn.Module):
    """A strided 1-D conv feature encoder over raw audio (wav2vec 2.0's, narrower), with GELU and group norm."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        specs = [(1, width, 10, 5), (width, width, 3, 2), (width, width, 3, 2), (width, width, 2, 2)]
        layers: list[nn.Module] = []
        for i, (c_in, c_out, k, s) in enumerate(specs):
            layers.append(nn.Conv1d(c_in, c_out, k, s, bias=False))
            if i == 0:
                layers.append(nn.GroupNorm(c_out, c_out))
            layers.append(nn.GELU())
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


# -- a U-Net encoder block ------------------------------------------------------------------------------
class UNetDown(nn.Module):
    def __init__(self, cin: int = 32, cout: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                                  nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                                  nn.ReLU())

    def forward(self, x):
        return self.body(x)


def resnet18() -> nn.Module:
    return ResNet18()


def mobilenet_v2() -> nn.Module:
    return MobileNetV2()


def tiny_vit() -> nn.Module:
    return TinyViT()


def conv1d_net() -> nn.Module:
    return Conv1dNet()


def speech_front_end() -> nn.Module:
    return SpeechFrontEnd()


def unet_down() -> nn.Module:
    return UNetDown()


#: name -> input shape (one input each), what benchmarks/models.py tunes
MODELS = {
    "resnet18": "1x3x64x64",
    "mobilenet_v2": "1x3x64x64",
    "tiny_vit": "1x3x32x32",
    "conv1d_net": "1x40x400",
    "speech_front_end": "1x1x8000",
    "unet_down": "1x32x64x64",
}
