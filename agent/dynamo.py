"""`torch.compile(model, backend="mlir_rl_tui")`: the engine as a TorchDynamo backend.

Registered through the `torch_dynamo_backends` entry point (as TVM's and IREE's backends are), so a user
keeps their code and writes

```python
model = torch.compile(model, backend="mlir_rl_tui")                       # look up, build, check
model = torch.compile(model, backend="mlir_rl_tui", options={"minutes": 2})  # tune each graph first
```

Dynamo captures the forward as one or more FX graphs (a graph break, a `print` or a data-dependent branch,
ends one and starts another; Python between them runs as Python) and hands each to `backend` with example
inputs. Each graph is imported as `mlir-rl-tui import` imports a module (torch.export, torch-mlir's FX
importer, the graph passes), its parameters and buffers as constants inside the library; each op starts
from the best schedule the tuning database knows for its workload on this machine kind, the others from
the policy's one pass; with `minutes` the graph is tuned as `mlir-rl-tui tune` tunes a model. The library is
built, checked against the graph's own output (as every library is, engine.runtime's `build_checked`), and
timed in this process against the graph run by PyTorch, interleaved: it takes the graph's place only when
it is faster. A graph it cannot take (an op the engine does not serve, a symbolic shape, autograd on, a
tensor off the CPU, a dtype it does not serve, several outputs) or that is not faster runs as PyTorch's own
code, with one warning line naming why (once per reason); a graph served says so in one line on stderr.

Defaults, and why: `minutes=0` (look up only): a compile of a few seconds a graph, where a tune takes its
minutes on every new graph and shape Dynamo captures; tune once (`options={"minutes": M}`, or `mlir-rl-tui
tune`) and later compiles of the same workloads, in any process on this machine kind, start from what it
found. Inference only: the weights are taken at compile time; a parameter changed in place after that
(`optimizer.step()`) makes the graph run as PyTorch's code from then on, with a warning. Guards and
recompiles are Dynamo's: a new input shape is a new graph, compiled again.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable

import torch

from mlir_rl_tui.agent.torch_passes import fold_functional_batch_norms

#: options={...} of torch.compile and their defaults (see the module's docstring)
DEFAULTS = {"minutes": 0.0, "db": None, "policy": None, "seed": 0, "check_speed": True, "verbose": True}
#: element types of the graph's inputs the library takes (the importer's)
_DTYPES = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64", torch.int32: "i32"}
#: the in-process comparison with PyTorch: at most this long, at least MIN_CALLS calls of each
CHECK_S, MIN_CALLS = 1.0, 5


class FallbackWarning(UserWarning):
    """A graph runs as PyTorch's own code: the message says why."""


_warned: set[str] = set()
_engine = None


def backend(gm: torch.fx.GraphModule, example_inputs: list, options: dict | None = None, **_: object) -> Callable:
    """TorchDynamo's backend contract: the graph and its example inputs in, a callable like `gm.forward` out."""
    opts = {**DEFAULTS, **(options or {})}
    unknown = sorted(set(opts) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"mlir_rl_tui backend: unknown option {unknown[0]!r} (options: {', '.join(DEFAULTS)})")
    if not any(n.op == "call_function" or n.op == "call_method" or n.op == "call_module" for n in gm.graph.nodes):
        return gm.forward  # nothing to compute
    why = refusal(gm, example_inputs)
    if why is not None:
        return _fallback(gm, why, "")
    t0 = time.monotonic()
    try:
        served = _outside_tracing(_compile, gm, example_inputs, opts)
    except Exception as e:  # noqa: BLE001 - nothing from inside the compile reaches the user's forward
        from mlir_rl_tui.engine.errors import EngineError

        line = str(e).splitlines()[0] if str(e) else type(e).__name__
        return _fallback(gm, line if isinstance(e, EngineError) else f"{type(e).__name__}: {line}", "")
    call, ms, eager_ms, detail = served
    if opts["check_speed"] and ms >= eager_ms:
        return _fallback(gm, f"not faster than PyTorch here ({ms:.3f} ms vs {eager_ms:.3f} ms a call)", "slower")
    if opts["verbose"]:
        vs = f": {ms:.3f} ms a call, {eager_ms / ms:.2f}x PyTorch's {eager_ms:.3f} ms" if opts["check_speed"] else ""
        print(f"mlir_rl_tui: a graph of {detail} served in {time.monotonic() - t0:.1f} s{vs}", file=sys.stderr)
    return call


