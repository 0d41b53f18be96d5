"""The zoo's whole models (mlir_rl_tui.agent.zoo.MODELS) in the form `mlir-rl-tui tune FILE.py:NAME` takes: a
factory with no arguments per model, `MODELS` their input shapes (the set `benchmarks/models.py` tunes). Weights
are drawn at random (`tune` draws them after torch.manual_seed(0)); shapes are CPU inference sizes, batch 1.
"""

from __future__ import annotations

from torch import nn

from mlir_rl_tui.agent.zoo import MODELS as _ZOO


def resnet18() -> nn.Module:
    return _ZOO["resnet18"][0]()


def mobilenet_v2() -> nn.Module:
    return _ZOO["mobilenet_v2"][0]()


def tiny_vit() -> nn.Module:
    return _ZOO["tiny_vit"][0]()


def conv1d_net() -> nn.Module:
    return _ZOO["conv1d_net"][0]()


def speech_front_end() -> nn.Module:
    return _ZOO["speech_front_end"][0]()


def unet_down() -> nn.Module:
    return _ZOO["unet_down"][0]()


#: name -> input shape (one input each), what benchmarks/models.py tunes
MODELS = {name: shape for name, (_, shape) in _ZOO.items()}
