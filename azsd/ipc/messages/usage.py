"""Token usage and cost: the `Usage` request, its reply, and the usage views other messages hold
(`UsageView` is a session's, a remote session's and a report's total)."""

from __future__ import annotations

import msgspec

from azsd.ipc.messages.base import _Data, _StoreReq, _Versioned

__all__ = ["SessionUsageView", "Usage", "UsagePeriodView", "UsageReply", "UsageView", "WorktreeUsageView"]


class UsageView(_Data, frozen=True):
    """Token usage summed over a session's turns, and its cost."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    cost_usd: float = 0.0
    #: "estimated" when any turn's cost was priced by azsd from its tokens (the agent reported none);
    #: "unpriced" when no token of it has a price (`cost_usd` is then 0 and means "unknown").
    cost_source: str = "reported"
    #: Tokens of models without a price: when not 0, `cost_usd` leaves them out (the total is incomplete).
    unpriced_tokens: int = 0


class SessionUsageView(_Data, frozen=True):
    """One session's usage, summed over its `turns` (prompts answered); `removed`: a session azsd
    removed, whose usage the ledger keeps."""

    session: int
    name: str
    worktree: str
    turns: int
    usage: UsageView
    removed: bool = False


class UsagePeriodView(_Data, frozen=True):
    """The usage of one period of a `Usage` request's `by` (and of one model, with `by_model`).

    `period` names it (``2025-10-02``, ``2025-W40``, ``2025-10``, ``S12``, or a block's local start
    ``2025-10-02 14:00``); `start` and `end` are its bounds in local ISO 8601 (a session's: its first
    and last turn; a block's end is its start + 5 h). `models` are the models it used ("" for turns
    of a run that named none), `model` the one of this row with `by_model`. `total_tokens` is input,
    output, cache read and cache write together.
    """

    period: str
    start: str
    end: str
    usage: UsageView
    total_tokens: int = 0
    models: list[str] = msgspec.field(default_factory=list)
    model: str | None = None
    session: int | None = None
    name: str = ""
    turns: int = 0
    #: A block (`by="block"`) still going: its last turn less than 5 hours ago, its end not yet come.
    active: bool = False
    #: A block's agent: ``claude`` (Claude's billing blocks), or another agent's beside them.
    agent: str = ""
    #: A block's rate from its first turn to its last: all tokens per minute, and USD per hour.
    tokens_per_minute: float = 0.0
    usd_per_hour: float = 0.0
    #: An active block's tokens and cost at its end if the rate holds, and the minutes left (a
    #: finished block's: its own totals, and 0).
    projected_tokens: int = 0
    projected_usd: float = 0.0
    remaining_minutes: float = 0.0


class WorktreeUsageView(_Data, frozen=True):
    """The usage of every session labelled with one worktree (branch)."""

    worktree: str
    sessions: int
    usage: UsageView


class Usage(_StoreReq, frozen=True):
    """Token usage and cost per session and per worktree (`session` or `worktrees` narrow it).

    `by` also groups it by period, into the reply's `periods`: ``day``, ``week`` (ISO, from Monday)
    or ``month`` of local time, ``session``, or ``block`` (Claude's 5-hour billing blocks: a block
    starts at its first turn's time floored to the hour and lasts 5 hours; a gap of more than 5
    hours starts a new one). `by_model` splits each period by model. `since` and `until` (local
    dates, ``YYYY-MM-DD`` or ``YYYYMMDD``, both inclusive) keep only the usage of those days, in every
    part of the reply. Local time is that of `timezone` (an IANA name such as ``Europe/Paris``),
    else the daemon's. The usage of sessions azsd removed stays in every report not narrowed to one
    `session` (the ledger), unless `exclude_removed`. `with_sessions` false leaves the reply's
    `sessions` and `worktrees` empty (a report by period that does not need them).
    """

    session: int | None = None
    worktrees: list[str] | None = None
    by: str | None = None
    by_model: bool = False
    since: str | None = None
    until: str | None = None
    timezone: str | None = None
    exclude_removed: bool = False
    with_sessions: bool = True
    #: With `by="block"`: only the block still going (its last turn less than 5 hours ago, and its 5
    #: hours not over), with its burn rate and projection.
    active: bool = False
    #: Agent files (absolute paths) read in place and counted with this store's usage, but those this
    #: store imported as they are now (a model response any store counted is left out): `azs usage
    #: --all`'s projects never imported, and a project's files its store does not hold whole yet.
    read_in_place: list[str] = msgspec.field(default_factory=list)


class UsageReply(_Versioned, frozen=True):
    sessions: list[SessionUsageView]
    worktrees: list[WorktreeUsageView]
    total: UsageView
    #: The request's `by` ("" without one) and its periods, oldest first.
    by: str = ""
    periods: list[UsagePeriodView] = msgspec.field(default_factory=list)
    #: With `by="block"`: the most tokens any finished block held (`azs usage --token-limit max`).
    max_block_tokens: int = 0
