"""A follow given no writer (`azs follow` of an interactive agent's file) goes `idle` rather than
ending (issue 24): Claude Code does not keep its session JSONL open between writes, so a follow that
ended after `follow-idle-s` of quiet file lost every line written after the user's pause. Idle, its
session no longer shows running; when the file grows, the follow stores the new lines (no gap,
nothing twice) and the session runs again, across a daemon restart too. Through the real daemon."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import zmq

from azsd.ipc import protocol as p
from tests.daemon_fixture import DaemonProc, short_tmpdir, start_daemon

#: The daemons' `follow-idle-s`: small, so that a follow goes idle quickly.
IDLE_S = 0.5


def claude_line(n: int, text: str) -> bytes:
    """Line `n` of a Claude Code session transcript (odd: the user's prompt, even: Claude's reply)."""
    kind = "user" if n % 2 else "assistant"
    message: dict[str, object] = (
        {"role": "user", "content": text}
        if kind == "user"
        else {"id": f"msg{n}", "role": "assistant", "model": "claude-sonnet-4-5",
              "content": [{"type": "text", "text": text}]}
    )  # fmt: skip
    obj = {
        "parentUuid": None if n == 1 else f"u{n - 1}", "isSidechain": False, "sessionId": "abc",
        "version": "2.0.26", "type": kind, "message": message, "uuid": f"u{n}", "cwd": "/p",
        "timestamp": f"2026-11-26T12:00:{n:02d}.000Z",
    }  # fmt: skip
    return (json.dumps(obj) + "\n").encode()


class Daemons:
    """Daemons started one after another on the same runtime, state and config dirs."""

    def __init__(self) -> None:
        self.base, self.root = short_tmpdir(), short_tmpdir()
        self.config = self.base / "config.toml"
        self.config.write_text(f"follow-idle-s = {IDLE_S}\n")
        self.d = self.start()

    def start(self) -> DaemonProc:
        return start_daemon(self.base / "run", env={"AZSD_CONFIG": str(self.config)})

    def restart(self) -> None:
        self.d.close()
        self.d = self.start()

    def close(self) -> None:
        self.d.close()
        shutil.rmtree(self.base, ignore_errors=True)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def daemons() -> Iterator[Daemons]:
    ds = Daemons()
    try:
        yield ds
    finally:
        ds.close()


def session(ds: Daemons) -> int:
    created = ds.d.request(p.CreateSession(root=str(ds.root)))
    assert isinstance(created, p.SessionReply)
    return created.session.id


def session_state(ds: Daemons, sid: int) -> str:
    info = ds.d.request(p.GetSession(root=str(ds.root), session=sid))
    assert isinstance(info, p.SessionReply)
    return info.session.state


def texts(ds: Daemons, sid: int) -> list[str]:
    page = ds.d.request(p.GetEvents(root=str(ds.root), session=sid, limit=1000))
    assert isinstance(page, p.EventsPage)
    out = []
    for event in page.events:
        [body] = json.loads(event.data).values()  # {"UserMessage": {"content": …}}
        out.append(body.get("content") or body.get("text") or "")
    return out


def view_of(ds: Daemons, path: Path) -> p.FollowView | None:
    status = ds.d.request(p.Status())
    assert isinstance(status, p.StatusReply)
    found = [v for v in status.follows if v.path == str(path) and v.active]
    return found[0] if found else None


def until(what: str, check: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def changes(ds: Daemons, sub: zmq.Socket[bytes]) -> list[tuple[str, str]]:
    """The `sessionchanged` notes published so far: (change, the session's state)."""
    out = []
    while sub.poll(0):
        _, note = ds.d.next_note(sub)
        if isinstance(note, p.SessionChanged) and note.session is not None:
            out.append((note.change, note.session.state))
    return out


def told(ds: Daemons, sub: zmq.Socket[bytes], want: tuple[str, str]) -> None:
    """Wait for a `sessionchanged` note of that change and state."""
    seen: list[tuple[str, str]] = []
    deadline = time.monotonic() + 20
    while want not in seen:
        assert time.monotonic() < deadline, f"never told {want}: {seen}"
        seen += changes(ds, sub)
        time.sleep(0.05)


def is_idle(ds: Daemons, path: Path) -> bool:
    view = view_of(ds, path)
    assert view is not None, f"the follow of {path} is no longer live"
    return view.state == "idle"


def test_a_claude_session_followed_by_hand_goes_idle_and_stores_what_comes_later(daemons: Daemons) -> None:
    ds = daemons
    sid = session(ds)
    transcript = ds.root / "abc.jsonl"
    transcript.write_bytes(claude_line(1, "hello") + claude_line(2, "hi there"))
    sub = ds.d.subscribe(p.topic(str(ds.root)))
    reply = ds.d.request(p.Follow(root=str(ds.root), session=sid, path=str(transcript)))
    assert isinstance(reply, p.FollowReply), reply
    until("the first lines are stored", lambda: texts(ds, sid) == ["hello", "hi there"])
    assert session_state(ds, sid) == "running"

    # The user thinks; Claude Code has the file closed: the follow goes idle, it does not end.
    until("the quiet follow goes idle", lambda: is_idle(ds, transcript))
    view = view_of(ds, transcript)
    assert view is not None and view.active
    assert view.reason.startswith("no program has it open for writing and the file was idle for"), view
    assert view.reason.endswith("its session does not show running until the file grows again")
    until("the idle session leaves running", lambda: session_state(ds, sid) == "ended")
    told(ds, sub, ("idle", "ended"))  # clients are told

    # Claude answers the next prompt: stored, no gap and nothing twice; the session runs again.
    with open(transcript, "ab") as out:
        out.write(claude_line(3, "and now?"))
        out.flush()
        time.sleep(0.1)
        out.write(claude_line(4, "done"))
    until("the later lines are stored", lambda: len(texts(ds, sid)) >= 4)
    assert texts(ds, sid) == ["hello", "hi there", "and now?", "done"]
    told(ds, sub, ("running", "running"))
    view = view_of(ds, transcript)
    assert view is not None and view.state in ("following", "idle")
    if view.state == "following":  # (a loaded machine may have let it go idle again already)
        assert session_state(ds, sid) in ("running", "ended")

    # Idle again, the daemon restarts: the follow is resumed idle, and the next line is stored.
    until("it goes idle again", lambda: is_idle(ds, transcript))
    until("the session leaves running again", lambda: session_state(ds, sid) == "ended")
    ds.restart()
    until("the follow is resumed", lambda: view_of(ds, transcript) is not None)
    until("the resumed follow is idle", lambda: is_idle(ds, transcript))
    assert session_state(ds, sid) == "ended"
    with open(transcript, "ab") as out:
        out.write(claude_line(5, "one more"))
    until("the line written after the restart is stored", lambda: len(texts(ds, sid)) >= 5)
    assert texts(ds, sid) == ["hello", "hi there", "and now?", "done", "one more"]

    # `azs unfollow` ends it.
    assert isinstance(ds.d.request(p.Unfollow(root=str(ds.root), path=str(transcript))), p.OkReply)
    assert view_of(ds, transcript) is None
    status = ds.d.request(p.Status())
    assert isinstance(status, p.StatusReply)
    [ended] = [v for v in status.follows if v.path == str(transcript)]
    assert ended.state == "ended" and ended.reason == "unfollowed"
    assert session_state(ds, sid) == "ended"


def test_a_follow_given_no_writer_waits_for_the_program_that_holds_its_file_then_goes_idle(
    daemons: Daemons,
) -> None:
    """A process that has the file open for writing keeps the follow `following` (the session
    running); once it has exited and the file is idle, the follow goes idle, it does not end."""
    ds = daemons
    sid = session(ds)
    held = ds.root / "held.jsonl"
    held.write_bytes(claude_line(1, "hello"))
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import time; f = open({str(held)!r}, 'a'); time.sleep(3)"]
    )
    try:
        time.sleep(0.3)  # it has the file open
        reply = ds.d.request(p.Follow(root=str(ds.root), session=sid, path=str(held)))
        assert isinstance(reply, p.FollowReply), reply
        until("its line is stored", lambda: texts(ds, sid) == ["hello"])
        time.sleep(IDLE_S * 4)
        view = view_of(ds, held)
        assert view is not None and view.state == "following", view
        assert view.writer_pid == holder.pid  # shown as its writer
        assert session_state(ds, sid) == "running"
    finally:
        holder.wait()
    until("the follow goes idle once its writer exited", lambda: is_idle(ds, held))
    until("the session leaves running", lambda: session_state(ds, sid) == "ended")
    with open(held, "ab") as out:
        out.write(claude_line(2, "still here"))
    until("a line written later is stored", lambda: len(texts(ds, sid)) >= 2)
    assert texts(ds, sid) == ["hello", "still here"]


