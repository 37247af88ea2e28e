"""The full record's requests of :class:`~azsd_client.AsyncClient`: what a store's full record (what
each agent wrote, kept beside the compact events) costs, and dropping it. Its events are read with
`get_events_page(..., full=True)`. The asyncio module is the source; its blocking twin is generated
from it by ``make unasync``.
"""

from __future__ import annotations

from typing import TypeVar

from azsd.ipc.protocol import FullStatus, FullStatusReply, PruneFull, PruneReply, Request

from ._aio_connection import AsyncConnection
from ._shared import RootLike, canonical_root

__all__ = ["AsyncFullMethods"]

_R = TypeVar("_R")


class AsyncFullMethods(AsyncConnection):
    """The full record's requests; :class:`~azsd_client.AsyncClient` has them with its `call`."""

    async def call(self, message: Request, kind: type[_R], *, timeout: float | None = None) -> _R:
        raise NotImplementedError  # AsyncClient's

    async def full_status(self, root: RootLike) -> FullStatusReply:
        """What the store's full record holds and costs, and how much the daemon has yet to keep."""
        return await self.call(FullStatus(root=canonical_root(root)), FullStatusReply)

    async def prune_full(self, root: RootLike, *, before: str = "", session: int | None = None) -> PruneReply:
        """Drop the full record of the sessions last active before `before` (an ISO date), or of
        `session`; their compact events stay."""
        message = PruneFull(root=canonical_root(root), before=before, session=session)
        return await self.call(message, PruneReply)
