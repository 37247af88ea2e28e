"""`azs import claude|codex` from a fake HOME built of corpus files, and `azs usage`, end to end against
the real daemon (the harness of tests/test_cli.py)."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from azsd.histories import source_dir
from azsd.ingest.importer import claude_slug
from azsd_client import Client
from azsd_client.render.sessions import usage_summary
from azsd_client.render.text import format_tokens
from tests.conftest import CORPUS, corpus_files, requires_corpus
from tests.test_cli import Azs, azs
from tests.test_client import client, daemon, worktree
from tests.test_usage_paths import distinct_copy

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

pytestmark = requires_corpus


def _claude_sources() -> list[Path]:
    """The corpus's Claude session files (not the subagent transcript beside one)."""
    return [f for f in corpus_files("claude-session") if "__subagents__" not in f.name]


def _codex_sources() -> list[Path]:
    """The corpus's Codex rollouts that begin with a `session_meta` (the others name no project)."""
    return [f for f in corpus_files("codex-rollout") if '"type":"session_meta"' in f.read_text()[:400]]


def fake_home(base: Path, project: Path) -> Path:
    """A HOME whose ~/.claude and ~/.codex hold copies of the corpus, as histories of `project`."""
    home = base / "home"
    claude = home / ".claude" / "projects" / claude_slug(project)
    claude.mkdir(parents=True)
    for source in _claude_sources():  # `agent-*.jsonl` would be taken for a subagent transcript
        shutil.copyfile(source, claude / source.name.replace("agent-", "session-", 1))
    day = home / ".codex" / "sessions" / "2026" / "06" / "05"
    day.mkdir(parents=True)
    for i, source in enumerate(_codex_sources()):
        lines = source.read_text().splitlines(keepends=True)
        first = next(n for n, line in enumerate(lines) if '"type":"session_meta"' in line)
        meta = json.loads(lines[first])
        meta["payload"]["cwd"] = str(project)  # the rollout was made in this project
        lines[first] = json.dumps(meta, separators=(",", ":")) + "\n"
        (day / f"rollout-2026-06-05T10-00-0{i}-{source.stem[-12:]}.jsonl").write_text("".join(lines))
    return home


def digests(home: Path) -> dict[str, str]:
    return {
        str(path.relative_to(home)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(home.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def home(worktree: Path, monkeypatch: Any) -> Path:
    made = fake_home(worktree.parent, worktree)
    monkeypatch.setenv("HOME", str(made))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return made


def test_source_dirs_come_from_the_environment() -> None:
    assert source_dir("claude", {"HOME": "/h", "CLAUDE_CONFIG_DIR": "/cc"}) == Path("/cc")
    assert source_dir("claude", {"HOME": "/h"}) == Path("/h/.claude")
    assert source_dir("codex", {"HOME": "/h", "CODEX_HOME": ""}) == Path("/h/.codex")


@pytest.mark.parametrize(
    ("agent", "count"), [("claude", len(_claude_sources())), ("codex", len(_codex_sources()))]
)
def test_import_twice_creates_once_and_leaves_sources_alone(
    azs: Azs, client: Client, worktree: Path, home: Path, agent: str, count: int
) -> None:
    before = digests(home)
    code, out, err = azs("import", agent)
    assert code == 0, err
    sessions = client.list_sessions(worktree).sessions
    events = sum(v.event_count for v in sessions)
    assert len(sessions) == count > 0 and events > 0
    assert (
        out == f"imported {count} sessions ({count} new, 0 updated, 0 already current), {events:,} events\n"
    )
    assert all(v.worktree == "" and v.name for v in sessions)  # outside git: unlabelled, named by prompt
    assert err == ""  # stderr is not a terminal: no progress bar
    assert azs.ok("import", agent) == (
        f"imported {count} sessions (0 new, 0 updated, {count} already current), 0 events\n"
    )
    assert [v.id for v in client.list_sessions(worktree).sessions] == [v.id for v in sessions]
    assert digests(home) == before  # the agent's own files are only read
    (summary,) = azs.json("import", agent)
    assert summary["imported"] == [] and summary["sources"] == count and summary["current"] == count


def test_import_json_progress_and_a_bad_source(
    azs: Azs, client: Client, worktree: Path, home: Path, monkeypatch: Any
) -> None:
    stray = home / ".claude" / "projects" / claude_slug(worktree) / "not-claude.jsonl"
    stray.write_text('{"hello": "world"}\n')

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code, out, _ = azs("--json", "import", "claude", "--project", str(worktree))
    (summary,) = [json.loads(line) for line in out.splitlines()]  # one object, the files in it
    replies = summary["imported"]
    n = len(_claude_sources())
    assert code == 1 and len(replies) == n and all(r["created"] for r in replies)
    assert {r["session"] for r in replies} == {v.id for v in client.list_sessions(worktree).sessions}
    assert (summary["sources"], summary["created"], summary["events"]) == (
        n + 1,
        n,
        sum(r["appended"] for r in replies),
    )
    assert [f["path"] for f in summary["failed"]] == [str(stray)]
    shown = terminal.getvalue()
    assert "importing" in shown and f"0/{n + 1}" in shown  # rich's bar, on a terminal's stderr
    assert f"azs: {stray}: " in shown and shown.endswith(f"azs: 1 of {n + 1} sources failed to import\n")
    assert f"{stray}: {stray}" not in shown  # the file is named once (issue 34)


def test_an_empty_session_file_is_nothing_yet_not_a_failure(
    azs: Azs, client: Client, worktree: Path, home: Path
) -> None:
    """Issue 34: a 0-byte session file (Claude makes them) made every import exit 1, its path said twice."""
    folder = home / ".claude" / "projects" / claude_slug(worktree)
    empty = folder / "0b6f2f7e-empty.jsonl"
    empty.touch()
    code, out, err = azs("import", "claude")
    assert code == 0, err
    assert str(empty) not in out + err
    assert len(client.list_sessions(worktree).sessions) == len(_claude_sources())
    # once it holds something, it is imported like any other
    lines = [
        {"type": "user", "sessionId": "0b6f2f7e", "message": {"role": "user", "content": "a prompt now"}},
        {"type": "assistant", "sessionId": "0b6f2f7e",
         "message": {"id": "msg_0b6f", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "text", "text": "and an answer"}],
                     "usage": {"input_tokens": 5, "output_tokens": 2}}},
    ]  # fmt: skip
    empty.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, err = azs("import", "claude")
    assert code == 0, err
    assert len(client.list_sessions(worktree).sessions) == len(_claude_sources()) + 1


def test_import_from_claude_config_dir_and_nothing_found(
    azs: Azs, worktree: Path, home: Path, monkeypatch: Any
) -> None:
    moved = worktree.parent / "claude-config"
    (home / ".claude").rename(moved)
    assert azs.ok("import", "claude").startswith(f"no claude sessions of {worktree} under {home / '.claude'}")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(moved))
    assert azs.ok("import", "claude").startswith(f"imported {len(_claude_sources())} sessions")


