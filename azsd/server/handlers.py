"""What each store request does: :func:`handle`, one typed ``match`` over every
:data:`~azsd.ipc.protocol.StoreRequest`, each case a function of the store and the request giving
an :class:`~azsd.server.workers.Outcome` (a reply and the notifications to publish once the work is
committed).

Handlers run in the store's worker thread (see :mod:`azsd.server.workers`), never touch sockets, and
raise :class:`azsd.errors.AzsdError` (:class:`~azsd.errors.BadRequestError` for a bad argument) on
failure; the worker turns that into an error reply.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import msgspec

from azsd.context import build_context_prompt
from azsd.errors import BadRequestError, IngestError, SessionNotFoundError
from azsd.events import Complete, EventDecodeError, decode_new_event
from azsd.export import render_page
from azsd.ingest.file import ingest_file
from azsd.ingest.full_record import full_events
from azsd.ingest.full_search import full_hits
from azsd.ingest.opencode import ingest_session, is_session_key
from azsd.ingest.parsers.base import ParseReport
from azsd.ipc import protocol as p
from azsd.model import SearchResult, StoredEvent
from azsd.redact import redact_event, redact_text
from azsd.search import event_kinds, words_query
from azsd.server.compaction import (
    compact_with_output,
    compaction_boundary,
    context_meter,
    plan_compaction,
    store_compaction,
)
from azsd.server.follow.tailing import detect
from azsd.server.full_pages import full_page
from azsd.server.imports import Publish, import_session, import_sessions, import_sources
from azsd.server.usage import usage_reply
from azsd.server.views import EncodedViews, appended_notes, changed_note, session_view, wire_events
from azsd.server.workers import Outcome
from azsd.store import Store, store_path

__all__ = ["ALONE", "Publish", "backup_path", "handle", "runs_alone"]

#: Requests that may run for long (:mod:`azsd.store.chunks`): they run alone, outside the worker's
#: group transaction, so that each commits its work in short chunks of its own (a search may have
#: the index to catch up first).
ALONE: Final = (p.IngestFile, p.ImportSession, p.ImportSessions, p.Reindex, p.ForkSession, p.Backup, p.Search)


def runs_alone(req: p.Request) -> bool:
    """Whether `req` runs alone (:data:`ALONE`; the `alone` of :meth:`StoreRegistry.call`)."""
    return isinstance(req, ALONE)


def _require(store: Store, session: int) -> None:
    if not store.has_session(session):
        raise SessionNotFoundError(session)


def create_session(store: Store, req: p.CreateSession) -> Outcome:
    info = store.create_session(req.name, req.worktree)
    view = session_view(store, info)
    return Outcome(p.SessionReply(session=view), [p.SessionCreated(root=req.root, seq=0, session=view)])


def list_sessions(store: Store, req: p.ListSessions, encoder: EncodedViews | None = None) -> Outcome:
    """A page of sessions; a plain one (no usage, no meter) encoded by `encoder`, when given."""
    if req.limit < 0 or req.offset < 0:
        raise BadRequestError("limit and offset must not be negative")
    infos = store.list_sessions(req.worktree, limit=req.limit, offset=req.offset, archived=req.archived)
    total = store.count_sessions(req.worktree, archived=req.archived)
    if encoder is not None and not req.with_usage and not req.with_meter:
        return Outcome(encoder.listing(store, infos, total))
    ids = [i.id for i in infos]
    usage = store.usage_by_session(ids) if req.with_usage else {}
    meter = store.context_chars(ids) if req.with_meter else {}
    views = [
        session_view(
            store, i, with_usage=req.with_usage, usage=usage.get(i.id), context_chars=meter.get(i.id)
        )
        for i in infos
    ]
    return Outcome(p.SessionsReply(sessions=views, total=total))


def get_session(store: Store, req: p.GetSession) -> Outcome:
    info = store.get_session(req.session)
    chars = store.total_chars_since_compaction(req.session) if req.with_meter else None
    view = session_view(store, info, with_usage=True, forks=store.forks_of(req.session), context_chars=chars)
    return Outcome(p.SessionReply(session=view))


def rename_session(store: Store, req: p.RenameSession) -> Outcome:
    store.rename_session(req.session, req.name)
    note = changed_note(store, req.root, req.session, "renamed")
    assert note.session is not None
    return Outcome(p.SessionReply(session=note.session), [note])


def delete_session(store: Store, req: p.DeleteSession) -> Outcome:
    kept = [] if req.with_forks else store.forks_of(req.session)
    deleted = store.delete_session(req.session, with_forks=req.with_forks)
    notes: list[p.Notification] = [changed_note(store, req.root, sid, "deleted") for sid in deleted]
    notes += [changed_note(store, req.root, sid, "unlinked") for sid in kept]
    return Outcome(p.OkReply(), notes)


def fork_session(store: Store, req: p.ForkSession) -> Outcome:
    info = store.fork_session(req.session, req.at_seq, req.name)
    view = session_view(store, info)
    return Outcome(p.SessionReply(session=view), [p.SessionCreated(root=req.root, seq=0, session=view)])


def archive_session(store: Store, req: p.ArchiveSession) -> Outcome:
    store.set_archived(req.session, req.archived)
    note = changed_note(store, req.root, req.session, "archived" if req.archived else "unarchived")
    assert note.session is not None
    return Outcome(p.SessionReply(session=note.session), [note])


def append_events(store: Store, req: p.AppendEvents) -> Outcome:
    events = []
    for i, text in enumerate(req.events):
        try:
            events.append(decode_new_event(text))
        except EventDecodeError as exc:
            raise BadRequestError(f"event {i}: {exc}") from None
    result = store.append_events(req.session, events)
    wire = wire_events(result.events)
    notes = appended_notes(req.root, req.session, result.events)
    if any(isinstance(e.event, Complete) for e in result.events):
        notes.append(changed_note(store, req.root, req.session, "completed"))
    return Outcome(p.AppendReply(events=wire), notes)


def get_events(store: Store, req: p.GetEvents) -> Outcome:
    if req.limit < 1 or req.from_seq < 1:
        raise BadRequestError("from_seq and limit must be at least 1")
    if req.full is True and store.has_full(req.session):
        return Outcome(full_page(store, req.session, req.from_seq, req.limit))
    page, skipped, more = store.page_json(req.session, req.from_seq, req.limit)
    if not page and not skipped:
        _require(store, req.session)  # (rows of a session prove it is there)
    next_seq = req.from_seq + req.limit if more else None
    events = [p.WireEvent(seq=seq, kind=kind, data=data) for seq, kind, data in page]
    return Outcome(
        p.EventsPage(
            events=events, next_seq=next_seq, skipped=skipped, full=False if req.full else msgspec.UNSET
        )
    )


def prune_full(store: Store, req: p.PruneFull) -> Outcome:
    if req.session is None:
        try:
            datetime.fromisoformat(req.before)
        except ValueError:
            raise BadRequestError(f"{req.before!r} is not a date (YYYY-MM-DD, or an ISO time)") from None
    else:
        _require(store, req.session)
    return Outcome(p.PruneReply(dropped=store.prune_full(req.before, req.session)))


def build_context(store: Store, req: p.BuildContext) -> Outcome:
    _require(store, req.session)
    payload = store.rendered_context(req.session)
    return Outcome(
        p.ContextReply(prompt=build_context_prompt(payload, req.prompt, codex=req.backend == "codex"))
    )


def mark_completed(store: Store, req: p.MarkCompleted) -> Outcome:
    if req.duration_ms < 0:
        raise BadRequestError("duration_ms must not be negative")
    store.mark_completed(req.session, req.success, req.duration_ms, req.cost_usd)
    return Outcome(p.OkReply(), [changed_note(store, req.root, req.session, "completed")])


#: The longest a search looks at candidates (a client waits 5 s by default): then it answers with the
#: best it found, saying there may be more.
SEARCH_BUDGET_S: Final = 3.0


def search(store: Store, req: p.Search) -> Outcome:
    if req.limit < 1:
        raise BadRequestError("limit must be at least 1")
    if not req.query.strip():
        raise BadRequestError("an empty search query matches nothing: give a word to search for")
    query = words_query(req.query) if req.words else req.query
    if not query:
        raise BadRequestError(
            f"cannot search for {req.query!r}: give at least one word with a letter or a digit in it"
        )
    worktrees = (
        req.worktrees if req.worktrees is not None else None if req.worktree is None else [req.worktree]
    )
    started = time.monotonic()
    results = store.search(
        query,
        worktrees=worktrees,
        sessions=req.sessions,
        kinds=None if req.kinds is None else event_kinds(req.kinds),
        limit=req.limit,
        literal=req.query.split() if req.words else None,
        budget_s=SEARCH_BUDGET_S,
    )
    complete = results.complete
    found: list[SearchResult] = list(results)
    if req.words:  # what the agents wrote beyond the compact events: the same words, in one ranking
        extra, complete_full = full_hits(
            store,
            req.query.split(),
            sessions=req.sessions,
            worktrees=worktrees,
            kinds=None if req.kinds is None else event_kinds(req.kinds),
            limit=req.limit,
            deadline=started + SEARCH_BUDGET_S,
        )
        complete = complete and complete_full
        found = sorted([*found, *extra], key=lambda r: r.rank)[: req.limit]
    names = store.session_names() if found else {}
    hits = [
        p.SearchHit(
            session=r.session_id, data=r.json, seq=r.seq, kind=r.kind, rank=r.rank, snippet=r.snippet,
            highlights=r.highlights, session_name=names.get(r.session_id, f"S{r.session_id}"),
            also_in=r.also_in, full=True if r.full else msgspec.UNSET,
        )
        for r in found
    ]  # fmt: skip
    return Outcome(p.SearchReply(hits=hits, partial=msgspec.UNSET if complete else True))


def export(store: Store, req: p.Export) -> Outcome:
    if req.limit < 1 or req.from_seq < 1:
        raise BadRequestError("from_seq and limit must be at least 1")
    info = store.get_session(req.session)
    last = req.from_seq + req.limit - 1
    if req.full is True and store.has_full(req.session):  # what the agent wrote, numbered by place
        whole = full_events(store, req.session).events
        loaded = [StoredEvent(i + 1, whole[i]) for i in range(req.from_seq - 1, min(last, len(whole)))]
        final = len(whole)
    else:
        loaded = store.load_events(req.session, req.from_seq, last).events
        final = store.max_seq(req.session)
    masked: Counter[str] = Counter()
    if req.redact:
        name, in_name = redact_text(info.name)
        info = msgspec.structs.replace(info, name=name)
        if req.from_seq == 1:  # the name heads the first page
            masked.update(in_name)
        redacted = []
        for stored in loaded:
            event, counts = redact_event(stored.event)
            masked.update(counts)
            redacted.append(StoredEvent(stored.seq, event))
        loaded = redacted
    next_seq = last + 1 if last < final else None
    text = render_page(req.format, info, loaded, first=req.from_seq == 1, last=next_seq is None)
    return Outcome(p.ExportReply(text=text, next_seq=next_seq, masked=dict(masked)))


def backup(store: Store, req: p.Backup) -> Outcome:
    started = time.monotonic()
    info = store.backup(backup_path(store.root, req.dest, datetime.now(UTC)))
    seconds = round(time.monotonic() - started, 3)
    return Outcome(p.BackupReply(**msgspec.structs.asdict(info), seconds=seconds))


def backup_path(root: Path, dest: str | None, now: datetime) -> Path:
    """Where a backup goes: `dest` when it names an ``.azs`` file, else a timestamped file in the
    directory `dest` (default ``<root>/.azureal/backups``).

    >>> backup_path(Path("/w"), None, datetime(2026, 11, 21, 9, 5, 7, tzinfo=UTC))
    PosixPath('/w/.azureal/backups/sessions-20261121T090507Z.azs')
    """
    if dest is not None and not Path(dest).is_absolute():
        raise BadRequestError(
            f"a backup needs an absolute destination (the daemon has its own working directory): {dest}"
        )
    if dest is not None:  # the directory that holds what the user names must exist (a typo never
        named = Path(dest).parent  # makes a tree of directories; a backup directory itself may be new)
        if not named.is_dir():
            raise BadRequestError(f"no such directory for the backup: {named} (create it first)")
    if dest is not None and dest.endswith(".azs"):
        return Path(dest)
    folder = Path(dest) if dest is not None else store_path(root).parent / "backups"
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    path = folder / f"sessions-{stamp}.azs"
    n = 1
    while path.exists():  # two backups in one second
        n += 1
        path = folder / f"sessions-{stamp}-{n}.azs"
    return path


def usage(store: Store, req: p.Usage) -> Outcome:
    return Outcome(usage_reply(store, req))


def ingest(store: Store, req: p.IngestFile, publish: Publish | None = None) -> Outcome:
    """Ingest a file, each chunk's notifications published as it is committed (`publish`; without
    it they go with the reply)."""
    _require(store, req.session)
    path = Path(req.path)
    if not path.is_absolute():
        raise BadRequestError(
            f"ingest needs an absolute path (the daemon has its own working directory): {path}"
        )
    notes: list[p.Notification] = []
    send = publish or notes.extend

    def stored(events: list[StoredEvent]) -> None:
        send(appended_notes(req.root, req.session, events))

    if req.format == "opencode" or (req.format is None and is_session_key(req.path)):
        report = ingest_session(store, req.session, req.path, stored)  # an OpenCode session: db#id
    else:
        size = path.stat().st_size if path.is_file() else 0  # (what is there now is read, at least)
        report = ingest_file(store, req.session, path, req.format, on_stored=stored)
        agent = report.parse.format.split("-", 1)[0]
        if report.parsed and size:  # what the agent wrote, kept beside the events too
            store.want_full(req.session, str(path), agent, size)
    if report.parsed == 0 and report.parse.lines > 0:  # nothing was stored: say why, not "0 events"
        raise IngestError(_nothing_parsed(path, req.format, report.parse.format, report.parse))
    reply = p.IngestReply(
        format=report.parse.format,
        lines=report.parse.lines,
        parsed=report.parsed,
        appended=report.appended,
        duplicates=report.duplicates,
        skipped=dict(report.parse.skipped),
        events=dict(report.parse.events),
    )
    return Outcome(reply, notes)


def _nothing_parsed(path: Path, given: str | None, read_as: str, parse: ParseReport) -> str:
    """Why a file with lines gave no event: read in a format it is not in (named, with the one its
    first lines look like), or not an agent's file at all."""
    skipped = ", ".join(f"{why} {n:,}" for why, n in sorted(parse.skipped.items()))
    lines = f"{parse.lines:,} line{'' if parse.lines == 1 else 's'}"
    said = f"{path}: read as {read_as}, none of its {lines} parsed ({skipped})"
    found = detect(path)
    if given and found and found != given:
        return f"{said}: it looks like {found}: give `--format {found}`, or leave --format out"
    return f"{said}: is it an agent's JSONL file?"


