"""The import requests: the agent histories of a project (`ImportSources`), one of them brought in
as a session (`ImportSession`), and many at once (`ImportSessions`).

A small source's import is a few milliseconds of work and a commit (an fsync of the journal and the
file): one transaction per source made importing a history of a thousand sessions mostly waiting.
`ImportSessions` imports its sources in order (a parent before the sessions it spawned) through
:func:`~azsd.ingest.import_batch.import_many`: the small ones share short transactions, each in a
savepoint of its own (a source that fails is rolled back alone and reported), with the lock left
free between transactions as every long write of azsd leaves it; a big one runs alone, in its own
chunks. Notifications go out once the transaction holding what they report is committed. The files
`ImportSources` lists as not imported yet are noted: once an `ImportSessions` request follows, worker
processes read them ahead of the requests that follow it
(:func:`~azsd.ingest.import_batch.expect_imports`); a big one of them (`azs import` sends it alone,
by `ImportSession`), when not too big, is then created in one short transaction from what they read
(:func:`~azsd.ingest.import_batch.import_one`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from azsd.errors import AzsdError, BadRequestError
from azsd.ingest.import_batch import expect_imports, import_many, import_one
from azsd.ingest.importer import ImportOutcome, discover
from azsd.ingest.sources import source_of, sources_of
from azsd.ingest.subagents import subagents_current
from azsd.ipc import protocol as p
from azsd.model import StoredEvent
from azsd.server.views import appended_notes, session_view
from azsd.server.workers import Outcome
from azsd.store import Store

__all__ = ["Publish", "import_session", "import_sessions", "import_sources"]

#: Publishes notifications of the request's store at once: a long write (ingest, import) publishes
#: each chunk's as soon as it is committed, rather than keeping them all for the end.
Publish = Callable[[Sequence[p.Notification]], None]


def import_sources(store: Store, req: p.ImportSources) -> Outcome:
    """The sources, and whether each is imported already; the files never imported are noted, to be
    read ahead once `ImportSessions` requests follow (:func:`expect_imports`)."""
    views = []
    found = discover(req.agent, Path(req.source_dir), Path(req.project))
    for source in found:
        record = store.get_import(source.key)
        if record is not None and not store.has_session(record.session_id):
            record = None  # its session was deleted by a connection without foreign keys
        views.append(
            p.SourceView(
                path=source.key, agent=source.agent, size=source.size,
                session=record.session_id if record else None,
                current=record is not None and record.size == source.size
                and (source.agent != "claude" or subagents_current(store, record.session_id, source.path)),
            )
        )  # fmt: skip
    expect_imports(store, [source for source, view in zip(found, views, strict=True) if not view.current])
    return Outcome(p.SourcesReply(sources=views))


def import_session(store: Store, req: p.ImportSession, publish: Publish | None = None) -> Outcome:
    _require_absolute([req.path])
    notes: list[p.Notification] = []
    send = publish or notes.extend

    def stored(session_id: int, events: list[StoredEvent]) -> None:
        send(appended_notes(req.root, session_id, events))

    outcome = import_one(store, source_of(req.agent, req.path), req.worktree, on_stored=stored)
    return Outcome(_reply(store, req.root, str(Path(req.path)), outcome, notes), notes)


def import_sessions(store: Store, req: p.ImportSessions, publish: Publish | None = None) -> Outcome:
    """Import many sources (`import_many`); what grew in sessions imported before is published as
    each transaction holding it is committed (`publish`; without it, with the reply), the new
    sessions with the reply."""
    _require_absolute(req.paths)
    notes: list[p.Notification] = []
    failed: list[p.ImportFailure] = []
    sources = []
    for path, found in zip(req.paths, sources_of(req.agent, req.paths), strict=True):
        if isinstance(found, AzsdError):
            failed.append(p.ImportFailure(path=path, error=str(found)))
        else:
            sources.append(found)
    waiting: list[p.Notification] = []

    def stored(session_id: int, events: list[StoredEvent]) -> None:
        waiting.extend(appended_notes(req.root, session_id, events))

    def committed() -> None:
        if publish is not None and waiting:
            publish(list(waiting))
            waiting.clear()

    outcomes = import_many(store, sources, req.worktree, on_stored=stored, committed=committed)
    notes += waiting
    imports = []
    for source, outcome in zip(sources, outcomes, strict=True):
        if isinstance(outcome, AzsdError):
            failed.append(p.ImportFailure(path=source.key, error=str(outcome)))
        else:
            imports.append(_reply(store, req.root, source.key, outcome, notes))
    return Outcome(p.ImportsReply(imports=imports, failed=failed), notes)


def _require_absolute(paths: Sequence[str]) -> None:
    for path in paths:
        if not Path(path).is_absolute():
            raise BadRequestError(
                f"import needs an absolute path (the daemon has its own working directory): {path}"
            )


def _reply(
    store: Store, root: str, path: str, outcome: ImportOutcome, notes: list[p.Notification]
) -> p.ImportReply:
    """What was done for the source `path` (its creation announced in `notes`)."""
    view = session_view(store, store.get_session(outcome.session_id))
    if outcome.created:
        notes.append(p.SessionCreated(root=root, seq=0, session=view))
    return p.ImportReply(
        path=path, session=view, created=outcome.created, appended=outcome.appended,
        lines=outcome.lines, skipped=outcome.skipped,
    )  # fmt: skip
