"""Full garbage collections on the app's own schedule: never inside a frame, preferably while idle.

Textual's render caches make a lot of cyclic garbage (a Strip keeps itself in its own crop cache), so
CPython's full collections came every few seconds, from whatever allocation crossed the threshold: often
in the middle of rendering a frame after a key, adding 50-150 ms to it (benchmarks/app_responsiveness.py).

- Until the first paint there are no collections at all (`pause_for_startup`, called by the CLI).
- After the first paint, `gc.freeze()` moves what exists then (~120k objects: modules, classes, widgets)
  out of the collector's reach for good; they live as long as the app anyway. Full collections then scan
  ~40k objects instead of ~160k.
- CPython's automatic full collections are off while the app runs (young generations are still collected
  automatically, a few ms each). A timer runs `gc.collect()` as its own event-loop callback, so it never
  adds to a frame: as soon as there is something to collect and no key came for IDLE_S seconds, and at
  the latest after MAX_PROMOTIONS young collections, so memory stays bounded.
- A full collection costs about 0.5 us per live object (~40-60k: Textual's render caches), 20-50 ms, and
  more the more garbage waits: so it comes after a few young collections rather than many, and never
  while the screen has a frame to paint (that frame would wait for the collection: the two stalls add up).
"""

from __future__ import annotations

import gc
import time

IDLE_S = 0.3
CHECK_S = 0.1
#: young (generation 1) collections since the last full one: at least MIN_PROMOTIONS to bother (a full
#: collection costs about the same however little garbage there is: it scans every live object), and at
#: MAX_PROMOTIONS collect even if the user is typing (at 2 x MAX_PROMOTIONS even before a pending frame)
MIN_PROMOTIONS = 4
MAX_PROMOTIONS = 12

_frozen = False


def pause_for_startup() -> None:
    """No collections at all until the first paint (`IdleCollector.start` resumes them): starting the app
    allocates ~160k long-lived objects and little garbage, and the full collections CPython makes meanwhile
    (0.1-0.2 s in all) only delay the first paint. The CLI calls this first thing when it opens the app."""
    gc.disable()


class IdleCollector:
    """One per app: `start` after the first paint, `touched` on input, `stop` when the app ends."""

    def __init__(self) -> None:
        self.last_input = time.monotonic()
        self.full_collections = 0
        self._saved: tuple[int, int, int] | None = None
        self._app = None

    def start(self, app) -> None:
        """Freeze the startup objects (once per process) and take over full collections."""
        global _frozen
        if self._saved is not None:
            return
        if not _frozen:
            _frozen = True
            gc.freeze()
        gc.enable()
        self._saved = gc.get_threshold()
        t0, t1, _ = self._saved
        gc.set_threshold(t0, t1, 1 << 30)  # generation 2: only when `tick` says so
        self._app = app
        app.set_interval(CHECK_S, self.tick, name="idle-gc")

    def touched(self) -> None:
        """A key or a mouse click: the user is active."""
        self.last_input = time.monotonic()

    def tick(self) -> None:
        promoted = gc.get_count()[2]
        if promoted < MIN_PROMOTIONS or (promoted < 2 * MAX_PROMOTIONS and _frame_pending(self._app)):
            return
        if promoted >= MAX_PROMOTIONS or time.monotonic() - self.last_input >= IDLE_S:
            gc.collect()
            self.full_collections += 1

    def stop(self) -> None:
        """Back to CPython's own schedule (the app is closing)."""
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None


def _frame_pending(app) -> bool:
    """The screen has something to lay out or paint, or callbacks to run after its next frame
    (textual==8.2.8, pinned: `Screen._on_timer_update` reads the same flags)."""
    try:
        screen = app.screen
    except Exception:  # noqa: BLE001 - no screen yet (or any more): nothing to wait for
        return False
    return bool(app._batch_count or screen._layout_required or screen._repaint_required
                or screen._dirty_widgets or screen._callbacks)