def test_usage_matches_the_usage_request(azs: Azs, client: Client, worktree: Path) -> None:
    source = CORPUS / "claude-session" / "agentcmd__full-session-two.jsonl"
    sid = client.create_session(worktree, "with usage").session.id
    other = client.create_session(worktree, "elsewhere", worktree="other").session.id
    azs.ok("ingest", str(source), "-s", f"S{sid}")
    # other API messages (a copy of the same ones would count once, in the first session)
    azs.ok("ingest", str(distinct_copy(source, "o", worktree.parent)), "-s", f"S{other}")
    reply = client.usage(worktree, worktrees=[""])
    (mine,) = reply.sessions
    u = mine.usage
    assert mine.session == sid and u.input + u.output > 0 and reply.total == u
    (got,) = azs.json("usage")
    assert "op" not in got and got["total"]["input"] == u.input and len(got["sessions"]) == 1
    assert len(azs.json("usage", "--all-worktrees")[0]["sessions"]) == 2
    assert [s["session"] for s in azs.json("usage", f"S{other}")[0]["sessions"]] == [other]  # any worktree
    lines = azs.ok("usage").splitlines()
    row = next(line for line in lines if line.split()[:1] == [f"S{sid}"])
    assert row.split()[3:5] == [f"{u.input:,}", f"{u.output:,}"]
    assert lines[-1].startswith(f"total: {u.input:,} in, {u.output:,} out, {u.cache_read:,} cache read")
    assert f"{u.reasoning:,} reasoning" in lines[-1]

    (view,) = [v for v in azs.json("ls") if v["id"] == sid]
    assert view["usage"] == json.loads(json.dumps(got["sessions"][0]["usage"]))
    listed = next(line for line in azs.ok("ls").splitlines() if f"S{sid}" in line.split())
    shown = usage_summary(u)
    assert shown in listed
    assert shown.startswith(f"{format_tokens(u.input)} in · {format_tokens(u.output)} out")
    assert shown.endswith(f" · {format_tokens(u.cache_read + u.cache_write)} cache")
    header = azs.ok("show", f"S{sid}").splitlines()
    tokens = next(line for line in header if line.startswith("tokens: "))
    assert tokens.startswith(f"tokens: {u.input:,} in, {u.output:,} out, {u.cache_read:,} cache read, ")
    assert f"{u.reasoning:,} reasoning" in tokens  # one number format: as in `azs usage`
