"""`mlir_rl_tui.torch`'s module: a library `mlir-rl-tui tune` or `build` wrote as an `nn.Module` (see there)."""

from __future__ import annotations

import inspect
import os

import numpy as np
import torch

from mlir_rl_tui import runtime

#: Set beside KMP_AFFINITY when `load` set it: engine.run.pool gives its workers their pinning back.
UNPINNED = "MLIR_RL_TUI_UNPINNED"


class TunedModule(torch.nn.Module):
    """The tuned code of one model at fixed input shapes (see the module's docstring)."""

    def __init__(self, kernel: runtime.Kernel) -> None:
        super().__init__()
        self.kernel = kernel
        model = kernel.meta.get("model") or {}
        names = model.get("forward") or [f"input{i}" for i in range(len(kernel.args))]
        if len(names) != len(kernel.args):
            names = [f"input{i}" for i in range(len(kernel.args))]
        self.input_names = list(names)
        self._signature = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in self.input_names])
        self.input_shapes = [torch.Size(shape) for shape, _ in kernel.args]
        self._dtypes = [torch.from_numpy(np.zeros(0, dtype)).dtype for _, dtype in kernel.args]
        self._pointers = kernel.has_entry  # the library's C entry point takes the tensors' data pointers

    def forward(self, *args, **kwargs) -> torch.Tensor:
        if kwargs or len(args) != len(self.input_names):
            try:
                args = self._signature.bind(*args, **kwargs).args
            except TypeError as e:
                raise ValueError(f"the tuned module takes ({', '.join(self.input_names)}): {e}") from None
        xs, ptrs = [], []
        for x, shape, dtype in zip(args, self.input_shapes, self._dtypes):
            if type(x) is not torch.Tensor or x.dtype != dtype or not x.is_contiguous() or x.device.type != "cpu":
                x = self._convert(x, len(xs), dtype)
            if x.shape != shape:
                raise ValueError(f"{self.input_names[len(xs)]} has shape {tuple(x.shape)}; this library was built "
                                 f"for {'x'.join(map(str, shape))} (tune the model again for other shapes)")
            xs.append(x)  # kept alive until the call returns
            ptrs.append(x.data_ptr())
        if self._pointers:
            return torch.from_numpy(self.kernel.call_pointers(ptrs))
        return torch.from_numpy(self.kernel.call([x.detach().numpy() for x in xs]))

    def _convert(self, x, i: int, dtype: torch.dtype) -> torch.Tensor:
        if isinstance(x, torch.Tensor) and x.device.type != "cpu":
            raise ValueError(f"{self.input_names[i]} is on {x.device}; the tuned library runs on the CPU")
        return torch.as_tensor(x).to(dtype).contiguous()

    def extra_repr(self) -> str:
        shapes = ", ".join(f"{n}: {'x'.join(map(str, s))}" for n, s in zip(self.input_names, self.input_shapes))
        return f"{shapes}; schedule {self.kernel.schedule or '(none)'}"


def load(path: str) -> TunedModule:
    """The library at `path` (with `path.json` beside it) as an `nn.Module`; `runtime.KernelError` (a
    `ValueError`, one line) when it cannot be used.

    The library's OpenMP threads are not pinned here (`KMP_AFFINITY=disabled` unless set): pinning binds
    the calling thread too, and the threads PyTorch starts after that inherit its one core (measured: a
    1 ms `Conv1d` net ran in 168 ms eager after a tuned call with the threads pinned)."""
    if "KMP_AFFINITY" not in os.environ:
        os.environ["KMP_AFFINITY"] = "disabled"
        os.environ[UNPINNED] = "1"  # the engine's workers, started from this process later, still pin theirs
    return TunedModule(runtime.load(path)).eval()