def handle(  # noqa: C901 (one flat case per request)
    store: Store, req: p.StoreRequest, publish: Publish | None = None
) -> Outcome:
    """Carry out one store request (in the store's worker thread, inside its transaction unless it
    runs alone: :func:`runs_alone`); `publish` sends a long write's notifications as it goes.

    mypy checks that every request has its case: one without would leave a path with no return.
    """
    match req:
        case p.CreateSession():
            return create_session(store, req)
        case p.ListSessions():
            return list_sessions(store, req)
        case p.GetSession():
            return get_session(store, req)
        case p.RenameSession():
            return rename_session(store, req)
        case p.DeleteSession():
            return delete_session(store, req)
        case p.ForkSession():
            return fork_session(store, req)
        case p.ArchiveSession():
            return archive_session(store, req)
        case p.AppendEvents():
            return append_events(store, req)
        case p.GetEvents():
            return get_events(store, req)
        case p.BuildContext():
            return build_context(store, req)
        case p.MarkCompleted():
            return mark_completed(store, req)
        case p.StoreCompaction():
            return store_compaction(store, req)
        case p.CompactWithOutput():
            return compact_with_output(store, req)
        case p.CompactionBoundary():
            return compaction_boundary(store, req)
        case p.ContextMeter():
            return context_meter(store, req)
        case p.PlanCompaction():
            return plan_compaction(store, req)
        case p.Search():
            return search(store, req)
        case p.Reindex():
            return Outcome(p.ReindexReply(indexed=store.reindex_search()))
        case p.IndexStatus():
            stale = store.stale_entries() if req.stale else 0
            return Outcome(p.IndexStatusReply(pending=store.search_pending(), stale=stale))
        case p.FullStatus():
            cost = store.full_cost()
            return Outcome(
                p.FullStatusReply(
                    sessions=cost.sessions,
                    chunks=cost.chunks,
                    stored_bytes=cost.stored_bytes,
                    source_bytes=cost.source_bytes,
                    waiting_bytes=store.full_waiting(),
                )
            )
        case p.PruneFull():
            return prune_full(store, req)
        case p.Export():
            return export(store, req)
        case p.Backup():
            return backup(store, req)
        case p.ImportSources():
            return import_sources(store, req)
        case p.ImportSession():
            return import_session(store, req, publish)
        case p.ImportSessions():
            return import_sessions(store, req, publish)
        case p.Usage():
            return usage(store, req)
        case p.IngestFile():
            return ingest(store, req, publish)
