"""mlir-rl-tui: the Textual app and the command line; the engine and the agent are `mlir_rl_tui.engine` and
`mlir_rl_tui.agent`. Importing this package imports nothing else (the command line's `--help` stays fast)."""

from __future__ import annotations

DISTRIBUTION = "mlir-rl-tui"


def version() -> str:
    """The installed version (from the git tag at build time, setuptools-scm), e.g. `0.1.dev212+g33e9bbd`."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown (not installed: pip install -e .)"


def __getattr__(name: str) -> str:
    if name == "__version__":
        return version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