def rollout_line(payload: dict[str, object], second: int, kind: str = "event_msg") -> bytes:
    """A line of a Codex rollout (`~/.codex/sessions/…`), which holds every turn of a session."""
    stamp = f"2026-11-26T12:00:{second:02d}.000Z"
    return (json.dumps({"timestamp": stamp, "type": kind, "payload": payload}) + "\n").encode()


def test_a_transcript_followed_by_hand_goes_on_past_a_turns_end(daemons: Daemons) -> None:
    """A Codex rollout (like a Claude session transcript) holds every turn of a session: `codex
    resume` appends the next one to it. The end of a turn does not end its follow (it ended, and
    the next turn was lost); the follow goes idle, and stores the next turn when it comes."""
    ds = daemons
    sid = session(ds)
    rollout = ds.root / "rollout-2026-11-26T12-00-00-019e.jsonl"
    meta: dict[str, object] = {"id": "019e", "timestamp": "2026-11-26T12:00:00.000Z", "cwd": "/p"}
    rollout.write_bytes(
        rollout_line(meta, 0, kind="session_meta")
        + rollout_line({"type": "user_message", "message": "first"}, 1)
        + rollout_line({"type": "agent_message", "message": "one"}, 2)
        + rollout_line({"type": "task_complete", "duration_ms": 100}, 3)
    )
    reply = ds.d.request(p.Follow(root=str(ds.root), session=sid, path=str(rollout)))
    assert isinstance(reply, p.FollowReply), reply
    until("the first turn is stored", lambda: session_state(ds, sid) == "succeeded")
    until("the follow goes idle, it does not end", lambda: is_idle(ds, rollout))
    with open(rollout, "ab") as out:  # `codex resume`
        out.write(rollout_line({"type": "user_message", "message": "second"}, 10))
        out.write(rollout_line({"type": "agent_message", "message": "two"}, 11))
    until("the next turn is stored", lambda: "two" in texts(ds, sid))
    assert [t for t in texts(ds, sid) if t] == ["first", "one", "second", "two"]
    assert session_state(ds, sid) == "running"


def test_a_file_not_there_yet_goes_idle_and_is_read_once_it_appears(daemons: Daemons) -> None:
    ds = daemons
    sid = session(ds)
    later = ds.root / "later.jsonl"
    reply = ds.d.request(p.Follow(root=str(ds.root), session=sid, path=str(later)))
    assert isinstance(reply, p.FollowReply) and reply.follow.state == "waiting", reply
    until("the follow of a file that never came goes idle", lambda: is_idle(ds, later))
    view = view_of(ds, later)
    assert view is not None and view.reason.startswith("the file does not exist (yet): "), view
    later.write_bytes(claude_line(1, "at last"))
    until("its line is stored", lambda: texts(ds, sid) == ["at last"])
    assert session_state(ds, sid) in ("running", "ended")  # (ended: idle again on a loaded machine)
