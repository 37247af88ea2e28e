"""What can be imported: a history file (Claude, Codex), one run of an Aider chat history, or one
OpenCode session, each named by a key that the import record (`azsd_imports`) remembers.

- Claude and Codex: the file; its key is its path and its size the file's.
- Aider: each ``# aider chat started at`` run of ``<project>/.aider.chat.history.md`` that holds a
  prompt (the file only grows); its key is ``<file>#<the time in its header>`` (a byte offset would
  name another run once the file is rewritten), its size the run's bytes, and it is `closed` once a
  later run follows it.
- OpenCode: a session of ``opencode.db`` or of the older ``storage/`` tree; its key is
  ``<location>#<session id>`` and its size a stamp that changes whenever the session does.
"""

from __future__ import annotations

import mmap
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Final, Literal

from azsd.errors import AzsdError, IngestError
from azsd.files import open_regular
from azsd.ingest.opencode import locations, open_source, sessions_of, split_key
from azsd.ingest.parsers.aider import HEADER, parse_input_history
from azsd.store.opencode_db import OpenCodeSession

__all__ = [
    "AIDER_HISTORY",
    "AIDER_INPUT",
    "Agent",
    "AiderRun",
    "Source",
    "aider_runs",
    "aider_source",
    "aider_sources",
    "input_history",
    "opencode_source",
    "opencode_sources",
    "opencode_sources_named",
    "source_of",
    "sources_of",
]

Agent = Literal["claude", "codex", "aider", "opencode"]

#: Aider's chat history, in the root of the repository it ran in.
AIDER_HISTORY: Final = ".aider.chat.history.md"
#: Aider's prompt history beside it (prompt_toolkit's), which dates each prompt.
AIDER_INPUT: Final = ".aider.input.history"
_HEADER_B: Final = HEADER.encode()


#: OpenCode's title of a session it has not named yet (a sub-agent's: `Child session - …`).
_PLACEHOLDER: Final = re.compile(r"(New|Child) session - \d{4}-\d{2}-\d{2}T")


@dataclass(frozen=True)
class Source:
    """A history that may be imported: where it is, whose it is, and its size when found."""

    path: Path
    agent: Agent
    size: int
    #: The import record's key (the path, unless it names a part of it).
    key: str = ""
    #: The bytes of `path` that are this source (an Aider run).
    span: tuple[int, int] | None = None
    #: A later run follows it (an Aider run that can no longer grow).
    closed: bool = False
    #: What a new session is called until its first prompt names it (unless it is the agent's own
    #: name for it: :attr:`own_title`).
    title: str = field(default="")
    #: The key of the source this one was spawned from (an OpenCode session's parent).
    parent_key: str = ""
    #: Small enough to import in one short transaction (one commit instead of several: a thousand
    #: OpenCode sessions import in seconds, not minutes).
    small: bool = False

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", str(self.path))

    @property
    def own_title(self) -> str | None:
        """The name the agent gave the session itself, which names the session rather than its
        first prompt: OpenCode's title, once it made one (not its placeholder, `New session - <time>`).

        >>> Source(Path("/db"), "opencode", 1, title="Fix the parser").own_title
        'Fix the parser'
        >>> Source(Path("/db"), "opencode", 1, title="New session - 2026-05-02T10:00:00.000Z").own_title
        """
        if self.agent != "opencode" or not self.title.strip() or _PLACEHOLDER.match(self.title):
            return None
        return self.title.strip()


@dataclass(frozen=True)
class AiderRun:
    """One run of an Aider chat history: its bytes, its name (the time in its header, ``~2`` and on
    for a second run of the same second), whether it holds a prompt, and whether a later run began."""

    span: tuple[int, int]
    name: str
    prompted: bool
    closed: bool


def aider_runs(path: Path) -> list[AiderRun]:
    """The runs of an Aider chat history, oldest first (text before the first run is none)."""
    try:
        with open_regular(path) as stream:
            size = stream.seek(0, 2)
            if not size:
                return []
            with mmap.mmap(stream.fileno(), size, access=mmap.ACCESS_READ) as data:
                starts = [0] if data[: len(_HEADER_B)] == _HEADER_B else []
                at = data.find(b"\n" + _HEADER_B)
                while at >= 0:
                    starts.append(at + 1)
                    at = data.find(b"\n" + _HEADER_B, at + 1)
                runs: list[AiderRun] = []
                seen: dict[str, int] = {}
                for i, start in enumerate(starts):
                    end = starts[i + 1] if i + 1 < len(starts) else size
                    eol = data.find(b"\n", start, end)
                    header = data[start + len(_HEADER_B) : end if eol < 0 else eol]
                    time = header.decode("utf-8", errors="replace").strip()
                    seen[time] = seen.get(time, 0) + 1
                    name = time if seen[time] == 1 else f"{time}~{seen[time]}"
                    prompted = data.find(b"\n#### ", start, end) >= 0
                    runs.append(AiderRun((start, end), name, prompted, i + 1 < len(starts)))
    except OSError as exc:
        raise IngestError(f"{path}: {exc.strerror or exc}") from None
    return runs


