"""Running MLIR where a crash cannot take the caller down: the one child-process layer (child.py), worker processes
and their pool, the compile pipeline, the watchdog, and native shared libraries."""
