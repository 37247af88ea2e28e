"""Compaction end to end (spec §6): `azs compact`, `azs run`'s compaction before a turn, the meter.

The real daemon and `azs` run as subprocesses; tests/fake_agent.py stands in for both agents and
replays a corpus file, so the summary it "writes" is that file's assistant text. Every expectation
is computed here from the spec's rules (`build_compaction_prompt`, `build_context_prompt`, the
boundary rule), never read back from what azsd built.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from azsd.context import ContextPayload, build_compaction_prompt, build_context_prompt
from azsd.errors import RemoteError
from azsd.events import AssistantText, Complete, Event, UserMessage
from azsd.summary import compaction_summary
from azsd_client._shared import Backend
from tests.test_cli_json import check as json_check
from tests.test_run import CLAUDE, CODEX, FAKE_AGENT, World, corpus, daemon, wait_for, world

__all__ = ["daemon", "world"]  # the fixtures, shared with test_run

pytestmark = pytest.mark.corpus


def turns(world: World, count: int, size: int = 400, name: str = "long") -> int:
    """A session of `count` finished turns, each prompt and answer about `size` chars. Its id."""
    sid = world.client.create_session(world.root, name).session.id
    for n in range(count):
        world.client.append_events(
            world.root,
            sid,
            [
                UserMessage(content=f"question {n}: " + "why? " * (size // 5)),
                AssistantText(text=f"answer {n}: " + "because. " * (size // 9)),
                Complete(success=True, duration_ms=10, cost_usd=0.0),
            ],
        )
    return sid


def spec_boundary(events: list[Event], from_seq: int = 1) -> int:
    """§6: the newest 3 prompts stay raw (then 2, then 1): the seq before the keep-th newest prompt."""
    prompts = [seq for seq, e in enumerate(events, 1) if isinstance(e, UserMessage) and seq >= from_seq]
    for keep in (3, 2, 1):
        if len(prompts) > keep:
            return prompts[-keep] - 1
    raise AssertionError("the session has too few prompts to compact")


def summary_of(source: Path) -> str:
    return compaction_summary(source.read_bytes(), "claude-stream-json")


def test_plan_follows_the_boundary_rule_and_needs_two_prompts(world: World) -> None:
    one = turns(world, 1)
    assert world.client.plan_compaction(world.root, one).after_seq is None
    for count, keep in ((2, 1), (3, 2), (4, 3), (6, 3)):
        sid = turns(world, count)
        events = world.raw_events(sid)
        plan = world.client.plan_compaction(world.root, sid)
        assert (plan.after_seq, plan.from_seq, plan.kept_prompts) == (spec_boundary(events), 1, keep)
        assert plan.prompt == build_compaction_prompt(ContextPayload(None, events[: plan.after_seq]))
        assert plan.events == plan.after_seq


def test_compact_stores_the_summary_and_the_next_contexts_are_built_on_it(world: World) -> None:
    source = corpus(CLAUDE)
    world.configure(replay=source)
    sid = turns(world, 5)
    events = world.raw_events(sid)
    boundary = spec_boundary(events)
    summary = summary_of(source)
    assert summary, "the corpus file has no assistant text to summarise with"

    done = world.azs("--json", "compact", f"S{sid}")

    assert done.returncode == 0, world.explain(done)
    report = json.loads(done.stdout)
    json_check("compact", [report])
    assert (report["after_seq"], report["from_seq"], report["backend"]) == (boundary, 1, "claude")
    assert report["summary_chars"] == len(summary)
    [record] = world.records()
    assert record["stdin"] == build_compaction_prompt(ContextPayload(None, events[:boundary]))
    # The next turn's context, on either backend: the summary, then the events after the boundary.
    after = ContextPayload(summary, events[boundary:])
    backends: tuple[tuple[Backend, bool], ...] = (("claude", False), ("codex", True))
    for backend, codex in backends:
        got = world.client.build_context(world.root, sid, "next", backend=backend).prompt
        assert got == build_context_prompt(after, "next", codex=codex)
    meter = world.client.context_meter(world.root, sid)
    assert meter.chars == report["chars_after"] < report["chars_before"]
    assert world.turn_files(sid) == [], "a compaction that stored its summary leaves no file behind"

    # A second compaction carries the first summary forward and starts after its boundary.
    sid_events = len(events)
    world.client.append_events(world.root, sid, [UserMessage(content="one more"), AssistantText(text="ok")])
    world.client.append_events(world.root, sid, [UserMessage(content="and more"), AssistantText(text="ok")])
    events = world.raw_events(sid)
    second = world.client.plan_compaction(world.root, sid)
    assert second.from_seq == boundary + 1
    assert second.after_seq == spec_boundary(events, boundary + 1) and second.after_seq > boundary
    assert second.prompt == build_compaction_prompt(
        ContextPayload(summary, events[boundary : second.after_seq])
    )
    assert len(events) == sid_events + 4


def fake(world: World, *options: str) -> list[str]:
    """A fake agent command line recording to the world's record file."""
    return [sys.executable, str(FAKE_AGENT), "--record", str(world.record), *options]


