"""Where an agent keeps its own history of one of its sessions, given where it keeps them all.

Claude Code: ``<config dir>/projects/<slug>/<session id>.jsonl`` (the slug is the project's path
as Claude spells it; any is taken, since the id is unique). Codex: ``<home>/sessions/…/rollout-
<time>-<thread id>.jsonl``, or under ``archived_sessions/``. An id that could name a path elsewhere
(a ``/``, a leading dot) names none.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["agent_histories", "claude_transcripts", "codex_rollouts"]


def _safe(agent_session: str) -> bool:
    return (
        bool(agent_session)
        and "/" not in agent_session
        and "\0" not in agent_session
        and not agent_session.startswith(".")
    )


def claude_transcripts(config_dir: Path, session_id: str) -> list[Path]:
    """Claude's transcripts of session `session_id` (one, normally)."""
    return sorted((config_dir / "projects").glob(f"*/{session_id}.jsonl")) if _safe(session_id) else []


def codex_rollouts(codex_home: Path, thread_id: str) -> list[Path]:
    """Codex's rollouts of thread `thread_id` (one, normally)."""
    if not _safe(thread_id):
        return []
    return [
        path
        for folder in ("sessions", "archived_sessions")
        for path in sorted((codex_home / folder).rglob(f"rollout-*{thread_id}.jsonl"))
    ]


def agent_histories(home: Path, fmt: str, agent_session: str) -> list[Path]:
    """The agent's own histories of `agent_session`, for output of format `fmt` (Claude's or Codex's)."""
    if fmt.startswith("claude"):
        return claude_transcripts(home, agent_session)
    if fmt.startswith("codex"):
        return codex_rollouts(home, agent_session)
    return []
