"""The model zoo: every PyTorch block and whole model the product is tried on, in one place.

Blocks take their sizes as arguments: `agent.block_programs` draws them for training programs, the tests'
`tests/data/torch/blocks.py` fixes them (the six blocks of `import`'s tests and `benchmarks/vs_pytorch.py
--blocks`), and the whole models are built from them (`MODELS`: ResNet-18, MobileNetV2, a small ViT, a 1-D conv
net, a speech front end, a U-Net encoder block, the set `benchmarks/models.py` tunes through
`benchmarks/model_zoo.py`). Written out here, no torchvision. Weights are drawn at random from torch's generator
(`import` and `tune` seed it with torch.manual_seed(0)); a block's batch norms draw their statistics too
(`bn(c)`), a whole model's keep PyTorch's defaults. Shapes are CPU inference sizes, batch 1.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def bn(c: int, drawn: bool = True) -> nn.BatchNorm2d:
    """A batch norm of `c` channels; `drawn`: its running statistics and affine weights drawn at random (a
    trained network's are not 0 and 1, and an import must fold them right)."""
    b = nn.BatchNorm2d(c)
    if drawn:
        with torch.no_grad():
            b.running_mean.uniform_(-0.5, 0.5)
            b.running_var.uniform_(0.5, 1.5)
            b.weight.uniform_(0.5, 1.5)
            b.bias.uniform_(-0.5, 0.5)
    return b


# -- blocks -------------------------------------------------------------------------------------------------
class MLP(nn.Module):
    """`layers` linear layers of width `h` with ReLU between, from and back to width `d`."""

    def __init__(self, d: int, h: int, layers: int) -> None:
        super().__init__()
        dims = [d] + [h] * (layers - 1) + [d]
        self.fcs = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))

    def forward(self, x):
        for i, fc in enumerate(self.fcs):
            x = fc(x) if i == len(self.fcs) - 1 else F.relu(fc(x))
        return x


class ResNet(nn.Module):
    """ResNet's basic block (He et al. 2016): two 3x3 convolutions with batch norm and ReLU, and the shortcut
    (a strided 1x1 convolution when the block changes the size)."""

    def __init__(self, c: int, cout: int | None = None, stride: int = 1, drawn: bool = True) -> None:
        super().__init__()
        cout = cout or c
        self.c1, self.b1 = nn.Conv2d(c, cout, 3, stride, 1, bias=False), bn(cout, drawn)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), bn(cout, drawn)
        self.down = None
        if stride != 1 or c != cout:
            self.down = nn.Sequential(nn.Conv2d(c, cout, 1, stride, bias=False), bn(cout, drawn))

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + (x if self.down is None else self.down(x)))


class InvRes(nn.Module):
    """MobileNetV2's inverted residual (Sandler et al. 2018): a 1x1 expansion by `e` (none when e is 1), a 3x3
    depthwise convolution, a 1x1 projection, each with batch norm (ReLU6 but the last); the residual when the
    size stays."""

    def __init__(self, c: int, e: int, cout: int | None = None, stride: int = 1, drawn: bool = True) -> None:
        super().__init__()
        cout, h = cout or c, c * e
        self.ex = None
        if e != 1:
            self.ex, self.b1 = nn.Conv2d(c, h, 1, bias=False), bn(h, drawn)
        self.dw, self.b2 = nn.Conv2d(h, h, 3, stride, 1, groups=h, bias=False), bn(h, drawn)
        self.pr, self.b3 = nn.Conv2d(h, cout, 1, bias=False), bn(cout, drawn)
        self.res = stride == 1 and c == cout

    def forward(self, x):
        y = x if self.ex is None else F.relu6(self.b1(self.ex(x)))
        y = self.b3(self.pr(F.relu6(self.b2(self.dw(y)))))
        return x + y if self.res else y


class Attention(nn.Module):
    """Single-head self-attention with separate q, k, v projections; x: 1 x seq x d."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.scale = d ** -0.5

    def forward(self, x):
        a = torch.bmm(self.q(x), self.k(x).transpose(1, 2)) * self.scale
        return torch.bmm(torch.softmax(a, dim=-1), self.v(x))


class Heads(nn.Module):
    """Multi-head self-attention: a fused qkv projection, `heads` heads, the output projection; x: seq x d."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.h, self.dk = heads, d // heads
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        s, d = x.shape
        q, k, v = self.qkv(x).reshape(s, 3, self.h, self.dk).permute(1, 2, 0, 3)
        a = torch.softmax(torch.bmm(q, k.transpose(1, 2)) * self.dk ** -0.5, dim=-1)
        return self.out(torch.bmm(a, v).permute(1, 0, 2).reshape(s, d))


