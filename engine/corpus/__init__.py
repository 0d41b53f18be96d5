"""Programs to work on: the shipped samples by name, the generator of training programs and its ops' MLIR text, and
the one rule for a list of program arguments."""
