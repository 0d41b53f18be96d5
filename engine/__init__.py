"""MLIR environment: load linalg programs, schedule them, measure schedules. No UI, no torch."""

from engine.config import DEFAULT_LIMITS, DEFAULT_MEASURE, Limits, MeasureConfig
from engine.errors import EngineError, LoadError, ScheduleError
from engine.measure import Engine, Measurement
from engine.program import LinalgOp, Program, load, load_file
from engine.schedule import Action, Schedule, parse, to_text
from engine.session import Session

__all__ = [
    "DEFAULT_LIMITS", "DEFAULT_MEASURE", "Action", "Engine", "EngineError", "LinalgOp", "Limits", "LoadError",
    "MeasureConfig", "Measurement", "Program", "Schedule", "ScheduleError", "Session", "load", "load_file",
    "parse", "to_text",
]

# Gymnasium id `mlir_rl/Schedule-v0` (engine.env); registered once, skipped if gymnasium is missing.
try:
    from engine.env import register as _register_env
except ImportError:  # pragma: no cover
    pass
else:
    _register_env()
