"""The command line's parser: errors in one line (`Parser`), help text that keeps its paragraphs, lists and
examples (`Paragraphs`), and `--version` (`Version`)."""

from __future__ import annotations

import argparse
import re
import textwrap
from collections.abc import Sequence
from typing import NoReturn


class Paragraphs(argparse.HelpFormatter):
    """Help text keeps its paragraphs (blank lines) and list items ("- ", "1. "), each filled to the width,
    and its indented blocks (examples) as they are."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for para in textwrap.dedent(text).strip().split("\n\n"):
            if para.startswith("    "):
                out += [indent + line for line in para.splitlines()] + [""]
                continue
            for item in re.split(r"\n(?=\s*(?:- |\d+\. ))", para):
                item = " ".join(item.split())
                m = re.match(r"- |\d+\. ", item)
                hang = indent + " " * (len(m.group()) if m else 0)
                out.append(textwrap.fill(item, width, initial_indent=indent, subsequent_indent=hang))
            out.append("")
        return "\n".join(out[:-1])


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr, `PROG: error: MESSAGE (PROG --help)`, exit
    status 2: a bad option value, an invalid choice, a missing argument. Subparsers (`add_subparsers`, also
    the commands' own, as in `dataset export`) are of this class too. Arguments a parser does not know are
    its own error, named with its own PROG, not its parent's."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} ({self.prog} --help)\n")

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        namespace, extra = super().parse_known_args(args, namespace)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return namespace, extra


class Version(argparse.Action):
    """`--version`: the installed version, looked up only when asked (importlib.metadata)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from mlir_rl_tui import version

        print(f"mlir-rl-tui {version()}")
        parser.exit()
