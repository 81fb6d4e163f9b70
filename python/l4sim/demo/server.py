"""The demo's web server (aiohttp): one page, its static files, and a WebSocket per tab.

Each WebSocket gets its own :class:`~l4sim.demo.model.Session` (its own simulation): tabs do not
disturb each other and a closed tab's simulation ends with it. The page sends JSON messages

* ``{"type": "set", "key": "A.cc", "value": "prague"}``: one control;
* ``{"type": "preset", "name": "pie_cubic"}``: one of :data:`~l4sim.demo.model.PRESETS`;
* ``{"type": "speed", "value": "pause" | "1x" | "max"}``;
* ``{"type": "restart"}``: a new simulation from t = 0 with the current settings (the old one's
  flows, history and memory are gone);
* ``{"type": "ack"}``: a frame was drawn (at "max" the next frame waits for it);

and receives ``hello`` (the choices and the settings), ``frame`` (about once a second) and
``notice`` (a clamped or rejected value, one line) messages.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
import webbrowser
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from l4sim.demo.model import AL_RATES, AQMS, CCS, CLIENTS, PRESETS, RANGES, WEB_RATES, DemoError, Session

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
SPEEDS = ("pause", "1x", "max")
FRAME_S = 1.0  # simulated seconds per frame (one frame per wall second at 1x)
#: Seconds a stopping server waits for a page to answer its close, and for open handlers.
CLOSE_TIMEOUT_S = 2.0
SHUTDOWN_TIMEOUT_S = 5.0


def _plotly_js() -> Path:
    """plotly.js as shipped inside the plotly Python package (the page works offline)."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _hello(session: Session) -> dict[str, Any]:
    return {
        "type": "hello",
        "clients": list(CLIENTS),
        "ccs": {k: label for k, (label, _) in CCS.items()},
        "aqms": {k: label for k, (label, _) in AQMS.items()},
        "presets": {k: label for k, (label, _) in PRESETS.items()},
        "web_rates": list(WEB_RATES),
        "al_rates": list(AL_RATES),
        "ranges": {k: [lo, hi] for k, (lo, hi, _) in RANGES.items()},
        "speeds": list(SPEEDS),
        "settings": session.settings,
    }


