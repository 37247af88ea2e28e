"""One-shot ingest of a finished agent JSONL file into a session (`ingest_file`).

The file is parsed with the same incremental parsers the live follower uses, compacted once, cut
against what the session already holds (compacted events compared with stored rows, never
compacting anything twice: spec §4.5), appended in one transaction, and the run's token usage is
recorded (replacing any earlier record of the same run, so a re-ingest changes nothing). It is read,
compacted and stored a chunk of lines at a time, so a big file never sits in memory whole.

>>> import tempfile, pathlib
>>> tmp = pathlib.Path(tempfile.mkdtemp())
>>> _ = (tmp / "t.jsonl").write_text('{"type":"turn.started"}\\n{"type":"turn.completed","usage":{}}\\n')
>>> with Store.open(tmp) as store:
...     sid = store.create_session().id
...     ingest_file(store, sid, tmp / "t.jsonl").appended
1
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from azsd.compact import prepare_for_store
from azsd.errors import IngestError
from azsd.events import Complete, Event, Init
from azsd.files import open_regular
from azsd.ingest.parsers import UnknownFormatError, detect_format, iter_lines, make_parser
from azsd.ingest.parsers.base import LineParser, ParseReport
from azsd.model import StoredEvent
from azsd.store import Store, completion_of

__all__ = ["IngestError", "IngestReport", "ingest_file", "overlap_prefix_len", "parse_file"]

log = logging.getLogger("azsd.ingest")

#: Lines parsed, compacted and stored at a time.
CHUNK_LINES: Final = 8192


@dataclass
class IngestReport:
    """What `ingest_file` did: the parse report, and how many events were new."""

    path: Path
    parse: ParseReport
    parsed: int
    appended: int
    duplicates: int
    events: list[StoredEvent]

    def summary(self) -> str:
        return (
            f"{self.path.name}: {self.parse.format}, {self.parse.summary()}; "
            f"{self.appended} appended, {self.duplicates} already stored"
        )


def parse_file(path: Path, fmt: str | None = None) -> tuple[list[Event], ParseReport]:
    """Parse a whole file (any of the four formats; detected unless `fmt` is given)."""
    parser = _parser_for(path, fmt)
    events = [event for chunk in _parsed_chunks(path, parser) for event in chunk]
    return events, parser.report


def _parser_for(path: Path, fmt: str | None) -> LineParser:
    """A parser for the file's format (detected from its first lines unless `fmt` is given)."""
    try:
        if fmt is None:
            with open_regular(path) as stream:
                fmt = detect_format(iter_lines(stream))
            if fmt is None:
                raise IngestError(f"{path}: not a JSONL file of any known agent format")
        return make_parser(fmt)
    except UnknownFormatError as exc:
        raise IngestError(str(exc)) from None
    except OSError as exc:
        raise IngestError(f"{path}: {exc.strerror or exc}") from None


def _parsed_chunks(path: Path, parser: LineParser) -> Iterator[list[Event]]:
    """The events of each `CHUNK_LINES` lines of the file, then those the parser held to the end."""
    try:
        with open_regular(path) as stream:
            chunk: list[Event] = []
            for n, line in enumerate(iter_lines(stream), 1):
                chunk.extend(parser.feed(line))
                if n % CHUNK_LINES == 0:
                    yield chunk
                    chunk = []
    except OSError as exc:
        raise IngestError(f"{path}: {exc.strerror or exc}") from None
    chunk.extend(parser.finish())
    yield chunk


def overlap_prefix_len(existing: Sequence[Event], appended: Sequence[Event]) -> int:
    """How many leading events of `appended` the session already ends with (spec §4.5).

    Leading `Init`s are skipped when the session is not empty; then the largest k such that the
    last k of `existing` equal the first k of the rest. Both sides must be compacted already.
    """
    skipped = _leading_inits(appended) if existing else 0
    rest = appended[skipped:]
    if not rest:
        return skipped
    limit = min(len(existing), len(rest))
    first = rest[0]
    for k in range(limit, 0, -1):
        if existing[-k] == first and list(existing[len(existing) - k :]) == list(rest[:k]):
            return skipped + k
    return skipped


def ingest_file(store: Store, session_id: int, path: Path, fmt: str | None = None) -> IngestReport:
    """Parse `path`, drop what the session already holds, append the rest, record usage.

    All of it is one transaction, and the session's badge ends as one append of every event would
    leave it (the last `Complete` decides, else new turn content means running).
    """
    path = Path(path)
    parser = _parser_for(path, fmt)
    stored: list[StoredEvent] = []
    parsed = 0
    last_complete: Complete | None = None
    running = False

    def append(events: Sequence[Event]) -> None:
        nonlocal last_complete, running
        complete, content = completion_of(events)
        last_complete, running = complete or last_complete, running or content
        stored.extend(store.append_prepared(session_id, events, completion=False).events)

    with store.atomic():
        existing = store.load_events(session_id).plain()
        pending: list[Event] = []  # held until the overlap with `existing` can be decided
        for chunk in _parsed_chunks(path, parser):
            prepared = prepare_for_store(chunk)
            parsed += len(prepared)
            if existing:
                pending += prepared
                if not _overlap_decidable(existing, pending):
                    continue
                prepared = pending[overlap_prefix_len(existing, pending) :]
                existing, pending = [], []
            append(prepared)
        if pending:  # the whole file is about as long as what the session ends with
            append(pending[overlap_prefix_len(existing, pending) :])
        store.set_completion(session_id, last_complete, running)
        report = parser.report
        if not report.usage.is_zero or report.cost_usd is not None:
            source = report.agent_session_id or str(path.resolve())
            store.record_usage(session_id, source, report.usage, report.cost_usd)
    log.info("ingested %s into S%d: %d new of %d", path, session_id, len(stored), parsed)
    return IngestReport(path, report, parsed, len(stored), parsed - len(stored), stored)


def _overlap_decidable(existing: Sequence[Event], pending: Sequence[Event]) -> bool:
    """Whether `pending` holds enough events for `overlap_prefix_len(existing, …)` to be final:
    the leading `Init`s it skips, then at least as many events as `existing` has."""
    return len(pending) - _leading_inits(pending) >= len(existing)


def _leading_inits(events: Sequence[Event]) -> int:
    """How many `Init`s `events` starts with."""
    n = 0
    while n < len(events) and isinstance(events[n], Init):
        n += 1
    return n
