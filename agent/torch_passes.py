"""`import`'s rewrites of a PyTorch module before it is exported (engine.rewrite.graph rewrites the exported MLIR).

- `bn`: eval-mode conv + batch norm pairs as one convolution (PyTorch's own
  `torch.fx.experimental.optimization.fuse`, what inference engines and torch.compile's freezing do).
  `fold_functional_batch_norms` does the same on a TorchDynamo graph (`torch.compile`'s backend).
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


def fold_functional_batch_norms(gm, example_inputs: list, constant: list[bool]) -> int:
    """Eval-mode `batch_norm` after a `conv1d/2d/3d` whose weights, bias and statistics are all constants,
    folded into the convolution (its weight and bias rescaled, new constants on `gm`; the user's tensors
    untouched), as `fold_batch_norms` folds conv + BatchNorm modules for `import`: the graphs TorchDynamo
    hands a backend (agent.dynamo) hold functional calls, not modules; `constant[i]` says which placeholders
    are the model's parameters and buffers. How many were folded."""
    import torch

    const: dict = {}
    for node, x, c in zip([n for n in gm.graph.nodes if n.op == "placeholder"], example_inputs, constant):
        if c:
            const[node] = x.detach()
    convs = {torch.conv1d, torch.conv2d, torch.conv3d, torch.nn.functional.conv1d, torch.nn.functional.conv2d,
             torch.nn.functional.conv3d}
    folded = 0
    for bn in list(gm.graph.nodes):
        if bn.op != "call_function" or bn.target is not torch.nn.functional.batch_norm or bn.kwargs:
            continue
        args = list(bn.args) + [None] * (8 - len(bn.args))
        y, mean, var, gamma, beta, training, _, eps = args
        eps = 1e-5 if eps is None else eps
        conv = y if isinstance(y, torch.fx.Node) else None
        if training or conv is None or conv.op != "call_function" or conv.target not in convs or conv.kwargs \
                or len(conv.users) != 1 or any(t is not None and t not in const for t in (gamma, beta)) \
                or mean not in const or var not in const or conv.args[1] not in const:
            continue
        bias = conv.args[2] if len(conv.args) > 2 else None
        if bias is not None and bias not in const:
            continue
        w = const[conv.args[1]]
        scale = torch.rsqrt(const[var] + eps) * (const[gamma] if gamma is not None else 1.0)
        new_w = w * scale.reshape(-1, *([1] * (w.dim() - 1)))
        b = const[bias] if bias is not None else torch.zeros_like(const[mean])
        new_b = (b - const[mean]) * scale + (const[beta] if beta is not None else 0.0)
        names = []
        for t in (new_w, new_b):
            names.append(f"_folded_bn_{folded}_{len(names)}")
            gm.register_buffer(names[-1], t.contiguous())
        with gm.graph.inserting_before(conv):
            wn, bn_b = gm.graph.get_attr(names[0]), gm.graph.get_attr(names[1])
        rest = list(conv.args) + [None] * (3 - len(conv.args))
        conv.args = (rest[0], wn, bn_b, *rest[3:])
        bn.replace_all_uses_with(conv)
        gm.graph.erase_node(bn)
        folded += 1
    if folded:
        gm.graph.lint()
        gm.recompile()
    return folded


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

