# GENERATED from aio.py by client/unasync.py (`make unasync`): edit aio.py, never this file.
# ruff: noqa: UP028 (an async generator cannot `yield from`, so the source loops, and so does this copy)
"""The blocking azsd client: :class:`Client`, every typed request of :class:`~azsd_client.AsyncClient`.

:class:`Client` is a :class:`~azsd_client._connection.Connection` (one DEALER, Lazy Pirate timeouts, the
protocol checked on first contact, no event loop) with one typed method per request, generated from
``aio.py``.

>>> with Client() as client:                     # doctest: +SKIP
...     view = client.create_session("/src/project", "fix parser", worktree="main").session
...     client.append_events("/src/project", view.id, [UserMessage(content="hi")])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

import msgspec

from azsd.errors import NoReply
from azsd.ipc.protocol import (
    AppendEvents,
    AppendReply,
    ArchiveSession,
    Backup,
    BackupReply,
    BoundaryReply,
    BuildContext,
    CompactionBoundary,
    CompactionPlanReply,
    CompactionReply,
    CompactWithOutput,
    ContextMeter,
    ContextReply,
    CreateSession,
    DeleteSession,
    EventsPage,
    Export,
    ExportReply,
    ForkSession,
    GetEvents,
    GetSession,
    IndexStatus,
    IndexStatusReply,
    KeyedRequest,
    ListSessions,
    MarkCompleted,
    MeterReply,
    OkReply,
    PlanCompaction,
    Reindex,
    ReindexReply,
    RenameSession,
    Request,
    Search,
    SearchReply,
    SessionReply,
    SessionsReply,
    Shutdown,
    ShutdownReply,
    Status,
    StatusReply,
    StoreCompaction,
    Usage,
    UsageReply,
    WireEvent,
)

from ._agents import AgentMethods
from ._connection import Connection
from ._full import FullMethods
from ._pubsub import PushSubscription, Subscription
from ._remote import RemoteMethods
from ._shared import (
    Archived,
    Backend,
    ExportFormat,
    RootLike,
    WriteWait,
    absolute_path,
    canonical_root,
    encode_events,
    expect,
    long_timeout,
    with_request_key,
)

if TYPE_CHECKING:
    from azsd.events import Event

__all__ = ["Client", "PushSubscription", "Subscription"]

_R = TypeVar("_R")


class Client(AgentMethods, FullMethods, RemoteMethods, Connection):
    """A typed connection to azsd: one method per request, each returning its reply's own type.

    Use one client from one thread (or one event loop) at a time.

    Args:
        config: where the daemon listens; by default resolved from the environment and config file.
        timeout: seconds to wait for each reply (`ingest_file` waits longer, see its docstring).
        context: the ZeroMQ context to open sockets in (default: the process-wide instance).
    """

    def call(self, message: Request, kind: type[_R], *, timeout: float | None = None) -> _R:
        """`request`, with the reply checked to be of type `kind`.

        A request that changes a store (a :data:`~azsd.ipc.protocol.KeyedRequest`) is given a fresh
        `request_key` unless it has one, and when its reply does not come in time it is sent again
        with the same key, as long as the daemon answers (:class:`~azsd_client._shared.WriteWait`):
        the daemon carries it out at most once, and answers the retry with the first reply. Once
        `busy_wait_s` is over, a timeout raises :class:`~azsd.errors.NoReply`.
        """
        if not isinstance(message, KeyedRequest):
            return expect(self.request(message, timeout=timeout), kind)
        keyed = with_request_key(message)
        waiting = WriteWait(self, keyed, timeout)
        while True:
            try:
                reply = self.request(keyed, timeout=timeout)
                break
            except NoReply:
                waiting.no_reply()
        return expect(reply, kind)

    def status(self) -> StatusReply:
        """Version, protocol, pid, uptime and open stores of the daemon."""
        return self.call(Status(), StatusReply)

    def shutdown(self) -> ShutdownReply:
        """Ask the daemon to stop (queued writes finish first)."""
        return self.call(Shutdown(), ShutdownReply)

    def create_session(
        self,
        root: RootLike,
        name: str | None = None,
        *,
        worktree: str = "",
    ) -> SessionReply:
        """Create a session; the store file is created now if it did not exist."""
        message = CreateSession(root=canonical_root(root), name=name, worktree=worktree)
        return self.call(message, SessionReply)

    def list_sessions(
        self,
        root: RootLike,
        worktree: str | None = None,
        *,
        limit: int = 100,
        offset: int = 0,
        archived: Archived = "exclude",
        with_usage: bool = False,
        with_meter: bool = False,
    ) -> SessionsReply:
        """One page of sessions, latest activity first; `worktree=None` lists every worktree's.

        Archived sessions are left out unless `archived` is `include` or `only`; `with_usage` fills
        each view's token usage, `with_meter` its context meter (`context_chars`).
        """
        message = ListSessions(
            root=canonical_root(root),
            worktree=worktree,
            limit=limit,
            offset=offset,
            archived=archived,
            with_usage=with_usage,
            with_meter=with_meter,
        )
        return self.call(message, SessionsReply)

    def get_session(self, root: RootLike, session: int, *, with_meter: bool = False) -> SessionReply:
        """One session, with its token usage (and its context meter, `with_meter`)."""
        message = GetSession(root=canonical_root(root), session=session, with_meter=with_meter)
        return self.call(message, SessionReply)

    def rename_session(self, root: RootLike, session: int, name: str) -> SessionReply:
        """Rename a session (an empty name shows as `S<id>`)."""
        message = RenameSession(root=canonical_root(root), session=session, name=name)
        return self.call(message, SessionReply)

    def delete_session(self, root: RootLike, session: int, *, with_forks: bool = False) -> OkReply:
        """Delete a session and everything stored for it; its forks too `with_forks` (else they stay,
        their lineage cleared)."""
        message = DeleteSession(root=canonical_root(root), session=session, with_forks=with_forks)
        return self.call(message, OkReply)

    def fork_session(
        self, root: RootLike, session: int, at_seq: int, name: str | None = None
    ) -> SessionReply:
        """A new session holding copies of `session`'s events 1..`at_seq`; the original is not changed."""
        message = ForkSession(root=canonical_root(root), session=session, at_seq=at_seq, name=name)
        return self.call(message, SessionReply)

    def archive_session(self, root: RootLike, session: int, archived: bool = True) -> SessionReply:
        """Hide a session from listings (`archived=False` brings it back); nothing is deleted."""
        message = ArchiveSession(root=canonical_root(root), session=session, archived=archived)
        return self.call(message, SessionReply)

    def append_events(self, root: RootLike, session: int, events: Sequence[Event]) -> AppendReply:
        """Store events (compacted on the way in); the reply has them as stored, with their seqs."""
        message = AppendEvents(root=canonical_root(root), session=session, events=encode_events(events))
        return self.call(message, AppendReply)

    def get_events_page(
        self, root: RootLike, session: int, *, from_seq: int = 1, limit: int = 500, full: bool = False
    ) -> EventsPage:
        """One page of events with seq >= `from_seq`, injected context stripped; `full`: of the
        session's full record (what the agent wrote, uncompacted), when one is kept (`page.full`)."""
        message = GetEvents(
            root=canonical_root(root),
            session=session,
            from_seq=from_seq,
            limit=limit,
            full=full or msgspec.UNSET,
        )
        return self.call(message, EventsPage)

    def get_events(
        self, root: RootLike, session: int, *, from_seq: int = 1, page_size: int = 500
    ) -> Iterator[WireEvent]:
        """Every event from `from_seq` on, fetched page by page as the iteration goes."""
        next_seq: int | None = from_seq
        while next_seq is not None:
            page = self.get_events_page(root, session, from_seq=next_seq, limit=page_size)
            for event in page.events:
                yield event
            next_seq = page.next_seq

    def build_context(
        self, root: RootLike, session: int, prompt: str, *, backend: Backend = "claude"
    ) -> ContextReply:
        """The exact context-injected prompt for the next turn (`backend` is `claude` or `codex`)."""
        message = BuildContext(root=canonical_root(root), session=session, prompt=prompt, backend=backend)
        return self.call(message, ContextReply)

    def mark_completed(
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
        return self.call(message, OkReply)

    def store_compaction(
        self, root: RootLike, session: int, after_seq: int, summary: str, *, identity: str | None = None
    ) -> OkReply:
        """Record a compaction summary covering seqs up to `after_seq`; with the plan's `identity`,
        refused if the session is no longer the one planned for (its number reused)."""
        message = StoreCompaction(
            root=canonical_root(root),
            session=session,
            after_seq=after_seq,
            summary=summary,
            identity=msgspec.UNSET if identity is None else identity,
        )
        return self.call(message, OkReply)

    def compaction_boundary(
        self, root: RootLike, session: int, *, keep: int = 3, from_seq: int | None = None
    ) -> BoundaryReply:
        """Where to compact so the newest `keep` prompts stay raw."""
        message = CompactionBoundary(root=canonical_root(root), session=session, keep=keep, from_seq=from_seq)
        return self.call(message, BoundaryReply)

    def context_meter(
        self,
        root: RootLike,
        session: int,
        *,
        threshold: int | None = None,
    ) -> MeterReply:
        """Characters since the last compaction, against `threshold` (the spec's 400 000 when None)."""
        message = ContextMeter(root=canonical_root(root), session=session, threshold=threshold)
        return self.call(message, MeterReply)

    def compact_with_output(
        self,
        root: RootLike,
        session: int,
        after_seq: int,
        path: RootLike,
        format: str,
        *,
        identity: str | None = None,
        agent_home: str | None = None,
    ) -> CompactionReply:
        """Store a compaction whose summary is the assistant text of the agent output at `path`
        (`stored` False: it held none); with the plan's `identity`, refused if the session is no
        longer the one planned for (its number reused). The compaction's spend is counted in the
        session; with `agent_home` (where the agent keeps its histories), the agent's own history of
        the compaction is the session's too, and never imported as a session of its own."""
        message = CompactWithOutput(
            root=canonical_root(root),
            session=session,
            after_seq=after_seq,
            path=absolute_path(path),
            format=format,
            identity=msgspec.UNSET if identity is None else identity,
            agent_home=msgspec.UNSET if agent_home is None else agent_home,
        )
        return self.call(message, CompactionReply)

    def plan_compaction(
        self, root: RootLike, session: int, *, keep: int | None = None
    ) -> CompactionPlanReply:
        """What a compaction would summarise and the prompt asking an agent for the summary
        (`after_seq` None: too few prompts since the latest compaction)."""
        message = PlanCompaction(root=canonical_root(root), session=session, keep=keep)
        return self.call(message, CompactionPlanReply)

    def search(
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
        """Full-text search, best match first, each hit with a highlighted snippet.

        `query` is FTS5 syntax (``a AND b``, ``"a phrase"``, ``pre*``), or with `words` plain words that
        must all match. `worktrees`, `sessions` and `kinds` (variant names, or user, assistant, tool,
        call, result, plan) narrow it; None matches everything.
        """
        message = Search(
            root=canonical_root(root),
            query=query,
            worktree=worktree,
            limit=limit,
            worktrees=None if worktrees is None else list(worktrees),
            sessions=None if sessions is None else list(sessions),
            kinds=None if kinds is None else list(kinds),
            words=words,
        )
        return self.call(message, SearchReply)

    def index_status(self, root: RootLike, *, stale: bool = False) -> IndexStatusReply:
        """How many event rows wait to be indexed for search (rows another program wrote, indexed in
        the background or by the next search); with `stale`, how many entries of the index are of
        rows that are gone (reads the whole index)."""
        return self.call(IndexStatus(root=canonical_root(root), stale=stale), IndexStatusReply)

    def reindex(self, root: RootLike, *, timeout: float | None = None) -> ReindexReply:
        """Rebuild the store's search index from its events (a long request, like `ingest_file`)."""
        message = Reindex(root=canonical_root(root))
        return self.call(message, ReindexReply, timeout=long_timeout(timeout, self.timeout))

    def export_page(
        self,
        root: RootLike,
        session: int,
        *,
        format: ExportFormat = "md",
        redact: bool = False,
        from_seq: int = 1,
        limit: int = 1000,
        timeout: float | None = None,
        full: bool = False,
    ) -> ExportReply:
        """One page of a session rendered as Markdown, JSONL or HTML (`next_seq`: where the next starts);
        `full`: of its full record, when one is kept."""
        message = Export(
            root=canonical_root(root), session=session, format=format, redact=redact, from_seq=from_seq,
            limit=limit, full=full or msgspec.UNSET,
        )  # fmt: skip
        return self.call(message, ExportReply, timeout=long_timeout(timeout, self.timeout))

    def export(
        self,
        root: RootLike,
        session: int,
        *,
        format: ExportFormat = "md",
        redact: bool = False,
        page_size: int = 1000,
        timeout: float | None = None,
        full: bool = False,
    ) -> Iterator[ExportReply]:
        """Every page of an export, fetched as the iteration goes: their `text`s joined are the document,
        and their `masked` counts summed are the secrets `redact` masked."""
        next_seq: int | None = 1
        while next_seq is not None:
            page = self.export_page(
                root, session, format=format, redact=redact, from_seq=next_seq, limit=page_size,
                timeout=timeout, full=full,
            )  # fmt: skip
            yield page
            next_seq = page.next_seq

    def backup(
        self, root: RootLike, dest: RootLike | None = None, *, timeout: float | None = None
    ) -> BackupReply:
        """Copy the store with SQLite's backup API and verify the copy.

        `dest` is a directory or a path ending in ``.azs`` (made absolute here); None: the daemon's
        default, ``<root>/.azureal/backups/``. An existing file is never overwritten.
        """
        message = Backup(root=canonical_root(root), dest=None if dest is None else absolute_path(dest))
        return self.call(message, BackupReply, timeout=long_timeout(timeout, self.timeout))

    def usage(
        self,
        root: RootLike,
        session: int | None = None,
        *,
        worktrees: Sequence[str] | None = None,
        by: str | None = None,
        by_model: bool = False,
        since: str | None = None,
        until: str | None = None,
        timezone: str | None = None,
        exclude_removed: bool = False,
        with_sessions: bool = True,
        active: bool = False,
        read_in_place: Sequence[RootLike] = (),
    ) -> UsageReply:
        """Token usage and cost per session, per worktree, and in total (`session`, `worktrees` narrow it);
        with `by` (``day``, ``week``, ``month``, ``session``, ``block``) by period too, each split by
        model with `by_model`; `since`, `until` (local days, inclusive) keep only those days' usage.
        Removed sessions' usage counts unless `exclude_removed`; `with_sessions` false leaves the
        per-session and per-worktree lists out; `active` (with ``by="block"``) keeps only the block
        still going, with its burn rate and projection; `read_in_place` agent files no store holds
        are read where they lie and counted too."""
        wanted = None if worktrees is None else list(worktrees)
        message = Usage(
            root=canonical_root(root), session=session, worktrees=wanted, by=by, by_model=by_model,
            since=since, until=until, timezone=timezone, exclude_removed=exclude_removed,
            with_sessions=with_sessions, active=active,
            read_in_place=[absolute_path(path) for path in read_in_place],
        )  # fmt: skip
        return self.call(message, UsageReply)
