"""Where OpenCode keeps its sessions, and how one becomes an azsd session.

OpenCode's data directory (``$XDG_DATA_HOME/opencode``, else ``~/.local/share/opencode``) holds
either generation, or both:

- **current** (1.x): ``opencode.db``, SQLite in WAL mode, read through
  :class:`azsd.store.opencode_db.OpenCodeDb` (read-only);
- **older** (0.x): JSON files under ``storage/``: ``session/<project>/<session>.json``,
  ``message/<session>/<message>.json`` and ``part/<message>/<part>.json``;
- **oldest** (0.5 and before): a ``storage/`` per project, ``project/<slug>/storage/`` (the slug is
  the worktree's path, its slashes made dashes), holding ``session/info/<session>.json``,
  ``session/message/<session>/<message>.json`` and ``session/part/<session>/<message>/<part>.json``.
  A session names no directory there: its replies' ``path`` does, else the project's slug (asked
  of a project: a slug is ambiguous, its dashes are slashes or dashes).

A source is one OpenCode session, named ``<location>#<session id>`` (the location being the
database or the ``storage`` directory). :func:`sessions_of` lists a project's; the importer
(:mod:`azsd.ingest.importer`) brings each into a session of its own, named after its title, with its
`parent_id` kept as fork lineage, again later with only what it gained. Only messages that are
finished are read: a reply still being written waits for the next import (or the live follow).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import msgspec

from azsd.errors import IngestError
from azsd.events import Event
from azsd.ingest.file import IngestReport, ingest_chunks
from azsd.ingest.parsers.opencode import OpenCodeParser
from azsd.model import StoredEvent
from azsd.store import Store
from azsd.store.opencode_db import OpenCodeDb, OpenCodeSession, stamp_of

__all__ = [
    "DB_NAME",
    "OpenCodeSource",
    "locations",
    "open_source",
    "parse_session",
    "sessions_of",
    "split_key",
]

DB_NAME: Final = "opencode.db"
STORAGE: Final = "storage"
_DECODER: Final = msgspec.json.Decoder()


def locations(data_dir: Path) -> list[Path]:
    """The stores of every generation under OpenCode's data directory (the database first)."""
    found = [data_dir / DB_NAME] if (data_dir / DB_NAME).is_file() else []
    if (data_dir / STORAGE / "session").is_dir():
        found.append(data_dir / STORAGE)
    found += sorted(p.parent.parent for p in (data_dir / "project").glob(f"*/{STORAGE}/session/info"))
    return found


def project_slug(path: str) -> str:
    """The name OpenCode 0.5 gave a worktree's directory of its own (``project/<slug>``).

    >>> project_slug("/home/me/my_app")
    'home-me-my_app'
    """
    return path.replace("/", "-").strip("-")


def split_key(key: str) -> tuple[Path, str]:
    """``<location>#<session id>`` split in two.

    >>> split_key("/d/opencode.db#ses_1")
    (PosixPath('/d/opencode.db'), 'ses_1')
    """
    location, sep, session = key.rpartition("#")
    if not sep or not location or not session:
        raise IngestError(
            f"{key}: not an OpenCode session (expected <opencode.db or storage dir>#<session id>)"
        )
    return Path(location), session


