"""A session's events: appending them, reading pages of them, the context-injected prompt of a next
turn, and `WireEvent`, how an event crosses the wire (its stored seq, variant name and exact serde
JSON)."""

from __future__ import annotations

from typing import Literal

import msgspec

from azsd.ipc.messages.base import _Data, _KeyedReq, _StoreReq, _Versioned

__all__ = [
    "AppendEvents",
    "AppendReply",
    "BuildContext",
    "ContextReply",
    "EventsPage",
    "GetEvents",
    "WireEvent",
]


# (gc=False: untracked by the cyclic GC, as it holds strings and numbers only and a page decodes
# hundreds of them)
class WireEvent(_Data, frozen=True, gc=False):
    """One stored event: its seq, variant name, and exact serde JSON."""

    seq: int
    kind: str
    data: str
    #: An event of a full record that a sub-agent made: the `tool_use_id` of the Task call that
    #: started it ("?" when none of the session's calls gave its prompt).
    subagent: str | msgspec.UnsetType = msgspec.UNSET
    #: An event of a full record: when the agent wrote its line (ISO 8601, as the line says).
    at: str | msgspec.UnsetType = msgspec.UNSET


class AppendEvents(_KeyedReq, frozen=True):
    """Append events, each given as its serde JSON (as stored); they are compacted on the way in."""

    session: int
    events: list[str]


class GetEvents(_StoreReq, frozen=True):
    """A page of events with seq >= `from_seq`, injected context stripped. With `full`, of the
    session's full record instead (what the agent wrote, parsed again and not compacted: a seq is
    then the event's place in it), or of the compact events when none is kept (the page says)."""

    session: int
    from_seq: int = 1
    limit: int = 500
    full: bool | msgspec.UnsetType = msgspec.UNSET


class BuildContext(_StoreReq, frozen=True):
    """The exact context-injected prompt for the next turn."""

    session: int
    prompt: str
    backend: Literal["claude", "codex"] = "claude"


class AppendReply(_Versioned, frozen=True):
    events: list[WireEvent]


class EventsPage(_Versioned, frozen=True):
    """`next_seq` is where the next page starts, or None when this page reached the end."""

    events: list[WireEvent]
    next_seq: int | None
    skipped: int = 0
    #: Asked with `full`: True when the page is of the full record, False when none is kept (the
    #: page is of the compact events then); `skipped` counts its chunks that could not be read.
    full: bool | msgspec.UnsetType = msgspec.UNSET


class ContextReply(_Versioned, frozen=True):
    prompt: str
