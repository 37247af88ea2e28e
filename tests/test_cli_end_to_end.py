"""The `azs` command end to end against the real daemon (the harness of tests/test_cli.py).

In-process runs call :func:`azsd_client.cli.main`; the concurrency tests run `azs` as separate
processes (``python -m azsd_client.cli``), next to an :class:`~azsd_client.AsyncClient`.
"""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from azsd.events import AssistantText, Complete, ToolCall, ToolResult, UserMessage, decode_event, encode_event
from azsd.ipc import protocol as p
from azsd_client import AsyncClient, Client
from tests.conftest import corpus_files, requires_corpus
from tests.daemon_fixture import DaemonProc
from tests.test_cli import Azs, Lines, azs, json_lines, needs_git, repo, run_main
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "repo", "worktree"]  # the fixtures, re-exported for pytest


def test_status(azs: Azs, daemon: DaemonProc) -> None:
    out = azs.ok("status")
    assert out.startswith("azsd ") and f"endpoint ipc://{daemon.runtime_dir}/rpc" in out
    (status,) = azs.json("status")
    assert status["running"] is True and status["pid"] == daemon.proc.pid
    assert "op" not in status and "protocol" not in status


def test_new_ls_rename_show_rm(azs: Azs, client: Client, worktree: Path) -> None:
    (created,) = azs.json("new", "fix parser", "--worktree", "")
    sid = created["id"]
    assert created["name"] == "fix parser" and created["state"] == "new"
    assert azs.ok("new").startswith("created S")
    assert [v["id"] for v in azs.json("ls")] == [sid + 1, sid]  # latest first
    assert azs.ok("ls").splitlines()[1].split()[:6] == ["new", f"S{sid}", "fix", "parser", "0", "events"]
    assert azs.json("rename", f"S{sid}", "better name")[0]["name"] == "better name"
    client.append_events(
        worktree,
        sid,
        [
            UserMessage(content="why does it panic"),
            ToolCall(tool_use_id="t", tool_name="Read", input={"file_path": "/src/parser.rs"}),
            ToolResult(tool_use_id="t", tool_name="Read", content="fn main() {}", is_error=False),
            AssistantText(text="found it"),
            Complete(success=True, duration_ms=2000, cost_usd=0.1),
        ],
    )
    shown = azs.ok("show", str(sid)).splitlines()
    assert shown[0] == f"✓ S{sid}  better name"
    chars = client.context_meter(worktree, sid).chars
    assert chars > 0
    assert shown[2:] == [
        f"context: {chars} of 400,000 chars (0%)",
        "",
        "    1 » why does it panic",
        "    2   ⚙ Read /src/parser.rs",
        "    3     ↳ fn main() {}",
        "    4   found it",
        "    5 ✓ completed in 2.0s · $0.1000",
    ]
    (shown_json,) = azs.json("show", f"S{sid}")
    assert shown_json["session"]["state"] == "succeeded"
    assert shown_json["session"]["context_chars"] == chars
    events = shown_json["events"]
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5]
    assert events[0] == {
        "seq": 1,
        "kind": "UserMessage",
        "event": {"UserMessage": {"content": "why does it panic"}},
    }
    listed = azs.ok("ls").splitlines()  # one without events yet first: its making is its latest activity
    assert [line.split()[:3] for line in listed] == [["new", f"S{sid + 1}", "0"], ["✓", f"S{sid}", "better"]]
    assert azs.ok("rm", "-y", f"S{sid}") == f"deleted S{sid}\n"
    code, _, err = azs("show", f"S{sid}")
    assert code == 1 and err == f"azs: no session S{sid} in this store\n"
    code, out, err = azs("--json", "show", f"S{sid}")
    assert (code, err) == (1, "")
    assert json_lines(out) == [
        {"error": {"code": "not_found", "message": f"no session S{sid} in this store"}}
    ]


def test_rm_asks_on_a_terminal(azs: Azs, client: Client, worktree: Path, monkeypatch: Any) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    sid = client.create_session(worktree, "keep me").session.id
    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    code, _, err = azs("rm", f"S{sid}")
    assert code == 1 and err.endswith(f"[y/N] azs: S{sid} was not deleted\n")
    assert f"delete S{sid} “keep me” and its 0 events?" in err
    assert client.get_session(worktree, sid).session.name == "keep me"
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    assert azs("rm", f"S{sid}")[0] == 0
    assert client.list_sessions(worktree).total == 0


