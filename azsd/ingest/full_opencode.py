"""The full record of OpenCode sessions: their rows as OpenCode wrote them, a message a line.

An OpenCode session is not a file but rows of OpenCode's database (messages, and the parts of
each). Its full record is each finished message as one JSON line, ``{"info": …, "parts": […]}``,
the records as OpenCode stored them, in order; a message is finished once OpenCode completed it,
and does not change after. When a session's events went on (its latest seq is past the one its
full record was last brought up to date at), the writer's upkeep reads the session again and keeps
the lines it lacks (:func:`keep_opencode_some`). Read back, each line is fed to the OpenCode parser
as the import feeds the rows (:func:`opencode_events`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import msgspec

from azsd.errors import IngestError
from azsd.events import Event
from azsd.ingest.opencode import feed, finished_messages, open_source, split_key
from azsd.ingest.parsers.opencode import OpenCodeParser
from azsd.store import Store

__all__ = ["keep_opencode_some", "opencode_events", "opencode_lines"]


class _Line(msgspec.Struct):
    info: dict[str, Any] | None = None
    parts: list[dict[str, Any]] = msgspec.field(default_factory=list)


_DECODE = msgspec.json.Decoder(_Line)


def opencode_lines(key: str) -> bytes:
    """The session `key` names (``<opencode.db or storage dir>#<id>``): each finished message a line."""
    location, session = split_key(key)
    with open_source(location) as source:
        messages = finished_messages(source, session)
    return b"".join(
        msgspec.json.encode({"info": info, "parts": parts}) + b"\n"
        for info, parts, _ in messages
        if info is not None
    )


def keep_opencode_some(store: Store) -> bool:
    """Bring the full record of the OpenCode sessions that went on up to date (a few at a time);
    whether more remain."""
    behind = store.opencode_behind()
    for gap in behind:
        try:
            data = opencode_lines(gap.source)
        except (IngestError, OSError):
            continue  # (gone, or not readable now: tried again when the session goes on)
        if len(data) > gap.covered:
            store.keep_full(gap, data[gap.covered :])
            gap = type(gap)(gap.session_id, gap.source, gap.agent, len(data), gap.size)
        store.full_seen(gap)
    return len(behind) == 16


def opencode_events(raw: bytes) -> Iterator[tuple[Event, str]]:
    """The events of an OpenCode session's full record, as the import makes them of its rows, each
    with when its message was made (ISO 8601, UTC; "" when the row does not say)."""
    parser = OpenCodeParser()
    at = ""
    for line in raw.splitlines():
        try:
            row = _DECODE.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError):
            parser.skip("invalid_json")
            continue
        at = _created(row.info) or at
        yield from ((event, at) for event in feed(parser, (row.info, row.parts, 0)))
    yield from ((event, at) for event in parser.finish())


def _created(info: dict[str, Any] | None) -> str:
    time = info.get("time") if isinstance(info, dict) else None
    ms = time.get("created") if isinstance(time, dict) else None
    if not isinstance(ms, int | float) or isinstance(ms, bool) or not 0 < ms < 1e14:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")