class OpenCodeSource:
    """One store of OpenCode's (a database or a JSON tree), read-only."""

    def __init__(self, location: Path) -> None:
        self.location = location
        self._db = OpenCodeDb(location) if location.name != STORAGE else None
        #: The 0.5 layout: everything under ``session/`` (see the module docstring).
        self._oldest = self._db is None and (location / "session" / "info").is_dir()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()

    def __enter__(self) -> OpenCodeSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sessions(self, *, forks: bool = False) -> list[OpenCodeSession]:
        """Every session, oldest first; with `forks`, forks name the session they copied (the
        database's; the older JSON tree knows no ``--fork``)."""
        if self._db is not None:
            return self._db.sessions(forks=forks)
        found = []
        pattern = "info/*.json" if self._oldest else "*/*.json"
        for path in sorted((self.location / "session").glob(pattern)):
            info = _read(path)
            if info is None or not isinstance(info.get("id"), str):
                continue
            time = _dict(info.get("time"))
            parent = info.get("parentID")
            directory = _str(info.get("directory")) or (self._directory(info["id"]) if self._oldest else "")
            found.append(
                OpenCodeSession(
                    info["id"], parent if isinstance(parent, str) else None, _str(info.get("title")),
                    directory, _ms(time.get("created")), _ms(time.get("updated")),
                )
            )  # fmt: skip
        return sorted(found, key=lambda s: (s.created, s.id))

    def _directory(self, session_id: str) -> str:
        """Where a 0.5 session ran, as its first reply's ``path`` says ("" when none does: the
        project's slug then tells, :func:`sessions_of`)."""
        for path in self._message_files(session_id):
            where = _dict(_dict(_read(path)).get("path"))
            found = _str(where.get("root")) or _str(where.get("cwd"))
            if found:
                return found
        return ""

    @property
    def slug(self) -> str:
        """The project slug of a 0.5 store (``project/<slug>/storage``), else ""."""
        return self.location.parent.name if self._oldest else ""

    def has_session(self, session_id: str) -> bool:
        """Whether the session is still in the store."""
        if self._db is not None:
            return self._db.has_session(session_id)
        if not session_id or any(c in session_id for c in "*?[]/"):
            return False  # (a name, never a pattern)
        return any((self.location / "session").glob(f"{'info' if self._oldest else '*'}/{session_id}.json"))

    def stamp(self, session_id: str) -> int:
        """A number that changes whenever the session gains or changes a message or a part."""
        if self._db is not None:
            return self._db.stamp(session_id)
        seen = []
        for path in self._message_files(session_id):
            seen.append(_mtime_ns(path))
            seen.extend(_mtime_ns(p) for p in self._part_files(session_id, path.stem))
        return stamp_of((len(seen), sum(seen), max(seen, default=0)))

    def messages(self, session_id: str) -> Iterator[tuple[dict[str, Any] | None, list[dict[str, Any]], int]]:
        if self._db is not None:
            yield from self._db.messages(session_id)
            return
        for path in self._message_files(session_id):
            parts = [_read(p) for p in self._part_files(session_id, path.stem)]
            good = [p for p in parts if p is not None]
            yield _read(path), good, len(parts) - len(good)

    def stamps(self, sessions: list[OpenCodeSession]) -> dict[str, tuple[int, int]]:
        """:meth:`stamp` and :meth:`records` of each of `sessions` (of the database: of all its
        sessions, by one statement)."""
        if self._db is not None:
            return self._db.stamps()
        return {s.id: (self.stamp(s.id), self.records(s.id)) for s in sessions}

    def records(self, session_id: str) -> int:
        """How many messages and parts the session holds (roughly, for the JSON tree: its messages)."""
        if self._db is not None:
            return self._db.records(session_id)
        return len(self._message_files(session_id)) * 8

    def version(self, session_id: str) -> int:
        """A number that changes when the store may hold news for the session: the database's
        `data_version` (cheap, asked every poll), else the JSON files' stamp."""
        if self._db is not None:
            return self._db.data_version()
        return self.stamp(session_id)

    def _message_files(self, session_id: str) -> list[Path]:
        folder = self.location / "session" / "message" if self._oldest else self.location / "message"
        return sorted((folder / session_id).glob("*.json"))

    def _part_files(self, session_id: str, message_id: str) -> list[Path]:
        if self._oldest:
            return sorted((self.location / "session" / "part" / session_id / message_id).glob("*.json"))
        return sorted((self.location / "part" / message_id).glob("*.json"))


def open_source(location: Path) -> OpenCodeSource:
    """The store at `location` (raises `IngestError` when it is not one of OpenCode's)."""
    if location.name != STORAGE and not location.is_file():
        raise IngestError(f"{location}: no such OpenCode database")
    if location.name == STORAGE and not location.is_dir():
        raise IngestError(f"{location}: no such OpenCode storage directory")
    return OpenCodeSource(location)


