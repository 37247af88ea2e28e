"""Agent JSONL files into sessions: ingested once (`IngestFile`), or followed live (`Follow`,
`Unfollow`), and the follow as `status` shows it (`FollowView`)."""

from __future__ import annotations

import msgspec

from azsd.ipc.messages.base import _Data, _KeyedReq, _StoreReq, _Versioned

__all__ = ["Follow", "FollowReply", "FollowView", "IngestFile", "IngestReply", "Unfollow"]


class FollowView(_Data, frozen=True):
    """A followed agent JSONL file: where the daemon is in it, and what it saw.

    `state` is what the follow does now: ``following``, ``waiting`` (for its store, or for the file:
    `reason` says which), ``retrying`` (it failed `failures` times in a row; `reason` says why and
    when it tries again), ``idle`` (given no writer, its file went quiet with no program holding it
    open: still followed, `active`, but its session does not show running until the file grows) or
    ``ended`` (`reason` says why). A daemon older than these fields sends neither: `state` is then
    empty, and `active` tells a live follow from an ended one.
    """

    root: str
    session: int
    path: str
    format: str
    offset: int
    lines: int
    skipped: int
    active: bool
    last_activity: str
    writer_pid: int | None = None
    ended: str | None = None
    state: str = ""
    reason: str = ""
    failures: int = 0


class IngestFile(_KeyedReq, frozen=True):
    """Ingest a finished agent JSONL file (read by the daemon) into a session."""

    session: int
    path: str
    format: str | None = None


class Follow(_StoreReq, frozen=True):
    """Follow an agent JSONL file into a session, live, from where it was left (or its start).

    `format` is detected when None. `writer_pid` is the agent writing the file: once it is gone
    and the file stops growing, the follow ends. Without one, a quiet file that no program holds
    open makes the follow `idle` (it goes on when the file grows). A follow also ends on the turn's
    final event.
    `model` is the model the agent was started with, for a format that names none (`codex exec
    --json`): its usage is recorded as that model's, and priced at its prices. `agent_home` is where
    that agent keeps its own histories (Codex's ``$CODEX_HOME``; None: the daemon's own, else
    ``~/.codex``): a `codex exec --json` run's usage is keyed there by its model responses.
    """

    session: int
    path: str
    format: str | None = None
    writer_pid: int | None = None
    model: str | None = None
    agent_home: str | None = None
    #: The agent's own id of the session it writes (Claude's `--session-id`), when known at the start:
    #: its own history of the run is this session's from the first line (never imported apart).
    agent_session: str | msgspec.UnsetType = msgspec.UNSET


class Unfollow(_StoreReq, frozen=True):
    """Stop following `path` after reading what it holds now. `reason` is why, in words, as `status`
    shows it among the ended follows (``unfollowed`` without one; sent only when set)."""

    path: str
    reason: str | msgspec.UnsetType = msgspec.UNSET


class FollowReply(_Versioned, frozen=True):
    follow: FollowView


class IngestReply(_Versioned, frozen=True):
    format: str
    lines: int
    parsed: int
    appended: int
    duplicates: int
    skipped: dict[str, int]
    events: dict[str, int]
