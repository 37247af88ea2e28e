"""The full record kept up to date, and read back as events (:mod:`azsd.store.full_record`).

:func:`keep_full_some` is the writer's upkeep between requests: it reads the bytes each import
record says a session holds of its source (a Claude or Codex history, an Aider run) that the full
record lacks, a few MiB at a time, and hands them to the store. It runs after the events are
stored, so it never slows an import or a follow, and it also keeps what was imported before the full
record existed, as long as the agent has not deleted it yet. A source now shorter than what was
imported (rewritten) or gone is dropped from the full record, never read again.

:func:`full_events` parses a session's full record again, source by source, with the parsers the
import uses but without compacting: every tool call's whole input (a Write's content, an Edit's
old and new text), every result as the tool gave it, thinking. Injected context is stripped from the
prompts as in the compact events.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Final

import msgspec

from azsd.context import strip_injected_context_indexed
from azsd.errors import IngestError
from azsd.events import Event, Filtered, MayBeCompacting, ToolCall
from azsd.files import open_regular
from azsd.ingest.full_opencode import keep_opencode_some, opencode_events
from azsd.ingest.parsers import DETECT_LINES, detect_format, iter_lines, make_parser
from azsd.ingest.parsers.base import LineParser
from azsd.ingest.sources import aider_source
from azsd.store import Store
from azsd.store.full_record import DROPPED_GONE, FullGap

__all__ = ["UNMATCHED", "FullEvents", "full_events", "keep_full_some", "parser_for", "read_gap"]

#: The most of one session's full record parsed at once (a page, an export): the rest is left out
#: and counted, as unreadable chunks are, so that no session's size decides the daemon's memory.
MOST_BYTES: Final = 256 << 20
#: Source bytes read in one call of :func:`keep_full_some` (the writer's upkeep stays short).
STEP_BYTES: Final = 4 << 20
#: The format a source is parsed as when its first lines do not tell.
_AGENT_FORMAT: Final = {"claude": "claude-session", "codex": "codex-rollout", "aider": "aider"}


def keep_full_some(store: Store) -> bool:
    """Keep up to :data:`STEP_BYTES` of what the full record lacks (then the OpenCode sessions that
    went on: :mod:`~azsd.ingest.full_opencode`); whether more remains."""
    version = store.full_version()
    if version is not None and version == store.full_idle_at:
        return False  # nothing was committed since it was complete: nothing can be missing
    more = _keep_files_some(store) or keep_opencode_some(store)
    store.full_idle_at = None if more else store.full_version()
    return more


def _keep_files_some(store: Store) -> bool:
    budget = STEP_BYTES
    for gap in store.full_gaps():
        try:
            data = read_gap(gap, budget)
        except IngestError:
            data = None
        if data is None:
            store.drop_full_source(gap, DROPPED_GONE)
            continue
        store.keep_full(gap, data)
        if len(data) < gap.size - gap.covered:
            return True  # the budget ran out within the gap (cut at a line): the rest next step
        budget -= len(data)
        if budget <= 0:
            return True
    return False


def read_gap(gap: FullGap, most: int = STEP_BYTES) -> bytes | None:
    """The bytes of `gap` (at most `most`, cut after a whole line when it is cut), or None when the
    source is gone or no longer holds them (rewritten shorter, an Aider run no longer there)."""
    path, offset = Path(gap.source), 0
    if gap.agent == "aider":
        source = aider_source(gap.source)
        path, offset = source.path, source.span[0] if source.span is not None else 0
    want = gap.size - gap.covered
    try:
        with open_regular(path, nofollow=True) as stream:
            if os.fstat(stream.fileno()).st_size < offset + gap.size:
                return None
            stream.seek(offset + gap.covered)
            data = stream.read(min(want, most))
    except OSError:
        return None
    if len(data) < min(want, most):
        return None
    if len(data) < want and (end := data.rfind(b"\n")) >= 0:
        data = data[: end + 1]
    return data


@dataclass
class FullEvents:
    """A session's full record as events: `events` in the order written; `lanes` beside them, the
    sub-agent each belongs to ("" the session's own; else the `tool_use_id` of the Task call that
    started it, or :data:`UNMATCHED`); `sources` the files they came from; `unreadable` chunks that
    could not be read (left out)."""

    events: list[Event] = field(default_factory=list)
    lanes: list[str] = field(default_factory=list)
    #: When each event's line was written, as the line says (ISO 8601, UTC; "" when it does not).
    times: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    unreadable: int = 0


#: The lane of a sub-agent's events when no Task call of the session gave its prompt.
UNMATCHED: Final = "?"


def full_events(store: Store, session_id: int) -> FullEvents:
    """The session's full record parsed again, uncompacted (empty when none is kept)."""
    out = FullEvents()
    order: list[str] = []
    data: dict[str, list[bytes]] = {}
    held = 0
    for chunk in store.full_chunks(session_id):
        if chunk.data is None or held + len(chunk.data) > MOST_BYTES:
            out.unreadable += 1  # (unreadable, or past what one read holds: left out and counted)
            continue
        held += len(chunk.data)
        if chunk.source not in data:
            order.append(chunk.source)
            data[chunk.source] = []
        data[chunk.source].append(chunk.data)
    lanes = _Lanes()
    for source in order:
        made = list(_parsed(b"".join(data[source]), store.full_agent(session_id, source), lanes))
        for i, event in strip_injected_context_indexed([e for e, _, _ in made]):
            out.events.append(event)
            out.lanes.append(made[i][1])
            out.times.append(made[i][2])
        out.sources.append(source)
    return out


