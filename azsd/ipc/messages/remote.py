"""Reading the sync database: the sessions every machine and person pushed, one of them and its
events, searching them, the team's usage, and pulling a session into a local store."""

from __future__ import annotations

import msgspec

from azsd.ipc.messages.base import _Data, _StoreReq, _Versioned
from azsd.ipc.messages.events import WireEvent
from azsd.ipc.messages.sessions import SessionView
from azsd.ipc.messages.usage import UsageView

__all__ = [
    "Pull",
    "PullReply",
    "RemoteHit",
    "RemoteList",
    "RemoteSearch",
    "RemoteSearchReply",
    "RemoteSessionReply",
    "RemoteSessionView",
    "RemoteSessionsReply",
    "RemoteShow",
    "RemoteUsage",
]


class RemoteSessionView(_Data, frozen=True):
    """A session in the sync database, as its origin store last pushed it.

    `uuid` is its global id (a REMOTE-REF is ``@`` and a unique prefix of it); `identity` who pushed it
    and from which machine (``user@host``), `root` the worktree there, `local_id` its number there,
    `worktree` its branch label, `updated` when it was last pushed (ISO 8601), `char_total` its size
    (the stored `char_len` summed). `parent` is the session it was forked from, `pulled_from` the one
    it was pulled from (UUIDs). `owner` is the database role that pushed it (what the database
    vouches for: `identity` is what that role says of itself); `own`: that role is the one this daemon
    logs in as. `mine`: `own`, and pushed with this daemon's identity from the store the request
    named. `deleted`: when it was deleted at its origin (a tombstone: no events left)."""

    uuid: str
    identity: str
    repository: str
    root: str
    local_id: int
    name: str
    worktree: str
    created: str
    updated: str
    state: str
    event_count: int
    message_count: int = 0
    char_total: int = 0
    archived: bool = False
    completed: bool | None = None
    duration_ms: int | None = None
    cost_usd: float | None = None
    parent: str | None = None
    fork_seq: int | None = None
    pulled_from: str | None = None
    usage: UsageView | None = None
    mine: bool = False
    deleted: str | None = None
    owner: str = ""
    own: bool = False


class RemoteHit(_Data, frozen=True):
    """An event of the sync database that matched a `RemoteSearch`: its session, seq and kind, its
    rank (higher is better: PostgreSQL's ts_rank), a snippet with the matches in ``[[…]]``, and the
    event's JSON."""

    session: str
    identity: str
    session_name: str
    seq: int
    kind: str
    rank: float
    snippet: str
    data: str
    worktree: str = ""
    #: The database role that pushed the session (see `RemoteSessionView.owner`).
    owner: str = ""


class RemoteList(_StoreReq, frozen=True):
    """The sessions in the sync database of the repository `root` belongs to, from every machine and
    person, last pushed first (`worktrees` narrows them to those branches). Tombstones only with
    `deleted`."""

    limit: int = 100
    offset: int = 0
    worktrees: list[str] | None = None
    deleted: bool = False


class RemoteShow(_StoreReq, frozen=True):
    """One session of the sync database (`ref`: a UUID, or ``@`` and a unique prefix of it) and a
    page of its events from `from_seq` (as stored; injected context is stripped)."""

    ref: str
    from_seq: int = 1
    limit: int = 500


class RemoteSearch(_StoreReq, frozen=True):
    """Full-text search of the repository's sessions in the sync database (PostgreSQL text search),
    best match first. `query` is web-search syntax (``a b``, ``"a phrase"``, ``a or b``, ``-a``), or
    plain words that must all appear with `words`; the filters are those of `Search`."""

    query: str
    limit: int = 50
    worktrees: list[str] | None = None
    kinds: list[str] | None = None
    words: bool = False


class RemoteUsage(_StoreReq, frozen=True):
    """The team's token usage and cost in the sync database, summed there under the read rules, as
    a `UsageReply` with `by` and `periods` (`sessions` and `worktrees` empty): `by` is ``day``,
    ``week`` or ``month`` of local time, ``model``, ``person`` (the database role that pushed;
    the default) or ``repository`` (every repository the role may read; the others cover the
    repository of `root`). `by_model`, `since`, `until` and `timezone` are those of `Usage`."""

    by: str | None = None
    by_model: bool = False
    since: str | None = None
    until: str | None = None
    timezone: str | None = None


class Pull(_StoreReq, frozen=True):
    """Copy a session of the sync database into the store of `root`, as a new local session (events
    byte for byte, compactions, badge), its lineage recorded as pulled from `ref`. Each pull makes a
    new session: continuing it is a fork, never a merge."""

    ref: str
    name: str | None = None
    worktree: str | None = None


class RemoteSessionsReply(_Versioned, frozen=True):
    sessions: list[RemoteSessionView]
    total: int


class RemoteSessionReply(_Versioned, frozen=True):
    """A remote session and a page of its events; `next_seq` as in `EventsPage`."""

    session: RemoteSessionView
    events: list[WireEvent]
    next_seq: int | None
    #: Rows of the page that could not be read (a corrupt frame, one over the size an event may
    #: hold): left out, and counted here, never failing the rest (unset: none; encoded only when set,
    #: so a reply without it has the bytes it had before the field).
    unreadable: int | msgspec.UnsetType = msgspec.UNSET


class RemoteSearchReply(_Versioned, frozen=True):
    hits: list[RemoteHit]
    #: Hits whose row could not be read (as in `RemoteSessionReply`): left out, and counted here.
    unreadable: int | msgspec.UnsetType = msgspec.UNSET


class PullReply(_Versioned, frozen=True):
    """The new local session, and the remote one it was copied from."""

    session: SessionView
    origin: RemoteSessionView
    #: Rows of the remote session not copied (unreadable, or not the event they say they are; unset:
    #: none, and encoded only when set).
    left_out: int | msgspec.UnsetType = msgspec.UNSET
