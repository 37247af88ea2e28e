"""Where the agents keep their histories on this machine: each agent's directory
(:func:`source_dir`) and the projects it ran in (:func:`projects`), which `azs import` and
`azs usage --all` read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Final

import msgspec

__all__ = ["HEAD_LINES", "head_cwd", "projects", "source_dir"]

#: Lines of a history file read for the directory it ran in.
HEAD_LINES: Final = 20


def source_dir(agent: str, environ: Mapping[str, str]) -> Path:
    """Where `agent` keeps its histories: its own variable, else the default under ``$HOME``
    (OpenCode's data directory follows XDG; Aider keeps its history in the project itself).

    >>> str(source_dir("claude", {"HOME": "/h"})), str(source_dir("codex", {"CODEX_HOME": "/c"}))
    ('/h/.claude', '/c')
    >>> str(source_dir("opencode", {"HOME": "/h"})), str(source_dir("opencode", {"XDG_DATA_HOME": "/x"}))
    ('/h/.local/share/opencode', '/x/opencode')
    """
    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    if agent in ("opencode", "aider"):
        data = environ.get("XDG_DATA_HOME")
        return (Path(data).absolute() if data else home / ".local" / "share") / agent
    variable, default = ("CLAUDE_CONFIG_DIR", ".claude") if agent == "claude" else ("CODEX_HOME", ".codex")
    given = environ.get(variable)
    if given:
        return Path(given).absolute()
    return Path(environ.get("HOME") or os.path.expanduser("~")) / default


def projects(agent: str, environ: Mapping[str, str]) -> dict[str, list[Path]]:
    """Every project directory `agent` ran in on this machine (its files' `cwd`), with its files.

    Claude's: one per ``projects/<slug>`` directory (the `cwd` of its first file that names one),
    with every file of it, sub-agents' too; Codex's: the `cwd` of each rollout's `session_meta`."""
    where = source_dir(agent, environ)
    found: dict[str, list[Path]] = {}
    if agent == "claude":
        for directory in sorted((where / "projects").glob("*")) if (where / "projects").is_dir() else []:
            files = sorted(directory.glob("*.jsonl")) + sorted(directory.glob("*/subagents/*.jsonl"))
            cwd = next((c for c in map(partial(head_cwd, agent=agent), files) if c), None)
            if cwd:
                found.setdefault(cwd, []).extend(files)
    else:
        sessions = where / "sessions"
        for path in sorted(sessions.rglob("rollout-*.jsonl")) if sessions.is_dir() else []:
            cwd = head_cwd(path, agent=agent)
            if cwd:
                found.setdefault(cwd, []).append(path)
    return found


def head_cwd(path: Path, *, agent: str) -> str | None:
    """The directory a history file's agent ran in: the first absolute `cwd` of its first
    :data:`HEAD_LINES` lines (Codex's: of its `session_meta`), or None."""
    try:
        with path.open("rb") as stream:
            for _, line in zip(range(HEAD_LINES), stream, strict=False):
                try:
                    obj = msgspec.json.decode(line)
                except msgspec.DecodeError:
                    continue
                if not isinstance(obj, dict):
                    continue
                if agent == "codex":
                    payload = obj.get("payload")
                    obj = payload if obj.get("type") == "session_meta" and isinstance(payload, dict) else {}
                cwd = obj.get("cwd")
                if isinstance(cwd, str) and os.path.isabs(cwd):
                    return cwd
    except OSError:
        return None
    return None
