"""The rows a new session's events become, made away from the store: :class:`SessionRows`.

Storing an event means encoding it, compressing its payload, measuring it, taking its search text
and rendering its context block; for an import of many files that is most of the writer's work, and
none of it needs the store. :func:`session_rows` does it where the events are parsed (an import's
worker process, :mod:`azsd.ingest.prepare`), and :meth:`azsd.store.bulk.BulkSessions.create_filled`
only inserts what it made. The rows are the ones an append of the same events in the same parts
writes (:meth:`azsd.store.events.EventLog.append_prepared`): the same payloads, and the context
blocks grouped as those appends would group them (each part joins the session's last group while
that one is under :data:`~azsd.store.rendered.GROUP_BYTES`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import msgspec

from azsd.compact import char_len
from azsd.context import render_event, strip_flag
from azsd.events import Event, encode_event, event_kind
from azsd.search import search_text
from azsd.store.codec import RowCodec
from azsd.store.events import completion_of
from azsd.store.rendered import GROUP_BYTES, Entry, GroupRow, group_of

__all__ = ["GroupRow", "SessionRows", "session_rows"]

_LAYOUT = msgspec.msgpack.Encoder()


@dataclass
class SessionRows:
    """A new session's rows, but for its id (and the events' ids, which the insert gives)."""

    #: Each event's (kind, compressed payload, char_len), seqs from 1.
    events: list[tuple[str, bytes, int]] = field(default_factory=list)
    #: The search text of the events that have one: (index in `events`, text).
    texts: list[tuple[int, str]] = field(default_factory=list)
    #: The rendered context blocks, grouped.
    groups: list[GroupRow] = field(default_factory=list)
    #: The badge: the last `Complete` as (success, duration_ms, cost_usd); None: none (running
    #: when there is turn content, as the row's NULLs say).
    done: tuple[int, int | None, float | None] | None = None


def session_rows(parts: Iterable[Sequence[Event]], codec: RowCodec) -> SessionRows:
    """The rows of a new session holding `parts` (events through
    :func:`~azsd.compact.prepare_for_store`), one after the other, as appending each part in turn
    would write them."""
    out = SessionRows()
    groups: list[tuple[int, int, int, list[int], bytes]] = []  # (first, last, injected, layout, text)
    last_complete = None
    for part in parts:
        if not part:
            continue
        start = len(out.events)
        jsons = [encode_event(event) for event in part]
        out.events += zip(map(event_kind, part), codec.encode_many(jsons), map(char_len, part), strict=True)
        texts = ((start + i, search_text(event)) for i, event in enumerate(part))
        out.texts += ((i, text) for i, text in texts if text is not None)
        entries: list[Entry] = [(start + i + 1, strip_flag(e), render_event(e)) for i, e in enumerate(part)]
        layout, text, injected = group_of(entries)
        if groups and groups[-1][1] < entries[0][0] and len(groups[-1][4]) + len(text) < GROUP_BYTES:
            first, _, before_injected, before_layout, before = groups[-1]
            joined = before + b"\n" + text if before and text else before or text
            groups[-1] = (first, entries[-1][0], before_injected + injected, before_layout + layout, joined)
        else:
            groups.append((entries[0][0], entries[-1][0], injected, layout, text))
        last_complete = completion_of(part)[0] or last_complete
    out.groups = [
        (first, last, injected, _LAYOUT.encode(layout), codec.encode(text), len(text))
        for first, last, injected, layout, text in groups
    ]
    if last_complete is not None:
        done = last_complete
        out.done = (1 if done.success else 0, done.duration_ms, done.cost_usd)
    return out
