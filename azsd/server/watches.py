"""The watches of the agents' homes the daemon runs (`watch-agents`): Claude's and Codex's files
(:mod:`azsd.server.homes`), Aider's and OpenCode's sessions (:mod:`azsd.server.session_homes`),
each history imported into its project's store as `azs import` would, by the store's writer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import Literal, cast

from azsd.histories import source_dir
from azsd.ipc import protocol as p
from azsd.server.handlers import handle
from azsd.server.homes import AgentHomes, branch_of, exclude_from_git, history_dirs
from azsd.server.registry import StoreRegistry
from azsd.server.session_homes import SessionHomes
from azsd.server.workers import Outcome
from azsd.store import Store

__all__ = ["Watches"]

log = logging.getLogger("azsd.homes")

_Agent = Literal["claude", "codex", "aider", "opencode"]


class Watches:
    """The watches `agents` asks for, started together and stopped together."""

    def __init__(
        self,
        agents: tuple[str, ...],
        environ: Mapping[str, str],
        registry: StoreRegistry,
        *,
        claimed: Callable[[], set[str]],
        followed: Callable[[], set[str]],
        roots: Callable[[], set[str]],
    ) -> None:
        self._registry = registry
        self._files: AgentHomes | None = None
        self._sessions: SessionHomes | None = None
        files = [agent for agent in agents if agent in ("claude", "codex")]
        if files:
            homes = {agent: source_dir(agent, environ) for agent in files}
            dirs = history_dirs(files, homes)
            self._files = AgentHomes(dirs, self._import, claimed)
            log.info("watching the agents' homes: %s", ", ".join(str(d) for d in dirs.values()))
        others = {agent for agent in agents if agent in ("aider", "opencode")}
        if others:
            opencode = source_dir("opencode", environ) if "opencode" in others else None
            self._sessions = SessionHomes(others, opencode, roots, self._import, followed)
            log.info("watching %s", " and ".join(sorted(others)))

    def start(self) -> None:
        for watch in (self._files, self._sessions):
            if watch is not None:
                watch.start()

    def stop(self) -> None:
        for watch in (self._files, self._sessions):
            if watch is not None:
                watch.stop()

    def _import(self, agent: str, path: Path | str, root: str) -> Future[Outcome]:
        """Import one source (a history file, an Aider run, an OpenCode session) into `root`'s store."""
        request = p.ImportSession(
            root=root, agent=cast(_Agent, agent), path=str(path), worktree=branch_of(Path(root))
        )
        publish = partial(self._registry.publish, root)

        def done(future: Future[Outcome]) -> None:
            if future.exception() is None:
                publish(future.result().notes)
                exclude_from_git(Path(root))  # a store the watch made stays out of git's view

        def run(store: Store) -> Outcome:
            return handle(store, request, publish)

        return self._registry.call(root, run, alone=True, then=done)