class _Tab:
    """One WebSocket and its simulation; :meth:`run` sends the frames."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self.ws = ws
        self.session = Session()
        self.speed = "1x"
        self.lock = asyncio.Lock()  # the simulation is stepped in a worker thread
        self.wake = asyncio.Event()  # speed changed or a frame was acknowledged

    async def send(self, msg: dict[str, Any]) -> None:
        if not self.ws.closed:
            await self.ws.send_str(json.dumps(msg, allow_nan=False))

    async def notice(self, text: str, level: str = "error") -> None:
        await self.send({"type": "notice", "level": level, "text": text})

    async def handle(self, data: Any) -> None:
        """Apply one message from the page."""
        if not isinstance(data, dict):
            raise DemoError("message: expected a JSON object")
        kind = data.get("type")
        if kind == "ack":
            self.wake.set()
            return
        if kind == "speed":
            if data.get("value") not in SPEEDS:
                raise DemoError(f"speed: {data.get('value')!r} is not one of {', '.join(SPEEDS)}")
            self.speed = data["value"]
            self.wake.set()
            return
        if kind == "set":
            key, value = str(data.get("key")), data.get("value")

            def change() -> list[str]:
                note = self.session.set(key, value)
                return [note] if note else []

        elif kind == "restart":

            def change() -> list[str]:
                self.session = Session(self.session.settings, seed=self.session.seed)
                return []

        elif kind == "preset":
            if not isinstance(data.get("name"), str) or data["name"] not in PRESETS:
                raise DemoError(f"preset: unknown preset {data.get('name')!r}")
            settings = PRESETS[data["name"]][1]

            def change() -> list[str]:
                return self.session.apply(settings)

        else:
            raise DemoError(f"message: unknown type {kind!r}")
        # In a worker thread, as the steps are: a change that takes long (many flows added)
        # must not hold up the other tabs' frames on the event loop.
        async with self.lock:
            notes = await asyncio.get_running_loop().run_in_executor(None, change)
        for n in notes:
            await self.notice(n, "warning")
        await self.send({"type": "settings", "settings": self.session.settings})

    async def run(self) -> None:
        """Step and send frames: one simulated second per wall second at 1x; at max, as fast
        as the page draws them (each frame waits for the previous one's ack)."""
        loop = asyncio.get_running_loop()
        due = loop.time()
        while not self.ws.closed:
            if self.speed == "pause":
                self.wake.clear()
                await self.wake.wait()
                due = loop.time()
                continue
            if self.speed == "1x":
                due += FRAME_S
                await asyncio.sleep(max(0.0, due - loop.time()))
                due = max(due, loop.time() - FRAME_S)  # when the simulation is slower than real time
                if self.speed != "1x":
                    continue
            async with self.lock:
                frame = await loop.run_in_executor(None, self.session.tick, FRAME_S)
            frame["speed"] = self.speed
            self.wake.clear()
            await self.send(frame)
            if self.speed == "max":
                try:
                    await asyncio.wait_for(self.wake.wait(), timeout=5)
                except TimeoutError:
                    pass


async def _index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html")


async def _plotly(request: web.Request) -> web.FileResponse:
    return web.FileResponse(_plotly_js())


#: The open WebSockets, closed when the server stops.
SOCKETS = web.AppKey("sockets", set[web.WebSocketResponse])


async def _websocket(request: web.Request) -> web.WebSocketResponse:
    # timeout: how long close() waits for the page's close frame when the server stops.
    ws = web.WebSocketResponse(heartbeat=30, timeout=CLOSE_TIMEOUT_S)
    await ws.prepare(request)
    request.app[SOCKETS].add(ws)
    tab = _Tab(ws)
    runner = asyncio.create_task(tab.run())
    try:
        await tab.send(_hello(tab.session))
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                continue
            try:
                await tab.handle(json.loads(msg.data))
            except json.JSONDecodeError:
                await tab.notice("message: not JSON")
            except (DemoError, ValueError) as e:  # ScenarioError is a ValueError
                await tab.notice(str(e))
            except Exception as e:  # a bug: say so on the page, keep serving
                log.exception("demo: message %r", msg.data)
                await tab.notice(f"internal error: {type(e).__name__}: {e}")
    finally:
        runner.cancel()
        request.app[SOCKETS].discard(ws)
    return ws


async def _close_sockets(app: web.Application) -> None:
    sockets = app[SOCKETS]
    for ws in list(sockets):  # a copy: each handler removes its socket as it closes
        await ws.close(code=1001, message=b"server stopped")


def make_app() -> web.Application:
    """The demo's aiohttp application."""
    app = web.Application()
    app[SOCKETS] = set()
    app.router.add_get("/", _index)
    app.router.add_get("/ws", _websocket)
    app.router.add_get("/plotly.min.js", _plotly)
    app.router.add_static("/static/", STATIC)
    app.on_shutdown.append(_close_sockets)
    return app


async def serve(host: str, port: int, open_browser: bool) -> None:
    """Serve until cancelled (Ctrl-C) or SIGTERM; print the URL once listening."""
    # Ctrl-C must stop the server promptly even if a page never answers the close: bound
    # the wait for open handlers (aiohttp's default is 60 s).
    runner = web.AppRunner(make_app(), shutdown_timeout=SHUTDOWN_TIMEOUT_S)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = runner.addresses[0]
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        url = f"http://{shown}:{bound[1]}/"
        print(f"l4sim demo: {url}  (Ctrl-C to stop)", flush=True)
        if open_browser:
            webbrowser.open(url)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        if sys.platform != "win32":
            loop.add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()


def main(host: str, port: int, open_browser: bool) -> int:
    try:
        asyncio.run(serve(host, port, open_browser))
    except KeyboardInterrupt:
        pass
    except OSError as e:  # the port is taken, the host is not ours, ...
        print(f"error: --host/--port: cannot listen on {host}:{port}: {e.strerror or e}", file=sys.stderr)
        return 2
    print("l4sim demo: stopped", flush=True)
    return 0
