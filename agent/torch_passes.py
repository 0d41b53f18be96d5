"""`import`'s rewrites of a PyTorch module before it is exported (engine.rewrite.graph rewrites the exported MLIR).

- `bn`: eval-mode conv + batch norm pairs as one convolution (PyTorch's own
  `torch.fx.experimental.optimization.fuse`, what inference engines and torch.compile's freezing do).
- `convt`: a transposed convolution as the sub-pixel convolution it equals (Shi et al. 2016, "Real-time
  single image and video super-resolution using an efficient sub-pixel convolutional neural network"): one
  ordinary convolution of the input with stride**2 times the output channels, then a pixel shuffle and a
  crop. torch-mlir lowers a transposed convolution as an ordinary one over the input with stride-1 zeros
  inserted between its pixels, and flips its weights on every call: for a U-Net's 2x2 stride-2
  up-convolution that is four times the multiply-adds, three quarters of them by zero.
"""

from __future__ import annotations

import math


def fold_batch_norms(model):
    """Eval-mode conv + batch norm pairs as one convolution (weights and bias rescaled); the model
    unchanged when torch.fx cannot trace it. Returns (model, how many folded)."""
    import torch

    try:
        from torch.fx.experimental.optimization import fuse

        fused = fuse(model)
    except Exception:  # noqa: BLE001 - a model torch.fx cannot trace is exported as it is
        return model, 0
    before = sum(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())
    after = sum(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in fused.modules())
    return fused, before - after


def _subpixel_class():
    import torch
    from torch import nn

    class SubPixelConv(nn.Module):
        """A ConvTranspose{1,2}d of groups 1 and dilation 1 as conv + pixel shuffle + crop (see the module)."""

        def __init__(self, convt) -> None:
            super().__init__()
            dims = len(convt.kernel_size)
            self.dims = dims
            self.s, self.k = tuple(convt.stride), tuple(convt.kernel_size)
            self.p, self.op = tuple(convt.padding), tuple(convt.output_padding)
            kk = tuple(math.ceil(k / s) for k, s in zip(self.k, self.s))  # taps per phase
            self.taps = kk
            w = convt.weight.detach()  # [cin, cout, *k]
            cin, cout = w.shape[0], w.shape[1]
            # phase r of a dimension takes taps r + (K-1-m)*s at position m of its kernel (zero past k)
            v = torch.zeros((cout, *self.s, cin, *kk), dtype=w.dtype)
            if dims == 1:
                for r in range(self.s[0]):
                    for m in range(kk[0]):
                        t = r + (kk[0] - 1 - m) * self.s[0]
                        if t < self.k[0]:
                            v[:, r, :, m] = w[:, :, t].T
            else:
                for rh in range(self.s[0]):
                    for rw in range(self.s[1]):
                        for mh in range(kk[0]):
                            th = rh + (kk[0] - 1 - mh) * self.s[0]
                            if th >= self.k[0]:
                                continue
                            for mw in range(kk[1]):
                                tw = rw + (kk[1] - 1 - mw) * self.s[1]
                                if tw < self.k[1]:
                                    v[:, rh, rw, :, mh, mw] = w[:, :, th, tw].T
            self.weight = nn.Parameter(v.reshape(cout * math.prod(self.s), cin, *kk), requires_grad=False)
            self.bias = None if convt.bias is None else nn.Parameter(convt.bias.detach().clone(), requires_grad=False)
            self.cout = cout

        def forward(self, x):
            f = nn.functional
            pad = [t - 1 for t in self.taps]
            if self.dims == 1:
                y = f.conv1d(x, self.weight, padding=pad[0])  # [b, cout*s, L + K - 1]
                b, _, n = y.shape
                y = y.reshape(b, self.cout, self.s[0], n).permute(0, 1, 3, 2).reshape(b, self.cout, n * self.s[0])
            else:
                y = f.conv2d(x, self.weight, padding=pad)
                b, _, h, w = y.shape
                y = y.reshape(b, self.cout, self.s[0], self.s[1], h, w).permute(0, 1, 4, 2, 5, 3)
                y = y.reshape(b, self.cout, h * self.s[0], w * self.s[1])
            # the full transposed output starts at phase 0 of position 0: crop the padding, keep output_padding
            ins = x.shape[2:]
            for d in range(self.dims):
                n = (ins[d] - 1) * self.s[d] - 2 * self.p[d] + self.k[d] + self.op[d]
                have = y.shape[2 + d] - self.p[d]
                if have < n:  # output_padding past the last tap: zeros
                    widths = [0, 0] * (self.dims - 1 - d) + [0, n - have]
                    y = f.pad(y, widths)
                y = y.narrow(2 + d, self.p[d], n)
            if self.bias is not None:
                y = y + self.bias.reshape(1, -1, *([1] * self.dims))
            return y

    return SubPixelConv


def subpixel_transposed_convs(model):
    """Each `nn.ConvTranspose1d`/`2d` of groups 1, dilation 1 and zero padding mode replaced by its
    sub-pixel form, in a copy of the model (the caller's module is left as it is). Returns (model, how many)."""
    import copy

    from torch import nn

    def takes(m) -> bool:
        return isinstance(m, nn.ConvTranspose1d | nn.ConvTranspose2d) and m.groups == 1 \
            and all(d == 1 for d in m.dilation) and m.padding_mode == "zeros"

    if not any(takes(m) for m in model.modules()):
        return model, 0
    model = copy.deepcopy(model)
    cls = _subpixel_class()
    n = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if takes(child):
                setattr(parent, name, cls(child))
                n += 1
    return model, n

