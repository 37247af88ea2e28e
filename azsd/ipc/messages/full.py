"""The full record of a store (what each agent wrote, kept beside the compact events): what it
costs, and dropping it. Its events are read with `GetEvents` and `full`."""

from __future__ import annotations

from azsd.ipc.messages.base import _KeyedReq, _StoreReq, _Versioned

__all__ = ["FullStatus", "FullStatusReply", "PruneFull", "PruneReply"]


class FullStatus(_StoreReq, frozen=True):
    """What a store's full record holds and costs (`azs status`, `azs doctor`)."""


class FullStatusReply(_Versioned, frozen=True):
    """`stored_bytes` on disk for `source_bytes` the agents wrote, in `chunks` of `sessions`;
    `waiting_bytes` the agents wrote that the daemon has yet to keep (it does when idle, unless the
    `full-record` setting is off)."""

    sessions: int
    chunks: int
    stored_bytes: int
    source_bytes: int
    waiting_bytes: int


class PruneFull(_KeyedReq, frozen=True):
    """Drop the full record of the sessions last active before `before` (an ISO date or time, UTC),
    or of `session` whatever its age; the compact events stay, and those sessions' sources are never
    read again."""

    before: str = ""
    session: int | None = None


class PruneReply(_Versioned, frozen=True):
    """How many chunks of full record were dropped."""

    dropped: int
