"""Call a kernel built by `mlir-rl-tui build` from Python.

```python
from mlir_rl_tui import runtime
kernel = runtime.load("matmul.so")        # reads matmul.so.json beside it
c = kernel(a, b)                          # numpy arrays in, a numpy array out (torch tensors in: a tensor out)
```

The library must be the one its `.so.json` describes (the description carries its sha256): a library beside
another's description is refused in one line, as is a malformed description.

The result is the buffer the kernel allocated, handed to numpy without a copy and freed with it. A call is
one foreign call of two pointers: the library's C entry point builds the memref descriptors. A parallel
kernel runs its OpenMP regions on GNU OpenMP (engine/run/kmpc_gomp.c), the runtime PyTorch's CPU build uses: in a
PyTorch process on PyTorch's own threads; `OMP_NUM_THREADS` or `torch.set_num_threads` chooses their number.

`build_checked` is how `build` and `tune` write a library: built, then run here (`verify`, in a separate
process) and compared with its reference before it takes the output's place.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import threading

import numpy as np

_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i64": np.int64, "i32": np.int32,
           "i16": np.int16, "i8": np.int8, "i1": np.bool_}
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]


class KernelError(ValueError):
    """A kernel file that cannot be used, or arguments that do not match it (one line)."""


class Kernel:
    """A loaded kernel: call it with the arguments of the program's entry function."""

    def __init__(self, path: str) -> None:
        from mlir import runtime as rt

        meta_path = path + ".json"
        try:
            if os.path.getsize(meta_path) > 1 << 20:
                raise KernelError(f"{meta_path}: larger than a kernel description can be (1 MiB)")
            with open(meta_path) as f:
                meta = json.load(f)
        except OSError as e:
            raise KernelError(f"{meta_path}: cannot read the kernel's description ({e.strerror}); build it with "
                              "`mlir-rl-tui build`") from None
        except ValueError:
            raise KernelError(f"{meta_path}: not a kernel description (invalid JSON)") from None
        if not isinstance(meta, dict) or meta.get("format") != "mlir-rl-tui kernel 1":
            raise KernelError(f"{meta_path}: not a kernel description of this version of mlir-rl-tui")
        _check_library(path, meta_path, meta)
        if meta.get("runtime") == "openmp":  # a library linked with Intel's OpenMP runtime (older builds)
            os.environ.setdefault("KMP_AFFINITY", "granularity=fine,compact")
        try:
            self.lib = ctypes.CDLL(os.path.abspath(path))
            self.fn = getattr(self.lib, meta["symbol"])
            self._entry = getattr(self.lib, meta["entry"]) if meta.get("entry") else None
            free = getattr(self.lib, meta["free"]) if meta.get("free") else _libc.free
        except (OSError, AttributeError) as e:
            raise KernelError(f"{path}: cannot load the kernel ({e})") from None
        except (KeyError, TypeError) as e:
            raise KernelError(f"{meta_path}: not a kernel description of this version ({e!r} is missing or "
                              "malformed)") from None
        self.rt = rt
        self.meta = meta
        self.args, (self.result_shape, self.result_dtype) = _signature(meta_path, meta)
        self.fn.restype = None
        self.fn.argtypes = [ctypes.c_void_p] * (1 + len(self.args))
        # descriptor types built once: a call only fills them (the bindings' helpers cost ~20 us a call)
        self._res_type = rt.make_nd_memref_descriptor(len(self.result_shape),
                                                      np.ctypeslib.as_ctypes_type(self.result_dtype))
        self._arg_types = [rt.make_nd_memref_descriptor(len(shape), np.ctypeslib.as_ctypes_type(dt))
                           for shape, dt in self.args]
        self._local = threading.local()  # per thread: descriptors a call fills in place
        n = int(np.prod(self.result_shape, dtype=np.int64)) if self.result_shape else 1
        self._n = n
        free.argtypes, free.restype = [ctypes.c_void_p], None
        self._owned = _owned_buffer_type(n * np.dtype(self.result_dtype).itemsize, free)
        if self._entry is not None:
            self._entry.restype = None
            self._entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

    @property
    def has_entry(self) -> bool:
        """The library has the C entry point `run_pointers` calls (every library this version builds)."""
        return self._entry is not None

    @property
    def schedule(self) -> str:
        return self.meta.get("schedule", "")

    def __call__(self, *arrays):
        torch_in = any(type(a).__module__.startswith("torch") for a in arrays)
        if len(arrays) != len(self.args):
            raise KernelError(f"the kernel takes {len(self.args)} arguments, not {len(arrays)}")
        xs = []
        for i, (a, (shape, dtype)) in enumerate(zip(arrays, self.args)):
            if type(a).__module__.startswith("torch"):
                a = a.detach().cpu().numpy()
            a = np.ascontiguousarray(a, dtype=dtype)
            if a.shape != shape:
                raise KernelError(f"argument {i} has shape {a.shape}, the kernel expects {shape}")
            xs.append(a)
        out = self.call(xs)
        if torch_in:  # torch is loaded, its tensors came in: no import of torch here
            return sys.modules["torch"].from_numpy(out)
        return out

    def call(self, xs: list[np.ndarray]) -> np.ndarray:
        """The kernel on arrays already of its shapes and element types, C-contiguous (no check: what
        `__call__` and mlir_rl_tui.torch make sure of)."""
        if self._entry is not None:
            return self.call_pointers([a.__array_interface__["data"][0] for a in xs])
        res, refs, pointers = self._slots()
        data = []
        for a, (allocated, aligned) in zip(xs, pointers):
            allocated.value = aligned.value = p = a.__array_interface__["data"][0]
            data.append(p)
        self.fn(*refs)
        return self._wrap(res, data)

    def run_pointers(self, data: list[int]) -> tuple[int, int]:
        """The kernel on the data pointers of its arguments (contiguous, of its shapes and element types: not
        checked): (allocated, aligned) of the result, which the caller frees (`wrap` does)."""
        ins, out, ins_p, out_p = self._pointer_slots()
        for i, p in enumerate(data):
            ins[i] = p
        self._entry(ins_p, out_p)
        return out[0], out[1]

    def call_pointers(self, data: list[int]) -> np.ndarray:
        """`run_pointers`, the result as a numpy array that frees it when it goes away."""
        allocated, aligned = self.run_pointers(data)
        return self.wrap(allocated, aligned, data)

    def _pointer_slots(self):
        """This thread's argument and result pointer arrays for the C entry point, built once."""
        slots = getattr(self._local, "pointers", None)
        if slots is None:
            ins, out = (ctypes.c_void_p * max(1, len(self.args)))(), (ctypes.c_void_p * 2)()
            slots = self._local.pointers = (ins, out, ctypes.addressof(ins), ctypes.addressof(out))
        return slots

    def wrap(self, allocated: int | None, aligned: int | None, inputs: list[int]) -> np.ndarray:
        """The result buffer at `aligned` as a numpy array that frees `allocated` when it goes away (no copy);
        a copy when the kernel returned one of its arguments' buffers (`inputs`)."""
        buf = self._owned.from_address(aligned)
        if allocated in inputs:
            return np.frombuffer(buf, dtype=self.result_dtype, count=self._n).reshape(self.result_shape).copy()
        buf.allocated = allocated  # freed with the array (the buffer is its base)
        return np.frombuffer(buf, dtype=self.result_dtype, count=self._n).reshape(self.result_shape)

    def _slots(self):
        """This thread's result and argument descriptors, built once: shapes, strides and offsets are fixed
        (contiguous arguments of the kernel's shapes), a call only writes the two data pointers of each
        argument (building descriptors per call cost ~9 us, a quarter of the Python overhead)."""
        slots = getattr(self._local, "slots", None)
        if slots is None:
            res = self._res_type()
            descs = [_descriptor(t, shape) for t, (shape, _) in zip(self._arg_types, self.args)]
            pointers = [_pointer_fields(d) for d in (res, *descs)]
            slots = self._local.slots = (pointers[0], [ctypes.byref(x) for x in (res, *descs)], pointers[1:])
        return slots

    def _wrap(self, res: tuple[ctypes.c_void_p, ctypes.c_void_p], inputs: list[int]) -> np.ndarray:
        return self.wrap(res[0].value, res[1].value, inputs)


