"""MLIR environment: load linalg programs, schedule them, measure schedules. No UI, no torch."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

#: The engine's public names and their modules, imported when first used (PEP 562), so a light module of the
#: engine (engine.corpus.samples, engine.schedule.notation) is imported without numpy and the worker machinery.
_EXPORTS = {
    "DEFAULT_LIMITS": "config", "DEFAULT_MEASURE": "config", "Limits": "config", "MeasureConfig": "config",
    "Engine": "engine", "Measurement": "measure.measurement",
    "EngineError": "errors", "LoadError": "errors", "ScheduleError": "errors",
    "LinalgOp": "ir.program", "Program": "ir.program", "load": "ir.program", "load_file": "ir.program",
    "Action": "schedule.notation", "Schedule": "schedule.notation", "parse": "schedule.notation",
    "to_text": "schedule.notation",
    "Session": "session",
}
__all__ = [
    "DEFAULT_LIMITS", "DEFAULT_MEASURE", "Action", "Engine", "EngineError", "LinalgOp", "Limits", "LoadError",
    "MeasureConfig", "Measurement", "Program", "Schedule", "ScheduleError", "Session", "load", "load_file",
    "parse", "to_text",
]

if TYPE_CHECKING:
    from mlir_rl_tui.engine.config import DEFAULT_LIMITS, DEFAULT_MEASURE, Limits, MeasureConfig
    from mlir_rl_tui.engine.engine import Engine
    from mlir_rl_tui.engine.errors import EngineError, LoadError, ScheduleError
    from mlir_rl_tui.engine.ir.program import LinalgOp, Program, load, load_file
    from mlir_rl_tui.engine.measure.measurement import Measurement
    from mlir_rl_tui.engine.schedule.notation import Action, Schedule, parse, to_text
    from mlir_rl_tui.engine.session import Session


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"mlir_rl_tui.engine.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'mlir_rl_tui.engine' has no attribute {name!r}")


def _register_env_with_gymnasium() -> None:
    """Gymnasium id `mlir_rl/Schedule-v0` (engine.rl.env): registered now if gymnasium is already imported,
    else as soon as it is (an import hook), so `import mlir_rl_tui.engine` does not pay for importing gymnasium
    (0.1-0.3 s of import time) and `gymnasium.make("mlir_rl/Schedule-v0")` still works after it."""
    import importlib.abc
    import importlib.util
    import sys

    def register() -> None:
        # as engine.rl.env.register, without importing mlir_rl_tui.engine.rl.env (it may be the module importing gymnasium)
        import gymnasium

        if "mlir_rl/Schedule-v0" not in gymnasium.registry:
            gymnasium.register(id="mlir_rl/Schedule-v0", entry_point="mlir_rl_tui.engine.rl.env:make")

    if "gymnasium" in sys.modules:
        register()
        return
    if importlib.util.find_spec("gymnasium") is None:  # pragma: no cover - gymnasium missing: no env
        return

    class _WhenGymnasiumLoads(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name != "gymnasium":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            exec_module = spec.loader.exec_module

            def exec_and_register(module) -> None:
                exec_module(module)
                register()

            spec.loader.exec_module = exec_and_register  # this module's loader only
            return spec

    sys.meta_path.insert(0, _WhenGymnasiumLoads())


_register_env_with_gymnasium()
