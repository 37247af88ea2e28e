"""Importing an agent's own histories (Claude, Codex, OpenCode, Aider): the sources there are, and
importing one or several of them as sessions."""

from __future__ import annotations

from typing import Literal

import msgspec

from azsd.ipc.messages.base import _Data, _KeyedReq, _StoreReq, _Versioned
from azsd.ipc.messages.sessions import SessionView

__all__ = [
    "ImportFailure",
    "ImportReply",
    "ImportSession",
    "ImportSessions",
    "ImportSources",
    "ImportsReply",
    "SourceView",
    "SourcesReply",
]


class SourceView(_Data, frozen=True):
    """An agent history file `ImportSession` can bring in; `session` is where it already is."""

    path: str
    agent: str
    size: int
    session: int | None = None
    #: Imported, and the file has not grown since.
    current: bool = False


class ImportSources(_StoreReq, frozen=True):
    """The agent histories of `project` under `source_dir` (``~/.claude``, ``~/.codex``, OpenCode's
    data directory; Aider's are the runs of ``<project>/.aider.chat.history.md``), and whether each
    is imported already. An Aider run's `path` is ``<file>#<the time in its header>``, an OpenCode
    session's ``<opencode.db or storage dir>#<session id>``."""

    agent: Literal["claude", "aider", "opencode", "codex"]  # first and last pinned by tests/test_wire.py
    source_dir: str
    project: str


class ImportSession(_KeyedReq, frozen=True):
    """Import one agent history (a `SourceView.path`) as a session of its own (again: only what it
    gained since)."""

    agent: Literal["claude", "aider", "opencode", "codex"]  # first and last pinned by tests/test_wire.py
    path: str
    worktree: str = ""


class ImportSessions(_KeyedReq, frozen=True):
    """Import several agent histories (`SourceView.path`s) at once, each as `ImportSession` does, in
    order (a parent before the sessions it spawned). Small ones share short transactions (a commit
    per source was most of their cost), so a thousand OpenCode sessions import in seconds; each is
    imported in a savepoint of its own, so one that fails leaves nothing behind, is named in the
    reply's `failed`, and the others go on."""

    agent: Literal["claude", "aider", "opencode", "codex"]
    paths: list[str]
    worktree: str = ""


class SourcesReply(_Versioned, frozen=True):
    sources: list[SourceView]


class ImportReply(_Versioned, frozen=True):
    """What `ImportSession` did: `created` a session, or found it and added `appended` events."""

    path: str
    session: SessionView
    created: bool
    appended: int
    lines: int
    skipped: int


class ImportFailure(_Data, frozen=True):
    """A source `ImportSessions` could not import, and why."""

    path: str
    error: str


class ImportsReply(_Versioned, frozen=True):
    """What `ImportSessions` did: one `ImportReply` per source imported, in order, and the failures."""

    imports: list[ImportReply]
    failed: list[ImportFailure] = msgspec.field(default_factory=list)
