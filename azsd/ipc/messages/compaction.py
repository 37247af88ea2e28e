"""Compaction: planning and storing the summary of a session's older turns, where to compact, and
the context meter (how full the next turn's context is)."""

from __future__ import annotations

import msgspec

from azsd.ipc.messages.base import _KeyedReq, _StoreReq, _Versioned

__all__ = [
    "BoundaryReply",
    "CompactWithOutput",
    "CompactionBoundary",
    "CompactionPlanReply",
    "CompactionReply",
    "ContextMeter",
    "MeterReply",
    "PlanCompaction",
    "StoreCompaction",
]


class StoreCompaction(_KeyedReq, frozen=True):
    """Store `summary` as the compaction of seqs 1..`after_seq` (a seq of the session). With the
    `identity` a `CompactionPlanReply` gave, it is refused (`not_found`) if the session is no longer
    the one planned for (deleted, and its number reused). (`identity` is sent only when set, so that a
    daemon from before it takes the request as before.)"""

    session: int
    after_seq: int
    summary: str
    identity: str | msgspec.UnsetType = msgspec.UNSET


class CompactWithOutput(_KeyedReq, frozen=True):
    """Store a compaction whose summary is the assistant text of `path`, the JSONL a compaction
    agent wrote in `format` (spec §6: concatenated, trimmed). Nothing is stored when it holds none.
    The compaction's token usage is recorded in the session (it is what the session cost). With
    `agent_home` (where that agent keeps its own histories: Claude's config dir, Codex's home), the
    agent's own history of the compaction run is recorded as the session's, so that an import of
    the agent's histories never makes a session of it."""

    session: int
    after_seq: int
    path: str
    format: str
    identity: str | msgspec.UnsetType = msgspec.UNSET
    agent_home: str | msgspec.UnsetType = msgspec.UNSET


class CompactionBoundary(_StoreReq, frozen=True):
    """Where to compact so the newest `keep` prompts stay raw (`from_seq` defaults to after the latest)."""

    session: int
    keep: int = 3
    from_seq: int | None = None


class ContextMeter(_StoreReq, frozen=True):
    """How full the session's context is: characters since the latest compaction, against
    `threshold` (the caller's `compaction-threshold`; the spec's 400 000 when None)."""

    session: int
    threshold: int | None = None


class PlanCompaction(_StoreReq, frozen=True):
    """What a compaction of the session would summarise, and the prompt that asks an agent for the
    summary (spec §6). The newest `keep` prompts stay raw; None tries 3, then 2, then 1."""

    session: int
    keep: int | None = None


class BoundaryReply(_Versioned, frozen=True):
    after_seq: int | None


class CompactionPlanReply(_Versioned, frozen=True):
    """`after_seq` None: fewer than two prompts since the latest compaction, nothing to compact.
    Otherwise seqs `from_seq`..`after_seq` (`events` events, `chars` stored characters) are summarised
    by the agent given `prompt`, and `StoreCompaction(after_seq, summary)` stores the result."""

    after_seq: int | None
    from_seq: int = 1
    prompt: str = ""
    events: int = 0
    chars: int = 0
    #: The newest prompts left raw after the boundary.
    kept_prompts: int = 0
    #: The session's identity (its number alone may be reused): give it to `CompactWithOutput` or
    #: `StoreCompaction`, which then refuse to store into another session of the same number.
    identity: str = ""


class CompactionReply(_Versioned, frozen=True):
    """`stored` False: the agent's output held no assistant text (AZUREAL asks once more)."""

    stored: bool
    summary_chars: int = 0


class MeterReply(_Versioned, frozen=True):
    chars: int
    threshold: int
    percent: float
