"""A followed history that is rotated or deleted never takes away what was counted (issue 34: deleting
or rotating a followed Aider history wiped the session's earlier usage, 8 runs: 23.0k in → 0).

A Claude transcript is followed live by the real daemon; the file is then replaced by another (moved
away and a new one begun at its path): the session keeps the first file's usage and adds the
second's. A file rewritten with the same start is the same run, counted once.
"""

from __future__ import annotations

import os
from pathlib import Path

from azsd_client import Client
from tests.test_client import client, daemon, worktree
from tests.test_run import wait_for
from tests.test_usage_counted import prompt, reply
from tests.test_usage_prices import write

__all__ = ["client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

SESSION = "aaaaaaaa-0000-4000-8000-00000000000a"


def inputs(client: Client, root: Path, session: int) -> int:
    view = client.get_session(root, session).session
    return view.usage.input if view.usage is not None else 0


def test_a_rotated_history_keeps_what_it_counted(client: Client, worktree: Path, tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    write(
        history,
        [prompt(SESSION, "one", "2026-11-01T10:00:00Z"), reply(SESSION, 1, "2026-11-01T10:00:05Z", 7000)],
    )
    sid = client.create_session(worktree, "followed").session.id
    client.follow(worktree, sid, history, format="claude-session")
    wait_for(lambda: inputs(client, worktree, sid) == 7000, "the first file's usage")

    os.rename(history, tmp_path / "history.1.jsonl")  # rotated: a new file begins at the path
    write(
        history,
        [prompt(SESSION, "two", "2026-11-02T10:00:00Z"), reply(SESSION, 2, "2026-11-02T10:00:05Z", 500)],
    )

    wait_for(lambda: inputs(client, worktree, sid) == 7500, "both files' usage")
    history.unlink()  # deleted: nothing counted goes away either
    write(
        history,
        [prompt(SESSION, "three", "2026-11-03T10:00:00Z"), reply(SESSION, 3, "2026-11-03T10:00:05Z", 20)],
    )
    wait_for(lambda: inputs(client, worktree, sid) == 7520, "all three files' usage")


def test_a_history_rewritten_with_the_same_start_is_counted_once(
    client: Client, worktree: Path, tmp_path: Path
) -> None:
    history = tmp_path / "history.jsonl"
    lines = [prompt(SESSION, "one", "2026-11-01T10:00:00Z"), reply(SESSION, 11, "2026-11-01T10:00:05Z", 7000)]
    write(history, lines)
    sid = client.create_session(worktree, "followed").session.id
    client.follow(worktree, sid, history, format="claude-session")
    wait_for(lambda: inputs(client, worktree, sid) == 7000, "the file's usage")
    replacement = tmp_path / "rewritten.jsonl"
    write(
        replacement,
        [
            *lines,
            prompt(SESSION, "two", "2026-11-01T10:01:00Z"),
            reply(SESSION, 12, "2026-11-01T10:01:05Z", 100),
        ],
    )
    os.replace(replacement, history)  # an editor's save: a new inode, the same start
    wait_for(lambda: inputs(client, worktree, sid) == 7100, "the rewrite's usage, the start once")
