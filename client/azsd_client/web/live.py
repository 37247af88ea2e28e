"""The live parts of the web view: whether the daemon answers, and server-sent event streams.

:class:`Watch` asks the daemon for its `Status` every second (one task for the whole server) and
keeps whether it answered. A stream (:func:`session_stream`, :func:`daemon_stream`) sends
``event: daemon`` with ``{"up": true|false}`` at its start and whenever that changes, so a page
shows the daemon going away and coming back instead of going blank. A session's stream also sends
``event: events`` with the new events rendered as the transcript renders them, from the daemon's
notifications (PUB socket, through the client's subscription); when it sees that notifications were
missed (a gap in the seqs, the daemon restarted), it reads the events it lacks by request.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import msgspec
from aiohttp import web

from azsd.errors import AzsdError
from azsd.ipc.protocol import EventsAppended, EventsPage, GetEvents, SessionChanged, Status, WireEvent
from azsd_client.aio import AsyncClient

__all__ = ["Watch", "daemon_stream", "session_stream"]

#: Seconds between the checks that the daemon answers (and the longest a stream waits for news).
TICK: Final = 1.0
#: How long a check waits for the daemon's `Status` (a busy machine may be slow to wake it).
_CHECK_TIMEOUT: Final = 2.0
#: Seconds between keep-alive comments on an idle stream (they also notice a closed tab).
_PING: Final = 10.0
#: Seconds between the reads that find events whose notification was lost (none followed it).
_RECHECK: Final = 2.0


class Watch:
    """Whether the daemon answers, checked every :data:`TICK` seconds by one task.

    `client` should be its own: a check that times out closes its client's socket (Lazy Pirate),
    which would fail the requests of pages in flight on the same one.
    """

    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        self.up = True
        self.version = 0  # counts the changes of `up`
        self._task: asyncio.Task[None] | None = None

    async def check(self) -> bool:
        """Ask once; record and return the answer."""
        try:
            await self.client.request(Status(), timeout=_CHECK_TIMEOUT)
            up = True
        except AzsdError:
            up = False
        if up != self.up:
            self.up, self.version = up, self.version + 1
        return up

    async def _run(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(TICK)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.client.aclose()


_ENCODER: Final = msgspec.json.Encoder()


async def _open(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"})
    await response.prepare(request)
    return response


async def _send(response: web.StreamResponse, event: str, data: Any, last: int | None = None) -> None:
    """One server-sent event; `last` (the last seq sent) is its id, which a reconnecting browser sends
    back as ``Last-Event-ID`` so that the stream resumes after it."""
    head = b"" if last is None else b"id: %d\n" % last
    await response.write(head + b"event: %s\ndata: %s\n\n" % (event.encode(), _ENCODER.encode(data)))


async def daemon_stream(request: web.Request, watch: Watch) -> web.StreamResponse:
    """``event: daemon`` at the start and at each change of whether the daemon answers."""
    response = await _open(request)
    seen = -1
    last_write = time.monotonic()
    with contextlib.suppress(ConnectionError):
        while True:
            if watch.version != seen:
                seen = watch.version
                await _send(response, "daemon", {"up": watch.up})
                last_write = time.monotonic()
            elif time.monotonic() - last_write > _PING:
                await response.write(b": ping\n\n")
                last_write = time.monotonic()
            await asyncio.sleep(TICK / 4)
    return response


Render = Callable[[list[WireEvent]], list[dict[str, Any]]]


async def session_stream(
    request: web.Request,
    watch: Watch,
    client: AsyncClient,
    where: tuple[str, int],
    after: int,
    render: Render,
) -> web.StreamResponse:
    """The events of session `where` (root, id) stored after seq `after`, as they come (through
    `client`), rendered by `render`; and the daemon's comings and goings."""
    root, session = where
    response = await _open(request)
    resumed = request.headers.get("Last-Event-ID", "")
    last = max(after, int(resumed)) if resumed.isdigit() else after
    seen = -1
    last_write = time.monotonic()

    async def catch_up() -> None:
        nonlocal last
        async for wire in _chunks(client, root, session, last + 1):
            last = wire[-1].seq
            await _send(response, "events", {"items": render(wire)}, last)

    sub = client.subscribe(root, session)
    checked = time.monotonic()
    try:
        with contextlib.suppress(ConnectionError):
            await catch_up()
            while True:
                if watch.version != seen:
                    seen = watch.version
                    await _send(response, "daemon", {"up": watch.up})
                    last_write = time.monotonic()
                    if watch.up:
                        await catch_up()  # what was stored while the daemon was away
                note = await sub.recv(timeout=TICK)
                if isinstance(note, EventsAppended) and note.session_id == session and note.events:
                    if note.events[0].seq > last + 1:
                        await catch_up()  # notifications were missed: read what they held
                    fresh = [e for e in note.events if e.seq > last]
                    if fresh:
                        last = fresh[-1].seq
                        await _send(response, "events", {"items": render(fresh)}, last)
                        last_write = time.monotonic()
                elif isinstance(note, SessionChanged) and note.session_id == session:
                    state = note.session.state if note.session is not None else "deleted"
                    await _send(response, "session", {"change": note.change, "state": state})
                    last_write = time.monotonic()
                elif note is None and watch.up and time.monotonic() - checked > _RECHECK:
                    # A notification dropped at the end (a slow or reconnecting subscriber) shows no
                    # gap until the next one: look for such events now and then.
                    checked = time.monotonic()
                    before = last
                    await catch_up()
                    if last == before and time.monotonic() - last_write > _PING:
                        await response.write(b": ping\n\n")
                        last_write = time.monotonic()
    except AzsdError:
        with contextlib.suppress(ConnectionError):
            await _send(response, "daemon", {"up": False})
    finally:
        sub.close()
    return response


async def _chunks(
    client: AsyncClient, root: str, session: int, from_seq: int
) -> AsyncIterator[list[WireEvent]]:
    """The events from `from_seq` on, a page at a time (nothing when the daemon is away: it is asked
    with the short timeout of a check, so that a stream notices a daemon gone as soon as the check)."""
    next_seq: int | None = from_seq
    while next_seq is not None:
        try:
            asked = GetEvents(root=root, session=session, from_seq=next_seq, limit=500)
            page = await client.call(asked, EventsPage, timeout=_CHECK_TIMEOUT)
        except AzsdError:
            return
        if page.events:
            yield page.events
        next_seq = page.next_seq