def test_run_compacts_once_over_the_threshold_and_a_codex_turn_sees_it(world: World) -> None:
    source, codex_source = corpus(CLAUDE), corpus(CODEX)
    world.configure(
        replay=source,
        codex=fake(world, "--read-stdin", "--replay", str(codex_source)),
        settings={"compaction-threshold": 2000},
    )
    sid = turns(world, 4)
    events = world.raw_events(sid)
    assert world.client.context_meter(world.root, sid, threshold=2000).chars >= 2000
    boundary, summary = spec_boundary(events), summary_of(source)

    done = world.azs("run", "-s", f"S{sid}", "go on")

    assert done.returncode == 0, world.explain(done)
    assert "at or over compaction-threshold (2,000): compacting it first" in done.stderr
    assert f"compacting S{sid}: summarising seqs 1–{boundary}" in done.stderr
    assert f"compacted S{sid} with claude" in done.stderr
    compaction, turn = world.records()
    assert compaction["stdin"] == build_compaction_prompt(ContextPayload(None, events[:boundary]))
    assert turn["stdin"] == build_context_prompt(ContextPayload(summary, events[boundary:]), "go on")

    events = world.raw_events(sid)
    again = world.azs("run", "-s", f"S{sid}", "--backend", "codex", "--no-compact", "and again")

    assert again.returncode == 0, world.explain(again)
    assert "compacting" not in again.stderr
    records = world.records()
    assert len(records) == 3, "--no-compact ran a compaction"
    want = build_context_prompt(ContextPayload(summary, events[boundary:]), "and again", codex=True)
    assert records[2]["stdin"] == want, "the Codex turn did not get the Claude compaction's summary"


def context_of(world: World, sid: int) -> str:
    return world.client.build_context(world.root, sid, "next").prompt


def test_a_compaction_that_fails_leaves_the_session_as_it_was(world: World) -> None:
    # Both agents run, exit 1 and write nothing: one retry (AZUREAL's rule), then a clear error.
    world.configure(claude=fake(world, "--exit", "1", "--stderr", "model overloaded"))
    sid = turns(world, 4)
    before = (context_of(world, sid), world.raw_events(sid), world.view(sid))

    done = world.azs("compact", f"S{sid}")

    assert done.returncode == 1, world.explain(done)
    assert (
        f"S{sid} was not compacted: claude wrote no summary (exit status 1: model overloaded)" in done.stderr
    )
    assert len(world.records()) == 2, "an empty summary is asked for exactly once more"
    assert (context_of(world, sid), world.raw_events(sid), world.view(sid)) == before

    # `azs run` says so and runs the turn with the whole context (the agent fails that too, here).
    world.configure(claude=fake(world, "--exit", "1"), settings={"compaction-threshold": 1000})
    run = world.azs("run", "-s", f"S{sid}", "go on")
    assert "the turn gets the whole context" in run.stderr, world.explain(run)
    records = world.records()
    assert len(records) == 5, "the turn did not run after the failed compaction"
    assert records[-1]["stdin"] == build_context_prompt(ContextPayload(None, before[1]), "go on")


def test_an_agent_that_cannot_start_falls_back_to_the_other_backend(world: World) -> None:
    source = corpus(CLAUDE)
    world.configure(
        claude=["/nonexistent/claude"], codex=fake(world, "--read-stdin", "--replay", str(source))
    )
    sid = turns(world, 3)

    done = world.azs("--json", "compact", f"S{sid}")

    # The "codex" here replays a Claude file, which holds no Codex agent message: no summary, so
    # the fallback is seen through what it was given and the clear error that follows.
    [first, second] = world.records()
    assert first["stdin"] == second["stdin"] == world.client.plan_compaction(world.root, sid).prompt
    assert done.returncode == 1 and "codex wrote no summary" in done.stderr, world.explain(done)


def test_nothing_to_compact_is_said(world: World) -> None:
    world.configure(replay=corpus(CLAUDE))
    sid = turns(world, 1)
    done = world.azs("compact", f"S{sid}")
    assert done.returncode == 1
    assert "needs at least two prompts since its latest compaction" in done.stderr
    assert world.records() == []
    missing = world.azs("compact", "S999")
    assert missing.returncode == 1 and "S999" in missing.stderr


