"""The program model: a linalg program's ops, loops and accesses; reading MLIR text in a guarded process; taking a
workload out into a program of its own; the replayable export."""
