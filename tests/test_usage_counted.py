"""Every token counted once: a message copied into another file (`claude --resume`), an orphaned
sub-agent file, two runs of one agent session, turns that are turns, and the usage of removed
sessions, which stays in the reports (a ledger), with its migration from older stores.

Each transcript is written line by line here, so what each report must say is worked out from the
lines themselves: the tokens of each distinct API message id, once.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from azsd.ingest.importer import claude_slug
from azsd.model import Usage, UsagePart
from azsd.store import Store, store_path
from azsd_client import Client
from tests.test_cli import Azs, azs
from tests.test_client import client, daemon, worktree
from tests.test_usage_prices import assistant, write

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

MODEL = "claude-sonnet-4-5-20250929"


def prompt(session: str, text: str, at: str) -> dict[str, Any]:
    return {
        "type": "user", "sessionId": session, "uuid": f"p-{text}", "parentUuid": None, "timestamp": at,
        "message": {"role": "user", "content": text},
    }  # fmt: skip


def reply(session: str, n: int, at: str, tokens: int = 1000) -> dict[str, Any]:
    """Message `msg_<n>`: `tokens` of input, a tenth of it out, twice it read from the cache."""
    usage = {"input_tokens": tokens, "output_tokens": tokens // 10, "cache_read_input_tokens": 2 * tokens}
    return assistant(n, MODEL, usage, at=at, sessionId=session)


def tokens_of(*files: Path) -> Usage:
    """The tokens of every distinct message id in `files`, once (the last line of each: its final count)."""
    final: dict[str, dict[str, int]] = {}
    for path in files:
        for line in path.read_text().splitlines():
            obj = json.loads(line)
            message = obj.get("message") or {}
            if obj.get("type") == "assistant" and message.get("model") != "<synthetic>":
                final.setdefault(message["id"], message["usage"])
    return Usage(
        input=sum(u.get("input_tokens", 0) for u in final.values()),
        output=sum(u.get("output_tokens", 0) for u in final.values()),
        cache_read=sum(u.get("cache_read_input_tokens", 0) for u in final.values()),
        cache_write=sum(u.get("cache_creation_input_tokens", 0) for u in final.values()),
    )


def total(azs: Azs, *args: str) -> Usage:
    (reply_,) = azs.json("usage", "--all-worktrees", *args)
    t = reply_["total"]
    kinds = ("input", "output", "cache_read", "cache_write")
    return Usage(**{kind: t[kind] for kind in kinds})


def project_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A project and its Claude directory (`CLAUDE_CONFIG_DIR/projects/<slug>`)."""
    project, config = tmp_path / "proj", tmp_path / "claude"
    project.mkdir()
    slug = config / "projects" / claude_slug(project)
    slug.mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    return project, slug


@pytest.mark.parametrize("copy_first", [False, True])
def test_a_resumed_copy_counts_each_message_once(
    azs: Azs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copy_first: bool
) -> None:
    project, slug = project_dir(tmp_path, monkeypatch)
    a, b = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
    original = write(slug / f"{a}.jsonl", [
        prompt(a, "one", "2026-05-02T10:00:00Z"), reply(a, 1, "2026-05-02T10:00:05Z"),
        prompt(a, "two", "2026-05-02T10:01:00Z"), reply(a, 2, "2026-05-02T10:01:05Z", 3000),
    ])  # fmt: skip
    # `claude --resume` writes a new file that starts with the session it resumes, its ids and all
    copied = [{**json.loads(line), "sessionId": b} for line in original.read_text().splitlines()]
    resumed = write(slug / f"{b}.jsonl", [
        *copied, prompt(b, "three", "2026-05-03T09:00:00Z"), reply(b, 3, "2026-05-03T09:00:05Z", 500),
    ])  # fmt: skip
    first, second = (resumed, original) if copy_first else (original, resumed)
    os.utime(first, (1_700_000_000, 1_700_000_000))
    os.utime(second, (1_700_000_100, 1_700_000_100))
    (summary,) = azs.json("import", "claude", "--project", str(project))
    assert summary["created"] == 2
    want = tokens_of(original, resumed)
    assert want == Usage(input=4500, output=450, cache_read=9000)
    assert total(azs) == want  # not the 4 000 of messages 1 and 2 twice
    # each message counts in the session that was imported first
    (by_session,) = azs.json("usage", "--by", "session", "--all-worktrees")
    assert sum(p["usage"]["input"] for p in by_session["periods"]) == 4500
    assert len(by_session["periods"]) == (1 if copy_first else 2)
    (again,) = azs.json("import", "claude", "--project", str(project))
    assert again["current"] == 2 and total(azs) == want  # importing again counts nothing twice


