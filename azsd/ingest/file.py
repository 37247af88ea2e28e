"""One-shot ingest of a finished agent JSONL file into a session (`ingest_file`).

The file is parsed with the same incremental parsers the live follower uses, compacted once, cut
against what the session already holds (compacted events compared with stored rows, never
compacting anything twice: spec §4.5), appended in transactions of at most ~200 ms
(:mod:`azsd.store.chunks`), and the run's token usage is recorded (replacing any earlier record of the
same run, so a re-ingest changes nothing). It is read, compacted and stored a chunk of lines at a
time, so a big file never sits in memory whole.

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
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain, islice
from pathlib import Path
from typing import Final

from azsd.compact import prepare_for_store
from azsd.errors import IngestError, StoreError, StoreFullError
from azsd.events import Complete, Event, Init
from azsd.files import open_regular
from azsd.ingest.parsers import DETECT_LINES, UnknownFormatError, detect_format, iter_lines, make_parser
from azsd.ingest.parsers.base import LineParser, ParseReport
from azsd.ingest.parsers.claude import ClaudeSessionParser
from azsd.ingest.parsers.claude_counting import ClaudeCountingParser
from azsd.ingest.usage import counted_elsewhere, usage_record
from azsd.model import StoredEvent
from azsd.store import Store, completion_of
from azsd.store.chunks import ChunkedWrite, Pacer

__all__ = [
    "IngestError",
    "IngestReport",
    "chunked_events",
    "ingest_chunks",
    "ingest_file",
    "overlap_prefix_len",
    "parse_file",
    "parse_usage",
    "parsed_chunks",
]

log = logging.getLogger("azsd.ingest")

#: Lines parsed and compacted at a time (fewer when they hold more than `CHUNK_BYTES`).
CHUNK_LINES: Final = 1024
CHUNK_BYTES: Final = 1 << 20
#: Events stored in one step of a chunk (a step must stay well under the chunk's 200 ms).
STEP_EVENTS: Final = 512


@dataclass
class IngestReport:
    """What `ingest_file` did: the parse report, and how many events were new (and which, unless
    they were handed over chunk by chunk)."""

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


def parse_usage(path: Path, counted_elsewhere: Callable[[str], bool] | None) -> ParseReport:
    """Parse a whole file for its report alone (its events are dropped as they come, so memory does
    not grow with the file; a Claude transcript's only as far as its usage needs:
    :mod:`~azsd.ingest.parsers.claude_counting`); a Claude message `counted_elsewhere` says
    another run counted is left out of its usage. The file is opened and read once: its format is
    told from the lines the parse then reads (`usage --all` reads thousands of small files)."""
    try:
        with open_regular(path) as stream:
            lines = iter_lines(stream, stop=os.fstat(stream.fileno()).st_size)
            head = list(islice(lines, DETECT_LINES))
            parser = _parser_of(path, detect_format(head), empty=not head)
            if isinstance(parser, ClaudeSessionParser):
                parser = ClaudeCountingParser()
            parser.report.counted_elsewhere = counted_elsewhere
            feed = parser.feed
            for line in chain(head, lines):
                feed(line)
            parser.finish()
    except OSError as exc:
        raise IngestError(f"{path}: {exc.strerror or exc}") from None
    return parser.report


def parse_file(path: Path, fmt: str | None = None) -> tuple[list[Event], ParseReport]:
    """Parse a whole file (any of the four formats; detected unless `fmt` is given)."""
    parser = _parser_for(path, fmt)
    events = [event for chunk in parsed_chunks(path, parser) for event in chunk]
    return events, parser.report


def _parser_for(path: Path, fmt: str | None) -> LineParser:
    """A parser for the file's format (detected from its first lines unless `fmt` is given)."""
    if fmt is not None:
        return _parser_of(path, fmt, empty=False)
    try:
        with open_regular(path) as stream:
            empty = os.fstat(stream.fileno()).st_size == 0
            return _parser_of(path, detect_format(iter_lines(stream)), empty=empty)
    except OSError as exc:
        raise IngestError(f"{path}: {exc.strerror or exc}") from None


def _parser_of(path: Path, fmt: str | None, *, empty: bool) -> LineParser:
    """A parser for the format `fmt` of the file `path` (None: none was told; `empty`: it is)."""
    if fmt is None and empty:
        raise IngestError(f"{path} is empty: nothing to ingest (an agent writes its first line soon)")
    if fmt is None:
        raise IngestError(f"{path}: not a JSONL file of any known agent format")
    try:
        return make_parser(fmt)
    except UnknownFormatError as exc:
        raise IngestError(str(exc)) from None