class LayerNorm(nn.Module):
    """A layer norm over the last dimension, then GELU when `act`."""

    def __init__(self, d: int, act: bool) -> None:
        super().__init__()
        self.ln, self.act = nn.LayerNorm(d), act

    def forward(self, x):
        return F.gelu(self.ln(x)) if self.act else self.ln(x)


class LNLinearGELU(nn.Module):
    """LayerNorm, Linear from `d` to `h`, GELU."""

    def __init__(self, d: int, h: int) -> None:
        super().__init__()
        self.ln, self.fc = nn.LayerNorm(d), nn.Linear(d, h)

    def forward(self, x):
        return F.gelu(self.fc(self.ln(x)))


class Pool(nn.Module):
    """Max pooling `k`x`k` by stride `s` (a 3x3 one padded by 1), after a ReLU when `relu`."""

    def __init__(self, k: int, s: int, relu: bool) -> None:
        super().__init__()
        self.k, self.s, self.relu = k, s, relu

    def forward(self, x):
        return F.max_pool2d(F.relu(x) if self.relu else x, self.k, self.s, padding=self.k // 2 if self.k == 3 else 0)


class Stem(nn.Module):
    """A ResNet-like stem: a strided 3x3 convolution from 3 channels, batch norm, ReLU, 3x3/2 max pooling."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, c, 3, stride=2, padding=1, bias=False), bn(c)

    def forward(self, x):
        return F.max_pool2d(F.relu(self.bn(self.conv(x))), 3, 2, padding=1)


class ConvBNReLU(nn.Module):
    """A `k`x`k` convolution (same padding), batch norm, ReLU."""

    def __init__(self, ci: int, co: int, k: int) -> None:
        super().__init__()
        self.conv, self.bn = nn.Conv2d(ci, co, k, padding=k // 2, bias=False), bn(co)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Softmax(nn.Module):
    """A softmax over the last dimension."""

    def forward(self, x):
        return torch.softmax(x, dim=-1)


#: the block classes by name (what `agent.block_programs.draw` names)
BLOCKS: dict[str, type[nn.Module]] = dict(
    MLP=MLP, ResNet=ResNet, InvRes=InvRes, Attention=Attention, Heads=Heads, LayerNorm=LayerNorm,
    LNLinearGELU=LNLinearGELU, Pool=Pool, Stem=Stem, ConvBNReLU=ConvBNReLU, Softmax=Softmax)


# -- whole models ---------------------------------------------------------------------------------------------
class ResNet18(nn.Module):
    """ResNet-18 (He et al. 2016)."""

    def __init__(self, classes: int = 100) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [ResNet(cin, cout, stride, drawn=False), ResNet(cout, cout, 1, drawn=False)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        return self.fc(self.layers(self.stem(x)).mean((2, 3)))


class MobileNetV2(nn.Module):
    """MobileNetV2 (Sandler et al. 2018) at width 0.5."""

    def __init__(self, classes: int = 100) -> None:
        super().__init__()
        cfg = [(1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 3, 2), (6, 32, 4, 2), (6, 48, 3, 1), (6, 80, 3, 2), (6, 160, 1, 1)]
        layers: list[nn.Module] = [nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6()]
        cin = 16
        for t, c, n, s in cfg:
            for i in range(n):
                layers.append(InvRes(cin, t, c, s if i == 0 else 1, drawn=False))
                cin = c
        layers += [nn.Conv2d(cin, 640, 1, bias=False), nn.BatchNorm2d(640), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(640, classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


class Encoder(nn.Module):
    """A pre-norm transformer encoder layer: attention of `heads` heads and a 4x MLP with GELU; x: b x n x d."""

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
    """A small ViT: a 4x4 patch embedding and a stack of encoder layers."""

    def __init__(self, d: int = 96, depth: int = 2, heads: int = 3, classes: int = 10) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, d, 4, 4)
        self.pos = nn.Parameter(torch.randn(1, 64, d) * 0.02)
        self.blocks = nn.Sequential(*[Encoder(d, heads) for _ in range(depth)])
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.norm(self.blocks(x)).mean(1))


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


class UNetDown(nn.Module):
    """A U-Net encoder block: 2x2 max pooling, then two 3x3 convolutions with batch norm and ReLU."""

    def __init__(self, cin: int = 32, cout: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                                  nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                                  nn.ReLU())

    def forward(self, x):
        return self.body(x)


#: the whole models by name: (class, its one input's shape)
MODELS: dict[str, tuple[type[nn.Module], str]] = {
    "resnet18": (ResNet18, "1x3x64x64"),
    "mobilenet_v2": (MobileNetV2, "1x3x64x64"),
    "tiny_vit": (TinyViT, "1x3x32x32"),
    "conv1d_net": (Conv1dNet, "1x40x400"),
    "speech_front_end": (SpeechFrontEnd, "1x1x8000"),
    "unet_down": (UNetDown, "1x32x64x64"),
}
