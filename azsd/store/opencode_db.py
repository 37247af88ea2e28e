"""Reading OpenCode's own database (`opencode.db`), read-only, so a running OpenCode is never blocked.

OpenCode (1.x) keeps its sessions in SQLite in WAL mode: tables `session` (`id`, `parent_id`,
`title`, `directory`, `time_created`, `time_updated`…), `message` and `part` (`data`: JSON). This
module opens it with a ``mode=ro`` URI and ``query_only`` (it never writes, never takes a write lock,
never checkpoints), and hands out rows as plain values; what they mean is
:mod:`azsd.ingest.parsers.opencode`'s business. It lives here because only azsd/store/ touches sqlite3.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import msgspec

from azsd.errors import IngestError

__all__ = ["OpenCodeDb", "OpenCodeSession", "stamp_of"]

_DECODER: Final = msgspec.json.Decoder()
#: How long a read waits for OpenCode's writer (WAL readers rarely wait at all).
BUSY_MS: Final = 5000


@dataclass(frozen=True)
class OpenCodeSession:
    """One OpenCode session as its store lists it (times in Unix milliseconds)."""

    id: str
    parent_id: str | None
    title: str
    directory: str
    created: int
    updated: int


class OpenCodeDb:
    """A read-only connection to an `opencode.db`."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self._conn = sqlite3.connect(
                f"file:{quote(str(self.path))}?mode=ro", uri=True, timeout=BUSY_MS / 1000
            )
            self._conn.execute("PRAGMA query_only = 1")
            tables = {
                row[0] for row in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.Error as exc:
            raise IngestError(f"{self.path}: cannot read OpenCode's database: {exc}") from None
        missing = {"session", "message", "part"} - tables
        if missing:
            self.close()
            raise IngestError(
                f"{self.path}: not an OpenCode database (no {', '.join(sorted(missing))} table)"
            )
        self._session_cols = self._columns("session")
        self._has_project = "project" in tables and "worktree" in self._columns("project")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> OpenCodeDb:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self._conn.execute(f"PRAGMA table_info({table})")}

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise IngestError(f"{self.path}: reading OpenCode's database failed: {exc}") from None

    def data_version(self) -> int:
        """SQLite's `data_version`: it changes whenever another connection commits to the file."""
        return int(self._rows("PRAGMA data_version")[0][0])

    def has_session(self, session_id: str) -> bool:
        """Whether the session is in the database (OpenCode deletes sessions, whose ids never return)."""
        return bool(self._rows("SELECT 1 FROM session WHERE id = ?", (session_id,)))

    def sessions(self, *, forks: bool = False) -> list[OpenCodeSession]:
        """Every session, oldest first (a parent before the sessions it spawned); with `forks`, a
        session OpenCode's ``--fork`` made names the one it copied (:meth:`_forked_from`: a look at
        every message's time, which an import's listing asks for and a watch's poll does not)."""
        cols = self._session_cols
        directory = "s.directory" if "directory" in cols else "NULL"
        if self._has_project and "project_id" in cols:
            directory = f"COALESCE({directory}, (SELECT worktree FROM project WHERE id = s.project_id))"
        parent = "s.parent_id" if "parent_id" in cols else "NULL"
        title = "s.title" if "title" in cols else "''"
        rows = self._rows(
            f"SELECT s.id, {parent}, {title}, {directory}, s.time_created, s.time_updated FROM session AS s "
            "ORDER BY s.time_created, s.id"
        )
        created = {str(row[0]): _int(row[4]) for row in rows}
        forked = self._forked_from(created, {str(row[0]) for row in rows if not row[1]}) if forks else {}
        return [
            OpenCodeSession(
                str(i), p if isinstance(p, str) and p else forked.get(str(i)),
                t if isinstance(t, str) else "", d if isinstance(d, str) else "", _int(c), _int(u),
            )
            for i, p, t, d, c, u in rows
        ]  # fmt: skip

    def _forked_from(self, created: dict[str, int], orphans: set[str]) -> dict[str, str]:
        """The session each fork among `orphans` (sessions naming no parent) was forked from.

        OpenCode's ``--fork`` names no parent: it copies the session's messages, with their times,
        into a new session. So a session whose first message has the time of an older session's
        first message is a fork of the one it shares the longest run of message times with (of two
        as long, the older: a fork of a fork shares more with the fork it was made from)."""
        firsts: dict[int, list[str]] = {}
        for session, first in self._rows(
            "SELECT session_id, MIN(time_created) FROM message GROUP BY session_id"
        ):
            if str(session) in created:
                firsts.setdefault(_int(first), []).append(str(session))
        found: dict[str, str] = {}
        for group in firsts.values():
            if len(group) < 2 or orphans.isdisjoint(group):
                continue
            times: dict[str, list[int]] = {}
            marks = ", ".join("?" * len(group))
            for session, at in self._rows(
                f"SELECT session_id, time_created FROM message WHERE session_id IN ({marks}) "
                "ORDER BY time_created, id",
                tuple(group),
            ):
                times.setdefault(str(session), []).append(_int(at))
            for fork in orphans.intersection(group):
                older = [s for s in group if (created[s], s) < (created[fork], fork)]
                if older:
                    found[fork] = max(older, key=lambda s: (_shared(times[s], times[fork]), -created[s]))
        return found

    def stamp(self, session_id: str) -> int:
        """A number that changes whenever the session, one of its messages or parts changes."""
        return self._stamps("(SELECT ? AS id)", (session_id,))[session_id][0]

    def records(self, session_id: str) -> int:
        """How many messages and parts the session holds."""
        return self._stamps("(SELECT ? AS id)", (session_id,))[session_id][1]

    def stamps(self) -> dict[str, tuple[int, int]]:
        """Every session's :meth:`stamp` and :meth:`records`, by one statement."""
        return self._stamps("session")

    def _stamps(self, sessions: str, args: tuple[Any, ...] = ()) -> dict[str, tuple[int, int]]:
        rows = self._rows(
            "SELECT s.id, (SELECT COALESCE(MAX(time_updated), 0) FROM session WHERE id = s.id), "
            "(SELECT COUNT(*) || ':' || COALESCE(MAX(time_updated), 0) FROM message "
            "WHERE session_id = s.id), "
            "(SELECT COUNT(*) || ':' || COALESCE(MAX(time_updated), 0) FROM part WHERE session_id = s.id), "
            "(SELECT COUNT(*) FROM message WHERE session_id = s.id) + "
            f"(SELECT COUNT(*) FROM part WHERE session_id = s.id) FROM {sessions} AS s",
            args,
        )
        return {str(row[0]): (stamp_of(tuple(row[1:4])), int(row[4])) for row in rows}

    def messages(self, session_id: str) -> Iterator[tuple[dict[str, Any] | None, list[dict[str, Any]], int]]:
        """Each message of the session in order: its info (None when its JSON is unusable), its
        usable parts in order, and how many of its parts were unusable."""
        parts: dict[str, list[tuple[str, bytes]]] = {}
        for message_id, part_id, data in self._rows(
            "SELECT message_id, id, data FROM part WHERE session_id = ? ORDER BY message_id, id",
            (session_id,),
        ):
            parts.setdefault(message_id, []).append((part_id, data))
        for message_id, data in self._rows(
            "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id", (session_id,)
        ):
            info = _object(data)
            decoded = [_object(d) for _, d in parts.get(message_id, [])]
            good = [p for p in decoded if p is not None]
            yield info, good, len(decoded) - len(good)


def _shared(one: list[int], other: list[int]) -> int:
    """How many leading values `one` and `other` share."""
    n = 0
    for a, b in zip(one, other, strict=False):
        if a != b:
            break
        n += 1
    return n


def stamp_of(values: Any) -> int:
    """A stable, non-negative 56-bit number for `values` (their repr), the same in every process."""
    return int.from_bytes(hashlib.blake2b(repr(values).encode(), digest_size=7).digest(), "big")


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _object(data: Any) -> dict[str, Any] | None:
    try:
        value = _DECODER.decode(data.encode() if isinstance(data, str) else data)
    except (msgspec.DecodeError, UnicodeDecodeError, AttributeError, TypeError):
        return None
    return value if isinstance(value, dict) else None
