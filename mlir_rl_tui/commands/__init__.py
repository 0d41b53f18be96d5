"""The command line, `mlir-rl-tui`: one module per command in this package, imported only when it runs.

`COMMANDS` is the one place a command is named and described: `mlir-rl-tui --help` lists its line and the
command's own `--help` starts with it. A command module has

- `add_arguments(parser)`: its arguments;
- `run(args) -> int`: the work and the exit status (engine, torch and Textual are imported in here);
- `DESCRIPTION` (optional): paragraphs that follow the line in its `--help`.

So `mlir-rl-tui --help` imports neither MLIR, torch nor Textual (check with `python -X importtime -m
mlir_rl_tui --help`). Without a command, `mlir-rl-tui FILE` opens the app (`open.py`). Errors a user can
cause (`mlir_rl_tui.engine.EngineError`, `CliError`) are one line on stderr and exit status 2; `--json` prints one
JSON object on stdout.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import textwrap
from types import ModuleType
from typing import NamedTuple

from mlir_rl_tui.cli.output import fail, user_error
from mlir_rl_tui.cli.parser import Paragraphs, Parser, Version


class Command(NamedTuple):
    module: str
    """the module in this package that defines `add_arguments` and `run`"""
    help: str
    """one line: `mlir-rl-tui --help` lists it, the command's `--help` starts with it"""


COMMANDS: dict[str, Command] = {
    "serve": Command("serve", "the app in a browser: one app per visitor, measured on this machine (a classroom)"),
    "samples": Command("samples", "the sample programs that ship with the product: list, print or copy them"),
    "inspect": Command("inspect", "a program's ops, loops, producers/consumers, features and action mask"),
    "apply": Command("apply", "apply a schedule, measure it, report the speedup"),
    "search": Command("search", "search for a fast schedule with a budget of measurements"),
    "replay": Command("replay", "re-apply and re-measure the schedules of a trace"),
    "dataset": Command("dataset", "generate a training data set of programs"),
    "optimize": Command("optimize", "the policy's schedule in one pass, measured"),
    "train": Command("train", "train a policy: PPO, behaviour cloning on traces first, or the "
                              "shipped policy's recipe (--recipe default)"),
    "evaluate": Command("evaluate", "policy vs hill climbing vs PyTorch eager on a set of programs"),
    "build": Command("build", "a scheduled program as a shared library (C interface, callable from Python)"),
    "import": Command("import_", "a PyTorch module (FILE.py:NAME) as a linalg program, via torch-mlir"),
    "tune": Command("tune", "tune a whole model within minutes (tuning database), built for PyTorch to call"),
    "tuning-db": Command("tuning_db", "the tuning database: show, export or import its records"),
    "ensemble": Command("ensemble", "several policies as one checkpoint that decides with all of them"),
    "costmodel": Command("costmodel", "the learned cost model: train it on the cache's measurements, evaluate it, calibrate its interval"),
    "lesson": Command("lesson", "guided lessons: loop transformations step by step, measured live"),
    "doctor": Command("doctor", "this machine: cores, runtime, roofline, and how much to trust a measurement now"),
    "convert-checkpoint": Command("convert_checkpoint", "convert an older checkpoint to the current format "
                                                        "(unpickles it: only files you trust)"),
}

#: `mlir-rl-tui FILE`: the first argument is not a command.
APP = Command("open", "open the schedule explorer on FILE")

DESCRIPTION = ("Schedule explorer for MLIR linalg code. `mlir-rl-tui FILE` opens the app; FILE is a .mlir file or "
               "the name of a shipped sample (`mlir-rl-tui samples` lists them).")
EPILOG = ("`mlir-rl-tui COMMAND --help` describes a command. Environment: MLIR_RL_TUI_CACHE=DIR, the folder of "
          "the measurement cache (default: the user cache folder, ~/.cache/mlir-rl-tui); MLIR_RL_TUI_DEBUG=1, "
          "a traceback instead of the one-line internal error.")


def load(cmd: Command) -> ModuleType:
    return importlib.import_module(f"{__name__}.{cmd.module}")


def _description(cmd: Command, mod: ModuleType | None) -> str:
    extra = getattr(mod, "DESCRIPTION", "")
    return cmd.help[0].upper() + cmd.help[1:] + "." + ("\n\n" + textwrap.dedent(extra).strip() if extra else "")


def _define(p: argparse.ArgumentParser, cmd: Command) -> argparse.ArgumentParser:
    """Import the command's module; its description, arguments and handler go on `p`."""
    mod = load(cmd)
    p.description = _description(cmd, mod)
    mod.add_arguments(p)
    p.set_defaults(handler=mod.run)
    return p


def app_parser() -> argparse.ArgumentParser:
    return _define(Parser(prog="mlir-rl-tui", formatter_class=Paragraphs), APP)


def build_parser(name: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; only the command `name` gets its arguments (its module is imported)."""
    usage = app_parser().format_usage().removeprefix("usage: ").strip()
    parser = Parser(
        prog="mlir-rl-tui", usage=f"{usage}\n       mlir-rl-tui COMMAND [-h] ...", description=DESCRIPTION,
        epilog=EPILOG, formatter_class=Paragraphs)
    parser.add_argument("--version", action=Version, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for n, cmd in COMMANDS.items():
        p = sub.add_parser(n, prog=f"mlir-rl-tui {n}", help=cmd.help, description=_description(cmd, None),
                           formatter_class=Paragraphs)
        if n == name:
            _define(p, cmd)
    return parser


def main(argv: list[str] | None = None) -> int:
    """`mlir-rl-tui ...`: the exit status (0 ok, 1 a failed measurement or internal error, 2 bad input)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    first = argv[0] if argv else ""
    opening = bool(first) and not first.startswith("-") and first not in COMMANDS
    if opening:
        from mlir_rl_tui import workarounds
        from mlir_rl_tui.idle_gc import pause_for_startup

        if workarounds.on("idle_gc"):
            pause_for_startup()  # opening the app: no garbage collection until its first paint
    try:
        parser = app_parser() if opening else build_parser(first)
        args = parser.parse_args(argv)
        if not hasattr(args, "handler"):
            parser.print_help()
            return 2
        from mlir_rl_tui.engine.store.cache import unsaved

        unsaved()  # what an earlier command in this process left unsaved is not this one's
        code = args.handler(args)
        return _saved(code)
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except BrokenPipeError:
        return 0
    except Exception as e:  # noqa: BLE001 - never a traceback for the user
        if user_error(e):
            return fail(str(e))
        if os.environ.get("MLIR_RL_TUI_DEBUG"):
            raise
        return fail(f"internal error ({type(e).__name__}): {str(e).splitlines()[0] if str(e) else ''}", 1)


def _saved(code: int) -> int:
    """A command whose results could not all be stored (a cache or database dropped after an error, or
    locked) ends non-zero with one line saying what was not saved, even when its own work succeeded."""
    from mlir_rl_tui.engine.store.cache import unsaved

    lost = unsaved()
    if lost is None:
        return code
    return fail(lost, code or 1)
