"""One-shot ingest of a finished agent JSONL file into a session (`ingest_file`).

The file is parsed with the same incremental parsers the live follower uses, compacted once, cut
against what the session already holds (compacted events compared with stored rows, never
compacting anything twice: spec §4.5), appended in one transaction, and the run's token usage is
recorded (replacing any earlier record of the same run, so a re-ingest changes nothing).

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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from azsd.compact import prepare_for_store
from azsd.errors import AzsdError
from azsd.events import Event, Init
from azsd.model import StoredEvent
from azsd.parsers import UnknownFormatError, detect_format, iter_lines, make_parser
from azsd.parsers.base import ParseReport
from azsd.store import Store

__all__ = ["IngestError", "IngestReport", "ingest_file", "overlap_prefix_len", "parse_file"]

log = logging.getLogger("azsd.ingest")


class IngestError(AzsdError):
    """A file could not be ingested (unreadable, or of no known format)."""


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
    try:
        with open(path, "rb") as stream:
            if fmt is None:
                fmt = detect_format(iter_lines(stream))
                if fmt is None:
                    raise IngestError(f"{path}: not a JSONL file of any known agent format")
                stream.seek(0)
            parser = make_parser(fmt)
            events = parser.feed_all(iter_lines(stream))
    except UnknownFormatError as exc:
        raise IngestError(str(exc)) from None
    except OSError as exc:
        raise IngestError(f"{path}: {exc.strerror or exc}") from None
    return events, parser.report


def overlap_prefix_len(existing: Sequence[Event], appended: Sequence[Event]) -> int:
    """How many leading events of `appended` the session already ends with (spec §4.5).

    Leading `Init`s are skipped when the session is not empty; then the largest k such that the
    last k of `existing` equal the first k of the rest. Both sides must be compacted already.
    """
    skipped = 0
    if existing:
        while skipped < len(appended) and isinstance(appended[skipped], Init):
            skipped += 1
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
    """Parse `path`, drop what the session already holds, append the rest, record usage."""
    path = Path(path)
    events, report = parse_file(path, fmt)
    prepared = prepare_for_store(events)
    with store.atomic():
        existing = store.load_events(session_id).plain()
        cut = overlap_prefix_len(existing, prepared)
        result = store.append_prepared(session_id, prepared[cut:])
        if not report.usage.is_zero or report.cost_usd is not None:
            source = report.agent_session_id or str(path.resolve())
            store.record_usage(session_id, source, report.usage, report.cost_usd)
    log.info("ingested %s into S%d: %d new of %d", path, session_id, result.inserted, len(prepared))
    return IngestReport(
        path, report, len(prepared), result.inserted, len(prepared) - result.inserted, result.events
    )
