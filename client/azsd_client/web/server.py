"""`azs web`'s server: the aiohttp application, its templates and static files, and how it runs.

:class:`Web` holds what the handlers share (one :class:`~azsd_client.AsyncClient`, the stores shown,
the Jinja2 environment); :func:`make_app` builds the application around it, :func:`serve` runs it on
127.0.0.1 (or a Unix socket) until it is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

import jinja2
import msgspec
from aiohttp import web
from markupsafe import Markup

from azsd.config import ResolvedConfig
from azsd.ipc.protocol import WireEvent
from azsd_client.aio import AsyncClient

from . import charts, pages
from .data import Stores
from .live import Watch, daemon_stream, session_stream
from .security import Guard, new_token, secure_headers
from .views import clean

__all__ = ["Web", "make_app", "serve"]

_PACKAGE: Final = resources.files("azsd_client.web")


def _finalize(value: Any) -> Any:
    """Every value a template prints: text with its control characters made visible (HTML escaping
    is autoescape's)."""
    return clean(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("azsd_client.web", "templates"),
        autoescape=True,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.globals["url"] = _url
    env.filters["json"] = _json
    env.filters["cost"] = charts.cost  # a UsageView's cost: `?` when unpriced, never $0
    return env


def _url(path: str, **query: Any) -> str:
    """A link within the view: `path` and its query (values None or "" left out)."""
    kept = {k: v for k, v in query.items() if v is not None and v != ""}
    return f"{path}?{urlencode(kept, doseq=True)}" if kept else path


def _json(value: Any) -> str:
    """`value` as JSON for a ``<script type="application/json">`` block: ``<``, ``>`` and ``&`` are
    escaped, so no text in it can close the block (it is marked safe after that)."""
    text = msgspec.json.encode(value).decode()
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


class Web:
    """What the handlers share."""

    def __init__(self, config: ResolvedConfig, roots: Iterable[str], *, timeout: float = 10.0) -> None:
        self.config = config
        self.client = AsyncClient(config, timeout=timeout)
        self.stores = Stores(config, roots)
        self.watch = Watch(AsyncClient(config, timeout=timeout))
        self.threshold = config.compaction_threshold
        self.env = _environment()

    def render(self, name: str, request: web.Request, *, status: int = 200, **context: Any) -> web.Response:
        """The page of template `name`."""
        text = self.env.get_template(name).render(request=request, path=request.path, **context)
        return web.Response(text=text, status=status, content_type="text/html", charset="utf-8")

    def fragment(self, macro: str, **arguments: Any) -> str:
        """The HTML of one macro of ``items.html`` (a live transcript's new items)."""
        module = self.env.get_template("items.html").module
        return str(getattr(module, macro)(**arguments))

    async def session_events(self, request: web.Request) -> web.StreamResponse:
        root = request.query.get("root", "")
        if not self.stores.knows(root):
            raise web.HTTPNotFound(text="no such store in this view\n")
        try:
            session, after = int(request.query["id"]), int(request.query.get("after", "0"))
        except (KeyError, ValueError):
            raise web.HTTPBadRequest(text="id and after must be numbers\n") from None
        return await session_stream(
            request, self.watch, self.client, (root, session), after, self.render_items
        )

    def render_items(self, events: list[WireEvent]) -> list[dict[str, Any]]:
        """New events of a live transcript, rendered as the page renders them."""
        return pages.render_items(self, events)

    async def daemon_events(self, request: web.Request) -> web.StreamResponse:
        return await daemon_stream(request, self.watch)


def make_app(web_: Web, guard: Guard) -> web.Application:
    """The application: the pages, the live streams and the static files, behind `guard`."""
    app = web.Application(middlewares=[guard.middleware()])
    app.on_response_prepare.append(secure_headers)
    app.add_routes(pages.routes(web_))
    app.add_routes(
        [
            web.get("/live/session", web_.session_events),
            web.get("/live/daemon", web_.daemon_events),
            web.static("/static", Path(str(_PACKAGE / "static")), follow_symlinks=False),
        ]
    )

    async def start(_: web.Application) -> None:
        web_.watch.start()

    async def stop(_: web.Application) -> None:
        await web_.watch.stop()
        await web_.client.aclose()

    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app


async def serve(
    config: ResolvedConfig,
    roots: Iterable[str],
    *,
    port: int = 0,
    unix: str | None = None,
    token: str | None = None,
    on_ready: Callable[[str], None] = print,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve the view on 127.0.0.1:`port` (0: any free port) or on the Unix socket `unix` until SIGINT,
    SIGTERM or `stop`; `on_ready` gets the URL to open (with the token) once it listens."""
    token = token or new_token()
    web_ = Web(config, roots)
    if unix is None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        bound: int | None = sock.getsockname()[1]
    else:
        bound = None
    runner = web.AppRunner(make_app(web_, Guard(token, bound)), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site: web.BaseSite
        if unix is None:
            site = web.SockSite(runner, sock)
            url = f"http://127.0.0.1:{bound}/?token={token}"
        else:
            site = web.UnixSite(runner, unix)
            url = f"http://localhost/?token={token}"
        await site.start()
        if unix is not None:
            os.chmod(unix, 0o600)
        done = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):  # before the URL is out: Ctrl-C at once is a stop
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, done.set)
        on_ready(url)
        await done.wait()
    finally:
        await runner.cleanup()