def input_history(path: Path) -> tuple[tuple[float, str], ...]:
    """The prompts of Aider's input history at `path` (none when it is not there), read once per
    version of the file however many runs ask."""
    try:
        info = path.stat()
    except OSError:
        return ()
    return _input_history(str(path), info.st_mtime_ns, info.st_size)


@lru_cache(maxsize=4)
def _input_history(path: str, mtime_ns: int, size: int) -> tuple[tuple[float, str], ...]:
    try:
        with open_regular(Path(path)) as stream:
            return tuple(parse_input_history(stream.read()))
    except OSError:
        return ()


def aider_sources(project: Path) -> list[Source]:
    """The runs of the project's Aider chat history that hold a prompt (Aider started and quit
    without one is no session: 40 % of the runs in Aider's own history), oldest first."""
    path = Path(project) / AIDER_HISTORY
    if not path.is_file():
        return []
    return [_aider(path, run) for run in aider_runs(path) if run.prompted]


def aider_source(key: str) -> Source:
    """The Aider run `key` (``<file>#<the time in its header>``) names, as the file stands now."""
    file, _, name = key.rpartition("#")
    path = Path(file)
    for run in aider_runs(path):
        if run.name == name:
            return _aider(path, run)
    raise IngestError(f"{key}: no such Aider run (expected <chat history>#<the time its header gives>)")


#: The most bytes (Aider) or records (OpenCode) a source imported in one transaction may hold.
SMALL_BYTES: Final = 256 * 1024
SMALL_RECORDS: Final = 500


def _aider(path: Path, run: AiderRun) -> Source:
    size = run.span[1] - run.span[0]
    key = f"{path}#{run.name}"
    return Source(path, "aider", size, key, run.span, run.closed, "aider", small=size <= SMALL_BYTES)


def opencode_sources(data_dir: Path, project: Path) -> list[Source]:
    """The OpenCode sessions of `project` in both generations' stores under `data_dir`, parents
    before the sessions they spawned."""
    found: list[Source] = []
    for location in locations(Path(data_dir)):
        with open_source(location) as store:
            mine = sessions_of(store, project)
            stamps = store.stamps(mine)
            found += [_opencode(location, session, *stamps[session.id]) for session in mine]
    return found


def opencode_sources_named(keys: list[str]) -> list[Source | IngestError]:
    """The OpenCode sessions `keys` name, each store opened and listed once (an error for a key that
    names none)."""
    found: dict[str, Source | IngestError] = {}
    by_location: dict[Path, list[str]] = {}
    for key in keys:
        try:
            location, _ = split_key(key)
        except IngestError as exc:
            found[key] = exc
            continue
        by_location.setdefault(location, []).append(key)
    for location, named in by_location.items():
        try:
            with open_source(location) as store:
                sessions = {s.id: s for s in store.sessions(forks=True)}
                wanted = [s for key in named if (s := sessions.get(split_key(key)[1])) is not None]
                stamps = store.stamps(wanted)
                for key in named:
                    session = sessions.get(split_key(key)[1])
                    found[key] = (
                        IngestError(f"{key}: no such OpenCode session")
                        if session is None
                        else _opencode(location, session, *stamps[session.id])
                    )
        except IngestError as exc:
            found.update({key: exc for key in named})
    return [found[key] for key in keys]


def opencode_source(key: str) -> Source:
    """The OpenCode session `key` (``<location>#<session id>``) names, as it stands now."""
    location, session_id = split_key(key)
    with open_source(location) as store:
        for session in store.sessions(forks=True):
            if session.id == session_id:
                return _opencode(location, session, store.stamp(session_id), store.records(session_id))
    raise IngestError(f"{key}: no such OpenCode session")


def _opencode(location: Path, session: OpenCodeSession, stamp: int, records: int) -> Source:
    parent = f"{location}#{session.parent_id}" if session.parent_id else ""
    key = f"{location}#{session.id}"
    small = records <= SMALL_RECORDS
    return Source(location, "opencode", stamp, key, title=session.title, parent_key=parent, small=small)


def source_of(agent: Agent, key: str) -> Source:
    """The source `key` names (a `SourceView.path`: a file, an Aider run, an OpenCode session), as
    it stands now."""
    if agent == "aider":
        return aider_source(key)
    if agent == "opencode":
        return opencode_source(key)
    path = Path(key)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise IngestError(f"{path}: {exc.strerror or exc}") from None
    return Source(path, agent, size)


def sources_of(agent: Agent, keys: list[str]) -> list[Source | AzsdError]:
    """:func:`source_of` of each key (OpenCode's stores opened and listed once for all)."""
    if agent == "opencode":
        return list(opencode_sources_named(keys))
    found: list[Source | AzsdError] = []
    for key in keys:
        try:
            found.append(source_of(agent, key))
        except AzsdError as exc:
            found.append(exc)
    return found
