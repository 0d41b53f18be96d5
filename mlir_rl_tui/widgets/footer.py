"""A Footer that is rebuilt only when what it shows changes.

Textual's Footer recomposes (removes and mounts ~15 FooterKey widgets, then lays out the screen) on every
focus change, because the focused widget's bindings join the active ones. In this app those are all
hidden (`show=False`: Select, Tree, Button, Tabs), so picking a transformation (focus to its first
parameter) or applying a step rebuilt an identical footer: 10-15 ms of the frame, and garbage for the
collector (benchmarks/app_responsiveness.py).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class StableFooter(Footer):
    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self._shown: tuple | None = None

    def _shown_bindings(self, screen: Screen) -> tuple:
        """Everything `Footer.compose` reads (textual==8.2.8, pinned)."""
        app = screen.app
        return tuple(
            (key, b.key, b.action, b.description, b.key_display, b.group, b.tooltip, enabled, tooltip)
            for key, (_, b, enabled, tooltip) in screen.active_bindings.items()
            if b.show or key == app.COMMAND_PALETTE_BINDING
        ) + (self.show_command_palette, app.ENABLE_COMMAND_PALETTE, self.compact)

    def compose(self) -> ComposeResult:
        """The keys at once (Textual's Footer starts empty and recomposes once the screen is mounted: a
        second layout of the whole screen in the frame after the first paint)."""
        if not self._bindings_ready and self.app.app_focus:
            self.set_reactive(Footer._bindings_ready, True)
            self._shown = self._shown_bindings(self.screen)
        yield from super().compose()

    def bindings_changed(self, screen: Screen) -> None:
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = self._shown_bindings(screen)
            if self._bindings_ready and shown == self._shown:
                return
            self._shown = shown
        super().bindings_changed(screen)
