"""The events of an Aider run or an OpenCode session, a chunk at a time, with the parse that tells
their usage: what an import stores, one source at a time (:mod:`azsd.ingest.importer`) or many new
ones at once (:mod:`azsd.ingest.import_batch`).

What many sources of one import share is found once (:class:`SourceReaders`): OpenCode's stores
(opening an `opencode.db` costs milliseconds, its schema read and its WAL index mapped, more than
reading a session of it does).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from azsd.errors import IngestError
from azsd.events import Event
from azsd.files import open_regular
from azsd.ingest.file import parsed_chunks
from azsd.ingest.opencode import OpenCodeSource, open_source, parse_session, split_key
from azsd.ingest.parsers.aider import AiderParser
from azsd.ingest.parsers.base import ParseReport
from azsd.ingest.sources import AIDER_INPUT, Source, input_history

__all__ = ["SourceEvents", "SourceReaders", "source_events"]


class SourceReaders:
    """OpenCode's stores, each opened (read-only) the first time a source of it is read, closed at
    the end."""

    def __init__(self) -> None:
        self._open: dict[Path, OpenCodeSource] = {}

    def get(self, location: Path) -> OpenCodeSource:
        found = self._open.get(location)
        if found is None:
            found = self._open[location] = open_source(location)
        return found

    def close(self) -> None:
        for store in self._open.values():
            store.close()
        self._open.clear()

    def __enter__(self) -> SourceReaders:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class SourceEvents:
    """A source's events, a chunk at a time (read as they are asked for), and its parse report
    (whole once they are read); `name` is what its usage is recorded under when the parse sees no
    run id, and `at` the time of a run whose lines carry none."""

    chunks: Iterable[list[Event]]
    report: ParseReport
    name: str
    at: float | None


def source_events(source: Source, stores: SourceReaders) -> SourceEvents:
    """The events of `source`, an Aider run or an OpenCode session (read through `stores`, which must
    stay open while the chunks are read)."""
    if source.agent == "opencode":
        location, session = split_key(source.key)
        parsed = parse_session(stores.get(location), session, source.key)
        return SourceEvents(parsed.chunks, parsed.parser.report, source.key, None)
    if source.agent != "aider":
        raise ValueError(f"{source.key}: a {source.agent} history is a file of its own (ingest_file)")
    path = source.path
    parser = AiderParser(closed=source.closed, prompts=input_history(path.with_name(AIDER_INPUT)))
    parser.report.agent_session_id = source.key  # one usage record per run
    try:
        at: float | None = path.stat().st_mtime
    except OSError:
        at = None
    chunks = (
        _whole_run(path, parser, source.span) if source.small else parsed_chunks(path, parser, source.span)
    )
    return SourceEvents(chunks, parser.report, source.key, at)  # one usage record per run


def _whole_run(path: Path, parser: AiderParser, span: tuple[int, int] | None) -> Iterator[list[Event]]:
    """The events of a small run (its bytes `span` of `path`) as one chunk, its lines split at once
    (the lines :func:`~azsd.ingest.file.parsed_chunks` would give, without reading a chunk at a time)."""
    try:
        with open_regular(path) as stream:
            start, end = span if span is not None else (0, os.fstat(stream.fileno()).st_size)
            stream.seek(start)
            data = stream.read(max(0, end - start))
    except OSError as exc:
        raise IngestError(f"{path}: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    if not lines[-1]:  # the newline that ends the last line
        lines.pop()
    yield parser.feed_all(lines)
