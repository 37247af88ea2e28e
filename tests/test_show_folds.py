"""`azs show` folds a huge event (issue 37): an agent's line of megabytes prints as its first
characters and how many it holds; `--json` gives all of it."""

from __future__ import annotations

import json
from pathlib import Path

from azsd.events import AssistantText, UserMessage
from azsd_client.render.events import FOLD_CHARS
from tests.test_cli import Azs, azs
from tests.test_client import daemon, worktree

__all__ = ["azs", "daemon", "worktree"]  # the fixtures, re-exported for pytest


def test_a_huge_event_prints_folded_and_json_has_it_whole(azs: Azs, worktree: Path) -> None:
    huge = "wombat " * 300_000
    with azs.daemon.client(timeout=20) as client:
        sid = client.create_session(worktree, "huge").session.id
        client.append_events(worktree, sid, [UserMessage(content="go"), AssistantText(text=huge)])
    code, out, _ = azs("show", str(sid))
    assert code == 0 and len(out) < 3 * FOLD_CHARS
    assert "folded: 2,100,0" in out and "azs show --json" in out
    (shown,) = [json.loads(line) for line in azs.ok("--json", "show", str(sid)).splitlines()]
    assert shown["events"][-1]["event"] == {"AssistantText": {"text": huge}}
