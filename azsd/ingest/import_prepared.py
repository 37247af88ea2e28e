"""The writer's side of a file read ahead (:mod:`azsd.ingest.prepare`): whether its rows can be
stored as they are, and storing what goes with them.

A file read ahead was parsed as if it were new and no other run had counted any of its API
messages. :func:`new_session` checks both in the store (and against the files of the same run of new
sessions, not inserted yet: `claimed`) and makes the session to create
(:meth:`~azsd.store.bulk.BulkSessions.create_filled`); when another run counted some of its messages,
from the file read again in the writer's thread, asking the store as
:func:`~azsd.ingest.importer.import_source` does. A file no longer new (or with sub-agents, whose
own counting depends on what the store keeps of them) is imported the usual way. After the
session is created, :func:`record_subagents` records its sub-agents' usage as
:func:`~azsd.ingest.subagents.import_subagents` would have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from azsd.errors import IngestError
from azsd.events import Event
from azsd.ingest.prepare import PreparedFile, prepare_file
from azsd.ingest.sources import Source
from azsd.ingest.usage import UsageRecord
from azsd.model import ImportRecord
from azsd.store import Store
from azsd.store.bulk import FilledSession
from azsd.store.rows import SessionRows

__all__ = ["Claimed", "Ready", "filled_session", "new_session", "record_subagents"]


@dataclass(frozen=True)
class Ready:
    """A source read ahead, waiting for the writer."""

    source: Source
    prepared: PreparedFile


@dataclass
class Claimed:
    """What the new sessions of one run (created together) take before they are inserted: their
    sources and the API message ids they count."""

    sources: set[str]
    keys: set[str]


def new_session(
    store: Store, ready: Ready, worktree: str, claimed: Claimed, *, again: bool = True
) -> tuple[FilledSession, PreparedFile] | None:
    """The session `ready` becomes (and the file as read), when its source is still new, and it
    joins `claimed`. When some of the message ids it counts are counted elsewhere (in the store, or
    by a session of `claimed`), the file is read again here, leaving them out, as
    :func:`~azsd.ingest.importer.import_source` would (unless not `again`). None when it is not new
    any more, or has sub-agents and messages counted elsewhere, or some counted elsewhere and not
    `again` (the writer then imports it the usual way)."""
    source, prepared = ready.source, ready.prepared
    if source.key in claimed.sources:
        return None
    record = store.get_import(source.key)
    if record is not None and store.has_session(record.session_id):
        return None
    keys = prepared.all_keys()
    if len(set(keys)) < len(keys) or not claimed.keys.isdisjoint(keys) or store.usage_keys_counted(keys):
        if prepared.subagents or not again:  # (a sub-agent counting its session's message is one)
            return None
        try:
            prepared = prepare_file(prepared.path, prepared.agent, partial(_counted, store, claimed.keys))
        except IngestError:  # (it changed since: the usual way says what is wrong with it)
            return None
        if prepared.subagents:
            return None
        keys = prepared.all_keys()
    claimed.sources.add(source.key)
    claimed.keys.update(keys)
    name = prepared.name or source.title or source.path.stem
    at, rows = prepared.at, prepared.rows
    return filled_session(source, name, worktree, prepared.size, prepared.usage, at, rows=rows), prepared


def filled_session(
    source: Source,
    name: str,
    worktree: str,
    size: int,
    usage: UsageRecord | None,
    at: float | None,
    *,
    events: Sequence[Event] = (),
    rows: SessionRows | None = None,
) -> FilledSession:
    """The new session `source` becomes, named `name`, with its events (or their `rows`), its run's
    `usage` (dated `at` where its lines carry no time) and its import record (`size` read)."""
    return FilledSession(
        name=name,
        worktree=worktree,
        events=events,
        rows=rows,
        record=ImportRecord(source=source.key, session_id=0, agent=source.agent, size=size),
        usage_source=usage.source if usage else "",
        usage=usage.parts if usage else (),
        usage_at=at,
        usage_turns=usage.turns if usage else None,
        usage_keys=usage.keys if usage else (),
    )


def _counted(store: Store, claimed: set[str], key: str) -> bool:
    """Whether a run other than a new session's counted the API message `key`: a run of the store
    (or a session removed since), or one of the sessions created with it (`claimed`)."""
    return key in claimed or bool(store.usage_keys_counted([key]))


def record_subagents(store: Store, session_id: int, prepared: PreparedFile) -> None:
    """Record the usage of the sub-agents of the new session `session_id` (inside the caller's
    transaction), but those counted in a session of their own."""
    for sub in prepared.subagents:
        known = store.get_import(sub.source)
        if known is not None and known.session_id != session_id and store.has_session(known.session_id):
            continue  # imported as a session of its own while orphaned (or with another parent)
        if sub.usage is not None:
            store.record_usage(
                session_id, sub.source, sub.usage.parts, at=sub.at, turns=0, keys=sub.usage.keys
            )
        store.record_import(
            ImportRecord(source=sub.source, session_id=session_id, agent="claude", size=sub.size, last_seq=0)
        )
