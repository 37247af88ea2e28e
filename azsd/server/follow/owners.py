"""One owner per source, between a follow and an import: whichever took a source first keeps it,
and the other goes on from where it stopped.

A source is a Claude or Codex history file, an Aider run (a part of its chat history), or an
OpenCode session. A new follow of a source an import brought into a session goes on from the
import's position, in that session (into another, it is refused: it is that session's). A follow
records what it has read of its source as imported into its session, so that a later import (or
the daemon's watch of the agents' homes) creates nothing beside it: an Aider run or an OpenCode
session a follow owns stays the follow's, a Claude or Codex file goes on from the follow's position.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from azsd.errors import BadRequestError, IngestError
from azsd.ingest.importer import import_source
from azsd.ingest.opencode import finished_messages, open_source, split_key
from azsd.ingest.sources import AiderRun, aider_runs, source_of
from azsd.model import FollowRecord, ImportRecord
from azsd.store import Store

__all__ = ["record_owned", "start_position"]

#: The inode an OpenCode session's follow stands at (:meth:`OpenCodeTail.probe` says 1).
_OPENCODE_INODE: Final = 1
#: The formats of agents' own histories (an import of the file is that agent's), by agent.
HISTORIES: Final = {"claude-session": "claude", "codex-rollout": "codex"}


def start_position(store: Store, record: FollowRecord) -> tuple[int, int] | None:
    """Where a new follow of `record` goes on from an import of its source (its offset, and the
    file's inode), None when none was imported. Raises `BadRequestError` when the source is
    another session's."""
    if record.format == "aider":
        return _after_imported_runs(store, record)
    if record.format == "opencode":
        return _after_imported_session(store, record)
    owner = _imported(store, record.path, ("claude", "codex"))
    if owner is None:
        return None
    _refuse_elsewhere(owner, record)
    try:
        return owner.size, os.stat(record.path).st_ino
    except OSError:
        return None  # gone: the follow waits for it, from its start


def record_owned(store: Store, record: FollowRecord) -> None:
    """What the follow `record` has stored of its source, recorded as imported into its session
    (inside the caller's transaction): a Claude or Codex history to its position, each Aider run it
    began, its OpenCode session."""
    if record.format in HISTORIES:
        store.record_import(ImportRecord(source=record.path, session_id=record.session_id,
                                         agent=HISTORIES[record.format], size=record.offset))  # fmt: skip
    elif record.format == "aider":
        for run in _runs(record.path):
            if run.span[0] >= record.offset:
                break
            key = f"{record.path}#{run.name}"
            if _imported(store, key, ("aider",)) is None:
                size = min(run.span[1], record.offset) - run.span[0]
                store.record_import(
                    ImportRecord(source=key, session_id=record.session_id, agent="aider", size=size)
                )
    elif (
        record.format == "opencode" and record.offset and _imported(store, record.path, ("opencode",)) is None
    ):
        store.record_import(
            ImportRecord(source=record.path, session_id=record.session_id, agent="opencode", size=0)
        )


def _after_imported_runs(store: Store, record: FollowRecord) -> tuple[int, int] | None:
    """An Aider history's follow begins after the runs imported from it (each a session of its
    own), whichever sessions they went into."""
    end = 0
    for run in _runs(record.path):
        owner = _imported(store, f"{record.path}#{run.name}", ("aider",))
        if owner is not None:
            end = max(end, run.span[0] + owner.size)
    if not end:
        return None
    return end, _inode(record.path)


def _after_imported_session(store: Store, record: FollowRecord) -> tuple[int, int] | None:
    """An OpenCode session's follow goes on from its import (brought up to date first), in the
    session it went into."""
    owner = _imported(store, record.path, ("opencode",))
    if owner is None:
        return None
    _refuse_elsewhere(owner, record)
    try:
        import_source(store, source_of("opencode", record.path))  # what it gained since, first
        location, session = split_key(record.path)
        with open_source(location) as source:
            return len(finished_messages(source, session)), _OPENCODE_INODE
    except IngestError:
        return None  # (unreadable now: the follow says why, and waits)


def _imported(store: Store, key: str, agents: tuple[str, ...]) -> ImportRecord | None:
    """The import of the source `key` by one of `agents`, if its session is still there."""
    record = store.get_import(key)
    if record is None or record.agent not in agents or not store.has_session(record.session_id):
        return None
    return record


def _refuse_elsewhere(owner: ImportRecord, record: FollowRecord) -> None:
    if owner.session_id != record.session_id:
        sid = owner.session_id
        raise BadRequestError(
            f"{record.path} is S{sid}'s (imported there): follow it into S{sid}, "
            "where it goes on from where the import stopped"
        )


def _runs(path: str) -> list[AiderRun]:
    return aider_runs(Path(path))


def _inode(path: str) -> int:
    try:
        return os.stat(path).st_ino
    except OSError:
        return 0
