"""docs/cli-json.md is the contract of `azs --json`: every command is documented there, and what each
prints (against the real daemon) has the top-level keys of one of its documented examples."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from azsd.events import AssistantText, UserMessage
from azsd_client import Client
from azsd_client.commands import COMMANDS
from tests.conftest import corpus_files, requires_corpus
from tests.daemon_fixture import short_tmpdir
from tests.test_cli import Azs, Lines, azs, json_lines, run_main
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli-json.md"


def documented() -> dict[str, list[frozenset[str]]]:
    """For each command, the key sets of the examples under its heading (a heading may name several)."""
    shapes: dict[str, list[frozenset[str]]] = {}
    names: list[str] = []
    in_block = False
    for line in DOC.read_text().splitlines():
        if line.startswith("#"):
            names = re.findall(r"`azs (\w+)`", line) if line.startswith("### ") else []
            if line.startswith("## Errors"):
                names = ["(error)"]
        elif line.startswith("```json"):
            in_block = True
        elif line.startswith("```"):
            in_block = False
        elif in_block and names and line.strip():
            for name in names:
                shapes.setdefault(name, []).append(frozenset(json.loads(line)))
    return shapes


SHAPES = documented()


def check(command: str, lines: list[dict[str, Any]]) -> None:
    assert lines, command
    for line in lines:
        assert frozenset(line) in SHAPES[command], (command, sorted(line), SHAPES[command])
        assert ("op" not in line and "protocol" not in line) or command == "protocol"


def test_every_command_is_documented() -> None:
    assert {c.name for c in COMMANDS} <= set(SHAPES), {c.name for c in COMMANDS} - set(SHAPES)
    assert SHAPES["(error)"] == [frozenset({"error"})]


def test_each_command_prints_its_documented_shape(
    azs: Azs, client: Client, worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def out(*args: str) -> list[dict[str, Any]]:
        return azs.json(*args)

    check("status", out("status"))
    check("new", made := out("new", "json shapes"))
    sid = made[0]["id"]
    client.append_events(
        worktree, sid, [UserMessage(content="find the panic"), AssistantText(text="a panic")]
    )
    check("ls", out("ls"))
    check("rename", out("rename", str(sid), "renamed"))
    check("archive", out("archive", str(sid)))
    check("unarchive", out("unarchive", str(sid)))
    check("fork", forked := out("fork", str(sid), "--at", "-1"))
    check("show", shown := out("show", str(sid)))
    assert [e["seq"] for e in shown[0]["events"]] == [1, 2] and set(shown[0]["events"][0]) == {
        "seq", "kind", "event"
    }  # fmt: skip
    check("tail", out("tail", str(sid)))
    check("run", out("tail", str(sid)))  # `azs run` prints the same events (tests/test_run.py runs it)
    check("context", out("context", str(sid), "next"))
    check("search", out("search", "panic"))
    check("search", out("search", "-C", "1", "panic"))
    check("log", out("log", str(sid)))
    check("usage", out("usage"))
    check("export", out("export", str(sid), "-o", str(worktree / "s.md")))
    check("backup", out("backup"))
    check("doctor", out("doctor"))
    check("protocol", out("protocol"))
    check("prune", out("prune", "--full-before", "2001-01-01"))
    check("completion", out("completion", "fish"))
    check("rm", out("rm", "-y", str(forked[0]["id"])))
    monkeypatch.setenv("HOME", str(worktree / "home"))  # no agent histories: nothing to import
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    check("import", out("import", "claude"))
    code, printed, _ = azs("--json", "show", "S999")
    assert code == 1
    check("(error)", json_lines(printed))
    watch = Lines(azs.spawn("watch", "--json"))
    try:
        for attempt in range(40):  # PUB drops what comes before the subscription is made
            client.rename_session(worktree, sid, f"watched {attempt}")
            if seen := watch.drain():
                check("watch", [json.loads(line) for line in seen])
                break
        else:
            pytest.fail("watch printed nothing")
    finally:
        assert watch.stop() == 0


def test_status_without_a_daemon(capsys: pytest.CaptureFixture[str]) -> None:
    empty = short_tmpdir()
    try:
        code, printed, _ = run_main(capsys, "--runtime-dir", str(empty), "--json", "status")
        assert code == 3
        check("status", json_lines(printed))
    finally:
        shutil.rmtree(empty)


@requires_corpus
def test_agent_file_commands(azs: Azs, client: Client, worktree: Path) -> None:
    source = worktree / "session.jsonl"
    shutil.copy(corpus_files("claude-session")[0], source)  # never written beside the corpus
    sid = client.create_session(worktree).session.id
    check("ingest", azs.json("ingest", str(source), "-s", str(sid)))
    check("follow", azs.json("follow", str(source), "-s", str(sid)))
    check("unfollow", azs.json("unfollow", str(source)))
