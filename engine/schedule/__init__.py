"""Schedules: the notation (`op0: T(8,32,1) V`), an op's state along its schedule and the action mask it allows, and
a schedule as a transform-dialect script."""
