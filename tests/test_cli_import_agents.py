"""`azs import aider|opencode`, `azs ingest` of both and `azs usage` over them, end to end against the
real daemon (the harness of tests/test_cli.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from azsd.histories import source_dir
from azsd_client import Client
from tests.opencode_fixture import OpenCodeBuilder
from tests.test_cli import Azs, azs
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

DATA = Path(__file__).parent / "data" / "aider"


def test_opencode_data_dir_follows_xdg() -> None:
    assert source_dir("opencode", {"HOME": "/h", "XDG_DATA_HOME": "/x"}) == Path("/x/opencode")
    assert source_dir("opencode", {"HOME": "/h"}) == Path("/h/.local/share/opencode")


def test_import_aider_and_opencode_then_usage_show_and_search(
    azs: Azs, client: Client, worktree: Path, monkeypatch: Any
) -> None:
    shutil.copyfile(DATA / "aider__v0.47-request-cost.md", worktree / ".aider.chat.history.md")
    data = worktree.parent / "xdg"
    oc = OpenCodeBuilder(data / "opencode")
    oc.session("ses_a", worktree, "fix main")
    oc.turn("ses_a", 1)
    oc.session("ses_b", worktree, "Child session - 2026-05-02T10:00:00.000Z", parent="ses_a")  # not named yet
    oc.turn("ses_b", 2)
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    assert (
        azs.ok("import", "aider") == "imported 2 sessions (2 new, 0 updated, 0 already current), 18 events\n"
    )
    out = azs.ok("import", "opencode")
    assert out.startswith("imported 2 sessions (2 new, 0 updated, 0 already current)")
    assert azs.ok("import", "opencode", "--data-dir", str(data / "opencode")).startswith(
        "imported 2 sessions (0 new, 0 updated, 2 already current)"
    )
    (summary,) = azs.json("import", "aider")
    assert summary["current"] == 2 and summary["sources"] == 2
    sessions = {v.name: v for v in client.list_sessions(worktree).sessions}
    # OpenCode's own title names a session (issue 35), its placeholder does not: the first prompt does
    assert "fix main" in sessions and "Use the Spinner instead of the inlined custom spinner" in sessions
    child = sessions["please fix main.py, step 2"]
    assert child.parent == sessions["fix main"].id
    usage = azs.ok("usage")
    assert "$0.04" in usage or "0.04" in usage  # 0.0219 reported by Aider + 2 × 0.0123 by OpenCode
    (totals,) = azs.json("usage")
    assert abs(totals["total"]["cost_usd"] - (0.0219 + 0.0246)) < 1e-9
    shown = azs.ok("show", f"S{sessions['fix main'].id}")
    assert "I will fix main.py (turn 1)." in shown and "Read" in shown
    assert "Spinner" in azs.ok("search", "Spinner")


def test_ingest_guesses_aider_and_takes_an_opencode_session(azs: Azs, client: Client, worktree: Path) -> None:
    history = worktree / "chat.md"
    shutil.copyfile(DATA / "aider__v0.50-cache-hit.md", history)
    sid = client.create_session(worktree, "aider").session.id
    out = azs.ok("ingest", str(history), "-s", str(sid))
    assert out.startswith(f"S{sid}: aider: 14 lines, 5 events parsed, 5 stored")
    oc = OpenCodeBuilder(worktree.parent / "oc")
    oc.session("ses_a", worktree, "fix main")
    oc.turn("ses_a", 1)
    other = client.create_session(worktree, "opencode").session.id
    key = f"{oc.db}#ses_a"
    assert azs.ok("ingest", key, "-s", str(other)).startswith(
        f"S{other}: opencode: 2 lines, 13 events parsed"
    )
    assert "0 stored, 13 already there" in azs.ok("ingest", key, "-s", str(other), "--format", "opencode")
    code, _, err = azs("ingest", f"{oc.db}#ses_nope", "-s", str(other))
    assert code == 1 and "no such OpenCode session" in err