class _Lanes:
    """Which sub-agent each line of a Claude history belongs to: a line marked `isSidechain` is a
    sub-agent's (Claude Code 1.0 wrote them into the session's own file, later ones into files of
    their own), in the lane of the line it answers (`parentUuid`); the first line of a lane is the
    prompt a Task call gave, which names the call."""

    def __init__(self) -> None:
        self.tasks: dict[str, str] = {}  # a Task call's prompt -> its tool_use_id
        self.of_uuid: dict[str, str] = {}

    def saw(self, events: list[Event], lane: str) -> None:
        for event in events:
            if isinstance(event, ToolCall) and event.tool_name in ("Task", "Agent") and not lane:
                prompt = event.input.get("prompt") if isinstance(event.input, dict) else None
                if isinstance(prompt, str):
                    self.tasks.setdefault(prompt.strip(), event.tool_use_id)

    def lane(self, line: bytes) -> str:
        if b'"isSidechain":true' not in line and b'"isSidechain": true' not in line:
            return ""
        try:
            obj = msgspec.json.decode(line)
        except msgspec.DecodeError:
            return UNMATCHED
        if not isinstance(obj, dict) or obj.get("isSidechain") is not True:
            return ""
        parent, uuid = obj.get("parentUuid"), obj.get("uuid")
        lane = self.of_uuid.get(parent) if isinstance(parent, str) else None
        if lane is None:
            message = obj.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            lane = self.tasks.get(content.strip(), UNMATCHED) if isinstance(content, str) else UNMATCHED
        if isinstance(uuid, str):
            self.of_uuid[uuid] = lane
        return lane


class _Stamped(msgspec.Struct):
    """The one field of an agent's line the full view reads besides the parser: when it was written."""

    timestamp: str | None = None


_STAMP: Final = msgspec.json.Decoder(_Stamped)


def _time_of(line: bytes) -> str:
    if b'"timestamp"' not in line:
        return ""
    try:
        stamp = _STAMP.decode(line).timestamp
    except (msgspec.DecodeError, msgspec.ValidationError):
        return ""
    return stamp[:40] if isinstance(stamp, str) else ""


def _parsed(raw: bytes, agent: str, lanes: _Lanes) -> Iterator[tuple[Event, str, str]]:
    if agent == "opencode":
        yield from ((event, "", at) for event, at in opencode_events(raw))
        return
    parser = parser_for(raw, agent)
    lane = at = ""
    for line in iter_lines(io.BytesIO(raw), stop=len(raw)):
        lane = lanes.lane(line) if agent == "claude" else ""
        at = _time_of(line) or at
        events = _kept(parser.feed(line))
        lanes.saw(events, lane)
        yield from ((e, lane, at) for e in events)
    yield from ((e, lane, at) for e in _kept(parser.finish()))


def parser_for(raw: bytes, agent: str) -> LineParser:
    """A fresh parser for the lines `raw` of a file of `agent` (``claude``, ``codex``, ``aider``):
    of the format its first lines show, else of the agent's history format."""
    if agent == "aider":
        return make_parser("aider")
    fmt = detect_format(islice(iter_lines(io.BytesIO(raw), stop=len(raw)), DETECT_LINES))
    return make_parser(fmt or _AGENT_FORMAT.get(agent, "claude-session"))


def _kept(events: list[Event]) -> list[Event]:
    return [e for e in events if not isinstance(e, Filtered | MayBeCompacting)]
