"""`azs web`'s server: the aiohttp application, its templates and static files, and how it runs.

:func:`make_app` builds the application around a :class:`~.state.Web` (what the handlers share),
:func:`serve` runs it on 127.0.0.1 (or a Unix socket) until it is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import socket
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Final

from aiohttp import web

from azsd.config import ResolvedConfig

from . import pages
from .security import Guard, new_token, secure_headers
from .state import Web

__all__ = ["make_app", "serve"]

_PACKAGE: Final = resources.files("azsd_client.web")


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


def _listen(port: int) -> tuple[socket.socket, str]:
    """A listening socket on a loopback address of the view's own (``127.x.y.z``, random: a browser
    keeps a host's cookies for every port of it, so no other server it is sent to on this machine
    gets the view's), and that address; 127.0.0.1 where no other loopback address can be bound."""
    for host in (_random_loopback(), "127.0.0.1"):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            sock.close()
            if host == "127.0.0.1":
                raise
            continue
        return sock, host
    raise AssertionError("unreachable")


def _random_loopback() -> str:
    """A random address of 127.0.0.0/8 other than 127.0.0.1 (Linux answers on all of it)."""
    a, b, c = secrets.randbelow(255), secrets.randbelow(256), 2 + secrets.randbelow(253)
    return f"127.{a}.{b}.{c}"


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
    """Serve the view on a loopback address of its own (:func:`_listen`), port `port` (0: any free
    one), or on the Unix socket `unix`, until SIGINT,
    SIGTERM or `stop`; `on_ready` gets the URL to open (with the token) once it listens."""
    token = token or new_token()
    web_ = Web(config, roots)
    host = "localhost"
    hosts: tuple[str, ...] | None = None
    if unix is None:
        sock, host = _listen(port)
        bound: int | None = sock.getsockname()[1]
        hosts = (f"{host}:{bound}",)
    else:
        bound = None
    runner = web.AppRunner(make_app(web_, Guard(token, bound, hosts)), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site: web.BaseSite
        if unix is None:
            site = web.SockSite(runner, sock)
            url = f"http://{host}:{bound}/?token={token}"
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