def sessions_of(source: OpenCodeSource, project: Path) -> list[OpenCodeSession]:
    """The sessions whose directory is `project` (as given, or resolved) or inside it."""
    bases = {os.path.abspath(project), os.path.realpath(project)}
    within: dict[str, bool] = {}  # by directory: most sessions share a few
    mine = []
    slugs = {project_slug(base) for base in bases}
    for session in source.sessions(forks=True):
        if not session.directory and source.slug in slugs:  # a 0.5 session that names no directory
            session = replace(session, directory=os.path.abspath(project))
        directory = session.directory
        if not directory or not os.path.isabs(directory):
            continue
        if directory not in within:
            spellings = {os.path.abspath(directory), os.path.realpath(directory)}
            within[directory] = any(Path(s).is_relative_to(b) for s in spellings for b in bases)
        if within[directory]:
            mine.append(session)
    return mine


@dataclass
class ParsedSession:
    """A session's events a message at a time, and the parser's report once they are read."""

    parser: OpenCodeParser
    chunks: Iterator[list[Event]]


Message = tuple[dict[str, Any] | None, list[dict[str, Any]], int]


def finished_messages(source: OpenCodeSource, session_id: str) -> list[Message]:
    """The session's messages up to the first reply still being written: (info or None when its
    JSON is unusable, its usable parts, how many parts were unusable). A reply never completed that
    a later reply follows was abandoned (OpenCode killed while writing it: it begins a reply only once
    the one before has ended): it is taken as it was left, and what follows it read on."""
    messages = list(source.messages(session_id))
    replies = [
        i for i, (info, _, _) in enumerate(messages) if info is not None and info.get("role") == "assistant"
    ]
    last_reply = replies[-1] if replies else -1
    done: list[Message] = []
    for i, (info, parts, bad) in enumerate(messages):
        time = _dict(info.get("time")) if info is not None else {}
        if info is not None and info.get("role") == "assistant" and not time.get("completed"):
            if not info.get("error") and i == last_reply:
                break  # still being written: the rest waits
        done.append((info, parts, bad))
    return done


def parse_session(source: OpenCodeSource, session_id: str, key: str) -> ParsedSession:
    """The events of the session's finished messages (it stops at a reply still being written)."""
    parser = OpenCodeParser()
    parser.report.agent_session_id = key

    def chunks() -> Iterator[list[Event]]:
        for info, parts, bad in finished_messages(source, session_id):
            yield feed(parser, (info, parts, bad))

    return ParsedSession(parser, chunks())


def feed(parser: OpenCodeParser, message: Message) -> list[Event]:
    """One message's events (its unusable records counted)."""
    info, parts, bad = message
    for _ in range(bad):
        parser.skip("invalid_json")
    if info is None:
        parser.skip("invalid_json")
        return []
    return parser.feed_message(info, parts)


def is_session_key(path: str) -> bool:
    """Whether `path` names an OpenCode session (``<opencode.db or storage dir>#<session id>``)."""
    location, sep, session = path.rpartition("#")
    name = Path(location).name
    return bool(sep and session) and (name == STORAGE or name.endswith(".db"))


def ingest_session(
    store: Store, session_id: int, key: str, on_stored: Callable[[list[StoredEvent]], None] | None = None
) -> IngestReport:
    """`azs ingest <opencode.db>#<session id>` into the session `session_id`: as a file's ingest, what
    the session already ends with is not stored again."""
    location, session = split_key(key)
    with open_source(location) as source:
        if not any(s.id == session for s in source.sessions()):
            raise IngestError(f"{key}: no such OpenCode session in {location}")
        parsed = parse_session(source, session, key)
        return ingest_chunks(store, session_id, parsed.chunks, parsed.parser.report, key, on_stored=on_stored)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        value = _DECODER.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError):
        return None
    return value if isinstance(value, dict) else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _ms(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
