"""What each store request does: a function of the Store and the request, giving a reply and the
notifications to publish once the work is committed.

Handlers run in the store's worker thread (see :mod:`azsd.stores`), never touch sockets, and
raise :class:`azsd.errors.AzsdError` (or ValueError for a bad argument) on failure; the worker
turns that into an error reply.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from azsd.context import COMPACTION_THRESHOLD, build_context_prompt
from azsd.errors import SessionNotFoundError
from azsd.events import Complete, EventDecodeError, decode_event, encode_event, event_kind
from azsd.ingest import ingest_file
from azsd.ipc import protocol as p
from azsd.model import SessionInfo, StoredEvent
from azsd.store import Store

__all__ = [
    "HANDLERS",
    "NOTE_CHUNK",
    "Outcome",
    "StoreRequest",
    "appended_notes",
    "changed_note",
    "session_view",
    "wire_events",
]

#: A big ingest is announced in `EventsAppended` notifications of at most this many events.
NOTE_CHUNK = 500

StoreRequest = (
    p.CreateSession
    | p.ListSessions
    | p.GetSession
    | p.RenameSession
    | p.DeleteSession
    | p.AppendEvents
    | p.GetEvents
    | p.BuildContext
    | p.MarkCompleted
    | p.StoreCompaction
    | p.CompactionBoundary
    | p.ContextMeter
    | p.Search
    | p.IngestFile
)


@dataclass
class Outcome:
    """A reply, and the notifications (with `seq=0`, numbered at delivery) that go with it."""

    reply: p.Reply
    notes: list[p.Notification] = field(default_factory=list)


def wire_events(events: Sequence[StoredEvent]) -> list[p.WireEvent]:
    """Stored events as the wire carries them (reusing the JSON an append already encoded)."""
    return [
        p.WireEvent(seq=e.seq, kind=event_kind(e.event), data=(e.json or encode_event(e.event)).decode())
        for e in events
    ]


def session_view(store: Store, info: SessionInfo, *, with_usage: bool = False) -> p.SessionView:
    usage = None
    if with_usage:
        total = store.session_usage(info.id)
        u = total.usage
        usage = p.UsageView(
            input=u.input,
            output=u.output,
            cache_read=u.cache_read,
            cache_write=u.cache_write,
            reasoning=u.reasoning,
            cost_usd=total.cost_usd,
        )
    return p.SessionView(
        id=info.id,
        name=info.name,
        display_name=info.display_name,
        worktree=info.worktree,
        created=info.created,
        event_count=info.event_count,
        message_count=info.message_count,
        state=info.state,
        completed=info.completed,
        duration_ms=info.duration_ms,
        cost_usd=info.cost_usd,
        usage=usage,
    )


def _require(store: Store, session: int) -> None:
    if not store.has_session(session):
        raise SessionNotFoundError(session)


def changed_note(store: Store, root: str, session: int, change: str) -> p.SessionChanged:
    """The `SessionChanged` notification of `session` (with its view, unless it was deleted)."""
    view = session_view(store, store.get_session(session)) if change != "deleted" else None
    return p.SessionChanged(root=root, seq=0, session_id=session, change=change, session=view)


def appended_notes(root: str, session: int, events: Sequence[StoredEvent]) -> list[p.Notification]:
    """`EventsAppended` notifications of stored events, at most :data:`NOTE_CHUNK` events each."""
    wire = wire_events(events)
    return [
        p.EventsAppended(root=root, seq=0, session_id=session, events=wire[i : i + NOTE_CHUNK])
        for i in range(0, len(wire), NOTE_CHUNK)
    ]


def create_session(store: Store, req: p.CreateSession) -> Outcome:
    info = store.create_session(req.name, req.worktree)
    view = session_view(store, info)
    return Outcome(p.SessionReply(session=view), [p.SessionCreated(root=req.root, seq=0, session=view)])


def list_sessions(store: Store, req: p.ListSessions) -> Outcome:
    if req.limit < 0 or req.offset < 0:
        raise ValueError("limit and offset must not be negative")
    infos = store.list_sessions(req.worktree, limit=req.limit, offset=req.offset)
    views = [session_view(store, i) for i in infos]
    return Outcome(p.SessionsReply(sessions=views, total=store.count_sessions(req.worktree)))


def get_session(store: Store, req: p.GetSession) -> Outcome:
    return Outcome(
        p.SessionReply(session=session_view(store, store.get_session(req.session), with_usage=True))
    )


def rename_session(store: Store, req: p.RenameSession) -> Outcome:
    store.rename_session(req.session, req.name)
    note = changed_note(store, req.root, req.session, "renamed")
    assert note.session is not None
    return Outcome(p.SessionReply(session=note.session), [note])


def delete_session(store: Store, req: p.DeleteSession) -> Outcome:
    store.delete_session(req.session)
    return Outcome(p.OkReply(), [changed_note(store, req.root, req.session, "deleted")])


def append_events(store: Store, req: p.AppendEvents) -> Outcome:
    events = []
    for i, text in enumerate(req.events):
        try:
            events.append(decode_event(text))
        except EventDecodeError as exc:
            raise ValueError(f"event {i}: {exc}") from None
    result = store.append_events(req.session, events)
    wire = wire_events(result.events)
    notes = appended_notes(req.root, req.session, result.events)
    if any(isinstance(e.event, Complete) for e in result.events):
        notes.append(changed_note(store, req.root, req.session, "completed"))
    return Outcome(p.AppendReply(events=wire), notes)


def get_events(store: Store, req: p.GetEvents) -> Outcome:
    if req.limit < 1 or req.from_seq < 1:
        raise ValueError("from_seq and limit must be at least 1")
    _require(store, req.session)
    last = req.from_seq + req.limit - 1
    page, skipped = store.load_json(req.session, req.from_seq, last)
    next_seq = last + 1 if last < store.max_seq(req.session) else None
    events = [p.WireEvent(seq=seq, kind=kind, data=data) for seq, kind, data in page]
    return Outcome(p.EventsPage(events=events, next_seq=next_seq, skipped=skipped))


def build_context(store: Store, req: p.BuildContext) -> Outcome:
    _require(store, req.session)
    payload = store.build_context(req.session)
    return Outcome(
        p.ContextReply(prompt=build_context_prompt(payload, req.prompt, codex=req.backend == "codex"))
    )


def mark_completed(store: Store, req: p.MarkCompleted) -> Outcome:
    if req.duration_ms < 0:
        raise ValueError("duration_ms must not be negative")
    store.mark_completed(req.session, req.success, req.duration_ms, req.cost_usd)
    return Outcome(p.OkReply(), [changed_note(store, req.root, req.session, "completed")])


def store_compaction(store: Store, req: p.StoreCompaction) -> Outcome:
    store.store_compaction(req.session, req.after_seq, req.summary)
    return Outcome(p.OkReply())


def compaction_boundary(store: Store, req: p.CompactionBoundary) -> Outcome:
    _require(store, req.session)
    from_seq = req.from_seq if req.from_seq is not None else store.first_seq_since_compaction(req.session)
    return Outcome(p.BoundaryReply(after_seq=store.compaction_boundary(req.session, from_seq, req.keep)))


def context_meter(store: Store, req: p.ContextMeter) -> Outcome:
    _require(store, req.session)
    chars = store.total_chars_since_compaction(req.session)
    percent = round(100.0 * chars / COMPACTION_THRESHOLD, 1)
    return Outcome(p.MeterReply(chars=chars, threshold=COMPACTION_THRESHOLD, percent=percent))


def search(store: Store, req: p.Search) -> Outcome:
    hits = store.search_events(req.query, req.worktree, req.limit)
    return Outcome(p.SearchReply(hits=[p.SearchHit(session=s, data=d) for s, d in hits]))


def ingest(store: Store, req: p.IngestFile) -> Outcome:
    _require(store, req.session)
    path = Path(req.path)
    if not path.is_absolute():
        raise ValueError(f"ingest needs an absolute path (the daemon has its own working directory): {path}")
    report = ingest_file(store, req.session, path, req.format)
    reply = p.IngestReply(
        format=report.parse.format,
        lines=report.parse.lines,
        parsed=report.parsed,
        appended=report.appended,
        duplicates=report.duplicates,
        skipped=dict(report.parse.skipped),
        events=dict(report.parse.events),
    )
    notes = appended_notes(req.root, req.session, report.events)
    return Outcome(reply, notes)


HANDLERS: dict[type[Any], Callable[[Store, Any], Outcome]] = {
    p.CreateSession: create_session,
    p.ListSessions: list_sessions,
    p.GetSession: get_session,
    p.RenameSession: rename_session,
    p.DeleteSession: delete_session,
    p.AppendEvents: append_events,
    p.GetEvents: get_events,
    p.BuildContext: build_context,
    p.MarkCompleted: mark_completed,
    p.StoreCompaction: store_compaction,
    p.CompactionBoundary: compaction_boundary,
    p.ContextMeter: context_meter,
    p.Search: search,
    p.IngestFile: ingest,
}