def _outside_tracing(fn: Callable, *args):
    """`fn(*args)` in a thread of its own: outside the modes Dynamo's compile keeps on this thread (a meta
    default device, fake tensors), under which the policy's checkpoint would load as meta tensors."""
    import threading

    box: dict = {}

    def work() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - raised again on the caller's thread
            box["error"] = e

    th = threading.Thread(target=work, name="mlir-rl-tui compile")
    th.start()
    th.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def refusal(gm: torch.fx.GraphModule, example_inputs: list) -> str | None:
    """Why the graph cannot be served (None: it may be), before anything is imported."""
    outputs = [n for n in gm.graph.nodes if n.op == "output"]
    result = outputs[0].args[0] if outputs else None
    values = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(values) != 1 or not isinstance(values[0], torch.fx.Node):
        return f"the graph has {len(values)} outputs (a library has one)"
    for x in example_inputs:
        if not isinstance(x, torch.Tensor):
            return f"a symbolic or Python input ({type(x).__name__}: dynamic shapes are not served)"
        if x.device.type != "cpu":
            return f"a tensor on {x.device} (the library runs on the CPU)"
        if x.dtype not in _DTYPES:
            return f"a {str(x.dtype).removeprefix('torch.')} input (served: {', '.join(_DTYPES.values())})"
        if x.requires_grad and torch.is_grad_enabled():
            return "autograd is on (a training step, or inference outside torch.no_grad())"
        if any(isinstance(d, torch.SymInt) for d in x.shape):
            return "a symbolic shape (dynamic shapes are not served)"
    return None


def _fallback(gm: torch.fx.GraphModule, why: str, kind: str) -> Callable:
    """The graph as PyTorch's own code, with one warning line naming why (once per reason)."""
    key = kind or why
    if key not in _warned:
        _warned.add(key)
        warnings.warn(f"mlir_rl_tui: {why}; this graph runs as PyTorch's own code", FallbackWarning, stacklevel=3)
    return gm.forward


class CapturedGraph(torch.nn.Module):
    """The captured graph with its parameters and buffers as module state: constants inside the library;
    the other inputs are the library's arguments, in order."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list, constant: list[bool]) -> None:
        super().__init__()
        self.gm = gm
        self.constant = constant
        for i, (x, c) in enumerate(zip(example_inputs, constant)):
            if c:
                self.register_buffer(f"c{i}", x.detach())

    def forward(self, *xs):
        it = iter(xs)
        args = [getattr(self, f"c{i}") if c else next(it) for i, c in enumerate(self.constant)]
        out = self.gm(*args)
        return out[0] if isinstance(out, (tuple, list)) else out


def _constants(gm: torch.fx.GraphModule, example_inputs: list) -> list[bool]:
    """Which inputs are the model's parameters or buffers (Dynamo lifts them to graph inputs)."""
    names = [n.target for n in gm.graph.nodes if n.op == "placeholder"]
    return [isinstance(x, torch.nn.Parameter) or "_parameters_" in str(name) or "_buffers_" in str(name)
            for x, name in zip(example_inputs, names)]


def engine():
    """One engine (and its worker processes) for the process's compiles."""
    global _engine
    if _engine is None:
        import atexit

        from mlir_rl_tui.engine import Engine

        _engine = Engine()
        atexit.register(_engine.close)
    return _engine


