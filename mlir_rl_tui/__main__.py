"""`python -m mlir_rl_tui ...`: the same as the `mlir-rl-tui` command."""

import sys

from mlir_rl_tui.commands import main

sys.exit(main())
