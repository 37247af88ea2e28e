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
from azsd.errors import RemoteError
from azsd.histories import source_dir
from azsd.ipc.protocol import SessionView
from azsd_client._shared import Archived, HistoryAgent
from azsd_client.aio import AsyncClient

from .views import agent_of

__all__ = ["AGENTS", "LIST_ALL", "Stores", "list_everywhere", "session_agents", "with_details"]

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
        """Whether `root` is a store this view has shown (asked of no daemon: a stream that opens while
        the daemon is away must open all the same, to say so)."""
        return root in self._roots and Path(root, _STORE).is_file()


async def list_everywhere(
    client: AsyncClient, roots: Sequence[str], *, archived: bool = False
) -> list[tuple[str, list[SessionView]]]:
    """Every session of each store in `roots`, latest activity first (without usage or context meter:
    those cost ten times the listing; :func:`with_details` adds them to the few shown)."""

    async def one(root: str) -> tuple[str, list[SessionView]]:
        reply = await client.list_sessions(root, None, limit=LIST_ALL, archived=_archived(archived))
        return root, reply.sessions

    return list(await asyncio.gather(*(one(root) for root in roots)))


def _archived(archived: bool) -> Archived:
    return "include" if archived else "exclude"


async def with_details(
    client: AsyncClient,
    listed: Sequence[tuple[str, Sequence[SessionView]]],
    shown: Sequence[tuple[str, SessionView]],
    *,
    archived: bool = False,
) -> list[tuple[str, SessionView]]:
    """`shown` (sessions of `listed`) with their usage and context meter, read with one `ListSessions`
    per store over the stretch of its listing that holds them (a session that moved in between, as
    a new one was made, stays as it was)."""
    places = {root: {v.id: i for i, v in enumerate(views)} for root, views in listed}
    wanted: dict[str, list[int]] = {}
    for root, view in shown:
        wanted.setdefault(root, []).append(places[root][view.id])

    async def one(root: str, at: list[int]) -> dict[tuple[str, int], SessionView]:
        low, high = min(at), max(at)
        reply = await client.list_sessions(
            root, None, limit=high - low + 1, offset=low, archived=_archived(archived),
            with_usage=True, with_meter=True,
        )  # fmt: skip
        return {(root, v.id): v for v in reply.sessions}

    found: dict[tuple[str, int], SessionView] = {}
    for part in await asyncio.gather(*(one(root, at) for root, at in wanted.items())):
        found.update(part)
    return [(root, found.get((root, view.id), view)) for root, view in shown]


#: The agents a session's source names (a follow's format starts with it; an import is of one).
AGENTS: Final = ("claude", "codex", "aider", "opencode")
#: The agents whose sessions are known only by their import (their models name no agent: Aider and
#: OpenCode run Claude, GPT and other models alike).
_IMPORTED: Final = ("aider", "opencode")


async def session_agents(client: AsyncClient, roots: Sequence[str]) -> dict[tuple[str, int], frozenset[str]]:
    """The agent each session ran: the one it was imported from (Aider's or OpenCode's histories of
    its worktree, as `azs import` finds them) or followed from (`azs run`, `azs follow`: the file's
    format), else the agents (``claude``, ``codex``) of the models its usage names."""
    found: dict[tuple[str, int], set[str]] = {}
    sourced: dict[tuple[str, int], str] = {}

    async def one(root: str) -> None:
        reply = await client.usage(root, by="session", by_model=True)
        for period in reply.periods:
            agent = agent_of(period.model or "")
            if period.session is not None and agent:
                found.setdefault((root, period.session), set()).add(agent)

    async def imported(root: str, agent: HistoryAgent) -> None:
        try:
            reply = await client.import_sources(root, agent, source_dir(agent, os.environ), root)
        except RemoteError:  # no such history here, or a daemon that reads none
            return
        for source in reply.sources:
            if source.session is not None:
                sourced[(root, source.session)] = agent

    status = await client.status()
    for follow in status.follows:
        agent = follow.format.split("-", 1)[0]
        if agent in AGENTS:
            sourced[(follow.root, follow.session)] = agent
    await asyncio.gather(
        *(one(root) for root in roots), *(imported(root, agent) for root in roots for agent in _IMPORTED)
    )
    agents = {key: frozenset(names) for key, names in found.items()}
    agents.update({key: frozenset({agent}) for key, agent in sourced.items()})
    return agents
