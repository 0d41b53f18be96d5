"""A tuned model back in PyTorch: `mlir_rl_tui.torch.load("OUT.so")` is an `nn.Module` running the library
`mlir-rl-tui tune` (or `build`) wrote.

```python
import mlir_rl_tui.torch
model = mlir_rl_tui.torch.load("resnet_block.so")   # reads resnet_block.so.json beside it
y = model(x)                                         # the original forward's arguments, by position or name
```

Inference on the CPU, for the input shapes the library was built for (the weights are inside it, as
constants): another shape is a one-line `ValueError`. Tensors are handed to the kernel without a copy when
they are contiguous and of its element type; the output is the kernel's buffer, as a tensor, without a copy.
"""

from mlir_rl_tui.agent.torch_module import TunedModule, load

__all__ = ["TunedModule", "load"]
