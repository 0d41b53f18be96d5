"""mlir-rl-tui: the Textual app and the command line."""

__version__ = "0.1.0"
