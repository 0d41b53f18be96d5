"""The app's command palette: every action, by category-prefixed name (posting's `commands.py`; the
command line's commands are `mlir_rl_tui/commands/`)."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

#: (name, action on the main screen, help). The names are what a user types in the palette.
COMMANDS: list[tuple[str, str, str]] = [
    ("schedule: tile (T)", "pick('T')", "pick tile sizes per loop for the current op"),
    ("schedule: tiled parallelization (TP)", "pick('TP')", "scf.forall over parallel loops (OpenMP)"),
    ("schedule: tiled fusion (TF)", "pick('TF')", "tile and fuse the producer into the tile loop"),
    ("schedule: interchange (I)", "pick('I')", "choose the loop order position by position"),
    ("schedule: vectorize (V)", "vectorize", "vectorize the current op (ends it)"),
    ("schedule: next op (NT)", "next_op", "no more transformations for the current op"),
    ("schedule: apply", "apply", "apply the action shown in the action bar"),
    ("schedule: undo", "undo", "drop the last step"),
    ("agent: suggest", "suggest", "ask the policy for the next action"),
    ("agent: accept suggestion", "accept", "apply the policy's suggested action"),
    ("trace: record on/off", "record", "append every step to a JSONL trace"),
    ("file: export", "export", "transformed .mlir, transform script and trace into a folder"),
    ("view: original IR", "view('original')", "the program as loaded"),
    ("view: transformed IR", "view('transformed')", "the IR after the transform script"),
    ("view: diff of the last two steps", "view('diff')", "unified diff of the transformed IR"),
    ("view: loop nest", "view('loops')", "the current op as loop pseudo-code"),
    ("view: transform script", "view('script')", "the transform-dialect script so far"),
    ("view: action mask", "panel('mask')", "allowed choices and reasons"),
    ("view: features", "panel('features')", "the current op's feature vector"),
    ("view: per-op profile", "profile", "each op's share of the time, in the op tree"),
    ("lesson: next step", "lesson_step(1)", "apply and measure the lesson's next step"),
    ("lesson: previous step", "lesson_step(-1)", "go back one step of the lesson"),
    ("lesson: back to the lesson", "lesson_step(0)", "return to the lesson's step after trying your own"),
    ("app: help", "app.help", "key bindings"),
    ("app: quit", "app.quit", "leave the app"),
]


class ScheduleCommands(Provider):
    """Fuzzy-matches the commands above and runs them on the main screen."""

    def _run(self, action: str) -> None:
        from mlir_rl_tui.screens.main import MainScreen

        if action.startswith("app."):
            self.app.run_action(action.removeprefix("app."))
            return
        for screen in self.app.screen_stack:
            if isinstance(screen, MainScreen):
                self.app.call_later(screen.run_action, action)
                return

    async def discover(self) -> Hits:
        for name, action, help_text in COMMANDS:
            yield DiscoveryHit(name, partial(self._run, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, action, help_text in COMMANDS:
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), partial(self._run, action), help=help_text)
