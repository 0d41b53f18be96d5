"""`mlir-rl-tui samples [NAME...] [-o DIR]`: list, print or copy the sample programs that ship with the product."""

from __future__ import annotations

import argparse
import os
import shutil

import mlir_rl_tui.engine.corpus.samples as shipped
from mlir_rl_tui.cli.options import add_json
from mlir_rl_tui.cli.output import CliError, emit

DESCRIPTION = """Without NAME: the samples, one a line with what it computes, and the folder they are in.
With NAME and -o: a copy to edit (-o DIR: DIR/NAME.mlir, the folder made if missing; one NAME and -o
FILE.mlir: that file); an existing file is kept unless --force. With one NAME and no -o: its text on stdout.

Where a command takes a FILE, a sample's name works too when no file of that name is in the current folder:

    mlir-rl-tui matmul                        open the app on the matmul sample
    mlir-rl-tui inspect conv2d
    mlir-rl-tui apply matmul --schedule "op0: TP(32,32,0) T(8,32,1) V; op1: NT"
    mlir-rl-tui samples matmul -o .           ./matmul.mlir, to edit"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="NAME", help="the samples to print or copy")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="copy the samples into this folder (or, for one NAME, to this .mlir file)")
    p.add_argument("--all", action="store_true", help="every sample (with -o)")
    p.add_argument("--force", action="store_true", help="overwrite files that exist")
    add_json(p, "print one JSON object (the list, or the files written)")


def run(args: argparse.Namespace) -> int:
    try:
        names = shipped.names() if args.all else args.names
        paths = {n: shipped.sample_path(n) for n in names}
    except shipped.NoSample as e:
        raise CliError(str(e)) from None
    if args.all and not args.output:
        raise CliError("--all copies every sample: give -o DIR")
    if not names:
        return _list(args.json)
    if args.output:
        return _copy(paths, args.output, args.force, args.json)
    if len(names) > 1:
        raise CliError(f"{len(names)} samples: give -o DIR to copy them (one NAME alone prints its text)")
    with open(paths[names[0]]) as f:
        text = f.read()
    if args.json:
        emit({"name": _name(paths[names[0]]), "path": paths[names[0]], "text": text})
    else:
        print(text, end="")
    return 0


def _name(path: str) -> str:
    return os.path.basename(path).removesuffix(".mlir")


def _list(as_json: bool) -> int:
    folder = shipped.samples_dir()
    rows = [(n, shipped.describe(n), shipped.sample_path(n)) for n in shipped.names()]
    if as_json:
        emit({"folder": folder, "samples": [{"name": n, "description": d, "path": p} for n, d, p in rows]})
        return 0
    width = max(len(n) for n, _, _ in rows)
    for n, d, _ in rows:
        print(f"{n:<{width}}  {d}")
    ex = "matmul" if any(n == "matmul" for n, _, _ in rows) else rows[0][0]
    print(f"\n{len(rows)} samples in {folder}\n"
          f"open one: mlir-rl-tui {ex}; copy one to edit: mlir-rl-tui samples {ex} -o .")
    return 0


def _targets(paths: dict[str, str], output: str) -> dict[str, str]:
    """Where each sample goes: OUTPUT/NAME.mlir, or OUTPUT itself for one sample and a .mlir OUTPUT."""
    if len(paths) == 1 and output.endswith(".mlir") and not os.path.isdir(output):
        return {src: output for src in paths.values()}
    if os.path.exists(output) and not os.path.isdir(output):
        if len(paths) == 1:
            raise CliError(f"{output}: exists and is neither a folder nor a .mlir file (-o DIR writes "
                           "DIR/NAME.mlir; -o FILE.mlir writes that file)")
        raise CliError(f"{output}: not a folder (several samples go into a folder)")
    return {src: os.path.join(output, os.path.basename(src)) for src in paths.values()}


def _copy(paths: dict[str, str], output: str, force: bool, as_json: bool) -> int:
    targets = _targets(paths, output)
    existing = [t for t in targets.values() if os.path.exists(t)]
    for src, dst in targets.items():
        if dst in existing and os.path.samefile(src, dst):
            raise CliError(f"{dst} is the shipped sample itself")
    if existing and not force:
        raise CliError(f"{existing[0]} exists (--force overwrites it)")
    try:
        for src, dst in targets.items():
            os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
            shutil.copyfile(src, dst)
    except OSError as e:
        raise CliError(f"cannot write {e.filename or output}: {e.strerror}") from None
    if as_json:
        emit({"copied": [{"name": _name(src), "path": dst} for src, dst in targets.items()]})
    else:
        for src, dst in targets.items():
            print(f"{_name(src)} -> {dst}")
    return 0
