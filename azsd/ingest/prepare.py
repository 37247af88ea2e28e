"""A Claude or Codex file read for an import away from the store: :func:`prepare_file`.

Everything an import of a file never imported does before it writes needs no store: reading and
parsing the file, compacting its events, naming the session after its first prompt, encoding and
compressing the rows, their search text and context blocks (:func:`azsd.store.rows.session_rows`),
its usage record and those of its sub-agent transcripts. So it runs ahead of the writer, in worker
processes (:mod:`azsd.ingest.import_ahead`), and the writer only inserts the rows
(:mod:`azsd.ingest.import_prepared`).

What depends on the store is decided there: whether the file is still new, and whether another run
counted one of its API messages (the usage is then not what the parse says, which assumed nobody
did). The parse keeps every message id it counted (:attr:`PreparedFile.keys`), so the writer can
tell; when another run counted one (a `--resume` copying the session it resumes), the writer reads
the file again itself, told which messages were counted elsewhere (`counted`), as
:func:`~azsd.ingest.importer.import_source` reads it.

The result is what :func:`~azsd.ingest.importer.import_source` stores for the file: the same parse,
in the same parts (:data:`~azsd.ingest.file.CHUNK_LINES` lines, then
:data:`~azsd.ingest.file.STEP_EVENTS` events), the same name (the first prompt of the first
:data:`~azsd.ingest.importer.NAME_EVENTS` events once injected context is stripped, as a load gives
them), the size measured before reading.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from azsd.compact import prepare_for_store
from azsd.context import strip_injected_context_indexed
from azsd.errors import IngestError
from azsd.events import Event
from azsd.files import open_regular
from azsd.ingest.file import STEP_EVENTS, chunked_events
from azsd.ingest.importer import FORMAT_OF, NAME_EVENTS, check_format, file_size
from azsd.ingest.names import session_name
from azsd.ingest.parsers import iter_lines, make_parser
from azsd.ingest.sources import Agent
from azsd.ingest.subagents import subagent_files
from azsd.ingest.usage import UsageRecord, usage_record
from azsd.store.codec import RowCodec
from azsd.store.rows import SessionRows, session_rows

__all__ = ["LARGEST_BYTES", "PREPARED_AGENTS", "PreparedFile", "SubagentUsage", "prepare_file"]

log = logging.getLogger("azsd.ingest.subagents")

#: The agents whose files :func:`prepare_file` reads.
PREPARED_AGENTS: Final = ("claude", "codex")

_CODEC: list[RowCodec] = []  # one per process (the calling thread is the process's one preparer)


@dataclass
class SubagentUsage:
    """A sub-agent transcript's usage (:mod:`azsd.ingest.subagents`), as its parse saw it."""

    #: Its resolved path (its usage record's and import record's key), and its size when read.
    source: str
    size: int
    at: float
    usage: UsageRecord | None
    #: The API message ids it counted.
    keys: list[str]


@dataclass
class PreparedFile:
    """A file read for an import: the new session's rows, name, usage and counts."""

    path: str
    agent: Agent
    #: The size measured before reading (what the import record keeps).
    size: int
    name: str | None
    rows: SessionRows
    usage: UsageRecord | None
    #: The modification time (the usage of lines without a time is dated so).
    at: float | None
    lines: int
    skipped: int
    #: The API message ids the run counted (all it met: the parse assumed no other run counted any).
    keys: list[str]
    subagents: list[SubagentUsage] = field(default_factory=list)

    def all_keys(self) -> list[str]:
        """The message ids of the file and of its sub-agents."""
        return self.keys + [key for sub in self.subagents for key in sub.keys]


#: The largest file read whole (in memory) for a new session; a bigger one is imported in chunks.
LARGEST_BYTES: Final = 8 << 20


def prepare_file(path: str, agent: Agent, counted: Callable[[str], bool] | None = None) -> PreparedFile:
    """Read the `agent` file `path` for a new session (no store involved; with `counted`, the API
    messages it says another run counted are left out of the file's usage, as the store's answer is
    in :func:`~azsd.ingest.importer.import_source`).

    Raises:
        IngestError: as :func:`~azsd.ingest.importer.import_source` would for it.
    """
    if not _CODEC:
        _CODEC.append(RowCodec())
    file = Path(path)
    fmt = FORMAT_OF[agent]
    size = file_size(file)
    if size == 0:
        check_format(file, fmt, size)  # (says it is empty)
    if size > LARGEST_BYTES:  # it grew since it was listed: the writer imports it in chunks
        raise IngestError(f"{file}: {size:,} bytes, more than a file read whole ({LARGEST_BYTES:,})")
    try:  # read once, for the format and the parse, to the size recorded (what is added, next time)
        with open_regular(file) as stream:
            lines = list(iter_lines(stream, stop=size))
    except OSError as exc:
        raise IngestError(f"{file}: {exc.strerror or exc}") from None
    check_format(file, fmt, size, lines)
    parser = make_parser(fmt)
    parser.report.counted_elsewhere = counted
    parts: list[list[Event]] = []
    for chunk in chunked_events(lines, parser):
        prepared = prepare_for_store(chunk)
        parts += (prepared[i : i + STEP_EVENTS] for i in range(0, len(prepared), STEP_EVENTS))
    head: list[Event] = []
    for part in parts:
        if len(head) >= NAME_EVENTS:
            break
        head += part
    report = parser.report
    name = session_name(report.title, [e for _, e in strip_injected_context_indexed(head[:NAME_EVENTS])])
    return PreparedFile(
        path=path, agent=agent, size=size, name=name, rows=session_rows(parts, _CODEC[0]),
        usage=usage_record(report, str(file.resolve())), at=_mtime(file), lines=report.lines,
        skipped=report.skipped_total, keys=list(report.message_keys),
        subagents=_subagents(file) if agent == "claude" else [],
    )  # fmt: skip


def _subagents(session: Path) -> list[SubagentUsage]:
    """The usage of each sub-agent transcript of the Claude session file `session`; one that cannot
    be read is logged and left out, as :func:`~azsd.ingest.subagents.import_subagents` does."""
    out = []
    for path in subagent_files(session):
        try:
            size = path.stat().st_size
            source = str(path.resolve())
            parser = make_parser("claude-session")
            with open_regular(path) as stream:
                for line in iter_lines(stream, stop=size):
                    parser.feed(line)
            parser.finish()
            record = usage_record(parser.report, source, source=source)
            keys = list(parser.report.message_keys)
            out.append(SubagentUsage(source, size, path.stat().st_mtime, record, keys))
        except OSError as exc:
            log.warning("%s: not imported (%s)", path, exc.strerror or exc)
    return out


def _mtime(path: Path) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None
