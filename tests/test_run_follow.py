"""`azs follow`, `azs unfollow` and `azs status` end to end.

Against the real daemon and `azs`, through the harness of tests/test_run.py.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import msgspec
import pytest

from azsd.events import Event
from azsd.ipc import protocol as p
from azsd_client import AsyncClient
from tests.conftest import requires_corpus
from tests.test_run import BRANCH, CLAUDE, CODEX, World, corpus, daemon, parsed, wait_for, world

__all__ = ["daemon", "world"]  # the fixtures, re-exported for pytest

pytestmark = [pytest.mark.corpus, requires_corpus]


# -- azs follow / unfollow / status ------------------------------------------------------------------


def test_follow_shows_in_status_and_unfollow_ends_it(world: World, tmp_path: Path) -> None:
    source = corpus(CLAUDE)
    lines = source.read_bytes().splitlines(keepends=True)
    assert len(lines) >= 6
    first, second = len(lines) // 3, 2 * len(lines) // 3
    live = tmp_path / "agent.jsonl"
    live.write_bytes(b"".join(lines[:first]))
    world.client.create_session(world.root, "followed", worktree=BRANCH)

    def expected(upto: int) -> list[Event]:
        prefix = tmp_path / f"prefix-{upto}.jsonl"
        prefix.write_bytes(b"".join(lines[:upto]))
        return parsed(prefix, "claude-stream-json")

    followed = world.azs("--json", "follow", live.name, "-s", "S1", cwd=tmp_path)  # a relative path

    assert followed.returncode == 0, world.explain(followed)
    view = msgspec.json.decode(followed.stdout, type=p.FollowView)
    assert (view.path, view.session, view.root) == (str(live.resolve()), 1, str(world.root))
    assert view.format == "claude-stream-json" and view.active
    wait_for(lambda: world.events() == expected(first), "the file's lines stored")

    status = world.azs("--json", "status")
    assert status.returncode == 0, world.explain(status)
    reply = msgspec.json.decode(status.stdout, type=p.StatusReply)
    [mine] = [v for v in reply.follows if v.root == str(world.root)]
    assert (mine.path, mine.session, mine.active, mine.lines) == (str(live.resolve()), 1, True, first)
    human = world.azs("status")
    assert human.returncode == 0, world.explain(human)
    [row] = [line for line in human.stdout.splitlines() if str(live.resolve()) in line]
    assert "● following" in row and "S1" in row and "claude-stream-json" in row and f"{first} lines" in row
    assert "(1 following" in human.stdout and "active" not in row  # one word for it, as in --json

    with live.open("ab") as sink:
        sink.write(b"".join(lines[first:second]))
    unfollowed = world.azs("unfollow", str(live))

    assert unfollowed.returncode == 0, world.explain(unfollowed)
    assert world.events() == expected(second), "unfollow stores what the file holds when it is asked"
    assert world.follows() == []
    with live.open("ab") as sink:
        sink.write(b"".join(lines[second:]))
    time.sleep(1.0)  # the daemon polls followed files every 0.25 s: it would have read these by now
    assert world.events() == expected(second), "the daemon kept following after unfollow"
    again = world.azs("unfollow", str(live))
    assert again.returncode == 1 and "not followed" in again.stderr


def test_follow_errors_are_reported(world: World, tmp_path: Path) -> None:
    live = tmp_path / "agent.jsonl"
    live.write_bytes(b"")
    world.client.create_session(world.root, "s")

    bad_format = world.azs("follow", str(live), "-s", "S1", "--format", "yaml")
    no_session = world.azs("follow", str(live), "-s", "S9")

    assert bad_format.returncode == 2 and "invalid choice: 'yaml'" in bad_format.stderr
    assert no_session.returncode == 1 and "S9" in no_session.stderr
    assert world.follows() == []


def test_follow_of_a_file_not_there_yet_waits_for_it(world: World, tmp_path: Path) -> None:
    world.client.create_session(world.root, "s")
    later = tmp_path / "later.jsonl"
    waiting = world.azs("follow", str(later), "-s", "S1")
    assert waiting.returncode == 0, world.explain(waiting)
    assert "waiting: the file does not exist (yet)" in waiting.stdout
    [view] = world.follows()
    assert view.state == "waiting" and "does not exist" in view.reason
    source = corpus(CLAUDE).read_bytes().splitlines(keepends=True)
    later.write_bytes(b"".join(source[:5]))
    deadline = time.monotonic() + 20
    while not world.events():
        assert time.monotonic() < deadline, "the file's lines were never stored"
        time.sleep(0.1)
    assert world.follows()[0].state == "following"


def test_status_says_each_follows_reason_under_it(world: World, tmp_path: Path) -> None:
    """Each reason is on its own line right under its follow (they were grouped after the store's
    rows); `--all` lists what `status` shows and the follows that ended long ago."""
    world.client.create_session(world.root, "s")
    paths = [tmp_path / f"f{i}.jsonl" for i in range(3)]
    for path in paths:
        path.write_bytes(b"")
        world.client.follow(world.root, 1, path)
    world.client.unfollow(world.root, paths[0], reason="the first reason")
    world.client.unfollow(world.root, paths[1], reason="the second reason")
    shown = world.azs("status")
    assert shown.returncode == 0, world.explain(shown)
    lines = shown.stdout.splitlines()
    for path, reason in ((paths[0], "the first reason"), (paths[1], "the second reason")):
        [at] = [i for i, line in enumerate(lines) if str(path) in line]
        assert "○ ended" in lines[at] and lines[at + 1].strip() == f"↳ {reason}", shown.stdout
    assert " ended)" in shown.stdout  # (the daemon is shared: other tests' follows ended too)
    every = world.azs("--json", "status", "--all")
    assert every.returncode == 0, world.explain(every)
    listed = msgspec.json.decode(every.stdout, type=p.StatusReply).follows
    assert {v.path for v in listed} >= {str(path) for path in paths}


def test_the_async_client_follows_and_unfollows(world: World, tmp_path: Path) -> None:
    source = corpus(CODEX)
    live = tmp_path / "codex.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    live.write_bytes(b"".join(lines[:-1]))  # not the final event: the follow would end by itself there
    sid = world.client.create_session(world.root, "async").session.id

    async def go() -> tuple[p.FollowReply, p.OkReply]:
        async with AsyncClient(world.client.config, timeout=10) as client:
            followed = await client.follow(world.root, sid, live, "codex-exec-json")
            return followed, await client.unfollow(world.root, live)

    followed, unfollowed = asyncio.run(go())

    assert (followed.follow.path, followed.follow.session, followed.follow.format) == (
        str(live.resolve()),
        sid,
        "codex-exec-json",
    )
    assert isinstance(unfollowed, p.OkReply)
    assert world.events(sid) == parsed(live, "codex-exec-json")
    assert world.follows() == []
