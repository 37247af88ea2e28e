"""Values the store returns: sessions, stored events, load and append results."""

from __future__ import annotations

from typing import Literal

import msgspec

from azsd.events import Event

__all__ = ["AppendResult", "Compaction", "LoadResult", "SessionInfo", "SessionState", "StoredEvent"]

SessionState = Literal["new", "running", "succeeded", "failed"]


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One row of `list_sessions` (spec §7), plus the display name and badge state."""

    id: int
    name: str
    worktree: str
    created: str
    event_count: int
    message_count: int
    completed: bool | None
    duration_ms: int | None
    cost_usd: float | None

    @property
    def display_name(self) -> str:
        """`name`, or `S{id}` when it is empty."""
        return self.name or f"S{self.id}"

    @property
    def state(self) -> SessionState:
        """The badge: no events yet, a turn running, or the last turn's outcome."""
        if self.completed is None:
            return "running" if self.event_count else "new"
        return "succeeded" if self.completed else "failed"


class StoredEvent(msgspec.Struct, frozen=True):
    """An event as stored, with its position in the session."""

    seq: int
    event: Event


class LoadResult(msgspec.Struct, frozen=True):
    """Loaded events (context stripped) and how many rows could not be read."""

    events: list[StoredEvent]
    skipped: int = 0

    def plain(self) -> list[Event]:
        """Just the events, in order."""
        return [s.event for s in self.events]


class AppendResult(msgspec.Struct, frozen=True):
    """What one `append_events` stored: the compacted events with the seqs they were given."""

    session_id: int
    events: list[StoredEvent]

    @property
    def inserted(self) -> int:
        return len(self.events)


class Compaction(msgspec.Struct, frozen=True):
    """A compaction summary covering seqs up to and including `after_seq`."""

    after_seq: int
    summary: str
