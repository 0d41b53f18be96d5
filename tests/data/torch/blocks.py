"""The six model blocks of `import`'s tests and `benchmarks/vs_pytorch.py --blocks`: the zoo's blocks
(mlir_rl_tui.agent.zoo) at fixed sizes, each a class that builds with no arguments (`FILE.py:NAME`); INPUTS
gives its input."""

import torch

from mlir_rl_tui.agent import zoo

torch.manual_seed(0)


class MLP(zoo.MLP):
    """3 linear layers with ReLU, batch 32."""

    def __init__(self) -> None:
        super().__init__(256, 512, 3)


class ResNetBlock(zoo.ResNet):
    """ResNet basic block: 2 conv3x3 + BN + ReLU, 32 channels, 28x28."""

    def __init__(self) -> None:
        super().__init__(32)


class InvertedResidual(zoo.InvRes):
    """MobileNetV2 inverted residual: 1x1 expand, depthwise 3x3, 1x1 project; 24 channels x6, 28x28."""

    def __init__(self) -> None:
        super().__init__(24, 6)


class Attention(zoo.Heads):
    """Multi-head self-attention: 4 heads, sequence 64, model width 64."""

    def __init__(self) -> None:
        super().__init__(64, 4)


class LayerNormLinearGELU(zoo.LNLinearGELU):
    """LayerNorm, Linear, GELU on 128 tokens of width 256."""

    def __init__(self) -> None:
        super().__init__(256, 256)


class PoolStem(zoo.Pool):
    """ReLU then 3x3/2 max pooling, 64 channels, 112x112 (a ResNet stem's pooling)."""

    def __init__(self) -> None:
        super().__init__(3, 2, True)


INPUTS = {"MLP": "32x256", "ResNetBlock": "1x32x28x28", "InvertedResidual": "1x24x28x28",
          "Attention": "64x64", "LayerNormLinearGELU": "128x256", "PoolStem": "1x64x112x112"}
