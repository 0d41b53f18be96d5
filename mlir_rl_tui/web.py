"""The app in a browser (`mlir-rl-tui serve`): Textual's own `textual-serve` runs one app process per visitor
and streams its terminal to the page. This adds what a classroom needs: a bound on the number of visitors
(a page that says the class is full, never a half-started app), and a title naming the machine that
measures (every visitor's steps are compiled and timed on the server's CPU).

Several visitors share the server's cores: their engines share the cache folder and with it the timing
locks (engine.engine), so their measurements queue, and a figure taken while another visitor's kernel ran
is flagged by the engine's contention check as any contended figure is (the status line says so)."""

from __future__ import annotations

import html

from aiohttp import web
from textual_serve.server import Server

FULL_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>{title}</title></head>
<body style="font-family: sans-serif; margin: 3em"><h1>The class is full</h1>
<p>{title} serves at most {n} visitors at once, and {n} are working. Try again when one leaves.</p>
</body></html>"""


class ClassroomServer(Server):
    """textual-serve's server with at most `max_visitors` app processes at once."""

    def __init__(self, command: str, host: str, port: int, title: str, max_visitors: int,
                 public_url: str | None = None) -> None:
        super().__init__(command, host=host, port=port, title=title, public_url=public_url)
        self.max_visitors = max_visitors
        self.visitors = 0

    def full(self) -> bool:
        return self.visitors >= self.max_visitors

    async def handle_index(self, request: web.Request):
        if self.full():
            return web.Response(status=503, content_type="text/html",
                                text=FULL_PAGE.format(title=html.escape(self.title), n=self.max_visitors))
        response = await super().handle_index(request)
        if isinstance(response, web.Response) and response.text and "<title>" not in response.text:
            # textual-serve's page shows the title only in its splash: the tab names the machine too
            response.text = response.text.replace("<head>", f"<head><title>{html.escape(self.title)}</title>", 1)
        return response

    async def handle_websocket(self, request: web.Request):
        if self.full():  # a page opened before the class filled: refused, not started
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            await ws.close(code=1013, message=b"the class is full")
            return ws
        self.visitors += 1
        try:
            return await super().handle_websocket(request)
        finally:
            self.visitors -= 1

    async def on_startup(self, app: web.Application) -> None:
        print(f"mlir-rl-tui serve: {self.title} on {self.public_url} (at most {self.max_visitors} visitors; "
              f"Ctrl-C stops)", flush=True)
