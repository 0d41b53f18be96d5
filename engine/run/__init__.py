"""Running MLIR where a crash cannot take the caller down: worker processes and their pool, the compile pipeline, the
watchdog, and native shared libraries."""
