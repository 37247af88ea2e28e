"""`azs bridge`: azsd for editors that cannot load ZeroMQ, over stdin and stdout, one JSON object a line.

Neovim's Lua, Emacs Lisp, Helix and Zed extensions talk to helpers over stdio, as they do with language
servers. The bridge is one long-lived process that turns each request line into a protocol request on
an :class:`~azsd_client.aio.AsyncClient` (so request keys, retries and timeouts are the client's), and
writes the reply as a line; requests run concurrently and are answered as they complete, so replies
may come out of order (match them by ``id``). Notifications of the stores or sessions the editor
subscribed to are written between replies as ``{"notify": …}``. The line formats are
:mod:`azsd_client.bridge_wire`; docs/bridge.md is the editor author's guide.

A heartbeat (`status` every `heartbeat` seconds on a connection of its own) watches the daemon: when it
stops answering the bridge says ``{"notify": {"op": "disconnected", …}}`` and fails requests at once
until it is back, then says ``reconnected`` (with the new pid: the daemon restarted) and renews the
subscriptions. Stdin's end (EOF) ends the bridge once the requests in flight are answered. The pipes
and their backpressure (no more stdin read while replies wait for the editor) are
:mod:`azsd_client.bridge_io`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
from typing import Any, BinaryIO, Final, cast

from azsd.config import ResolvedConfig
from azsd.errors import AzsdError, DaemonUnavailable, RemoteError
from azsd.ipc.protocol import PROTOCOL_VERSION, Notification, Reply, StatusReply

from ._shared import INGEST_TIMEOUT_S, canonical_root
from .aio import AsyncClient, AsyncSubscription
from .bridge_io import MAX_LINE_BYTES, MAX_PENDING, Output, read_lines
from .bridge_wire import (
    BRIDGE_OPS,
    BadLine,
    Incoming,
    error_code,
    error_line,
    notify_line,
    parse_line,
    reply_line,
    result_line,
    to_request,
)

__all__ = ["MAX_LINE_BYTES", "Bridge", "read_lines", "run_bridge"]

_log = logging.getLogger("azsd_client.bridge")

#: Requests that may take long (a big file, a whole store): they wait at least INGEST_TIMEOUT_S.
_LONG_OPS: Final = frozenset(
    {"ingestfile", "follow", "unfollow", "export", "backup", "importsession", "reindex"}
)

_Key = tuple[str, int | None]


class _Client(AsyncClient):
    """The bridge's connection, which it can drop when the heartbeat finds the daemon gone."""

    def drop(self, error: AzsdError) -> None:
        """Fail the requests in flight with `error` and close the socket (the next request reconnects)."""
        self._reset(error)