def _check_library(path: str, meta_path: str, meta: dict) -> None:
    """The library at `path` is the one `meta` describes (its sha256): a description beside another library
    would have native code called with another program's buffer sizes."""
    want = meta.get("library_sha256")
    if not isinstance(want, str):
        raise KernelError(f"{meta_path}: the description names no library (built by an earlier version); "
                          "build it again with `mlir-rl-tui build`")
    from mlir_rl_tui.engine.store.atomic import file_sha256

    try:
        have = file_sha256(path)
    except OSError as e:
        raise KernelError(f"{path}: cannot read the kernel ({e.strerror})") from None
    if have != want:
        raise KernelError(f"{path}: not the library {os.path.basename(meta_path)} describes (its sha256 differs); "
                          "keep each .so with its own .so.json, or build it again")


def _signature(meta_path: str, meta: dict) -> tuple[list[tuple[tuple[int, ...], type]], tuple[tuple[int, ...], type]]:
    """The arguments' and the result's (shape, numpy dtype) that `meta` states; a malformed field is one line."""

    def one(entry, what: str) -> tuple[tuple[int, ...], type]:
        if (not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], list)
                or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in entry[0])
                or entry[1] not in _DTYPES):
            raise KernelError(f"{meta_path}: {what} is not a [shape, element type] pair of this version")
        return tuple(entry[0]), _DTYPES[entry[1]]

    args = meta.get("args")
    if not isinstance(args, list):
        raise KernelError(f"{meta_path}: \"args\" is not a list of [shape, element type] pairs")
    return [one(a, f"argument {i}") for i, a in enumerate(args)], one(meta.get("result"), "the result")


