"""Import agent histories already on disk into a worktree's store, one session per source file.

Claude keeps each session at ``<config>/projects/<slug>/<sessionId>.jsonl``, the slug naming the
project directory (agent-formats §2.1); Codex keeps each rollout at
``<home>/sessions/YYYY/MM/DD/rollout-*.jsonl``, its project being the `cwd` of its `session_meta`
(§4.1, §4.2). :func:`discover` lists a project's sources; :func:`import_source` brings one into the
store: the first time as a new session named by :mod:`azsd.ingest.names`, later only what was appended
to the file since (`azsd_imports` remembers the session and the size read), in short chunks that an
interrupted import's next run completes. Sources are only read.

>>> claude_slug(Path("/home/me/my_repo.v2"))
'-home-me-my-repo-v2'
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

from azsd.errors import IngestError
from azsd.files import open_regular
from azsd.ingest.claude_slug import claude_slug, long_slug_prefix
from azsd.ingest.file import IngestReport, ingest_chunks, ingest_file
from azsd.ingest.names import session_name
from azsd.ingest.parsers import Format, detect_format, head_value, iter_lines
from azsd.ingest.source_events import SourceReaders, source_events
from azsd.ingest.sources import (
    Agent,
    Source,
    aider_sources,
    opencode_sources,
)
from azsd.ingest.subagents import import_subagents, orphaned, orphaned_subagents
from azsd.ingest.usage import counted_elsewhere
from azsd.model import ImportRecord, StoredEvent
from azsd.store import Store

__all__ = [
    "FORMAT_OF",
    "UNFINISHED",
    "Agent",
    "ImportOutcome",
    "Source",
    "claude_slug",
    "discover",
    "import_source",
    "record_lineage",
]

log = logging.getLogger("azsd.ingest.importer")

#: The format of each agent's on-disk histories (OpenCode's are not files of lines).
FORMAT_OF: Final[dict[Agent, Format]] = {
    "claude": "claude-session",
    "codex": "codex-rollout",
    "aider": "aider",
}

#: How many lines of a source are read to find its working directory.
HEAD_LINES: Final = 20

#: The size an import record holds while its import is not finished (no file has it).
UNFINISHED: Final = -1

#: How many of a new session's first events are read for a prompt to name it after.
NAME_EVENTS: Final = 5000


@dataclass(frozen=True)
class ImportOutcome:
    """What :func:`import_source` did."""

    session_id: int
    #: A new session was made.
    created: bool
    #: Events stored by this call.
    appended: int
    #: Lines read.
    lines: int
    #: Lines skipped (every reason of the parse report).
    skipped: int
    #: Nothing to do: imported before, and the file has not changed in size since.
    current: bool


def discover(agent: Agent, source_dir: Path, project: Path) -> list[Source]:
    """The history files of `agent` under `source_dir` that belong to `project`, oldest first.

    Claude's (`source_dir` is ``~/.claude`` or ``$CLAUDE_CONFIG_DIR``) are the top-level
    ``*.jsonl`` of ``projects/<claude_slug(project)>`` (of the path as given and of its realpath);
    subagent files are not sessions (their usage is imported with their session's, see
    :mod:`azsd.ingest.subagents`), unless their session's file is gone: an orphaned one is a session
    of its own (and counted once: a parent that appears later does not count it again). Codex's
    (`source_dir` is ``~/.codex`` or ``$CODEX_HOME``) are the
    ``sessions/**/rollout-*.jsonl`` whose first `session_meta` has a `cwd` that is `project` or inside
    it. A missing directory gives no sources.
    """
    if agent == "aider":  # the runs of <project>/.aider.chat.history.md
        return aider_sources(project)
    if agent == "opencode":  # `source_dir` is OpenCode's data directory
        return opencode_sources(Path(os.path.abspath(source_dir)), project)
    source_dir = Path(os.path.abspath(source_dir))
    paths = _claude_paths(source_dir, project) if agent == "claude" else _codex_paths(source_dir, project)
    found: list[tuple[int, str, Source]] = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:  # gone since it was listed
            continue
        if st.st_size:  # an empty file holds nothing yet (Claude makes some): found once it does
            found.append((st.st_mtime_ns, str(path), Source(path, agent, st.st_size)))
    found.sort(key=lambda item: (item[0], item[1]))
    return [source for _, _, source in found]


def _spellings(path: Path | str) -> list[str]:
    """`path` made absolute as given, and with its symlinks resolved (once when they agree)."""
    given, real = os.path.abspath(path), os.path.realpath(path)
    return [given] if given == real else [given, real]


def _claude_paths(source_dir: Path, project: Path) -> Iterator[Path]:
    projects = source_dir / "projects"
    exact: dict[str, None] = {}
    prefixes: list[str] = []
    for spelling in _spellings(project):
        exact[claude_slug(spelling)] = None
        prefix = long_slug_prefix(spelling)
        if prefix is not None:
            prefixes.append(prefix)
    dirs = [(projects / name, False) for name in exact]
    if prefixes and projects.is_dir():  # a long path: its hash suffix depends on Claude's build
        dirs += [
            (d, True)
            for d in projects.iterdir()
            if d.name not in exact and d.name.startswith(tuple(prefixes))
        ]
    cwds = set(_spellings(project))
    for directory, check_cwd in dirs:
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.jsonl")) + orphaned_subagents(directory):
            if path.name.startswith("agent-") and path.parent == directory and not orphaned(path):
                continue  # 2.0.x wrote subagent transcripts beside the sessions
            if not path.is_file():
                continue
            if check_cwd and _head_value(path, _claude_cwd) not in cwds:
                continue  # another long path with the same first 200 characters
            yield path


def _codex_paths(source_dir: Path, project: Path) -> Iterator[Path]:
    sessions = source_dir / "sessions"
    if not sessions.is_dir():
        return
    bases = [Path(p) for p in _spellings(project)]
    for path in sorted(sessions.rglob("rollout-*.jsonl")):
        if path.is_file() and _within(_head_value(path, _codex_cwd), bases):
            yield path


def _claude_cwd(obj: dict[str, Any]) -> str | None:
    cwd = obj.get("cwd")
    return cwd if isinstance(cwd, str) else None


def _codex_cwd(obj: dict[str, Any]) -> str | None:
    """The `cwd` of a `session_meta` line ("" for one without a usable cwd, so the search stops)."""
    if obj.get("type") != "session_meta":
        return None
    payload = obj.get("payload")
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    return cwd if isinstance(cwd, str) else ""


def _head_value(path: Path, pick: Callable[[dict[str, Any]], str | None]) -> str | None:
    """The first non-None `pick(line)` among the first `HEAD_LINES` JSON-object lines of `path`."""
    try:
        with open_regular(path) as stream:
            return head_value(iter_lines(stream), HEAD_LINES, pick)
    except OSError:
        return None


def _within(cwd: str | None, bases: Sequence[Path]) -> bool:
    """Whether `cwd` (as written, or resolved) is one of `bases` or inside one."""
    if not cwd or not os.path.isabs(cwd):
        return False
    return any(Path(c).is_relative_to(base) for c in _spellings(cwd) for base in bases)


def import_source(
    store: Store,
    source: Source,
    worktree: str = "",
    *,
    on_stored: Callable[[int, list[StoredEvent]], None] | None = None,
    stores: SourceReaders | None = None,
) -> ImportOutcome:
    """Bring `source` into `store`: a new session (labelled `worktree`) the first time, afterwards
    only the events appended to the file since, and nothing when its size has not changed.

    The events are stored in chunks (:func:`~azsd.ingest.file.ingest_file`), so the import record
    says :data:`UNFINISHED` until the last one is committed; an import that was interrupted is
    finished by the next one, which stores only what is missing (and names the session then). The
    size recorded is the one measured before reading, so lines written during the import are read
    next time. `on_stored(session, events)` gets each chunk of an existing session's new events as it
    is committed (a new session's are announced by its creation). OpenCode's stores are read
    through `stores` when given (shared by many sources).

    Raises:
        IngestError: the file cannot be read, or is not a history of `source.agent` (nothing is
            stored then).
    """
    if not source.small:
        return _import_source(store, source, worktree, on_stored, stores)
    with store.atomic(create=True):  # a small source: one transaction, one commit
        return _import_source(store, source, worktree, on_stored, stores)


def _import_source(
    store: Store,
    source: Source,
    worktree: str,
    on_stored: Callable[[int, list[StoredEvent]], None] | None,
    stores: SourceReaders | None,
) -> ImportOutcome:
    path, key = source.path, source.key
    size = source.size if source.agent in ("aider", "opencode") else file_size(path)
    record = store.get_import(key)
    if record is not None and not store.has_session(record.session_id):
        record = None
    if record is not None and (
        record.size == size or (not record.last_seq and _followed(store, record.session_id, source))
    ):
        # (an Aider run or an OpenCode session a follow brought in is the follow's: it goes on there)
        _subagents(store, record.session_id, source)
        return ImportOutcome(record.session_id, False, 0, 0, 0, current=True)
    if record is not None and record.size != UNFINISHED and not record.last_seq and source.agent in FORMAT_OF:
        # its events came another way (an `azs run` of it, a follow): what it holds up to its size is
        # in the session already, in that way's form, and only the lines after it are new
        sid = record.session_id
        stored = _drop if on_stored is None else partial(on_stored, sid)
        report = ingest_file(store, sid, path, FORMAT_OF[source.agent], on_stored=stored, warm=record.size)
        store.record_import(_record(source, sid, size, 0))
        _subagents(store, sid, source)
        return _outcome(sid, report, created=False)
    if record is not None and record.size != UNFINISHED:
        if record.last_seq and store.max_seq(record.session_id) != record.last_seq:
            raise IngestError(
                f"{key}: S{record.session_id}, where it was imported, has changed since (it was continued "
                "or compacted elsewhere), so what the source gained cannot be told from what the session "
                f"holds: delete S{record.session_id} and import again, or ingest the file into a new session"
            )
        sid = record.session_id
        store.record_import(_record(source, sid, UNFINISHED, record.last_seq))
        stored = _drop if on_stored is None else partial(on_stored, sid)
        report = _ingest(store, sid, source, stored, stores)
        store.record_import(_record(source, sid, size, store.max_seq(sid)))
        _subagents(store, sid, source)
        return _outcome(sid, report, created=False)
    if record is None:
        if source.agent in ("claude", "codex"):
            check_format(path, FORMAT_OF[source.agent], size)
        with store.atomic(create=True):
            sid = store.create_session(source.own_title or source.title or path.stem, worktree).id
            if not source.small:  # a small one is imported in this one transaction: never unfinished
                store.record_import(_record(source, sid, UNFINISHED, 0))
    else:  # an import of a new session that was interrupted: finish it
        sid = record.session_id
    report = _ingest(store, sid, source, _drop, stores)
    with store.atomic():
        name = session_name(report.parse.title, store.load_events(sid, 1, NAME_EVENTS).plain())
        if (
            name is not None
            and not source.own_title
            and store.get_session(sid).name == (source.title or path.stem)
        ):
            store.rename_session(sid, name)
        store.record_import(_record(source, sid, size, store.max_seq(sid)))
    _subagents(store, sid, source)
    record_lineage(store, sid, source)
    log.info("imported %s into S%d (%d events)", key, sid, report.appended)
    return _outcome(sid, report, created=True)


def _ingest(
    store: Store,
    session_id: int,
    source: Source,
    stored: Callable[[list[StoredEvent]], None],
    stores: SourceReaders | None = None,
) -> IngestReport:
    """Store what `source` holds that the session lacks (OpenCode's stores read through `stores`)."""
    if source.agent not in ("aider", "opencode"):
        return ingest_file(store, session_id, source.path, FORMAT_OF[source.agent], on_stored=stored)
    with SourceReaders() if stores is None else nullcontext(stores) as opened:
        found = source_events(source, opened)
        found.report.counted_elsewhere = counted_elsewhere(store, session_id, source.key)  # a fork's copies
        return ingest_chunks(
            store,
            session_id,
            found.chunks,
            found.report,
            found.name,
            at=found.at,
            on_stored=stored,
            grows=True,
        )


def _followed(store: Store, session_id: int, source: Source) -> bool:
    """Whether a follow into the session brought in the Aider run or OpenCode session `source` (it
    goes on there, and an import leaves it to it)."""
    if source.agent not in ("aider", "opencode"):
        return False
    paths = (source.key, str(source.path))
    return any(f.session_id == session_id and f.path in paths for f in store.follows())


def record_lineage(store: Store, session_id: int, source: Source) -> None:
    """An OpenCode session spawned from another (a sub-agent's, a fork): its parent, when imported."""
    parent = store.get_import(source.parent_key) if source.parent_key else None
    if parent is not None and store.has_session(parent.session_id):
        store.set_lineage(session_id, parent.session_id, max(1, store.max_seq(parent.session_id)))


def _subagents(store: Store, session_id: int, source: Source) -> None:
    """A Claude session's sub-agent transcripts: their usage is the session's (azsd.ingest.subagents)."""
    if source.agent == "claude":
        import_subagents(store, session_id, source.path)


def _drop(events: list[StoredEvent]) -> None:
    """What a chunk of stored events nobody waits for becomes."""


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError as exc:
        raise IngestError(f"{path}: {exc.strerror or exc}") from None


def check_format(path: Path, fmt: Format, size: int, lines: Iterable[bytes] | None = None) -> None:
    """Raise `IngestError` unless the first lines of `path` (or `lines`, read from it already) say
    it is of format `fmt`."""
    if size == 0:
        raise IngestError(f"{path}: the file is empty, there is nothing to import")
    if lines is not None:
        found = detect_format(lines)
    else:
        try:
            with open_regular(path) as stream:
                found = detect_format(iter_lines(stream))
        except OSError as exc:
            raise IngestError(f"{path}: {exc.strerror or exc}") from None
    if found is None:
        raise IngestError(f"{path}: not a JSONL file of any known agent format, expected {fmt}")
    if found != fmt:
        raise IngestError(f"{path}: a {found} file, expected {fmt}")


def _record(source: Source, session_id: int, size: int, last_seq: int) -> ImportRecord:
    return ImportRecord(
        source=source.key, session_id=session_id, agent=source.agent, size=size, last_seq=last_seq
    )


def _outcome(session_id: int, report: IngestReport, *, created: bool) -> ImportOutcome:
    parse = report.parse
    return ImportOutcome(session_id, created, report.appended, parse.lines, parse.skipped_total, False)
