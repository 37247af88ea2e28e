"""Values the store returns: sessions, stored events, load and append results."""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from azsd.events import Event

__all__ = [
    "SLOT_SECONDS",
    "AppendResult",
    "Archived",
    "BackupInfo",
    "Compaction",
    "Cost",
    "CostSource",
    "FollowRecord",
    "ImportRecord",
    "LoadResult",
    "SearchResult",
    "SessionInfo",
    "SessionState",
    "SessionUsage",
    "StoredEvent",
    "Usage",
    "UsagePart",
    "UsageRow",
]

#: The length of a usage slot (`azsd_usage.slot`): a quarter hour, the finest step of any UTC offset,
#: so that a local day, an hour or a 5-hour block starts on a slot boundary in every time zone.
SLOT_SECONDS: Final = 900

SessionState = Literal["new", "running", "succeeded", "failed", "ended"]

#: Where a cost comes from: the agent reported it, or azsd priced the turn's tokens (azsd.pricing), or
#: nobody: the model has no price (its tokens count, its cost is unknown, never $0).
CostSource = Literal["reported", "estimated", "unpriced"]

#: Which sessions a listing holds: all but the archived ones, all, or only the archived ones.
Archived = Literal["exclude", "include", "only"]


class SessionInfo(msgspec.Struct, frozen=True):
    """One row of `list_sessions` (spec §7), plus the display name and badge state. (Its fields
    may be given in order: the session index makes ten thousand of them from rows at once.)"""

    id: int
    name: str
    worktree: str
    created: str
    event_count: int
    message_count: int
    completed: bool | None
    duration_ms: int | None
    cost_usd: float | None
    archived: bool = False
    #: The session this one was forked from (None when it was not, or that session was deleted).
    parent: int | None = None
    #: The parent's last seq this session copied.
    fork_seq: int | None = None
    #: A follow is active into this session and not idle (`azs run` or `azs follow`; the store's
    #: ``azsd_follows``).
    following: bool = False

    @property
    def display_name(self) -> str:
        """`name`, or `S{id}` when it is empty."""
        return self.name or f"S{self.id}"

    @property
    def state(self) -> SessionState:
        """The badge: the last turn's outcome when it has one (AZUREAL's completion columns);
        otherwise `running` while a follow is active into the session, `ended` when it has events
        but neither (a transcript that ends without a completion marker), and `new` without events.

        >>> info = SessionInfo(id=1, name="", worktree="", created="", event_count=3, message_count=2,
        ...                    completed=None, duration_ms=None, cost_usd=None)
        >>> info.state, msgspec.structs.replace(info, following=True).state
        ('ended', 'running')
        >>> msgspec.structs.replace(info, event_count=0).state
        'new'
        >>> msgspec.structs.replace(info, completed=False, following=True).state
        'failed'
        """
        if self.completed is not None:
            return "succeeded" if self.completed else "failed"
        if self.following:
            return "running"
        return "ended" if self.event_count else "new"


class StoredEvent(msgspec.Struct, frozen=True):
    """An event as stored, with its position in the session (and, right after an append, the serde
    JSON it was stored as, so announcing it needs no second encoding)."""

    seq: int
    event: Event
    json: bytes = b""


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


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    """Normalized token usage (agent-formats §5).

    `input` is fresh (uncached) input, `cache_read` and `cache_write` the cached parts, `output`
    includes reasoning, and `reasoning` is informational (already inside `output`).
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
            reasoning=self.reasoning + other.reasoning,
        )

    def __sub__(self, other: Usage) -> Usage:
        return Usage(
            input=self.input - other.input,
            output=self.output - other.output,
            cache_read=self.cache_read - other.cache_read,
            cache_write=self.cache_write - other.cache_write,
            reasoning=self.reasoning - other.reasoning,
        )

    def floored(self) -> Usage:
        """Each count at least 0 (a difference of totals that did not all grow)."""
        return Usage(
            input=max(self.input, 0), output=max(self.output, 0), cache_read=max(self.cache_read, 0),
            cache_write=max(self.cache_write, 0), reasoning=max(self.reasoning, 0),
        )  # fmt: skip

    @property
    def is_zero(self) -> bool:
        return not (self.input or self.output or self.cache_read or self.cache_write or self.reasoning)


class Cost(msgspec.Struct, frozen=True):
    """A turn's cost in USD and where it comes from."""

    usd: float
    source: CostSource = "reported"


