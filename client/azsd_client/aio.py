"""The asyncio azsd client: the same typed methods as :class:`~azsd_client.Client`, awaitable.

Requests can be pipelined: each gets its own request id and future, one reader task matches
replies to futures, so several `await`s may be in flight on the one DEALER socket at once. When a
request times out, the socket is presumed dead (Lazy Pirate): it is closed with linger 0, every
request still in flight fails with :class:`~azsd.errors.DaemonUnavailable`, and the next request
opens a fresh socket and checks the daemon's protocol again.

>>> async def main() -> None:                    # doctest: +SKIP
...     async with AsyncClient() as client:
...         replies = await asyncio.gather(client.status(), client.list_sessions("/src/project"))
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import TypeVar, cast

import zmq
import zmq.asyncio

from azsd.config import ResolvedConfig
from azsd.errors import AzsdError, ProtocolError
from azsd.events import Event
from azsd.ipc.protocol import (
    AppendEvents,
    AppendReply,
    ArchiveSession,
    Backup,
    BackupReply,
    BoundaryReply,
    BuildContext,
    CompactionBoundary,
    ContextMeter,
    ContextReply,
    CreateSession,
    DeleteSession,
    EventsPage,
    Export,
    ExportReply,
    Follow,
    FollowReply,
    ForkSession,
    GetEvents,
    GetSession,
    ImportReply,
    ImportSession,
    ImportSources,
    IngestFile,
    IngestReply,
    ListSessions,
    MarkCompleted,
    MeterReply,
    Notification,
    OkReply,
    Reindex,
    ReindexReply,
    RenameSession,
    Reply,
    Request,
    SearchReply,
    SessionReply,
    SessionsReply,
    Shutdown,
    ShutdownReply,
    SourcesReply,
    Status,
    StatusReply,
    StoreCompaction,
    Unfollow,
    Usage,
    UsageReply,
    WireEvent,
    decode_notification,
    decode_reply,
    encode,
    topic,
)
from azsd.ipc.transport import connect_dealer, connect_sub

from ._shared import (
    Archived,
    Backend,
    ExportFormat,
    RootLike,
    absolute_path,
    canonical_root,
    check_protocol,
    connecting,
    default_config,
    encode_events,
    expect,
    long_timeout,
    raise_for_error,
    request_ids,
    search_request,
    unavailable,
)

__all__ = ["AsyncClient", "AsyncSubscription"]

_R = TypeVar("_R")


def _asyncio_context(context: zmq.Context[zmq.Socket[bytes]]) -> zmq.Context[zmq.Socket[bytes]]:
    """`context` making asyncio sockets. (Not `Socket.from_socket`: that leaves a second Python object
    on the same handle, which at garbage collection may close whatever socket reuses the handle.)"""
    return cast("zmq.Context[zmq.Socket[bytes]]", zmq.asyncio.Context.shadow(context))


def _asyncio_socket(sock: zmq.Socket[bytes]) -> zmq.asyncio.Socket:
    """A socket made in an :func:`_asyncio_context`, typed as what it is."""
    return cast(zmq.asyncio.Socket, sock)


class AsyncSubscription:
    """Live notifications of one store (or one session of it); see :class:`~azsd_client.Subscription`."""

    def __init__(self, context: zmq.Context[zmq.Socket[bytes]], endpoint: str, prefix: bytes) -> None:
        with connecting(endpoint):
            self._sock = _asyncio_socket(connect_sub(_asyncio_context(context), endpoint, [prefix]))

    async def recv(self, timeout: float | None = None) -> Notification | None:
        """The next notification, or None when none arrives within `timeout` seconds (None: wait)."""
        ready = await self._sock.poll(None if timeout is None else int(timeout * 1000))
        if not ready:
            return None
        frames = await self._sock.recv_multipart()
        if len(frames) != 2:
            raise ProtocolError(f"a notification arrived in {len(frames)} frames, not 2")
        return decode_notification(frames[1])

    def close(self) -> None:
        """Stop receiving (idempotent)."""
        self._sock.close(linger=0)

    async def __aenter__(self) -> AsyncSubscription:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncClient:
    """A typed asyncio connection to azsd; use it from one event loop.

    Args:
        config: where the daemon listens; by default resolved from the environment and config file.
        timeout: seconds to wait for each reply (`ingest_file` waits longer).
        context: the ZeroMQ context to open sockets in (default: the process-wide instance).
    """

    def __init__(
        self,
        config: ResolvedConfig | None = None,
        *,
        timeout: float = 5.0,
        context: zmq.Context[zmq.Socket[bytes]] | None = None,
    ) -> None:
        self.config = config if config is not None else default_config()
        self.timeout = timeout
        self._context: zmq.Context[zmq.Socket[bytes]] = (
            context if context is not None else zmq.Context.instance()
        )
        self._sock: zmq.asyncio.Socket | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[bytes, asyncio.Future[Reply]] = {}
        self._ids = request_ids()
        self._checked: asyncio.Future[StatusReply] | None = None  # the first request's Status check

    # -- plumbing ---------------------------------------------------------------------------------

    async def request(self, message: Request, *, timeout: float | None = None) -> Reply:
        """Send one request and await its reply (see :meth:`azsd_client.Client.request`)."""
        first = self._checked is None
        status = await self._check()
        if first and isinstance(message, Status):
            return status
        return raise_for_error(await self._roundtrip(message, self.timeout if timeout is None else timeout))

    async def call(self, message: Request, kind: type[_R], *, timeout: float | None = None) -> _R:
        """`request`, with the reply checked to be of type `kind`."""
        return expect(await self.request(message, timeout=timeout), kind)

    async def _check(self) -> StatusReply:
        """The first request of a connection checks `Status`; concurrent first requests share one check."""
        if self._checked is None:
            self._checked = asyncio.ensure_future(self._first_contact())
        check = self._checked
        try:
            return await asyncio.shield(check)
        except AzsdError:
            if self._checked is check:
                self._checked = None
            raise

    async def _first_contact(self) -> StatusReply:
        return check_protocol(await self._roundtrip(Status(), self.timeout, first_contact=True))

    async def _roundtrip(self, message: Request, timeout: float, *, first_contact: bool = False) -> Reply:
        sock = self._socket()
        request_id = next(self._ids)
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            async with asyncio.timeout(timeout):
                await sock.send_multipart([request_id, encode(message)])
                return await future
        except TimeoutError:
            error = unavailable(
                self.config.rpc_endpoint, timeout, first_contact=first_contact, op=type(message).__name__
            )
            self._reset(error)
            raise error from None
        finally:
            self._pending.pop(request_id, None)

    def _socket(self) -> zmq.asyncio.Socket:
        if self._sock is None:
            endpoint = self.config.rpc_endpoint
            with connecting(endpoint):
                self._sock = _asyncio_socket(connect_dealer(_asyncio_context(self._context), endpoint))
            self._reader = asyncio.get_running_loop().create_task(self._read(self._sock))
        return self._sock

    async def _read(self, sock: zmq.asyncio.Socket) -> None:
        """Hand each reply to the future of the request it answers; drop the rest."""
        while True:
            frames = await sock.recv_multipart()
            if len(frames) != 2:
                continue
            future = self._pending.get(frames[0])
            if future is None or future.done():
                continue
            try:
                future.set_result(decode_reply(frames[1]))
            except ProtocolError as exc:
                future.set_exception(exc)

    def _reset(self, error: AzsdError | None = None) -> None:
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error or AzsdError("the client was closed"))
                future.exception()
        self._pending.clear()
        self._checked = None

    async def aclose(self) -> None:
        """Close the socket; requests still in flight fail. The client reconnects if used again."""
        reader = self._reader
        self._reset()
        if reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def subscribe(self, root: RootLike, session: int | None = None) -> AsyncSubscription:
        """Notifications of the store at `root`, or of one session in it."""
        return AsyncSubscription(
            self._context, self.config.pub_endpoint, topic(canonical_root(root), session)
        )

    # -- typed requests ---------------------------------------------------------------------------

    async def status(self) -> StatusReply:
        """Version, protocol, pid, uptime and open stores of the daemon."""
        return await self.call(Status(), StatusReply)

    async def shutdown(self) -> ShutdownReply:
        """Ask the daemon to stop (queued writes finish first)."""
        return await self.call(Shutdown(), ShutdownReply)

    async def create_session(
        self, root: RootLike, name: str | None = None, *, worktree: str = ""
    ) -> SessionReply:
        """Create a session; the store file is created now if it did not exist."""
        return await self.call(
            CreateSession(root=canonical_root(root), name=name, worktree=worktree), SessionReply
        )

    async def list_sessions(
        self,
        root: RootLike,
        worktree: str | None = None,
        *,
        limit: int = 100,
        offset: int = 0,
        archived: Archived = "exclude",
        with_usage: bool = False,
    ) -> SessionsReply:
        """One page of sessions (see :meth:`azsd_client.Client.list_sessions`)."""
        message = ListSessions(
            root=canonical_root(root),
            worktree=worktree,
            limit=limit,
            offset=offset,
            archived=archived,
            with_usage=with_usage,
        )
        return await self.call(message, SessionsReply)

    async def get_session(self, root: RootLike, session: int) -> SessionReply:
        """One session, with its token usage."""
        return await self.call(GetSession(root=canonical_root(root), session=session), SessionReply)

    async def rename_session(self, root: RootLike, session: int, name: str) -> SessionReply:
        """Rename a session (an empty name shows as `S<id>`)."""
        return await self.call(
            RenameSession(root=canonical_root(root), session=session, name=name), SessionReply
        )

    async def delete_session(self, root: RootLike, session: int, *, with_forks: bool = False) -> OkReply:
        """Delete a session and everything stored for it; its forks too `with_forks`."""
        message = DeleteSession(root=canonical_root(root), session=session, with_forks=with_forks)
        return await self.call(message, OkReply)

    async def fork_session(
        self, root: RootLike, session: int, at_seq: int, name: str | None = None
    ) -> SessionReply:
        """A new session holding copies of `session`'s events 1..`at_seq`; the original is not changed."""
        message = ForkSession(root=canonical_root(root), session=session, at_seq=at_seq, name=name)
        return await self.call(message, SessionReply)

    async def archive_session(self, root: RootLike, session: int, archived: bool = True) -> SessionReply:
        """Hide a session from listings (`archived=False` brings it back); nothing is deleted."""
        message = ArchiveSession(root=canonical_root(root), session=session, archived=archived)
        return await self.call(message, SessionReply)

    async def append_events(self, root: RootLike, session: int, events: Sequence[Event]) -> AppendReply:
        """Store events (compacted on the way in); the reply has them as stored, with their seqs."""
        message = AppendEvents(root=canonical_root(root), session=session, events=encode_events(events))
        return await self.call(message, AppendReply)

    async def get_events_page(
        self, root: RootLike, session: int, *, from_seq: int = 1, limit: int = 500
    ) -> EventsPage:
        """One page of events with seq >= `from_seq`, injected context stripped."""
        message = GetEvents(root=canonical_root(root), session=session, from_seq=from_seq, limit=limit)
        return await self.call(message, EventsPage)

    async def get_events(
        self, root: RootLike, session: int, *, from_seq: int = 1, page_size: int = 500
    ) -> AsyncIterator[WireEvent]:
        """Every event from `from_seq` on, fetched page by page as the iteration goes."""
        next_seq: int | None = from_seq
        while next_seq is not None:
            page = await self.get_events_page(root, session, from_seq=next_seq, limit=page_size)
            for event in page.events:
                yield event
            next_seq = page.next_seq

    async def build_context(
        self, root: RootLike, session: int, prompt: str, *, backend: Backend = "claude"
    ) -> ContextReply:
        """The exact context-injected prompt for the next turn."""
        message = BuildContext(root=canonical_root(root), session=session, prompt=prompt, backend=backend)
        return await self.call(message, ContextReply)

    async def mark_completed(
        self, root: RootLike, session: int, success: bool, *, duration_ms: int = 0, cost_usd: float = 0.0
    ) -> OkReply:
        """Set the session's badge: success or failure of its last turn."""
        message = MarkCompleted(
            root=canonical_root(root),
            session=session,
            success=success,
            duration_ms=duration_ms,
            cost_usd=cost_usd,
        )
        return await self.call(message, OkReply)

    async def store_compaction(self, root: RootLike, session: int, after_seq: int, summary: str) -> OkReply:
        """Record a compaction summary covering seqs up to `after_seq`."""
        message = StoreCompaction(
            root=canonical_root(root), session=session, after_seq=after_seq, summary=summary
        )
        return await self.call(message, OkReply)

    async def compaction_boundary(
        self, root: RootLike, session: int, *, keep: int = 3, from_seq: int | None = None
    ) -> BoundaryReply:
        """Where to compact so the newest `keep` prompts stay raw."""
        message = CompactionBoundary(root=canonical_root(root), session=session, keep=keep, from_seq=from_seq)
        return await self.call(message, BoundaryReply)

    async def context_meter(self, root: RootLike, session: int) -> MeterReply:
        """Characters since the last compaction, against the compaction threshold."""
        return await self.call(ContextMeter(root=canonical_root(root), session=session), MeterReply)

    async def search(
        self,
        root: RootLike,
        query: str,
        *,
        worktree: str | None = None,
        limit: int = 50,
        worktrees: Sequence[str] | None = None,
        sessions: Sequence[int] | None = None,
        kinds: Sequence[str] | None = None,
        words: bool = False,
    ) -> SearchReply:
        """Full-text search, best match first (see :meth:`azsd_client.Client.search`)."""
        message = search_request(
            root, query, worktree=worktree, limit=limit, worktrees=worktrees, sessions=sessions,
            kinds=kinds, words=words,
        )  # fmt: skip
        return await self.call(message, SearchReply)

    async def reindex(self, root: RootLike, *, timeout: float | None = None) -> ReindexReply:
        """Rebuild the store's search index from its events (a long request, like `ingest_file`)."""
        wait = long_timeout(timeout, self.timeout)
        return await self.call(Reindex(root=canonical_root(root)), ReindexReply, timeout=wait)

    async def export_page(
        self,
        root: RootLike,
        session: int,
        *,
        format: ExportFormat = "md",
        redact: bool = False,
        from_seq: int = 1,
        limit: int = 1000,
        timeout: float | None = None,
    ) -> ExportReply:
        """One page of a session rendered as Markdown, JSONL or HTML (`next_seq`: where the next starts)."""
        message = Export(
            root=canonical_root(root), session=session, format=format, redact=redact, from_seq=from_seq,
            limit=limit,
        )  # fmt: skip
        return await self.call(message, ExportReply, timeout=long_timeout(timeout, self.timeout))

    async def export(
        self,
        root: RootLike,
        session: int,
        *,
        format: ExportFormat = "md",
        redact: bool = False,
        page_size: int = 1000,
        timeout: float | None = None,
    ) -> AsyncIterator[ExportReply]:
        """Every page of an export, fetched as the iteration goes (see :meth:`azsd_client.Client.export`)."""
        next_seq: int | None = 1
        while next_seq is not None:
            page = await self.export_page(
                root, session, format=format, redact=redact, from_seq=next_seq, limit=page_size,
                timeout=timeout,
            )  # fmt: skip
            yield page
            next_seq = page.next_seq

    async def backup(
        self, root: RootLike, dest: RootLike | None = None, *, timeout: float | None = None
    ) -> BackupReply:
        """Copy the store and verify the copy (see :meth:`azsd_client.Client.backup`)."""
        message = Backup(root=canonical_root(root), dest=None if dest is None else absolute_path(dest))
        return await self.call(message, BackupReply, timeout=long_timeout(timeout, self.timeout))

    async def import_sources(
        self, root: RootLike, agent: Backend, source_dir: RootLike, project: RootLike
    ) -> SourcesReply:
        """The agent history files of `project` under `source_dir` (``~/.claude`` or ``~/.codex``)."""
        message = ImportSources(
            root=canonical_root(root), agent=agent, source_dir=absolute_path(source_dir),
            project=canonical_root(project),
        )  # fmt: skip
        return await self.call(message, SourcesReply)

    async def import_session(
        self,
        root: RootLike,
        agent: Backend,
        path: RootLike,
        *,
        worktree: str = "",
        timeout: float | None = None,
    ) -> ImportReply:
        """Import one agent history file as a session of its own (again: only what it gained since)."""
        message = ImportSession(
            root=canonical_root(root), agent=agent, path=absolute_path(path), worktree=worktree
        )
        return await self.call(message, ImportReply, timeout=long_timeout(timeout, self.timeout))

    async def usage(
        self, root: RootLike, session: int | None = None, *, worktrees: Sequence[str] | None = None
    ) -> UsageReply:
        """Token usage and cost per session, per worktree, and in total (`session`, `worktrees` narrow it)."""
        wanted = None if worktrees is None else list(worktrees)
        message = Usage(root=canonical_root(root), session=session, worktrees=wanted)
        return await self.call(message, UsageReply)

    async def ingest_file(
        self,
        root: RootLike,
        session: int,
        path: RootLike,
        *,
        format: str | None = None,
        timeout: float | None = None,
    ) -> IngestReply:
        """Have the daemon read a finished agent JSONL file into a session (waits up to 300 s by default)."""
        message = IngestFile(
            root=canonical_root(root), session=session, path=absolute_path(path), format=format
        )
        wait = long_timeout(timeout, self.timeout)
        return await self.call(message, IngestReply, timeout=wait)

    async def follow(
        self,
        root: RootLike,
        session: int,
        path: RootLike,
        format: str | None = None,
        writer_pid: int | None = None,
        *,
        timeout: float | None = None,
    ) -> FollowReply:
        """Follow an agent JSONL file live into a session (see :meth:`azsd_client.Client.follow`)."""
        message = Follow(
            root=canonical_root(root),
            session=session,
            path=absolute_path(path),
            format=format,
            writer_pid=writer_pid,
        )
        wait = long_timeout(timeout, self.timeout)
        return await self.call(message, FollowReply, timeout=wait)

    async def unfollow(self, root: RootLike, path: RootLike, *, timeout: float | None = None) -> OkReply:
        """Stop following `path`, after storing what the file holds now."""
        message = Unfollow(root=canonical_root(root), path=absolute_path(path))
        wait = long_timeout(timeout, self.timeout)
        return await self.call(message, OkReply, timeout=wait)
