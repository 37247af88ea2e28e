"""`azs export` and `azs backup`, end to end against the real daemon (the harness of tests/test_cli.py)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from azsd.events import AssistantText, Complete, Event, ToolCall, ToolResult, UserMessage
from azsd_client import Client
from tests.test_cli import Azs, azs
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"
TURN: list[Event] = [
    UserMessage(content="deploy with my token please"),
    ToolCall(tool_use_id="t", tool_name="Bash", input={"command": f"export GITHUB_TOKEN={GITHUB_TOKEN}"}),
    ToolResult(tool_use_id="t", tool_name="Bash", content=f"key id {AWS_KEY_ID} in use", is_error=False),
    AssistantText(text="Deployed. **Done**, see <the log> & more."),
    Complete(success=True, duration_ms=1200, cost_usd=0.02),
]


def _session(client: Client, root: Path, name: str = "deploy") -> int:
    sid = client.create_session(root, name).session.id
    client.append_events(root, sid, TURN)
    return sid


def test_export_formats_to_stdout(azs: Azs, client: Client, worktree: Path) -> None:
    sid = _session(client, worktree)
    md = azs.ok("export", f"S{sid}")
    assert "deploy with my token please" in md and "Deployed." in md and GITHUB_TOKEN in md
    assert md == "".join(page.text for page in client.export(worktree, sid))
    assert md == "".join(page.text for page in client.export(worktree, sid, page_size=2))  # paged the same
    assert azs.ok("--json", "export", str(sid)) == md  # without -o, --json changes nothing
    lines = azs.ok("export", f"S{sid}", "--format", "jsonl").splitlines()
    records = [json.loads(line) for line in lines]
    assert all(isinstance(r, dict) for r in records) and len(records) >= len(TURN)
    html = azs.ok("export", f"S{sid}", "--format", "html")
    assert html.lstrip().lower().startswith("<!doctype html") and html.rstrip().endswith("</html>")
    assert "&lt;the log&gt; &amp; more" in html and "<the log>" not in html
    code, out, err = azs("export", "S999")
    assert (code, out) == (1, "") and err == "azs: no session S999 in this store\n"


def test_export_to_a_file_is_atomic_and_reports_masking(azs: Azs, client: Client, worktree: Path) -> None:
    sid = _session(client, worktree)
    target = worktree.parent / "out" / "deploy.md"
    target.parent.mkdir()
    out = azs.ok("export", f"S{sid}", "-o", str(target))
    assert out.startswith(f"exported S{sid} as md to {target} (") and out.count("\n") == 1
    assert target.read_text() == azs.ok("export", f"S{sid}")
    assert sorted(p.name for p in target.parent.iterdir()) == ["deploy.md"]  # no temporary file left

    code, out, err = azs("--json", "export", f"S{sid}", "--redact", "--format", "html", "-o", str(target))
    assert code == 0
    (summary,) = [json.loads(line) for line in out.splitlines()]
    text = target.read_text()
    assert GITHUB_TOKEN not in text and AWS_KEY_ID not in text and "[REDACTED:github-token]" in text
    assert summary == {
        "session": sid, "format": "html", "bytes": len(text.encode()), "path": str(target),
        "masked": {"aws-access-key-id": 1, "github-token": 1},
    }  # fmt: skip
    assert err == "masked 2 secrets (aws-access-key-id: 1, github-token: 1)\n"

    code, out, err = azs("export", f"S{sid}", "--redact")
    assert code == 0 and GITHUB_TOKEN not in out and err.startswith("masked 2 secrets")
    code, _, err = azs("export", f"S{sid}", "-o", str(worktree.parent / "missing" / "x.md"))
    assert code == 1 and err.startswith("azs: cannot write ")
    assert azs.ok("export", f"S{sid}", "--redact", "-o", str(target)).startswith("exported")


def test_export_masks_nothing_in_a_clean_session(azs: Azs, client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree, "clean").session.id
    client.append_events(worktree, sid, [UserMessage(content="the password must be long")])
    code, out, err = azs("export", str(sid), "--redact")
    assert code == 0 and "the password must be long" in out and err == "masked 0 secrets\n"


def _sessions_in(backup: Path) -> tuple[str, set[int], int]:
    conn = sqlite3.connect(f"file:{backup}?mode=ro", uri=True)
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        ids = {row[0] for row in conn.execute("SELECT id FROM sessions")}
        events = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        return integrity, ids, events
    finally:
        conn.close()


def test_backup_to_the_default_place_and_a_relative_dest(
    azs: Azs, client: Client, worktree: Path, monkeypatch: Any
) -> None:
    sids = {_session(client, worktree, f"s{i}") for i in range(3)}
    client.archive_session(worktree, min(sids))  # archived sessions are backed up too
    out = azs.ok("backup")
    found = re.fullmatch(r"backed up 3 sessions, 15 events \((.+)\) to (\S+) · integrity ok\n", out)
    assert found, out
    path = Path(found.group(2))
    assert path.parent == worktree / ".azureal" / "backups" and path.suffix == ".azs"
    assert _sessions_in(path) == ("ok", sids, 15)

    monkeypatch.chdir(worktree.parent)  # a relative DEST: made absolute by azs, not by the daemon
    code, _, err = azs("backup", "copies/mine.azs")  # like cp: the file's directory must exist
    assert code == 1 and "no such directory for the backup" in err and not Path("copies").exists()
    Path("copies").mkdir()
    (reply,) = azs.json("backup", "copies/mine.azs")
    assert "op" not in reply and reply["integrity"] == "ok"
    assert reply["path"] == str(worktree.parent / "copies" / "mine.azs")
    assert (reply["sessions"], reply["events"]) == (3, 15)
    assert reply["bytes"] == Path(reply["path"]).stat().st_size
    assert _sessions_in(Path(reply["path"])) == ("ok", sids, 15)
    code, _, err = azs("backup", "copies/mine.azs")  # an existing file is never overwritten
    assert code == 1 and err.startswith("azs: ")
    (into_dir,) = azs.json("backup", "copies")
    assert Path(into_dir["path"]).parent == worktree.parent / "copies"