def test_ctrl_c_stops_the_compaction_and_stores_nothing(world: World) -> None:
    world.configure(replay=corpus(CLAUDE), options=("--delay", "0.2"))
    sid = turns(world, 4)
    before = context_of(world, sid)
    proc = world.spawn("compact", f"S{sid}")
    wait_for(world.records, "the compaction agent starting")
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert f"S{sid} is as it was (nothing stored)" in err
    assert context_of(world, sid) == before
    assert world.client.plan_compaction(world.root, sid).from_seq == 1


def test_the_meter_shows_in_show_and_ls_json(world: World) -> None:
    world.configure(replay=corpus(CLAUDE), settings={"compaction-threshold": 1000})
    sid = turns(world, 2)
    chars = world.client.context_meter(world.root, sid).chars
    assert chars > 1000

    shown = world.azs("show", f"S{sid}")
    listed = world.azs("--json", "ls")

    assert shown.returncode == 0, world.explain(shown)
    pct = 100 * chars // 1000
    assert f"context: {chars:,} of 1,000 chars ({pct}%): the next `azs run -s S{sid}` compacts it first" in (
        shown.stdout
    )
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [r["context_chars"] for r in rows if r["id"] == sid] == [chars]


def test_compact_with_output_refuses_bad_paths_and_stores_nothing(world: World, tmp_path: Path) -> None:
    sid = turns(world, 3)
    before = context_of(world, sid)
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b'{"type":"result","subtype":"success"}\n')
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = {
        str(fifo): "is not a regular file",
        str(tmp_path): "is not a regular file",
        str(tmp_path / "missing.jsonl"): "cannot read",
    }
    for path, said in cases.items():
        with pytest.raises(RemoteError, match=said) as caught:
            world.client.compact_with_output(world.root, sid, 2, path, "claude-stream-json")
        assert caught.value.code == "bad_request", str(caught.value)
    with pytest.raises(RemoteError, match="unknown format"):
        world.client.compact_with_output(world.root, sid, 2, empty, "yaml")
    assert world.client.compact_with_output(world.root, sid, 2, empty, "claude-stream-json").stored is False
    assert context_of(world, sid) == before
    assert world.client.status().pid == world.daemon.proc.pid


def test_a_compaction_never_lands_in_another_session_of_the_same_number(world: World) -> None:
    """Planned for S1; AZUREAL deletes S1, VACUUMs and gives the number to a new session (spec §7):
    the summary is refused, not stored into the new S1. `after_seq` must be one of the session's."""
    sid = turns(world, 3)
    plan = world.client.plan_compaction(world.root, sid)
    assert plan.after_seq is not None and plan.identity
    with pytest.raises(RemoteError, match="after_seq must be a seq of") as caught:
        world.client.store_compaction(world.root, sid, 10, "past its end", identity=plan.identity)
    assert caught.value.code == "bad_request"
    with pytest.raises(RemoteError, match="after_seq must be a seq of"):
        world.client.store_compaction(world.root, sid, 0, "before its start")

    conn = sqlite3.connect(world.root / ".azureal" / "sessions.azs", isolation_level=None, timeout=5)
    try:  # AZUREAL's delete_session, then its create_session: next_s_number() = max(id) + 1
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM sessions WHERE id = ?", (sid,))
        conn.execute("VACUUM")
        conn.execute(
            "INSERT INTO sessions (id, worktree) VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM sessions), '')"
        )
        assert conn.execute("SELECT MAX(id) FROM sessions").fetchone()[0] == sid
    finally:
        conn.close()
    world.client.append_events(world.root, sid, [UserMessage(content=f"new {n}") for n in range(12)])
    with pytest.raises(RemoteError, match="no longer the session") as caught:
        world.client.store_compaction(world.root, sid, plan.after_seq, "old summary", identity=plan.identity)
    assert caught.value.code == "not_found"
    with pytest.raises(RemoteError, match="no longer the session"):
        world.client.compact_with_output(
            world.root,
            sid,
            plan.after_seq,
            world.root / "x.jsonl",
            "claude-stream-json",
            identity=plan.identity,
        )
    assert world.client.context_meter(world.root, sid).chars > 0
    assert "old summary" not in context_of(world, sid)
    fresh = world.client.plan_compaction(world.root, sid)
    assert fresh.identity and fresh.identity != plan.identity
    assert fresh.after_seq is not None
    world.client.store_compaction(world.root, sid, fresh.after_seq, "new summary", identity=fresh.identity)
    assert "new summary" in context_of(world, sid)
