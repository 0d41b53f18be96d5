"""`mlir-rl-tui serve [FILE]`: the app in a browser, one app process per visitor (mlir_rl_tui.web)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from mlir_rl_tui.cli.options import add_entry, program_arg
from mlir_rl_tui.cli.output import CliError

DESCRIPTION = """Each visitor of the page gets an app of their own on FILE (default: the matmul sample), run on
this machine: every step is compiled and timed on its CPU, and the page's title names it. Visitors share the
cores, so their measurements queue and a contended one is flagged. --host 0.0.0.0 serves a classroom's network
(anyone who can reach the port can run the app: serve on a network you trust)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", default="matmul", metavar="FILE", type=program_arg,
                   help="a .mlir file or a shipped sample's name (default: matmul)")
    add_entry(p)
    p.add_argument("--host", default="localhost", help="the address to listen on (default: localhost)")
    p.add_argument("--port", type=int, default=8000, help="the port (default: 8000)")
    p.add_argument("--public-url", metavar="URL", help="the page's address as visitors reach it (behind a proxy)")
    p.add_argument("--max-visitors", type=int, default=8, metavar="N",
                   help="app processes at once; later visitors see a page saying the class is full (default: 8)")


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.cli.engine import load_program
    from mlir_rl_tui.engine.measure.machine import cpu_model

    if args.max_visitors < 1:
        raise CliError("--max-visitors must be at least 1")
    if not 0 < args.port < 65536:
        raise CliError(f"--port {args.port}: not a port number")
    load_program(args)  # a bad file fails here, in one line, not in every visitor's page
    try:
        from mlir_rl_tui.web import ClassroomServer
    except ImportError as e:
        raise CliError(f"serving needs textual-serve: pip install 'mlir-rl-tui[serve]' ({e})") from None

    title = f"mlir-rl-tui: {os.path.basename(args.file)}, measured on {cpu_model('this CPU')} " \
            f"({os.cpu_count()} cores)"
    path = os.path.abspath(args.file)
    command = shlex.join([sys.executable, "-m", "mlir_rl_tui", path, *(["--entry", args.entry] if args.entry else [])])
    server = ClassroomServer(command, args.host, args.port, title, args.max_visitors, args.public_url)
    try:
        server.serve()
    except OSError as e:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    return 0