def _compile(gm: torch.fx.GraphModule, example_inputs: list, opts: dict):
    """Import, schedule, build and check the graph; (the callable, its ms a call here, PyTorch's, what it is)."""
    from mlir_rl_tui.agent.torch_import import import_module, parse_passes
    from mlir_rl_tui.agent.torch_module import load
    from mlir_rl_tui.engine.errors import EngineError
    from mlir_rl_tui.engine.ir.loader import load_file
    from mlir_rl_tui.engine.store.cache import default_cache_dir
    from mlir_rl_tui.engine.store.tuning_db import TuningDB
    from mlir_rl_tui.runtime import build_checked

    constant = _constants(gm, example_inputs)
    work = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))  # folded here; `gm` stays the fallback
    fold_functional_batch_norms(work, example_inputs, constant)
    frozen = CapturedGraph(work, example_inputs, constant).eval()
    inputs = [x for x, c in zip(example_inputs, constant) if not c]
    specs = ["x".join(map(str, x.shape)) + ":" + _DTYPES[x.dtype] for x in inputs]
    key = hashlib.sha256((gm.code + "|" + ",".join(specs)).encode()).hexdigest()[:16]
    folder = os.path.join(default_cache_dir(), "dynamo")
    os.makedirs(folder, exist_ok=True)
    threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory(prefix=f"graph-{key}-", dir=folder) as tmp:
        path = os.path.join(tmp, "graph.mlir")
        try:
            info = import_module(frozen, specs, path, seed=opts["seed"], passes=parse_passes("all"))
            prog = load_file(path)
        except EngineError as e:  # named as the graph, not as the temporary file it was imported to
            raise EngineError(str(e).replace(f"{path}: ", "").replace("CapturedGraph: ", "")) from None
        eng = engine()
        db = TuningDB(opts["db"], named=opts["db"] is not None)
        try:
            schedule, how = _schedule(eng, prog, db, opts)
        finally:
            torch.set_num_threads(threads)  # the policy runs on one thread; the user's model on theirs
        lib = os.path.join(tmp, "graph.so")
        build_checked(eng, prog, schedule, lib, path, extra={"model": {"spec": "torch.compile graph", "inputs":
                                                                     info.get("inputs"), "forward": None}})
        tuned = load(lib)  # loaded: the files can go
    versions = [(x, x._version) for x, c in zip(example_inputs, constant) if c]
    n_ops = len(prog.ops)

    def call(*args):
        for x, v in versions:
            if x._version != v:  # a weight changed in place since the compile: the library has the old one
                _fallback(gm, "a parameter changed after the compile (the library holds the weights it was "
                              "built with)", "changed")
                return gm.forward(*args)
        return (tuned(*[a for a, c in zip(args, constant) if not c]),)

    ms, eager_ms = _compare(call, gm.forward, example_inputs) if opts["check_speed"] else (0.0, 0.0)
    return call, ms, eager_ms, f"{n_ops} ops ({how})"


def _schedule(eng, prog, db, opts: dict):
    """The graph's schedule and where it came from: the database and the policy's one pass, or a tune."""
    from mlir_rl_tui.engine.tune.tuner import Tuner

    def start():
        pol = _policy(opts["policy"])
        return pol.one_pass(prog, eng.openmp) if pol is not None else None

    tuner = Tuner(eng, prog, db, max(float(opts["minutes"]), 0.0) * 60, start, opts["seed"])
    if opts["minutes"] > 0:
        r = tuner.run()
        return r.schedule, f"tuned {opts['minutes']:g} min"
    schedule = tuner.compose()
    known = sum(w.start in ("tuned", "database") for w in tuner.workloads)
    return schedule, f"{known} of {len(tuner.workloads)} workloads from the tuning database"


@functools.cache
def _policy(path: str | None):
    from mlir_rl_tui.agent.suggest import load_policy

    return load_policy(path)


def _compare(served: Callable, eager: Callable, xs: list) -> tuple[float, float]:
    """Median ms a call of each, alternating call by call in this process, after one warm-up call each."""
    with torch.no_grad():
        served(*xs), eager(*xs)
        a, b = [], []
        end = time.perf_counter() + CHECK_S
        while time.perf_counter() < end or len(a) < MIN_CALLS:
            t = time.perf_counter()
            served(*xs)
            a.append(time.perf_counter() - t)
            t = time.perf_counter()
            eager(*xs)
            b.append(time.perf_counter() - t)
            if len(a) >= 200:
                break
    return statistics.median(a) * 1e3, statistics.median(b) * 1e3
