import sys

from mlir_rl_tui.cli import main

sys.exit(main())
