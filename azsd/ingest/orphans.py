"""Orphan recovery (spec §4.1): turns a crashed AZUREAL left half-stored.

AZUREAL records the agent's session id in `sessions.last_claude_uuid` while a turn runs and clears
it once the turn is stored. A non-empty id when a store opens means a turn that was never (fully)
stored: its agent session file is found (Claude: `~/.claude/projects/*/<id>.jsonl`; Codex:
`~/.codex/sessions/YYYY/MM/DD/rollout-*<id>.jsonl`), ingested with the overlap cut against what
the session already holds, and the id cleared. Unlike AZUREAL, azsd never deletes the agent's
files: they are the user's history. A file written to in the last :data:`SETTLE_S` seconds, or
that a process still holds open, belongs to a turn that may still be running (AZUREAL beside
azsd): it is left for a later open.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Final

from azsd.errors import AzsdError
from azsd.ingest.file import ingest_file
from azsd.model import StoredEvent
from azsd.store import Store

__all__ = ["find_agent_file", "recover_orphans"]

log = logging.getLogger("azsd.ingest.orphans")

#: An agent file written to more recently than this may still be growing: not an orphan yet.
SETTLE_S: Final = 60.0


def find_agent_file(agent_id: str, home: Path) -> Path | None:
    """The Claude or Codex session file of `agent_id` under `home`, if there is one."""
    if not agent_id or "/" in agent_id or agent_id.startswith("."):
        return None
    projects = home / ".claude" / "projects"
    if projects.is_dir():
        for candidate in sorted(projects.glob(f"*/{agent_id}.jsonl")):
            if candidate.is_file():
                return candidate
    sessions = home / ".codex" / "sessions"
    if sessions.is_dir():
        for candidate in sorted(sessions.glob(f"*/*/*/rollout-*{agent_id}.jsonl")):
            if candidate.is_file():
                return candidate
    return None


def recover_orphans(store: Store, home: Path, *, settle_s: float = SETTLE_S) -> dict[int, list[StoredEvent]]:
    """Store the unstored turns of every session that still carries an agent id; clear the ids.

    Returns the events appended, by session. A file that cannot be read leaves its id in place
    for the next attempt.
    """
    recovered: dict[int, list[StoredEvent]] = {}
    if not store.exists or store.read_only:
        return recovered
    for session_id, _worktree, agent_id in store.sessions_with_uuid():
        path = find_agent_file(agent_id, home)
        if path is None:
            log.info("S%d: the agent file of %s is gone; clearing it", session_id, agent_id)
            store.clear_session_uuid(session_id)
            continue
        if _still_growing(path, settle_s):
            log.info("S%d: %s was written to in the last %g s; left for later", session_id, path, settle_s)
            continue
        if _held_open(path):
            log.info("S%d: a process still holds %s open (its agent may be running); left for later",
                     session_id, path)  # fmt: skip
            continue
        try:  # chunked, so AZUREAL is never kept waiting; run again, it stores only what is missing
            report = ingest_file(store, session_id, path)
            store.clear_session_uuid(session_id)
        except AzsdError as exc:
            log.warning("S%d: cannot recover %s: %s", session_id, path, exc)
            continue
        log.info("S%d: recovered %d events from %s", session_id, report.appended, path)
        if report.events:
            recovered[session_id] = report.events
    return recovered


def _still_growing(path: Path, settle_s: float) -> bool:
    try:
        return time.time() - path.stat().st_mtime < settle_s
    except OSError:
        return False


def _held_open(path: Path, proc: Path = Path("/proc")) -> bool:
    """Whether a process of this user holds `path` open (Linux: /proc/<pid>/fd; elsewhere False).

    Only orphan candidates are checked, which are rare, so the scan of /proc costs nothing in
    daily use.
    """
    try:
        target = os.path.realpath(path)
        pids = [entry for entry in os.scandir(proc) if entry.name.isdigit()]
    except OSError:
        return False
    for pid in pids:
        try:
            fds = os.scandir(os.path.join(pid.path, "fd"))
        except OSError:  # gone, or another user's
            continue
        with fds:
            for fd in fds:
                try:
                    if os.readlink(fd.path) == target:
                        return True
                except OSError:
                    continue
    return False
