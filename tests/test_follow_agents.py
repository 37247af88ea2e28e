"""Live follow of an Aider chat history and of an OpenCode session through the real daemon: written
piece by piece, a torn last block waiting, a kill -9 in between, and the same events as an import."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.compact import prepare_for_store
from azsd.events import Complete, decode_event, encode_event
from azsd.ingest.opencode import finished_messages, open_source, parse_session
from azsd.ingest.parsers.aider import AiderParser
from azsd.ipc import protocol as p
from tests.daemon_fixture import DaemonProc, short_tmpdir, start_daemon
from tests.opencode_fixture import OpenCodeBuilder
from tests.test_follow import follow, stored, wait_for, write_slowly

DATA = Path(__file__).parent / "data" / "aider"


@pytest.fixture
def env() -> Iterator[tuple[Path, Path, DaemonProc, int]]:
    base, root = short_tmpdir(), short_tmpdir()
    d = start_daemon(base / "run")
    created = d.request(p.CreateSession(root=str(root)))
    assert isinstance(created, p.SessionReply)
    try:
        yield base, root, d, created.session.id
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


def _live(d: DaemonProc) -> p.FollowView:
    status = d.request(p.Status())
    assert isinstance(status, p.StatusReply)
    (live,) = [f for f in status.follows if f.active]
    return live


def _kinds(data: list[str]) -> list[str]:
    return [type(decode_event(d)).__name__ for d in data]


def _no_wall_time(data: list[str]) -> list[str]:
    out = []
    for d in data:
        event = decode_event(d)
        if isinstance(event, Complete):
            event = Complete(success=event.success, duration_ms=0, cost_usd=event.cost_usd)
        out.append(encode_event(event).decode())
    return out


def test_aider_history_followed_live_waits_for_a_torn_block(env: tuple[Path, Path, DaemonProc, int]) -> None:
    _, root, d, sid = env
    src = DATA / "aider__v0.51-cache-write.md"
    parser = AiderParser()
    want = [
        encode_event(e).decode() for e in prepare_for_store(parser.feed_all(src.read_bytes().splitlines()))
    ]
    target = root / ".aider.chat.history.md"
    target.write_bytes(b"")
    view = follow(d, root, sid, target)
    write_slowly(src, target, delay=0.001)
    deadline = time.monotonic() + 20
    while _live(d).offset < target.stat().st_size and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    got = stored(d, root, sid)  # all of it read, but the last block waits for a line after it
    assert _no_wall_time(got) == _no_wall_time(want[: len(got)]) and len(got) < len(want)
    live = _live(d)  # many runs in one file: no event ends the follow
    assert live.format == "aider" and view.offset == 0
    with target.open("ab") as out:
        out.write(b"\n# aider chat started at 2024-08-20 10:00:00\n\n")
    got = wait_for(d, root, sid, len(want) + 1)
    assert _kinds(got)[-1] == "Complete" and _no_wall_time(got)[: len(want)] == _no_wall_time(want)
    assert isinstance(d.request(p.Unfollow(root=str(root), path=str(target))), p.OkReply)


def test_opencode_session_followed_live_through_data_version_and_a_kill_9(
    env: tuple[Path, Path, DaemonProc, int],
) -> None:
    base, root, d, sid = env
    oc = OpenCodeBuilder(base / "opencode")
    project = root / "project"
    oc.session("ses_live", project, "live")
    oc.turn("ses_live", 1)
    key = f"{oc.db}#ses_live"
    view = follow(d, root, sid, Path(key))
    assert view.format == "opencode"
    assert "does not exist" not in view.reason, view  # (issue 35: its database is there)
    with open_source(oc.db) as source:
        first = len(list(parse_session(source, "ses_live", key).chunks))
    assert first == 2
    got = wait_for(d, root, sid, 13)
    assert _kinds(got)[:2] == ["UserMessage", "Init"] and _kinds(got)[-1] == "Complete"
    oc.turn("ses_live", 2)
    got = wait_for(d, root, sid, 13 + 12)
    assert len(got) == 25
    # a reply still being written waits; a kill -9 and a new daemon go on from the stored position
    oc.message(
        "ses_live", {"role": "user", "time": {"created": 2 * 10**12}}, [{"type": "text", "text": "more"}]
    )
    writing = {
        "role": "assistant",
        "time": {"created": 2 * 10**12 + 1},
        "modelID": "claude-sonnet-4-5",
        "providerID": "anthropic",
    }
    mid = oc.message("ses_live", writing, [{"type": "text", "text": "partial"}])
    got = wait_for(d, root, sid, 26)
    time.sleep(0.6)
    assert len(stored(d, root, sid)) == 26  # the prompt; the reply waits
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait(10)
    with sqlite3.connect(oc.db) as conn:
        done = "UPDATE message SET data = json_set(data, '$.time.completed', 2000000000005) WHERE id = ?"
        conn.execute(done, (mid,))
    d2 = start_daemon(base / "run")
    try:
        got = wait_for(d2, root, sid, 28)
        assert _kinds(got)[25:] == ["UserMessage", "AssistantText", "Complete"]
        time.sleep(0.6)
        assert len(stored(d2, root, sid)) == 28  # nothing twice
        with open_source(oc.db) as source:
            assert len(finished_messages(source, "ses_live")) == 6
    finally:
        d2.close()
