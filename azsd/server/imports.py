"""The import requests: the agent history files of a project (`ImportSources`), one of them brought
in as a session (`ImportSession`), and many small ones in few transactions (`ImportBatch`).

A small file's import is a few milliseconds of work and a commit (an fsync of the journal and the
file): one transaction per file made importing a history of a thousand sessions mostly waiting.
`ImportBatch` imports its files as the steps of one :class:`~azsd.store.chunks.ChunkedWrite`: each
file in a savepoint of the current ~200 ms transaction (a file that fails is rolled back alone and
reported), and the lock left free between transactions as every long write of azsd leaves it.
Notifications go out once the transaction holding what they report is committed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from azsd.errors import BadRequestError, IngestError
from azsd.ingest.importer import Source, discover, import_source
from azsd.ingest.subagents import subagents_current
from azsd.ipc import protocol as p
from azsd.model import StoredEvent
from azsd.server.views import appended_notes, session_view
from azsd.server.workers import Outcome
from azsd.store import Store
from azsd.store.chunks import ChunkedWrite

__all__ = ["Publish", "import_batch", "import_session", "import_sources"]

#: Publishes notifications of the request's store at once: a long write (ingest, import) publishes
#: each chunk's as soon as it is committed, rather than keeping them all for the end.
Publish = Callable[[Sequence[p.Notification]], None]


def import_sources(store: Store, req: p.ImportSources) -> Outcome:
    views = []
    for source in discover(req.agent, Path(req.source_dir), Path(req.project)):
        record = store.get_import(str(source.path))
        if record is not None and not store.has_session(record.session_id):
            record = None  # its session was deleted by a connection without foreign keys
        views.append(
            p.SourceView(
                path=str(source.path), agent=source.agent, size=source.size,
                session=record.session_id if record else None,
                current=record is not None and record.size == source.size
                and (source.agent != "claude" or subagents_current(store, record.session_id, source.path)),
            )
        )  # fmt: skip
    return Outcome(p.SourcesReply(sources=views))


def import_session(store: Store, req: p.ImportSession, publish: Publish | None = None) -> Outcome:
    notes: list[p.Notification] = []
    reply = _import_one(store, req.root, req.agent, req.path, req.worktree, publish or notes.extend, notes)
    return Outcome(reply, notes)


def import_batch(store: Store, req: p.ImportBatch, publish: Publish | None = None) -> Outcome:
    """Each file of `req` as `ImportSession` imports it, many in each short transaction."""
    imports: list[p.ImportReply] = []
    failed: list[p.ImportFailure] = []
    held: list[p.Notification] = []
    with ChunkedWrite(store, create=True) as chunks:
        for path in req.paths:
            notes: list[p.Notification] = []
            try:
                with chunks.step():
                    reply = _import_one(store, req.root, req.agent, path, req.worktree, notes.extend, notes)
            except (IngestError, BadRequestError) as exc:
                failed.append(p.ImportFailure(path=path, error=str(exc)))
                continue
            imports.append(reply)
            if publish is None:
                held += notes
            else:
                chunks.after_commit(lambda notes=notes: publish(notes))  # type: ignore[misc]
    return Outcome(p.ImportBatchReply(imports=imports, failed=failed), held)


def _import_one(
    store: Store,
    root: str,
    agent: str,
    text: str,
    worktree: str,
    send: Publish,
    notes: list[p.Notification],
) -> p.ImportReply:
    """Import the file `text` (its appended events' notifications to `send`, its creation's to
    `notes`), and say what was done."""
    path = Path(text)
    if not path.is_absolute():
        raise BadRequestError(
            f"import needs an absolute path (the daemon has its own working directory): {path}"
        )
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise IngestError(f"cannot read {path}: {exc.strerror}") from None

    def stored(session_id: int, events: list[StoredEvent]) -> None:
        send(appended_notes(root, session_id, events))

    source = Source(path=path, agent="codex" if agent == "codex" else "claude", size=size)
    outcome = import_source(store, source, worktree, on_stored=stored)
    view = session_view(store, store.get_session(outcome.session_id))
    if outcome.created:
        notes.append(p.SessionCreated(root=root, seq=0, session=view))
    return p.ImportReply(
        path=str(path), session=view, created=outcome.created, appended=outcome.appended,
        lines=outcome.lines, skipped=outcome.skipped,
    )  # fmt: skip