def parsed_chunks(
    path: Path, parser: LineParser, span: tuple[int, int] | None = None
) -> Iterator[list[Event]]:
    """The events of each `CHUNK_LINES` lines (or `CHUNK_BYTES`) of the file as it was when opened
    (or of its bytes `span`), then those the parser held to the end."""
    try:
        with open_regular(path) as stream:
            end = os.fstat(stream.fileno()).st_size  # a file that keeps growing is read to here
            if span is not None:
                stream.seek(span[0])
                end = min(end, span[1])
            yield from chunked_events(iter_lines(stream, stop=end), parser)
    except OSError as exc:
        raise IngestError(f"{path}: {exc.strerror or exc}") from None


def _read_past(path: Path, parser: LineParser, end: int) -> None:
    """Feed `parser` the lines of `path` before byte `end`, their events dropped, and count only the
    events of the lines after (the turns a usage record says it held)."""
    try:
        with open_regular(path) as stream:
            for line in iter_lines(stream, stop=end):
                parser.feed(line)
    except OSError as exc:
        raise IngestError(f"{path}: {exc.strerror or exc}") from None
    parser.report.events.clear()


def chunked_events(lines: Iterable[bytes], parser: LineParser) -> Iterator[list[Event]]:
    """The events `parser` makes of each `CHUNK_LINES` of `lines` (or `CHUNK_BYTES`), then those it
    held to the end (with the last lines')."""
    chunk: list[Event] = []
    count = size = 0
    for line in lines:
        chunk.extend(parser.feed(line))
        count += 1
        size += len(line)
        if count >= CHUNK_LINES or size >= CHUNK_BYTES:
            yield chunk
            chunk, count, size = [], 0, 0
    chunk.extend(parser.finish())
    yield chunk


def overlap_prefix_len(existing: Sequence[Event], appended: Sequence[Event]) -> int:
    """How many leading events of `appended` the session already ends with (spec §4.5, amended).

    The largest k such that the last k of `existing` equal the first k of `appended`. When there is
    none, leading `Init`s are skipped and the rest is compared the same way: an `Init` is dropped
    only in front of events the session already holds (the same run, announced again), never in
    front of a new run, whose `Init` is news even when it equals an earlier run's. Both sides must
    be compacted already.
    """
    whole = _overlap(existing, appended)
    if whole or not existing:
        return whole
    skipped = _leading_inits(appended)
    rest = _overlap(existing, appended[skipped:]) if skipped else 0
    return skipped + rest if rest else 0


def _overlap(existing: Sequence[Event], appended: Sequence[Event]) -> int:
    """The largest k such that the last k of `existing` equal the first k of `appended`."""
    limit = min(len(existing), len(appended))
    if not limit:
        return 0
    first = appended[0]
    for k in range(limit, 0, -1):
        if existing[-k] == first and list(existing[len(existing) - k :]) == list(appended[:k]):
            return k
    return 0


def ingest_file(
    store: Store,
    session_id: int,
    path: Path,
    fmt: str | None = None,
    *,
    on_stored: Callable[[list[StoredEvent]], None] | None = None,
    parser: LineParser | None = None,
    span: tuple[int, int] | None = None,
    grows: bool = False,
    pacer: Pacer | None = None,
    warm: int = 0,
) -> IngestReport:
    """Parse `path` (its bytes `span` only, when given; with `parser`, when given), drop what the
    session already holds, append the rest, record usage.

    With `warm`, the bytes before it are in the session already, in another form (a run stored its
    stream, a follow stored them): the parser reads them first and their events are dropped, so
    what it keeps of them (a turn's start, the cost so far) is right for the lines after, which are
    parsed from there on; the usage recorded is the whole file's (its messages counted by that run
    are counted there, and left out here).

    The appends are committed in chunks of at most ~200 ms (:mod:`azsd.store.chunks`), so another
    program's writes get the store between them; inside a transaction of the caller's, all of it is
    that one transaction. Once every event is stored, the session's badge ends as one append of every
    event would leave it (the last `Complete` decides, else new turn content means running), and the
    usage is recorded. Run again after an interruption, it stores only what is missing: the events
    already stored are the session's last ones, which the overlap with the file's first ones drops.

    With `on_stored`, each chunk's stored events go to it as soon as they are committed and the
    report keeps only counts (its `events` stays empty: memory does not grow with the file);
    without, the report holds every stored event. `pacer` paces the chunks (the default policy
    unless given).

    A store error after some chunks were committed (the disk filled) says how many events are stored
    and that running it again stores the rest.
    """
    path = Path(path)
    parser = parser or _parser_for(path, fmt)
    parser.report.counted_elsewhere = counted_elsewhere(store, session_id, str(path.resolve()))
    if warm:
        _read_past(path, parser, warm)
        span = (warm, span[1] if span else sys.maxsize)
    chunks = parsed_chunks(path, parser, span)
    report = ingest_chunks(
        store, session_id, chunks, parser.report, str(path.resolve()), at=_mtime(path), on_stored=on_stored,
        grows=grows, pacer=pacer,
    )  # fmt: skip
    return IngestReport(path, report.parse, report.parsed, report.appended, report.duplicates, report.events)