def test_an_orphaned_subagent_counts_once_whether_or_not_its_session_comes_back(
    azs: Azs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, slug = project_dir(tmp_path, monkeypatch)
    parent, gone = "cccccccc-0000-4000-8000-000000000003", "dddddddd-0000-4000-8000-000000000004"
    # 2.0.x: `agent-*.jsonl` beside the sessions, its session named only inside; 2.1.x: in <id>/subagents/
    old = write(slug / "agent-0a1b2c3d.jsonl", [
        prompt(parent, "task", "2026-05-02T10:00:00Z"), reply(parent, 11, "2026-05-02T10:00:05Z", 700),
    ])  # fmt: skip
    (slug / gone / "subagents").mkdir(parents=True)
    new = write(slug / gone / "subagents" / "agent-a1b2.jsonl", [
        prompt(gone, "task", "2026-05-02T11:00:00Z"), reply(gone, 12, "2026-05-02T11:00:05Z", 300),
    ])  # fmt: skip
    (summary,) = azs.json("import", "claude", "--project", str(project))
    assert summary["created"] == 2, "each orphan is a session of its own, as ccusage counts it"
    assert total(azs) == tokens_of(old, new)
    # the parent's file appears later: the sub-agent is not counted again under it
    back = write(slug / f"{parent}.jsonl", [
        prompt(parent, "go", "2026-05-02T09:59:00Z"), reply(parent, 10, "2026-05-02T09:59:30Z", 2000),
    ])  # fmt: skip
    azs.json("import", "claude", "--project", str(project))
    assert total(azs) == tokens_of(old, new, back)


def test_two_runs_of_one_agent_session_are_two_runs(client: Client, worktree: Path, tmp_path: Path) -> None:
    """`claude -p --resume X` run twice: two stream-json files of the same agent session id."""

    def run(n: int) -> Path:
        message: dict[str, Any] = {
            "id": f"msg_run{n}", "type": "message", "role": "assistant", "model": MODEL,
            "content": [{"type": "text", "text": "done"}],
            "usage": {"input_tokens": 100 * n, "output_tokens": 10},
        }  # fmt: skip
        lines: list[dict[str, Any]] = [
            {"type": "system", "subtype": "init", "session_id": "shared", "model": MODEL, "cwd": "/w"},
            {"type": "assistant", "session_id": "shared", "message": message},
            {"type": "result", "subtype": "success", "session_id": "shared", "is_error": False,
             "duration_ms": 1000, "total_cost_usd": 0.11,
             "usage": {"input_tokens": 100 * n, "output_tokens": 10}},
        ]  # fmt: skip
        return write(tmp_path / f"run-{n}.jsonl", lines)

    sid = client.create_session(worktree, "resumed twice").session.id
    client.ingest_file(worktree, sid, run(1))
    client.ingest_file(worktree, sid, run(2))
    (row,) = client.usage(worktree, sid).sessions
    assert (row.usage.input, row.turns) == (300, 2)  # not one run replacing the other
    assert row.usage.cost_usd == pytest.approx(0.22) and row.usage.cost_source == "reported"


def test_removed_sessions_stay_in_the_reports_unless_excluded(
    azs: Azs, client: Client, worktree: Path, tmp_path: Path
) -> None:
    s = "eeeeeeee-0000-4000-8000-000000000005"
    day = "2026-05-02T1"
    kept = write(tmp_path / "kept.jsonl", [prompt(s, "a", f"{day}0:00:00Z"), reply(s, 21, f"{day}0:00:05Z")])
    gone = write(
        tmp_path / "gone.jsonl", [prompt(s, "b", f"{day}1:00:00Z"), reply(s, 22, f"{day}1:00:05Z", 400)]
    )
    keep = client.create_session(worktree, "kept").session.id
    doomed = client.create_session(worktree, "gone").session.id
    client.ingest_file(worktree, keep, kept)
    client.ingest_file(worktree, doomed, gone)
    azs.ok("rm", "-y", f"S{doomed}")
    assert total(azs, "--by", "day") == tokens_of(kept, gone)  # the money was spent
    assert total(azs, "--by", "day", "--exclude-removed") == tokens_of(kept)
    (listed,) = azs.json("usage")
    assert [(r["session"], r["removed"]) for r in listed["sessions"]] == [(keep, False), (doomed, True)]
    assert "gone (removed)" in azs.ok("usage", "--by", "session", "--timezone", "UTC")
    # a report by period lists no sessions in --json unless asked
    (by_day,) = azs.json("usage", "--by", "day")
    assert by_day["sessions"] == [] and by_day["periods"]
    (with_sessions,) = azs.json("usage", "--by", "day", "--sessions")
    assert len(with_sessions["sessions"]) == 2
    # a copy of the removed session's messages, ingested later, is not counted again
    copy = client.create_session(worktree, "copy").session.id
    client.ingest_file(worktree, copy, distinct_path(gone, tmp_path))
    assert total(azs, "--by", "day") == tokens_of(kept, gone)


def distinct_path(path: Path, tmp_path: Path) -> Path:
    """The same lines in another file (a copy, as `--resume` makes)."""
    copy = tmp_path / f"copy-{path.name}"
    copy.write_bytes(path.read_bytes())
    return copy


def test_an_older_stores_usage_rows_are_kept_and_each_run_is_one_turn(tmp_path: Path) -> None:
    at = 1_700_000_100.0
    part = UsagePart(model=MODEL, usage=Usage(input=5), slot=int(at // 900 * 900), first=at, last=at)
    with Store.open(tmp_path) as store:
        sid = store.create_session().id
        store.record_usage(sid, "agent-session-id", [part])
        store.record_usage(sid, "/older/run.jsonl", [part])
    conn = sqlite3.connect(store_path(tmp_path))  # as the azsd before turns and the ledger left it
    conn.executescript(
        "ALTER TABLE azsd_usage DROP COLUMN turns; DROP TABLE azsd_usage_claims; "
        "DROP TABLE azsd_usage_removed; DROP TABLE azsd_usage_removed_claims;"
    )
    conn.close()
    with Store.open(tmp_path) as store:
        usage = store.session_usage(sid)
        assert (usage.usage.input, usage.turns) == (10, 2)
        # recording the run again under its file, as azsd now keys runs, replaces the older record
        store.record_usage(sid, "/now/run.jsonl", [part], replaces="agent-session-id", turns=3)
        assert (store.session_usage(sid).usage.input, store.session_usage(sid).turns) == (10, 4)


def test_an_older_stores_message_ids_become_digests_and_still_count_once(tmp_path: Path) -> None:
    """A store from before the claims were digests kept each message id as text beside its run's
    path: the writer's first open makes them digests, and every claim still holds."""
    at = 1_700_000_100.0
    part = UsagePart(model=MODEL, usage=Usage(input=5), slot=int(at // 900 * 900), first=at, last=at)
    with Store.open(tmp_path) as store:
        sid = store.create_session().id
        store.record_usage(sid, "/runs/one.jsonl", [part])
    conn = sqlite3.connect(store_path(tmp_path))  # as the azsd before digests left it
    conn.executescript(
        "DROP TABLE azsd_usage_claims; DROP TABLE azsd_usage_removed_claims;"
        "CREATE TABLE azsd_usage_keys (key TEXT PRIMARY KEY, session_id INTEGER NOT NULL "
        "REFERENCES sessions(id) ON DELETE CASCADE, source TEXT NOT NULL) WITHOUT ROWID;"
        "CREATE INDEX azsd_usage_keys_run ON azsd_usage_keys(session_id, source);"
        "CREATE TABLE azsd_usage_removed_keys (key TEXT PRIMARY KEY, session_id INTEGER NOT NULL) "
        "WITHOUT ROWID;"
    )
    conn.executemany(
        "INSERT INTO azsd_usage_keys VALUES (?, ?, ?)",
        [("msg_01A", sid, "/runs/one.jsonl"), ("msg_01B", sid, "/runs/one.jsonl")],
    )
    conn.execute("INSERT INTO azsd_usage_removed_keys VALUES ('msg_01C', 99)")
    conn.commit()
    conn.close()
    with Store.open(tmp_path) as store:
        assert store.usage_counted_elsewhere("msg_01A", sid, "/runs/two.jsonl")  # a copy in another run
        assert not store.usage_counted_elsewhere("msg_01A", sid, "/runs/one.jsonl")  # its own run
        counted = store.usage_keys_counted(["msg_01B", "msg_01C", "msg_01D"], claim=False)
        assert counted == {"msg_01B", "msg_01C"}
        assert len(store.counted_usage_keys()) == 3
    conn = sqlite3.connect(store_path(tmp_path))
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    kinds = conn.execute("SELECT DISTINCT typeof(key), typeof(run) FROM azsd_usage_claims").fetchall()
    conn.close()
    assert not tables & {"azsd_usage_keys", "azsd_usage_removed_keys", "azsd_usage_keys_run"}
    assert kinds == [("integer", "integer")]  # no id, no path kept as text


def test_a_reader_of_a_store_not_opened_since_the_upgrade_gives_its_ids_as_digests(tmp_path: Path) -> None:
    """The daemon takes every store's claims into the account at its start, reading each store on a
    reader: one its writer has not opened since the upgrade still holds the ids as text."""
    at = 1_700_000_100.0
    part = UsagePart(model=MODEL, usage=Usage(input=5), slot=int(at // 900 * 900), first=at, last=at)
    with Store.open(tmp_path) as store:
        sid = store.create_session().id
        store.record_usage(sid, "/runs/one.jsonl", [part], keys=["msg_01A", "msg_01B"])
        digests = sorted(store.counted_usage_keys())
    conn = sqlite3.connect(store_path(tmp_path))  # as the azsd before digests left it
    conn.executescript(
        "DROP TABLE azsd_usage_claims; DROP TABLE azsd_usage_removed_claims;"
        "CREATE TABLE azsd_usage_keys (key TEXT PRIMARY KEY, session_id INTEGER NOT NULL, "
        "source TEXT NOT NULL) WITHOUT ROWID;"
        "CREATE TABLE azsd_usage_removed_keys (key TEXT PRIMARY KEY, session_id INTEGER NOT NULL) "
        "WITHOUT ROWID;"
    )
    conn.execute("INSERT INTO azsd_usage_keys VALUES ('msg_01A', ?, 'r'), ('msg_01B', ?, 'r')", (sid, sid))
    conn.commit()
    conn.close()
    with Store.open(tmp_path, reader=True) as reader:
        assert sorted(reader.counted_usage_keys()) == digests and len(digests) == 2
        assert reader.usage_keys_counted(["msg_01A"], claim=False) == set()  # (no claims table to ask)
