"""`mlir-rl-tui serve`: the app in a browser through textual-serve (mlir_rl_tui.web), a real server and a real
app process per visitor, driven over the page's own websocket protocol."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("textual_serve")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    port = _free_port()
    env = {**os.environ, "MLIR_RL_TUI_CACHE": str(tmp_path / "cache")}
    p = subprocess.Popen([sys.executable, "-m", "mlir_rl_tui", "serve", "matmul", "--host", "127.0.0.1", "--port",
                          str(port), "--max-visitors", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert p.poll() is None, p.communicate()[1]
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(30)


async def _visit(url: str) -> dict:
    """Open the page, start an app over the websocket, read its screen, and see the page refused while it runs."""
    out: dict = {}
    async with aiohttp.ClientSession() as http:
        async with http.get(url + "/") as r:
            out["index"] = (r.status, await r.text())
        async with http.ws_connect(url + "/ws?width=140&height=42") as ws:
            screen = b""
            end = time.monotonic() + 120
            while time.monotonic() < end and b"op0" not in screen:
                try:
                    msg = await ws.receive(timeout=5)
                except TimeoutError:
                    continue
                if msg.type == aiohttp.WSMsgType.BINARY:
                    screen += msg.data
                elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                    break
            out["screen"] = screen
            async with http.get(url + "/") as r:
                out["full"] = (r.status, await r.text())
            await ws.send_str(json.dumps(["stdin", "q"]))
        await asyncio.sleep(1.0)
        async with http.get(url + "/") as r:
            out["after"] = r.status
    return out


def test_a_visitor_gets_an_app_of_their_own_and_the_class_has_a_bound(server):
    got = asyncio.run(_visit(server))
    status, page = got["index"]
    assert status == 200 and "mlir-rl-tui: matmul.mlir, measured on" in page and "cores" in page
    assert b"op0" in got["screen"], got["screen"][-2000:]  # the app's op tree, drawn in the visitor's terminal
    status, page = got["full"]
    assert status == 503 and "The class is full" in page and "at most 1 visitors" in page
    assert got["after"] == 200  # the visitor left: the place is free again


def test_serve_refuses_a_bad_file_in_one_line(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("this is not MLIR")
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "serve", str(bad), "--port", str(_free_port())],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1, r.stderr
