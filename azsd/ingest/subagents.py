"""The sub-agent transcripts of a Claude session, imported as part of the session's usage.

Claude Code writes what a Task sub-agent did into files of its own (agent-formats §2.1): 2.1.x as
``<slug>/<sessionId>/subagents/agent-<id>.jsonl``, some 2.0.x builds as ``<slug>/agent-<id>.jsonl``
beside the sessions, tied to their session only by the `sessionId` inside their lines. Their
events stay out of the session's transcript (the parent already shows the Task call and its
result), but their tokens and cost are the session's (not its turns: a sub-agent's task is no prompt
of the user's): each file's usage is recorded in the parent session under the file's own path,
replaced (never added) whenever the file has grown, so importing again counts nothing twice.
`azsd_imports` remembers the size read, so an unchanged file is not read again.
"""

from __future__ import annotations

import logging
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

from azsd.files import open_regular
from azsd.ingest.parsers import head_value, iter_lines, make_parser
from azsd.ingest.usage import counted_elsewhere, usage_record
from azsd.model import ImportRecord
from azsd.store import Store

__all__ = [
    "claude_session_id",
    "import_subagents",
    "orphaned",
    "orphaned_subagents",
    "subagent_files",
    "subagents_current",
]

log = logging.getLogger("azsd.ingest.subagents")

#: How many lines of a 2.0.x sub-agent file are read for the session it belongs to.
HEAD_LINES: Final = 20


def subagent_files(session: Path) -> list[Path]:
    """The sub-agent transcripts of the Claude session file `session`, in name order."""
    nested = session.parent / session.stem / "subagents"
    found = sorted(p for p in nested.glob("*.jsonl") if p.is_file()) if nested.is_dir() else []
    try:
        stamp = os.stat(session.parent).st_mtime_ns
    except OSError:
        return found
    return found + list(_beside(session.parent, stamp).get(session.stem, ()))


@lru_cache(maxsize=4)
def _beside(directory: Path, _mtime_ns: int) -> dict[str, tuple[Path, ...]]:
    """The 2.0.x ``agent-*.jsonl`` files of a project directory by the session they name (cached
    while the directory's entries stay the same: a file's session never changes)."""
    by_session: dict[str, list[Path]] = {}
    for path in sorted(directory.glob("agent-*.jsonl")):
        try:
            with open_regular(path) as stream:
                session = head_value(iter_lines(stream), HEAD_LINES, claude_session_id)
        except OSError:
            continue
        if session:
            by_session.setdefault(session, []).append(path)
    return {k: tuple(v) for k, v in by_session.items()}


def claude_session_id(obj: dict[str, Any]) -> str | None:
    """A Claude line's `sessionId`, when it has a usable one."""
    value = obj.get("sessionId")
    return value if isinstance(value, str) and value else None


def orphaned_subagents(directory: Path) -> list[Path]:
    """The 2.1.x sub-agent transcripts of a Claude project directory whose session file is gone
    (``<id>/subagents/agent-*.jsonl`` without ``<id>.jsonl``): imported as sessions of their own."""
    return sorted(
        path
        for nested in directory.glob("*/subagents")
        if not (directory / f"{nested.parent.name}.jsonl").exists()
        for path in nested.glob("*.jsonl")
    )


def orphaned(path: Path) -> bool:
    """Whether the 2.0.x sub-agent transcript `path` names a session whose file is not beside it (or
    names none): it is imported as a session of its own, as ccusage counts it."""
    try:
        with open_regular(path) as stream:
            session = head_value(iter_lines(stream), HEAD_LINES, claude_session_id)
    except OSError:
        session = None
    return not session or not (path.parent / f"{session}.jsonl").exists()


def import_subagents(store: Store, session_id: int, session: Path) -> int:
    """Record the usage of each sub-agent transcript of `session` (the file imported as
    `session_id`) that is new or has changed since; how many were read. A file that cannot be read
    is logged and skipped: it never fails the session's import."""
    read = 0
    for path in subagent_files(session):
        try:
            read += _import_one(store, session_id, path)
        except OSError as exc:
            log.warning("%s: not imported (%s)", path, exc.strerror or exc)
    return read


def subagents_current(store: Store, session_id: int, session: Path) -> bool:
    """Whether every sub-agent transcript of `session` is imported into `session_id` as it is now."""
    for path in subagent_files(session):
        try:
            size = path.stat().st_size
        except OSError:
            continue
        known = store.get_import(str(path.resolve()))
        if known is not None and known.session_id != session_id and store.has_session(known.session_id):
            continue  # a session of its own (imported while orphaned): counted there
        if known is None or known.session_id != session_id or known.size != size:
            return False
    return True


def _import_one(store: Store, session_id: int, path: Path) -> int:
    size = path.stat().st_size
    source = str(path.resolve())
    known = store.get_import(source)
    if known is not None and known.session_id == session_id and known.size == size:
        return 0
    if known is not None and known.session_id != session_id and store.has_session(known.session_id):
        return 0  # imported as a session of its own while orphaned (or with another parent): counted there
    parser = make_parser("claude-session")
    parser.report.counted_elsewhere = counted_elsewhere(store, session_id, source)
    with open_regular(path) as stream:
        for line in iter_lines(stream, stop=size):
            parser.feed(line)
    parser.finish()
    record = usage_record(parser.report, source, source=source)
    with store.atomic():
        if record is not None:
            store.record_usage(
                session_id, source, record.parts, at=path.stat().st_mtime, turns=0, keys=record.keys,
            )  # fmt: skip
        store.record_import(
            ImportRecord(source=source, session_id=session_id, agent="claude", size=size, last_seq=0)
        )
    return 1