class Bridge:
    """One bridge session: requests from `read` lines, answers and notifications to `out`.

    Args:
        config: where the daemon listens.
        out: where lines are written (stdout's binary buffer).
        timeout: seconds to wait for a reply (a request's own ``timeout`` wins; long requests wait longer).
        heartbeat: seconds between the checks that the daemon is there.
        pending: lines read whose answer is not written yet, at most (then stdin waits).
    """

    def __init__(
        self,
        config: ResolvedConfig,
        out: BinaryIO,
        *,
        timeout: float = 5.0,
        heartbeat: float = 2.0,
        pending: int = MAX_PENDING,
    ) -> None:
        self.config, self.timeout, self.heartbeat = config, timeout, heartbeat
        self.slots = threading.Semaphore(pending)
        self.output = Output(out, self.slots)
        self.client = _Client(config, timeout=timeout)
        self._probe = AsyncClient(config, timeout=min(timeout, max(heartbeat, 1.0)))
        self._subs: dict[_Key, tuple[AsyncSubscription, asyncio.Task[None]]] = {}
        self._requests: set[asyncio.Task[None]] = set()
        self._pid: int | None = None  # the daemon's pid while it answers
        self._seen: int | None = None  # the last pid that answered, kept while it is away
        self._down_reason: str | None = None  # why it is not there, once the heartbeat found out
        #: The longest request line taken (longer ones are answered with an error).
        self.max_line = MAX_LINE_BYTES

    # -- output ------------------------------------------------------------------------------------

    def write(self, line: bytes) -> None:
        """The answer to a line read (each line read gets one, or :meth:`Output.release`)."""
        self.output.answer(line)

    def _fail(self, id: Any, exc: AzsdError) -> None:
        message = exc.message if isinstance(exc, RemoteError) else str(exc)
        self.write(error_line(id, error_code(exc), message))

    # -- requests ----------------------------------------------------------------------------------

    def accept(self, line: bytes) -> None:
        """Take one line: answer a bad one at once, run a request as a task of its own."""
        if len(line) > self.max_line:
            self.write(error_line(None, "bad_request", f"a line longer than {self.max_line} bytes"))
            return
        if not line.strip():
            self.output.release()
            return  # blank lines are allowed between requests
        try:
            incoming = parse_line(line)
        except BadLine as exc:
            self._fail(exc.id, exc)
            return
        except Exception as exc:  # no line may end the bridge
            _log.exception("could not read a line")
            self.write(error_line(None, "bad_request", f"the bridge could not read this line: {exc!r}"))
            return
        task = asyncio.get_running_loop().create_task(self._answer(incoming))
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    async def _answer(self, incoming: Incoming) -> None:
        id, fields = incoming.id, incoming.fields
        try:
            if fields["op"] in BRIDGE_OPS:
                self.write(result_line(id, await self._bridge_op(fields)))
                return
            request = to_request(fields)
            if self._down_reason is not None:
                raise DaemonUnavailable(self._down_reason)
            reply = await self.client.call(request, object, timeout=self._timeout_for(incoming))
            self.write(reply_line(id, cast(Reply, reply)))
        except BadLine as exc:
            self._fail(id, BadLine(exc.code, str(exc), id))
        except AzsdError as exc:
            self._fail(id, exc)
        except Exception as exc:  # a bug here must not end the editor's bridge
            _log.exception("request %r failed", fields.get("op"))
            self.write(error_line(id, "internal", f"the bridge failed: {exc!r}"))

    def _timeout_for(self, incoming: Incoming) -> float:
        if incoming.timeout is not None:
            return incoming.timeout
        op = incoming.fields["op"]
        return max(self.timeout, INGEST_TIMEOUT_S) if op in _LONG_OPS else self.timeout

    # -- subscriptions -----------------------------------------------------------------------------

    async def _bridge_op(self, fields: dict[str, Any]) -> dict[str, Any]:
        op = fields["op"]
        unknown = set(fields) - {"op", "root", "session"}
        root, session = fields.get("root"), fields.get("session")
        if unknown:
            raise BadLine("bad_request", f"{op} takes root and session, not {', '.join(sorted(unknown))}")
        if not isinstance(root, str) or not root.startswith("/"):
            raise BadLine("bad_request", f"{op} needs a root: an absolute path")
        if session is not None and (isinstance(session, bool) or not isinstance(session, int)):
            raise BadLine("bad_request", f"session is a number (3 for S3), not {session!r}")
        key: _Key = (canonical_root(root), session)
        if op == "subscribe":
            if session is not None:  # a session that is not there: said now, not by a silence
                await self.client.get_session(key[0], session)
            if key not in self._subs:
                self._subs[key] = self._open(key)
            return {"op": "subscribed", "root": key[0], "session": session}
        held = self._subs.pop(key, None)
        if held is not None:
            held[0].close()
            held[1].cancel()
        return {"op": "unsubscribed", "root": key[0], "session": session, "was": held is not None}

    def _open(self, key: _Key) -> tuple[AsyncSubscription, asyncio.Task[None]]:
        subscription = self.client.subscribe(key[0], key[1])
        task = asyncio.get_running_loop().create_task(self._relay(subscription))
        return subscription, task

    async def _relay(self, subscription: AsyncSubscription) -> None:
        """Write each notification of one subscription; a bad one is logged and skipped."""
        while True:
            try:
                note: Notification | None = await subscription.recv()
            except AzsdError as exc:
                _log.warning("skipped a notification: %s", exc)
                continue
            if note is not None:
                try:
                    self.output.notify(notify_line(note))
                except Exception:  # e.g. an event too deep to encode: this one is lost, not the relay
                    _log.exception("could not write a notification")

    def _renew_subscriptions(self) -> None:
        """New SUB sockets for every subscription (after a restart, the old ones may wait for a peer
        that is gone)."""
        for key, (subscription, task) in list(self._subs.items()):
            subscription.close()
            task.cancel()
            self._subs[key] = self._open(key)

    # -- the daemon's presence ---------------------------------------------------------------------

    async def watch_daemon(self) -> None:
        """Check the daemon every `heartbeat` seconds and say when it goes away and comes back."""
        while True:
            try:
                status: StatusReply | None = await self._probe.status()
            except AzsdError as exc:
                status = None
                await self._probe.aclose()  # the next check connects afresh
                self._went_away(str(exc))
            if status is not None:
                self._answered(status)
            await asyncio.sleep(self.heartbeat)

    def _answered(self, status: StatusReply) -> None:
        if status.pid == self._pid:
            return
        previous = self._seen
        self._pid = self._seen = status.pid
        self._down_reason = None
        if previous is not None:
            self._renew_subscriptions()
        note = {
            "op": "connected" if previous is None else "reconnected",
            "pid": status.pid,
            "version": status.version,
            "protocol": status.protocol,
            "restarted": previous is not None and previous != status.pid,
        }
        if status.protocol != PROTOCOL_VERSION:
            note["warning"] = (
                f"the daemon speaks protocol {status.protocol}, this bridge {PROTOCOL_VERSION}: "
                "restart the daemon so both come from the same installation"
            )
        self.output.notify(notify_line(note), droppable=False)

    def _went_away(self, reason: str) -> None:
        if self._down_reason is not None:
            return
        self._down_reason = reason
        self._pid = None
        self.client.drop(DaemonUnavailable(f"azsd went away: {reason}"))
        note = {"op": "disconnected", "pid": self._seen, "reason": reason}
        self.output.notify(notify_line(note), droppable=False)

    # -- the whole run -----------------------------------------------------------------------------

    async def run(self, stream: BinaryIO) -> None:
        """Serve until `stream` ends, then answer what is in flight and close."""
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        reader = threading.Thread(
            target=read_lines,
            args=(
                stream,
                lambda line: loop.call_soon_threadsafe(lines.put_nowait, line),
                self.max_line,
                self.slots,
            ),
            name="azs-bridge-stdin",
            daemon=True,
        )
        reader.start()
        watcher = loop.create_task(self.watch_daemon())
        try:
            while (line := await lines.get()) is not None:
                self.accept(line)
            if self._requests:
                await asyncio.wait(set(self._requests))
        finally:
            watcher.cancel()
            for subscription, task in self._subs.values():
                subscription.close()
                task.cancel()
            self._subs.clear()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            await self.client.aclose()
            await self._probe.aclose()
            await asyncio.to_thread(self.output.close)


def run_bridge(config: ResolvedConfig, *, timeout: float = 5.0, heartbeat: float = 2.0) -> int:
    """Run a bridge on stdin and stdout until stdin ends; the exit status (0)."""
    bridge = Bridge(config, sys.stdout.buffer, timeout=timeout, heartbeat=heartbeat)
    asyncio.run(bridge.run(sys.stdin.buffer))
    return 0