@needs_git
def test_ls_default_is_this_branch_and_unlabelled(daemon: DaemonProc, client: Client, repo: Path) -> None:
    mine = client.create_session(repo, "mine", worktree="feat-x").session.id
    loose = client.create_session(repo, "loose", worktree="").session.id
    other = client.create_session(repo, "other", worktree="other").session.id
    base = [sys.executable, "-m", "azsd_client.cli", "--runtime-dir", str(daemon.runtime_dir), "--json"]

    def ids(*args: str) -> list[int]:
        done = subprocess.run(
            [*base, *args],
            cwd=repo / "sub" / "dir",
            env=daemon.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        return [v["id"] for v in json_lines(done.stdout)]

    assert ids("ls") == [other, loose, mine][1:]  # no --root: the git top level around the cwd, branch feat-x
    assert ids("ls", "--worktree", "other") == [other]
    assert ids("ls", "--all-worktrees") == [other, loose, mine]
    (made,) = ids("new", "labelled")
    assert client.get_session(repo, made).session.worktree == "feat-x"


def test_context_prints_the_exact_prompt(azs: Azs, client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree).session.id
    assert azs.ok("context", f"S{sid}", "first prompt") == "first prompt\n"  # no transcript yet: the prompt
    client.append_events(worktree, sid, [UserMessage(content="earlier"), AssistantText(text="reply")])
    expected = client.build_context(worktree, sid, "next\n", backend="codex").prompt
    assert expected.endswith("next\n")
    assert azs.ok("context", str(sid), "next\n", "--backend", "codex") == expected  # no second newline
    (reply,) = azs.json("context", str(sid), "x")
    assert reply["prompt"].endswith("</azureal-session-context>\n\nx")  # to the byte
    assert (reply["session"], reply["backend"]) == (sid, "claude") and "op" not in reply


@requires_corpus
def test_ingest_then_search(azs: Azs, client: Client, worktree: Path, monkeypatch: Any) -> None:
    source = corpus_files("claude-session")[0]
    sid = client.create_session(worktree).session.id
    monkeypatch.chdir(source.parent)  # a relative path: azs makes it absolute for the daemon
    (reply,) = azs.json("ingest", source.name, "-s", f"S{sid}")
    assert "op" not in reply and reply["session"] == sid
    assert reply["format"] == "claude-session" and reply["appended"] > 0
    assert client.get_session(worktree, sid).session.event_count == reply["appended"]
    out = azs.ok("ingest", source.name, "-s", str(sid))
    assert out.startswith(f"S{sid}: claude-session: ") and ", 0 stored, " in out
    code, _, err = azs("ingest", "no-such-file.jsonl", "-s", str(sid))
    assert code == 1 and err == "azs: no such file: no-such-file.jsonl\n"
    code, _, err = azs("ingest", ".", "-s", str(sid))  # it said "no such file"
    assert code == 1 and err.startswith("azs: . is a directory: give one agent JSONL file"), err
    empty = worktree / "empty.jsonl"  # (never written beside the corpus)
    empty.write_bytes(b"")
    code, _, err = azs("ingest", str(empty), "-s", str(sid))  # it said "not a JSONL file of any …"
    assert code == 1 and f"{empty} is empty: nothing to ingest" in err, err
    prompt = next(decode_event(e.data) for e in client.get_events(worktree, sid) if e.kind == "UserMessage")
    assert isinstance(prompt, UserMessage)
    word = max(prompt.content.split(), key=len)
    hits = azs.json("search", "--words", word)  # taken literally, not as FTS5 syntax
    assert hits and all(h["session"] == sid for h in hits)
    texts = [decode_event(json.dumps(h["event"])) for h in hits]
    assert any(word in t.content for t in texts if isinstance(t, UserMessage))
    assert azs.ok("search", "--words", word).splitlines()[0].startswith(f"S{sid}  ")
    wrong = worktree / "claude.jsonl"
    shutil.copy(source, wrong)  # it said "0 events parsed … skipped: unknown_type 41" and exited 0
    code, _, err = azs("ingest", str(wrong), "-s", str(sid), "--format", "codex-rollout")
    assert code == 1 and "it looks like claude-session: give `--format claude-session`" in err, err
    assert azs.json("search", "no such text anywhere 9f8e7d") == []


def test_tail_follows_an_append_by_another_client(azs: Azs, client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree).session.id
    client.append_events(worktree, sid, [UserMessage(content="first prompt")])
    tail = Lines(azs.spawn("tail", "-f", f"S{sid}"))
    try:
        tail.wait_for(lambda line: line == "    1 » first prompt")
        time.sleep(1.0)  # past the start-up re-read: what comes now comes through a notification
        client.append_events(worktree, sid, [AssistantText(text="appended later")])
        tail.wait_for(
            lambda line: line == "    2   appended later", timeout=1.5
        )  # before the 3 s idle re-read
        client.append_events(worktree, sid, [Complete(success=True, duration_ms=500, cost_usd=0.0)])
        tail.wait_for(lambda line: line == "    3 ✓ completed in 0.5s")
    finally:
        assert tail.stop() == 0  # Ctrl-C is the way out of `tail -f`


def test_tail_without_follow_and_last_n(azs: Azs, client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree).session.id
    client.append_events(worktree, sid, [AssistantText(text=f"t{i}") for i in range(1, 6)])
    assert azs.ok("tail", f"S{sid}").split() == ["1", "t1", "2", "t2", "3", "t3", "4", "t4", "5", "t5"]
    assert azs.ok("tail", "-n", "2", f"S{sid}").split() == ["4", "t4", "5", "t5"]
    assert [e["seq"] for e in azs.json("tail", "-n", "3", f"S{sid}")] == [3, 4, 5]


def test_two_cli_processes_and_an_async_client_see_each_other(azs: Azs, worktree: Path) -> None:
    asyncio.run(_three_way(azs, worktree))


async def _three_way(azs: Azs, worktree: Path) -> None:
    async with AsyncClient(azs.daemon.config, timeout=10) as aclient:
        sid = (await aclient.create_session(worktree, "shared")).session.id
        watch = Lines(azs.spawn("watch", "--json"))
        tail = Lines(azs.spawn("tail", "-f", "--json", f"S{sid}"))
        try:
            async with aclient.subscribe(worktree) as subscription:
                await _all_joined(aclient, worktree, sid, subscription, [watch, tail])
                await _async_changes_reach_the_cli(aclient, worktree, sid, watch, tail)
                own = await subscription.recv(5)  # the asyncio client hears its own append too
                assert isinstance(own, p.EventsAppended) and own.session_id == sid
                await _cli_changes_reach_the_others(azs, sid, subscription, watch, tail)
        finally:
            assert watch.stop() == 0
            assert tail.stop() == 0


async def _all_joined(
    aclient: AsyncClient, root: Path, sid: int, subscription: Any, readers: list[Lines]
) -> None:
    """Rename until every subscriber has seen a rename (PUB drops what comes before a SUB joins)."""
    seen: set[int] = set()
    for attempt in range(40):
        await aclient.rename_session(root, sid, f"join {attempt}")
        while (note := await subscription.recv(0.1)) is not None:
            if isinstance(note, p.SessionChanged):
                seen.add(-1)
        for i, reader in enumerate(readers):
            if any('"renamed"' in line for line in reader.drain()):
                seen.add(i)
        if seen >= {-1, *range(len(readers))}:
            return
    pytest.fail(f"not every subscriber joined: {seen}")


async def _async_changes_reach_the_cli(
    aclient: AsyncClient, root: Path, sid: int, watch: Lines, tail: Lines
) -> None:
    await aclient.append_events(root, sid, [UserMessage(content="from asyncio")])
    data = encode_event(UserMessage(content="from asyncio")).decode()
    note = await asyncio.to_thread(watch.json_for, lambda n: n["type"] == "appended")
    stored = json.loads(data)
    assert note["session_id"] == sid and [e["event"] for e in note["events"]] == [stored]
    event = await asyncio.to_thread(tail.json_for, lambda n: n.get("event") == stored)
    assert event["kind"] == "UserMessage"


async def _cli_changes_reach_the_others(
    azs: Azs, sid: int, subscription: Any, watch: Lines, tail: Lines
) -> None:
    made = subprocess.run(
        [sys.executable, "-m", "azsd_client.cli", *azs.argv("--json", "new", "from another azs")],
        env=azs.daemon.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert made.returncode == 0, made.stderr
    new_id = json.loads(made.stdout)["id"]
    note = await subscription.recv(5)
    assert isinstance(note, p.SessionCreated) and note.session.id == new_id
    seen = await asyncio.to_thread(watch.json_for, lambda n: n["type"] == "created")
    assert seen["session"]["name"] == "from another azs"
    removed = subprocess.run(
        [sys.executable, "-m", "azsd_client.cli", *azs.argv("rm", "-y", f"S{sid}")],
        env=azs.daemon.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert removed.returncode == 0, removed.stderr
    gone = await subscription.recv(5)
    assert isinstance(gone, p.SessionChanged) and (gone.session_id, gone.change) == (sid, "deleted")
    await asyncio.to_thread(watch.json_for, lambda n: n.get("change") == "deleted")
    await asyncio.to_thread(tail.json_for, lambda n: n.get("change") == "deleted")
    assert await asyncio.to_thread(tail.process.wait, 10) == 0  # `tail -f` ends with its session


@needs_git
def test_a_store_is_made_outside_a_worktree_only_when_root_names_it(
    daemon: DaemonProc,
    repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = ["--runtime-dir", str(daemon.runtime_dir), "--timeout", "10"]
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    for command in (["new"], ["run", "hello"], ["import", "claude"]):
        code, out, err = run_main(capsys, *base, *command)
        assert code == 2, (command, out, err)
        assert "not inside a git worktree" in err and "--root" in err
    assert not (plain / ".azureal").exists()
    code, out, err = run_main(capsys, *base, "ls")  # it creates nothing, and says why there is nothing
    assert (code, out) == (2, "") and "is not inside a git worktree, and holds no sessions" in err, err
    assert not (plain / ".azureal").exists()
    assert run_main(capsys, *base, "--root", str(plain), "new")[0] == 0
    assert (plain / ".azureal" / "sessions.azs").is_file()
    monkeypatch.chdir(repo / "sub" / "dir")
    assert run_main(capsys, *base, "new")[0] == 0
    assert (repo / ".azureal" / "sessions.azs").is_file()


def test_ingest_formats_are_the_daemons() -> None:
    """`azs ingest --format` takes every format the daemon parses, and OpenCode's sessions."""
    from azsd.ingest.parsers import FORMATS
    from azsd_client.commands.arguments import INGEST_FORMATS

    assert set(INGEST_FORMATS) == {*FORMATS, "opencode"}
