# GENERATED from _aio_agents.py by client/unasync.py (`make unasync`): edit _aio_agents.py, never this file.
"""The requests of :class:`~azsd_client.Client` about agent files: ingest one, follow one live,
import an agent's history. Paths are made absolute here (the daemon has its own working directory).
The asyncio module is the source; its blocking twin is generated from it by ``make unasync``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import msgspec

from azsd.ipc.protocol import (
    Follow,
    FollowReply,
    ImportReply,
    ImportSession,
    ImportSessions,
    ImportSources,
    ImportsReply,
    IngestFile,
    IngestReply,
    OkReply,
    Request,
    SourcesReply,
    Unfollow,
)

from ._connection import Connection
from ._shared import HistoryAgent, RootLike, absolute_path, canonical_root, long_timeout

__all__ = ["AgentMethods"]

_R = TypeVar("_R")


class AgentMethods(Connection):
    """Agent files' requests; :class:`~azsd_client.Client` has them with its `call`."""

    def call(self, message: Request, kind: type[_R], *, timeout: float | None = None) -> _R:
        raise NotImplementedError  # Client's

    def import_sources(
        self, root: RootLike, agent: HistoryAgent, source_dir: RootLike, project: RootLike
    ) -> SourcesReply:
        """The agent histories of `project` under `source_dir` (``~/.claude``, ``~/.codex``, OpenCode's
        data directory; unused for Aider, whose history is in the project)."""
        message = ImportSources(
            root=canonical_root(root), agent=agent, source_dir=absolute_path(source_dir),
            project=canonical_root(project),
        )  # fmt: skip
        return self.call(message, SourcesReply)

    def import_session(
        self,
        root: RootLike,
        agent: HistoryAgent,
        path: RootLike,
        *,
        worktree: str = "",
        timeout: float | None = None,
    ) -> ImportReply:
        """Import one agent history file as a session of its own (again: only what it gained since)."""
        message = ImportSession(
            root=canonical_root(root), agent=agent, path=absolute_path(path), worktree=worktree
        )
        return self.call(message, ImportReply, timeout=long_timeout(timeout, self.timeout))

    def import_sessions(
        self,
        root: RootLike,
        agent: HistoryAgent,
        paths: Sequence[RootLike],
        *,
        worktree: str = "",
        timeout: float | None = None,
    ) -> ImportsReply:
        """Import several agent histories at once (`SourceView.path`s, in order): small ones share
        short transactions (the way to import many); the reply names the ones that failed (each
        left nothing behind; the others go on)."""
        message = ImportSessions(
            root=canonical_root(root), agent=agent, paths=[absolute_path(p) for p in paths], worktree=worktree
        )
        return self.call(message, ImportsReply, timeout=long_timeout(timeout, self.timeout))

    def ingest_file(
        self,
        root: RootLike,
        session: int,
        path: RootLike,
        *,
        format: str | None = None,
        timeout: float | None = None,
    ) -> IngestReply:
        """Have the daemon read a finished agent JSONL file into a session.

        The path is made absolute here (the daemon has its own working directory). The reply may take
        a while for a big file: the default timeout is the larger of the client's and 300 s.
        """
        message = IngestFile(
            root=canonical_root(root), session=session, path=absolute_path(path), format=format
        )
        return self.call(message, IngestReply, timeout=long_timeout(timeout, self.timeout))

    def follow(
        self,
        root: RootLike,
        session: int,
        path: RootLike,
        format: str | None = None,
        writer_pid: int | None = None,
        *,
        model: str | None = None,
        agent_home: str | None = None,
        agent_session: str | None = None,
        timeout: float | None = None,
    ) -> FollowReply:
        """Follow an agent JSONL file live into a session, from its saved offset (or its start).

        The daemon stores each line as it is written and ends the follow by itself on the turn's final
        event, or once `writer_pid` is gone and the file has been idle a while. `format` is detected
        when None. The first read may take a while: the default timeout is as for `ingest_file`.
        `model` is the model the agent was started with, for a format that does not name it (Codex's
        `exec --json`), so that the run's usage is recorded and priced as that model's; `agent_home`
        where that agent keeps its histories (Codex's ``$CODEX_HOME``), so that the run's usage is
        keyed by the model responses its rollout records; `agent_session` the agent's own id of the
        session it writes, when known at the start (Claude's `--session-id`).
        """
        message = Follow(
            root=canonical_root(root),
            session=session,
            path=absolute_path(path),
            format=format,
            writer_pid=writer_pid,
            model=model,
            agent_home=agent_home,
            agent_session=msgspec.UNSET if agent_session is None else agent_session,
        )
        return self.call(message, FollowReply, timeout=long_timeout(timeout, self.timeout))

    def unfollow(
        self, root: RootLike, path: RootLike, *, timeout: float | None = None, reason: str | None = None
    ) -> OkReply:
        """Stop following `path`, after storing what the file holds now; `reason` (why, in words) is
        what `status` shows for the ended follow (``unfollowed`` without one)."""
        message = Unfollow(
            root=canonical_root(root),
            path=absolute_path(path),
            reason=msgspec.UNSET if reason is None else reason,
        )
        return self.call(message, OkReply, timeout=long_timeout(timeout, self.timeout))
