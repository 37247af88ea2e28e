"""Sessions: creating, listing, reading, renaming, deleting, forking, archiving them and marking a
turn completed, and `SessionView`, a session as every listing shows it."""

from __future__ import annotations

from typing import Literal

from azsd.ipc.messages.base import _Data, _KeyedReq, _StoreReq, _Versioned
from azsd.ipc.messages.usage import UsageView

__all__ = [
    "ArchiveSession",
    "CreateSession",
    "DeleteSession",
    "ForkSession",
    "GetSession",
    "ListSessions",
    "MarkCompleted",
    "RenameSession",
    "SessionReply",
    "SessionView",
    "SessionsReply",
]


class SessionView(_Data, frozen=True):
    """A session as `list_sessions` sees it, with its display name and badge state.

    `state` is one of ``new`` (no events), ``running`` (a follow is active into it: `azs run`'s
    agent or `azs follow`), ``succeeded`` / ``failed`` (its last turn's completion), or ``ended``
    (events, but no completion marker and nothing following it: a transcript that just stops).
    """

    id: int
    name: str
    display_name: str
    worktree: str
    created: str
    event_count: int
    message_count: int
    state: str
    completed: bool | None = None
    duration_ms: int | None = None
    cost_usd: float | None = None
    usage: UsageView | None = None
    archived: bool = False
    #: Where `cost_usd` comes from, when `usage` was read ("reported" or "estimated"); None: not read.
    cost_source: str | None = None
    #: The session this one was forked from, and the parent's last seq it copied (None: not a fork,
    #: or the parent was deleted).
    parent: int | None = None
    fork_seq: int | None = None
    #: Sessions forked from this one (filled by `GetSession`; empty in listings). A tuple, so that a
    #: view without forks holds no container and a listing of thousands stays clear of the GC.
    forks: tuple[int, ...] = ()
    #: The context meter: the characters stored since the latest compaction (what the next turn's
    #: context is made of), when asked for with `with_meter`; None: not read.
    context_chars: int | None = None
    #: When its latest turn happened (UTC, as `created` is written), from the timestamps of the agent's
    #: lines, when usage was read and the lines had any; None: not known (`created` is all there is).
    last_activity: str | None = None


class CreateSession(_KeyedReq, frozen=True):
    name: str | None = None
    worktree: str = ""


class ListSessions(_StoreReq, frozen=True):
    """Sessions, latest activity first. Archived ones are left out unless `archived` is `include`
    (all) or `only`; `with_usage` fills each view's `usage`."""

    worktree: str | None = None
    limit: int = 100
    offset: int = 0
    archived: Literal["exclude", "include", "only"] = "exclude"
    with_usage: bool = False
    with_meter: bool = False


class GetSession(_StoreReq, frozen=True):
    """A session's view; `with_meter` fills its `context_chars`."""

    session: int
    with_meter: bool = False


class RenameSession(_KeyedReq, frozen=True):
    session: int
    name: str


class DeleteSession(_KeyedReq, frozen=True):
    """Delete a session. Its forks are kept (their lineage cleared) unless `with_forks`."""

    session: int
    with_forks: bool = False


class ForkSession(_KeyedReq, frozen=True):
    """A new session holding copies of events 1..`at_seq` (seqs kept); the original is not changed."""

    session: int
    at_seq: int
    name: str | None = None


class ArchiveSession(_KeyedReq, frozen=True):
    """Archive (`archived=False`: unarchive) a session: hidden from listings, never deleted."""

    session: int
    archived: bool = True


class MarkCompleted(_KeyedReq, frozen=True):
    session: int
    success: bool
    duration_ms: int = 0
    cost_usd: float = 0.0


class SessionReply(_Versioned, frozen=True):
    session: SessionView


class SessionsReply(_Versioned, frozen=True):
    sessions: list[SessionView]
    total: int
