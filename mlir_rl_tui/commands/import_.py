"""`mlir-rl-tui import FILE.py:NAME --input SHAPE`: a PyTorch module as a program the engine loads
(agent.torch_import; `import` is a Python keyword, hence the module's name)."""

from __future__ import annotations

import argparse
import os

from mlir_rl_tui.cli.options import add_json, input_shape
from mlir_rl_tui.cli.output import CliError, emit
from mlir_rl_tui.cli.paths import output_file

DESCRIPTION = """Exports an nn.Module with torch.export and torch-mlir (linalg on tensors, weights included).
NAME is a module class (built with no arguments) or a factory returning a module. This RUNS FILE.py: import
only files you trust."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="FILE.py:NAME")
    p.add_argument("--input", action="append", default=[], metavar="SHAPE[:DTYPE]", type=input_shape,
                   help="shape of each input, in order, e.g. 1x3x32x32 or 16x64:f32 (default f32; every "
                        "dimension at least 1)")
    p.add_argument("-o", "--output", help="the .mlir file to write (default: NAME in lower case .mlir, in the current "
                                          "folder)")
    p.add_argument("--passes", default="all", metavar="LIST",
                   help="what import does to the model besides exporting it: all (default), none, or a comma-separated "
                        "subset of bn (batch norms folded into convolutions), convt (transposed convolutions as sub-pixel "
                        "convolutions), nhwc (NCHW convolutions as NHWC), fold "
                        "(constant weight transposes computed once), pad (pads written in place), fuse (elementwise "
                        "chains as one op)")
    p.add_argument("--open", action="store_true", help="open the app on the imported program")
    add_json(p)


def passes_line(done: dict) -> str:
    """What the passes did, in words."""
    words = {"bn": "batch norms folded", "convt": "transposed convolutions as sub-pixel ones", "nhwc": "ops to NHWC", "fold": "constant transposes/reshapes folded",
             "pad": "pads written in place"}
    parts = [f"{done[k]} {w}" for k, w in words.items() if k in done]
    if "ops_before" in done:
        parts.append(f"linalg ops {done['ops_before']} -> {done['ops_after']}")
    if "graph_error" in done:
        parts.append(f"graph passes skipped: {done['graph_error']}")
    return ", ".join(parts)


def run(args: argparse.Namespace) -> int:
    try:
        from mlir_rl_tui.agent.torch_import import import_module, parse_passes
    except ImportError as e:
        raise CliError(f"importing from PyTorch needs torch and torch-mlir: pip install 'mlir-rl-tui[import]' "
                       f"({e})") from None
    from mlir_rl_tui.engine import load_file

    name = args.spec.rpartition(":")[2] or "module"
    out = output_file(args.output or f"{name.lower()}.mlir", [args.spec.rpartition(":")[0]])
    info = import_module(args.spec, args.input, out, passes=parse_passes(args.passes))
    prog = load_file(out)  # what the engine sees: one line if it cannot use it
    info.update(ops=len(prog.ops), flops=prog.flops)
    if args.json:
        emit(info)
    else:
        print(f"{out}: {len(prog.ops)} linalg ops, {prog.flops / 1e6:.1f} MFLOP; PyTorch's output for the "
              f"engine's inputs in {os.path.basename(info['reference'])} (every baseline is checked against it)")
        if info["passes"]:
            print("passes: " + passes_line(info["passes"]))
    if args.open:
        from mlir_rl_tui.app import run_app

        return run_app(prog)
    return 0
