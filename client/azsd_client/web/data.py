"""What the web view asks the daemon: the stores it knows, their sessions, and the sessions' agents.

Every answer comes from the daemon through :class:`~azsd_client.AsyncClient`; the web view reads no
store file itself (it only looks whether one exists, to know a worktree has sessions).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from azsd.config import ResolvedConfig
from azsd.ipc.protocol import SessionView
from azsd_client.aio import AsyncClient

from .views import agent_of

__all__ = ["LIST_ALL", "Stores", "list_everywhere", "session_agents"]

#: How many sessions of one store the sessions page reads (one request; the page shows a slice).
LIST_ALL: Final = 100_000
_STORE: Final = os.path.join(".azureal", "sessions.azs")


class Stores:
    """The stores the web view shows: the roots it was given, and every root the daemon has named
    since (open stores, follows, the roots it resumes follows in), as long as their store exists."""

    def __init__(self, config: ResolvedConfig, given: Iterable[str]) -> None:
        self.config = config
        self._roots: dict[str, None] = {os.path.realpath(root): None for root in given}

    def _remembered(self) -> list[str]:
        try:
            return [line for line in self.config.roots_path.read_text().splitlines() if line]
        except OSError:
            return []

    async def roots(self, client: AsyncClient) -> list[str]:
        """The known roots whose store exists, in the order they became known."""
        status = await client.status()
        for root in [*status.stores, *(f.root for f in status.follows), *self._remembered()]:
            self._roots.setdefault(root, None)
        return [root for root in self._roots if Path(root, _STORE).is_file()]

    def knows(self, root: str) -> bool:
        """Whether `root` is one of the roots this view shows (a page names its store by root)."""
        return root in self._roots


async def list_everywhere(
    client: AsyncClient, roots: Sequence[str], *, archived: bool = False
) -> list[tuple[str, list[SessionView]]]:
    """Every session of each store in `roots`, latest activity first, with usage and context meter."""

    async def one(root: str) -> tuple[str, list[SessionView]]:
        reply = await client.list_sessions(
            root,
            None,
            limit=LIST_ALL,
            archived="include" if archived else "exclude",
            with_usage=True,
            with_meter=True,
        )
        return root, reply.sessions

    return list(await asyncio.gather(*(one(root) for root in roots)))


async def session_agents(client: AsyncClient, roots: Sequence[str]) -> dict[tuple[str, int], frozenset[str]]:
    """The agents (``claude``, ``codex``) each session ran, from the models its usage names."""
    found: dict[tuple[str, int], set[str]] = {}

    async def one(root: str) -> None:
        reply = await client.usage(root, by="session", by_model=True)
        for period in reply.periods:
            agent = agent_of(period.model or "")
            if period.session is not None and agent:
                found.setdefault((root, period.session), set()).add(agent)

    await asyncio.gather(*(one(root) for root in roots))
    return {key: frozenset(agents) for key, agents in found.items()}