def _owned_buffer_type(nbytes: int, free) -> type:
    """A ctypes byte array over a kernel's result that frees the kernel's allocation with `free` (the
    library's, which keeps the block for the next call) when it goes away."""

    class Owned(ctypes.c_byte * nbytes):
        allocated: int | None = None

        def __del__(self) -> None:
            if self.allocated:
                free(self.allocated)

    return Owned


def _pointer_fields(d) -> tuple[ctypes.c_void_p, ctypes.c_void_p]:
    """Views of a descriptor's `allocated` and `aligned` pointers, to read and write them as integers."""
    return (ctypes.c_void_p.from_buffer(d, type(d).allocated.offset),
            ctypes.c_void_p.from_buffer(d, type(d).aligned.offset))


def _descriptor(cls, shape: tuple[int, ...]):
    """A ranked memref descriptor (allocated, aligned, offset, sizes, strides) of a contiguous array of
    `shape`; the data pointers are filled in by each call."""
    d = cls()
    d.offset = 0
    if shape:
        d.shape[:] = shape
        strides, acc = [], 1
        for n in reversed(shape):
            strides.append(acc)
            acc *= n
        d.strides[:] = strides[::-1]
    return d


def load(path: str) -> Kernel:
    """The kernel in `path` (a shared library from `mlir-rl-tui build`, with its `.json` beside it)."""
    return Kernel(path)


def verify(path: str, reference: str, against: str = "PyTorch's result") -> str | None:
    """Run the kernel on the seeded inputs the output in `reference` was computed on (FILE.torch.npz, written
    by `mlir-rl-tui import`, or the untransformed program's, Engine.reference) and compare them by the
    engine's own rule (engine.run.compare, the tolerances of engine.config.MeasureConfig); an error line naming
    `against`, or None when they agree."""
    from mlir_rl_tui.engine.config import DEFAULT_MEASURE
    from mlir_rl_tui.engine.ir.program import TensorSpec
    from mlir_rl_tui.engine.run.compare import compare
    from mlir_rl_tui.engine.run.compile import random_inputs

    kernel = load(path)
    with np.load(reference, allow_pickle=False) as z:
        ref, seed = z["output"], int(z["seed"])
    specs = [TensorSpec(tuple(s), d) for s, d in kernel.meta["args"]]
    out = kernel(*random_inputs(specs, seed))
    ok, why = compare(out, ref, DEFAULT_MEASURE.rtol, DEFAULT_MEASURE.atol_scale)
    return None if ok else f"against {against}: {why}"


def build_checked(eng, prog, schedule, out: str, program_path: str, extra: dict | None = None) -> tuple[dict, str]:
    """Build `schedule` of `prog` into the library `out` (engine.run.native.build_library), run it before it takes
    `out`'s place in a separate process (a crash cannot take this one down) and compare its result with
    PyTorch's saved at import (PROGRAM.torch.npz) or, without one, the untransformed program's, run by the
    engine on the same seeded inputs. A library that disagrees is not written (one-line EngineError naming
    the reference) and `out` is left as it was. Returns the description and what it was checked against
    ("PyTorch" or "engine")."""
    import tempfile

    from mlir_rl_tui.engine.errors import EngineError
    from mlir_rl_tui.engine.run.child import run_module
    from mlir_rl_tui.engine.run.native import build_library

    torch_ref = program_path + ".torch.npz"
    checked = "PyTorch" if os.path.exists(torch_ref) else "engine"
    against = "PyTorch's result" if checked == "PyTorch" else "the untransformed program's result"
    with tempfile.TemporaryDirectory(prefix="mlir-rl-check-") as tmp:
        ref = torch_ref
        if checked == "engine":
            ref = os.path.join(tmp, "reference.npz")
            try:
                eng.reference(prog, ref)
            except EngineError as e:
                raise EngineError(f"cannot check the library: {e}") from None

        def check(lib: str) -> str | None:
            ran = run_module("mlir_rl_tui.runtime", ["verify", lib, ref, against], 600)
            if ran.returncode is None:
                return "the library did not finish a run in 10 minutes"
            return f"the library failed its check: {ran.problem}" if ran.problem else None

        desc = build_library(eng, prog, schedule, out, extra=extra, check=check)
    return desc, checked


if __name__ == "__main__":  # python -m mlir_rl_tui.runtime verify LIB REF [AGAINST]: run in a separate process
    if len(sys.argv) not in (4, 5) or sys.argv[1] != "verify":
        sys.exit("usage: python -m mlir_rl_tui.runtime verify LIB.so REFERENCE.npz [WHAT IT HOLDS]")
    try:
        problem = verify(*sys.argv[2:])
    except (KernelError, OSError, KeyError, ValueError) as e:
        problem = str(e).splitlines()[0] if str(e) else type(e).__name__
    if problem:
        sys.exit(problem)
