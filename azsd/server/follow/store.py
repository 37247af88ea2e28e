"""What the follower asks of a store: start a follow where it stopped, and store one read.

Both run in the store's worker (:meth:`StoreRegistry.call`), in a transaction of their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from azsd.errors import IngestError
from azsd.events import Event
from azsd.ingest.opencode import split_key
from azsd.ingest.usage import UsageRecord
from azsd.ipc import protocol as p
from azsd.model import FollowRecord, ImportRecord
from azsd.server.follow.owners import record_owned, start_position
from azsd.server.follow.tailing import Tail, is_final
from azsd.server.views import appended_notes, changed_note
from azsd.server.workers import Outcome
from azsd.store import Store

__all__ = ["start_follow", "store_read"]


def start_follow(store: Store, root: str, record: FollowRecord) -> Outcome:
    """Save a new follow of `record.path` as active, going on from where an earlier follow of the
    same file in the same format stopped (a file replaced since is noticed by its inode and re-read
    without duplicates)."""
    saved = msgspec.structs.replace(record, active=True, ended=None)
    stored = store.get_follow(record.session_id, record.path)
    if stored is not None and stored.format == (record.format or stored.format):
        saved.offset, saved.inode, saved.format = stored.offset, stored.inode, stored.format
        saved.lines, saved.skipped = stored.lines, stored.skipped
    elif (position := start_position(store, record)) is not None:  # one owner per source
        saved.offset, saved.inode = position
        if saved.format == "aider":  # the runs before are the import's sessions', their usage too
            saved.usage_from = saved.offset
    store.save_follow(saved)
    return Outcome(p.FollowReply(follow=Tail(root, saved, missing=_missing(saved)).view()))


def _missing(record: FollowRecord) -> bool:
    """Whether the followed source is not there (yet): its file, or an OpenCode session's store."""
    try:
        where = split_key(record.path)[0] if record.format == "opencode" else Path(record.path)
    except IngestError:
        return True
    return not where.exists()


def store_read(
    store: Store,
    root: str,
    record: FollowRecord,
    events: list[Event],
    expected: int,
    failed_ms: int | None = None,
    usage: UsageRecord | None = None,
    change: str = "",
    owned: Sequence[tuple[Path, str]] = (),
    keep_apart: str = "",
) -> list[p.Notification]:
    """Store one read of a followed file: its new position first (compare-and-swap with `expected`,
    so a position another writer moved stores nothing), then its events and the run's `usage` so
    far (the record one-shot ingest makes, replaced as the totals grow); with `failed_ms`, a turn
    still open is marked failed after that long; with `change` (`idle`, `running`: the follow went
    idle, or its file grew again), a `sessionchanged` says so; `owned` are the agent's own histories
    of the run (path, agent), recorded as imported into its session as they stand now, so that an
    import (or the watch of the agents' homes) continues them there and never makes a session of
    them; with `keep_apart`, the usage recorded for the file so far is kept under that source (the
    file was replaced by another: a rotated or deleted history never takes away what was counted).
    The notifications to publish."""
    store.save_follow(record, expect_offset=expected)
    if keep_apart:
        store.keep_usage_apart(record.session_id, record.path, keep_apart)
    record_owned(store, record)  # an import goes on from here, never beside
    for path, agent in owned:
        try:
            size = path.stat().st_size
        except OSError:
            continue
        store.record_import(
            ImportRecord(source=str(path), session_id=record.session_id, agent=agent, size=size)
        )
    result = store.append_prepared(record.session_id, events)
    if usage is not None:
        # no `replaces`: a followed file is a new run's (`azs run`), and an older record under its
        # agent session id is another turn's of the same agent session, to keep
        store.record_usage(record.session_id, usage.source, usage.parts, turns=usage.turns, keys=usage.keys)
    notes = appended_notes(root, record.session_id, result.events)
    completed = is_final([e.event for e in result.events])
    if failed_ms is not None and store.get_session(record.session_id).completed is None:
        store.mark_completed(record.session_id, False, failed_ms, 0.0)
        completed = True
    if completed:
        notes.append(changed_note(store, root, record.session_id, "completed"))
    if change and not completed:  # (a `completed` note already gives the session's new state)
        notes.append(changed_note(store, root, record.session_id, change))
    return notes
