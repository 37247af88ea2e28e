"""A session's state tells the truth: new, running only while followed or run, then succeeded.

The real daemon, `azs` and tests/fake_agent.py, through the harness of tests/test_run.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import corpus_files, requires_corpus
from tests.test_run import CLAUDE, TIMEOUT_S, World, corpus, daemon, outcome, wait_for, world

__all__ = ["daemon", "world"]  # the fixtures, re-exported for pytest

pytestmark = [pytest.mark.corpus, requires_corpus]


# -- a session's state tells the truth ----------------------------------------------------------------

ALL_CORPUS = corpus_files()


def test_no_ingested_corpus_file_shows_as_running(world: World) -> None:
    assert len(ALL_CORPUS) >= 30
    states: dict[str, str] = {}
    for source in ALL_CORPUS:
        sid = world.client.create_session(world.root, source.stem).session.id
        world.client.ingest_file(world.root, sid, source)
        events = world.raw_events(sid)
        success = outcome(events)
        expected = "new" if not events else {True: "succeeded", False: "failed", None: "ended"}[success]
        states[source.name] = world.view(sid).state
        assert states[source.name] == expected, source
    assert "running" not in states.values(), states
    assert "ended" in states.values(), "the corpus has transcripts without a completion marker"
    listed = world.client.list_sessions(world.root).sessions
    assert {v.state for v in listed} == set(states.values())
    ls = world.azs("ls")
    assert ls.returncode == 0, world.explain(ls)
    assert "●" not in ls.stdout and "○" in ls.stdout


def test_a_session_is_new_without_events_and_running_only_while_followed(
    world: World, tmp_path: Path
) -> None:
    source = corpus(CLAUDE)
    lines = source.read_bytes().splitlines(keepends=True)
    half = lines[: len(lines) // 2]
    live = tmp_path / "agent.jsonl"
    live.write_bytes(b"")
    sid = world.client.create_session(world.root, "followed").session.id
    assert world.view(sid).state == "new"

    world.client.follow(world.root, sid, live, "claude-stream-json")
    assert world.view(sid).state == "running", "an active follow into an empty session"
    live.write_bytes(b"".join(half))
    wait_for(lambda: len(world.raw_events(sid)) > 2, "the file's lines stored")
    assert outcome(world.raw_events(sid)) is None
    assert world.view(sid).state == "running"
    assert [v.state for v in world.client.list_sessions(world.root).sessions] == ["running"]
    ls = world.azs("ls")
    assert ls.returncode == 0 and "●" in ls.stdout, world.explain(ls)

    world.client.unfollow(world.root, live)

    assert world.view(sid).state == "ended", "nothing follows it and it has no completion marker"
    assert [v.state for v in world.client.list_sessions(world.root).sessions] == ["ended"]
    ls = world.azs("ls")
    assert ls.returncode == 0 and "○" in ls.stdout and "●" not in ls.stdout, world.explain(ls)

    world.client.follow(world.root, sid, live, "claude-stream-json")
    assert world.view(sid).state == "running", "followed again"
    with live.open("ab") as sink:
        sink.write(b"".join(lines[len(half) :]))
    wait_for(lambda: not world.follows(), "the follow to end at the turn's last event")
    assert world.view(sid).state == "succeeded"


def test_a_run_is_running_while_its_agent_writes_and_succeeded_after(world: World) -> None:
    source = corpus(CLAUDE)
    world.configure(replay=source, options=("--delay", "0.2"))
    process = world.spawn("run", "slowly")
    try:
        wait_for(lambda: world.client.list_sessions(world.root).total, "the session created")
        wait_for(lambda: len(world.raw_events()) >= 3, "the turn's first events stored")
        during = world.view().state
        out, err = process.communicate(timeout=TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == 0, f"{out}\n{err}"
    assert during == "running"
    assert world.view().state == "succeeded"