class UsagePart(msgspec.Struct, frozen=True, kw_only=True):
    """The part of one run's usage that one model spent within one time slot (a row of `azsd_usage`).

    `slot` is the start (Unix seconds, UTC) of the `SLOT_SECONDS` slot its turns fall in, `first` and
    `last` the times of its first and last turn; all three are None when the run's lines carry no
    time (Claude's stream-json, `codex exec --json`): the store then gives it the time it was first
    recorded. `model` is "" when the run never named one.
    """

    model: str
    usage: Usage
    cost: Cost | None = None
    slot: int | None = None
    first: float | None = None
    last: float | None = None


class UsageRow(msgspec.Struct, frozen=True, kw_only=True):
    """One stored row of `azsd_usage`: a part of a run (`source`) of a session, with its times."""

    session_id: int
    source: str
    model: str
    slot: int
    first: float
    last: float
    usage: Usage
    cost_usd: float | None
    cost_source: CostSource | None
    #: How many turns the run held, on one of its rows (0 on the others); None: a run recorded before
    #: turns were counted, which counts as one.
    turns: int | None = None


class SessionUsage(msgspec.Struct, frozen=True):
    """A session's token usage and cost, summed over its turns (side table `azsd_usage`).

    `cost_source` is "estimated" when any turn's cost was (the sum is then an estimate too), and
    "unpriced" when no token of it has a price. `unpriced_tokens` is how many tokens have none: when
    it is not 0, `cost_usd` is incomplete."""

    usage: Usage
    cost_usd: float
    turns: int
    cost_source: CostSource = "reported"
    unpriced_tokens: int = 0
    #: The time (Unix) of its latest turn with usage, from the agent lines' timestamps; 0: none known.
    last_at: float = 0.0


class FollowRecord(msgspec.Struct, kw_only=True):
    """A followed agent file as the store keeps it (side table `azsd_follows`).

    `offset` is the byte just after the last line whose events are stored; it is committed in the
    same transaction as those events.
    """

    session_id: int
    path: str
    format: str
    offset: int = 0
    inode: int = 0
    lines: int = 0
    skipped: int = 0
    active: bool = True
    writer_pid: int | None = None
    started: str = ""
    last_activity: str = ""
    ended: str | None = None
    #: The model the agent was started with, for a format that does not say (`codex exec --json`).
    model: str = ""
    #: Still active, but idle: a follow given no writer whose file nobody holds open went quiet; its
    #: session does not show running until the file grows again.
    idle: bool = False
    #: Where the follow's own usage begins: what comes before is another's (Aider runs an import
    #: brought into sessions of their own before this follow began); 0: all of it.
    usage_from: int = 0


class SearchResult(msgspec.Struct, frozen=True, kw_only=True):
    """One full-text search hit: where it is, how well it ranks (lower is better), and its snippet."""

    session_id: int
    seq: int
    kind: str
    rank: float
    snippet: str
    highlights: list[tuple[int, int]]
    json: str
    #: Other sessions holding the same event at the same seq (a fork's copies), in order.
    also_in: list[int] = msgspec.field(default_factory=list)
    #: Found in the full record (what the agent wrote), not in the compact events: `seq` is then the
    #: first event the chunk that holds it made, and `json` the compact event made of it.
    full: bool = False


class BackupInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A verified copy of a store."""

    path: str
    bytes: int
    sessions: int
    events: int
    integrity: str


class ImportRecord(msgspec.Struct, frozen=True, kw_only=True):
    """An agent history file imported into a session (side table `azsd_imports`)."""

    source: str
    session_id: int
    agent: str
    size: int
    #: The session's last seq once the import stored its events (0: not known).
    last_seq: int = 0