def ingest_chunks(
    store: Store,
    session_id: int,
    chunks: Iterable[list[Event]],
    parse: ParseReport,
    source: str,
    *,
    at: float | None = None,
    on_stored: Callable[[list[StoredEvent]], None] | None = None,
    grows: bool = False,
    pacer: Pacer | None = None,
) -> IngestReport:
    """Store the events of `chunks` (parsed from `source`, as `parse` tells) as :func:`ingest_file`
    does: what the session already ends with is dropped, and the usage recorded under `source`
    (dated `at` when its lines carry no time). For agents whose histories are not files of lines.

    With `grows`, `chunks` is the whole source again and must begin with every event the session
    holds (it only grew): when it does not (the source was rewritten, an OpenCode session reverted),
    `IngestError` says so and nothing is stored."""
    parsed = appended = 0
    last_complete: Complete | None = None
    running = False
    kept: list[StoredEvent] = []
    existing = store.load_events(session_id).plain()
    pending: list[Event] = []  # held until the overlap with `existing` can be decided
    committed = [0]  # events in chunks committed so far
    parsing = iter(chunks)
    try:
        with ChunkedWrite(store, pacer=pacer) as writes:

            def append(events: Sequence[Event]) -> None:
                nonlocal last_complete, running, appended
                for start in range(0, len(events), STEP_EVENTS):
                    part = events[start : start + STEP_EVENTS]
                    complete, content = completion_of(part)
                    with writes.step():
                        stored = store.append_prepared(session_id, part, completion=False).events
                    last_complete, running = complete or last_complete, running or content
                    appended += len(stored)
                    writes.after_commit(partial(_add, committed, len(stored)))
                    if on_stored is None:
                        kept.extend(stored)
                    else:
                        writes.after_commit(partial(on_stored, stored))

            for chunk in parsing:
                prepared = prepare_for_store(chunk)
                parsed += len(prepared)
                if existing:
                    pending += prepared
                    if not _overlap_decidable(existing, pending):
                        continue
                    prepared = pending[_cut(existing, pending, source if grows else None) :]
                    existing, pending = [], []
                append(prepared)
            if pending:  # the whole input is about as long as what the session ends with
                append(pending[_cut(existing, pending, source if grows else None) :])
            with writes.step():
                store.set_completion(session_id, last_complete, running)
                record = usage_record(parse, source)
                if record is not None:  # a run whose lines carry no time is dated `at`
                    store.record_usage(
                        session_id, record.source, record.parts, replaces=record.replaces, at=at,
                        turns=record.turns, keys=record.keys,
                    )  # fmt: skip
    except StoreError as exc:
        if not committed[0]:
            raise
        raise _partly_stored(exc, committed[0], parsed + _count_rest(parsing), Path(source)) from None
    log.info("ingested %s into S%d: %d new of %d", source, session_id, appended, parsed)
    return IngestReport(Path(source), parse, parsed, appended, parsed - appended, kept)


def _cut(existing: Sequence[Event], pending: Sequence[Event], grown: str | None) -> int:
    """How many of `pending` the session holds already; with `grown` (the source's name), all of
    `existing` must be among them."""
    k = overlap_prefix_len(existing, pending)
    if grown is not None and k < len(existing):
        raise IngestError(
            f"{grown}: it no longer begins with what was imported from it (was it rewritten or taken "
            "back?): nothing was stored; delete its session and import again to take it as it is now"
        )
    return k


def _add(counter: list[int], n: int) -> None:
    counter[0] += n


def _count_rest(parsing: Iterator[list[Event]]) -> int:
    """The events of the chunks not parsed yet (to say how many a failed ingest did not store)."""
    try:
        return sum(len(prepare_for_store(chunk)) for chunk in parsing)
    except IngestError:
        return 0


def _partly_stored(exc: StoreError, stored: int, total: int, path: Path) -> StoreError:
    """`exc`, said of an ingest that had committed `stored` of the file's `total` events."""
    if isinstance(exc, StoreFullError):
        return StoreFullError(
            f"stored {stored:,} of {total:,} events of {path.name} before the disk filled; "
            "make room and run it again to store the rest"
        )
    return StoreError(
        f"stored {stored:,} of {total:,} events of {path.name} before the store failed ({exc}); "
        "run it again to store the rest"
    )


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


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
