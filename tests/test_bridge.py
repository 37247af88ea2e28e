"""`azs bridge` end to end: the real bridge process on pipes, in front of the real daemon subprocess.

Each test writes request lines to the bridge's stdin and reads its stdout as an editor would: replies
matched by id, notifications in between, in whatever order they come.
"""

from __future__ import annotations

import doctest
import io
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

import azsd_client.bridge_wire
from azsd.events import AssistantText, UserMessage
from azsd_client.bridge import read_lines
from azsd_client.bridge_io import Output
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir, short_tmpdir, start_daemon

WAIT_S = 10.0


def _key(id: Any) -> Any:
    """A reply's id as a dict key (an id may be any JSON value, a list too)."""
    return msgspec.json.encode(id) if isinstance(id, list | dict) else id


class BridgeProc:
    """`azs bridge` as a subprocess, with a thread collecting what it writes."""

    def __init__(self, runtime_dir: Path, env: dict[str, str], *args: str) -> None:
        argv = [sys.executable, "-m", "azsd_client.cli", "--runtime-dir", str(runtime_dir), "bridge"]
        self.proc = subprocess.Popen(
            [*argv, "--heartbeat", "0.2", *args],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.replies: dict[Any, dict[str, Any]] = {}
        self.notes: list[dict[str, Any]] = []
        self.order: list[str] = []  # "reply <id>" / "notify <op>", as written
        self._collector = threading.Thread(target=self._collect, daemon=True)
        self._collector.start()

    def _collect(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(msgspec.json.decode(raw))
        self.lines.put(None)

    def send(self, line: bytes | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line if isinstance(line, bytes) else msgspec.json.encode(line) + b"\n")
        self.proc.stdin.flush()

    def _pump(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while not done():
            left = deadline - time.monotonic()
            assert left > 0, f"the bridge wrote no {what}; it wrote {self.order}"
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            assert line is not None, f"the bridge ended before writing {what}"
            if "notify" in line:
                self.notes.append(line["notify"])
                self.order.append(f"notify {line['notify']['op']}")
            else:
                assert set(line) in ({"id", "result"}, {"id", "error"}), line
                self.replies[_key(line["id"])] = line
                self.order.append(f"reply {line['id']!r}")

    def reply(self, id: Any) -> dict[str, Any]:
        self._pump(lambda: _key(id) in self.replies, f"reply to {id!r}")
        return self.replies.pop(_key(id))

    def call(self, id: Any, **fields: Any) -> dict[str, Any]:
        """Send a request and return its result (an error fails the test)."""
        self.send({"id": id, **fields})
        line = self.reply(id)
        assert "result" in line, line
        result: dict[str, Any] = line["result"]
        return result

    def error(self, id: Any) -> dict[str, str]:
        line = self.reply(id)
        assert "error" in line, line
        error: dict[str, str] = line["error"]
        return error

    def note(self, match: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        """The first notification (seen or to come) that `match`es; it is taken off the list."""
        found: list[dict[str, Any]] = []

        def seen() -> bool:
            found.extend(n for n in self.notes if match(n))
            return bool(found)

        self._pump(seen, what)
        self.notes.remove(found[0])
        return found[0]

    def close_stdin(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(WAIT_S)

    def kill(self) -> None:
        """End the bridge (if it has not ended) and close its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._collector.join(WAIT_S)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()


@pytest.fixture(scope="module")
def daemon() -> Iterator[DaemonProc]:
    with daemon_in_tmpdir() as d:
        yield d


@pytest.fixture
def bridge(daemon: DaemonProc) -> Iterator[BridgeProc]:
    b = BridgeProc(daemon.runtime_dir, daemon.env)
    try:
        yield b
    finally:
        b.kill()


def op(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda note: note["op"] == name


def test_requests_interleave_with_notifications_and_events_are_objects(
    daemon: DaemonProc, bridge: BridgeProc, tmp_path: Path
) -> None:
    root = str(tmp_path.resolve())
    assert bridge.note(op("connected"), "connected")["pid"] == daemon.proc.pid
    assert bridge.call("sub", op="subscribe", root=root) == {
        "op": "subscribed",
        "root": root,
        "session": None,
    }
    session = bridge.call(1, op="createsession", root=root, name="demo")["session"]["id"]
    assert bridge.note(op("sessioncreated"), "sessioncreated")["session"]["name"] == "demo"

    # another client writes: the bridge's editor sees it as a notification, events as objects
    with daemon.client() as other:
        other.append_events(root, session, [UserMessage(content="find the panic")])
    note = bridge.note(op("eventsappended"), "eventsappended")
    assert note["events"] == [
        {"seq": 1, "kind": "UserMessage", "data": {"UserMessage": {"content": "find the panic"}}}
    ]

    # the editor writes too; several requests in flight, answered by id
    bridge.send({"id": 2, "op": "appendevents", "root": root, "session": session,
                 "events": [{"AssistantText": {"text": "it was unwrap"}}, "Compacting"]})  # fmt: skip
    bridge.send({"id": 3, "op": "contextmeter", "root": root, "session": session})
    appended = bridge.reply(2)["result"]
    assert [e["data"] for e in appended["events"]] == [
        {"AssistantText": {"text": "it was unwrap"}},
        "Compacting",
    ]
    assert bridge.reply(3)["result"]["op"] == "meterreply"
    assert bridge.note(op("eventsappended"), "the editor's own append")["events"][0]["seq"] == 2

    page = bridge.call(4, op="getevents", root=root, session=session)
    assert [e["seq"] for e in page["events"]] == [1, 2, 3] and page["next_seq"] is None
    hits = bridge.call(5, op="search", root=root, query="unwrap")["hits"]
    assert [(h["session"], h["seq"], h["data"]) for h in hits] == [
        (session, 2, {"AssistantText": {"text": "it was unwrap"}})
    ]
    assert (
        bridge.call(6, op="renamesession", root=root, session=session, name="panic")["session"]["name"]
        == "panic"
    )
    assert bridge.note(op("sessionchanged"), "renamed")["change"] == "renamed"
    assert bridge.call("u", op="unsubscribe", root=root)["was"] is True
    with daemon.client() as other:
        other.append_events(root, session, [AssistantText(text="unseen")])
    assert bridge.call(7, op="status")["op"] == "statusreply"
    assert not [n for n in bridge.notes if n["op"] == "eventsappended"]
    assert bridge.close_stdin() == 0


def test_bad_lines_are_answered_and_the_bridge_goes_on(bridge: BridgeProc, tmp_path: Path) -> None:
    root = str(tmp_path.resolve())
    bridge.send(b"this is not json\n")
    bridge.send(b"\n")  # a blank line is no request, and gets no answer
    bridge.send(b"\xff\xfe{}\n")
    bridge.send(b"[1, 2]\n")
    bridge.send(b'{"op": "status"}\n')
    for _ in range(4):
        bridge._pump(lambda: None in bridge.replies, "an answer to a line without id")
        error = bridge.replies.pop(None)["error"]
        assert error["code"] in ("bad_json", "bad_request") and error["message"]
    bridge.send({"id": 1, "op": "nosuchop"})
    assert bridge.error(1)["code"] == "bad_request"
    bridge.send({"id": 2, "op": "getsession", "root": root, "session": "S1"})
    assert bridge.error(2) == {"code": "bad_request", "message": "Expected `int`, got `str` - at `$.session`"}
    bridge.send({"id": 3, "op": "status", "timeout": "soon"})
    assert bridge.error(3)["code"] == "bad_request"
    bridge.send({"id": 4, "op": "getsession", "root": root, "session": 1})
    assert bridge.error(4)["code"] == "not_found"
    bridge.send({"id": 5, "op": "subscribe", "root": "relative/dir"})
    assert bridge.error(5)["code"] == "bad_request"
    bridge.send({"id": 55, "op": "subscribe", "root": root, "session": 9})  # issue 25: it said "subscribed"
    assert bridge.error(55)["code"] == "not_found"
    bridge.send({"id": [6, "any json"], "op": "status", "timeout": 3})
    assert bridge.reply([6, "any json"])["result"]["op"] == "statusreply"


def test_eof_ends_the_bridge_after_answering_what_is_in_flight(
    daemon: DaemonProc, bridge: BridgeProc
) -> None:
    bridge.send({"id": "last", "op": "status"})
    assert bridge.close_stdin() == 0
    assert bridge.reply("last")["result"]["pid"] == daemon.proc.pid
    rest = iter(lambda: bridge.lines.get(timeout=WAIT_S), None)  # up to stdout's end
    assert all("notify" in line for line in rest)
    assert bridge.proc.stderr is not None and bridge.proc.stderr.read() == b""


def test_a_line_too_long_is_refused_and_the_next_one_read() -> None:
    got: list[bytes | None] = []
    read_lines(io.BytesIO(b"short\n" + b"x" * 50 + b"\nnext\nlast"), got.append, limit=10)
    assert got == [b"short\n", b"x" * 11, b"next\n", b"last", None]


def test_a_deeply_nested_line_is_refused_and_the_bridge_goes_on(bridge: BridgeProc, tmp_path: Path) -> None:
    root = str(tmp_path.resolve())
    session = bridge.call(0, op="createsession", root=root, name="deep")["session"]["id"]
    deep = "[" * 990 + "]" * 990
    lines = [
        f'{{"id":1,"op":"appendevents","root":"{root}","session":{session},"events":[{deep}]}}',
        f'{{"id":2,"op":"appendevents","root":"{root}","session":{session},'
        f'"events":[{{"UserMessage":{{"content":{deep}}}}}]}}',
        f'{{"id":3,"op":"createsession","root":"{root}","name":{deep}}}',
    ]
    lines.append('{"id":' + "[" * 5000 + "]" * 5000 + ',"op":"status"}')
    for line in lines:  # each is answered before the next is read (their id cannot be read: null)
        bridge.send(line.encode() + b"\n")
        bridge._pump(lambda: None in bridge.replies, "an answer to a line too deep to read")
        error = bridge.replies.pop(None)["error"]
        assert error["code"] == "bad_request" and "nested deeper than 200" in error["message"], error
    # a deep value inside a string is text, not nesting
    text = {"UserMessage": {"content": deep}}
    appended = bridge.call(4, op="appendevents", root=root, session=session, events=[text])
    assert appended["events"][0]["data"] == text
    assert bridge.call(5, op="status")["op"] == "statusreply"
    assert bridge.close_stdin() == 0


def test_an_editor_that_stops_reading_stops_the_bridge_reading(daemon: DaemonProc) -> None:
    """Backpressure: while nobody reads the bridge's stdout, it reads little of its stdin, and every
    request is answered once the editor reads again."""
    argv = [sys.executable, "-m", "azsd_client.cli", "--runtime-dir", str(daemon.runtime_dir), "bridge"]
    proc = subprocess.Popen(argv, env=daemon.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    total, sent = 20_000, [0]

    def editor_writes() -> None:
        assert proc.stdin is not None
        for i in range(total):
            proc.stdin.write(b'{"id":%d,"op":"unsubscribe","root":"/nowhere"}\n' % i)
            proc.stdin.flush()
            sent[0] += 1
        proc.stdin.close()

    writer = threading.Thread(target=editor_writes, daemon=True)
    try:
        writer.start()
        stalled_at, deadline = -1, time.monotonic() + 30
        while stalled_at != sent[0]:  # wait until the editor's writes stop going through
            assert time.monotonic() < deadline, f"the bridge went on reading: {sent[0]} lines taken"
            stalled_at = sent[0]
            time.sleep(1.0)
        assert stalled_at < total // 2, f"the bridge read {stalled_at} lines while nobody read it"
        ids = set()
        for raw in proc.stdout:  # the editor reads again: every request gets its answer
            line = msgspec.json.decode(raw)
            if "id" in line:
                assert line["result"]["was"] is False
                ids.add(line["id"])
        assert ids == set(range(total))
        assert proc.wait(WAIT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        writer.join(WAIT_S)
        proc.stdout.close()


def test_notifications_the_editor_does_not_read_are_dropped_and_counted() -> None:
    read_end, write_end = os.pipe()
    out = os.fdopen(write_end, "wb")
    slots = threading.Semaphore(1)
    output = Output(out, slots, note_bytes=10_000)
    note = b'{"notify":{"op":"sessionchanged","padding":"%s"}}' % (b"x" * 1000)
    for _ in range(1000):  # about 1 MB while the pipe holds 64 kB: most cannot wait
        output.notify(note)
    output.answer(b'{"id":1,"result":{}}')
    output.close(timeout=0.1)  # it cannot finish: nobody reads yet
    with os.fdopen(read_end, "rb") as pipe:
        got = []
        reader = threading.Thread(target=lambda: got.extend(pipe.read().splitlines()))
        reader.start()
        output.close(WAIT_S)
        out.close()
        reader.join(WAIT_S)
    notes = [line for line in got if line == note]
    dropped = [msgspec.json.decode(line)["notify"]["count"] for line in got if b'"dropped"' in line]
    assert 0 < len(notes) < 1000 and dropped and len(notes) + sum(dropped) == 1000
    assert b'{"id":1,"result":{}}' in got
    assert slots.acquire(blocking=False)  # the answer gave its slot back


def test_the_daemon_restarted_underneath(tmp_path: Path) -> None:
    base = short_tmpdir()
    runtime = base / "run"
    runtime.mkdir(mode=0o700)
    first = start_daemon(runtime)
    second: DaemonProc | None = None
    bridge = BridgeProc(runtime, first.env)
    try:
        root = str(tmp_path.resolve())
        assert bridge.note(op("connected"), "connected")["pid"] == first.proc.pid
        session = bridge.call(1, op="createsession", root=root)["session"]["id"]
        bridge.call("sub", op="subscribe", root=root, session=session)

        first.stop()
        gone = bridge.note(op("disconnected"), "disconnected")
        assert gone["pid"] == first.proc.pid and "azsd" in gone["reason"]
        bridge.send({"id": 2, "op": "getsession", "root": root, "session": session})
        assert bridge.error(2)["code"] == "unavailable"  # at once, not after a timeout

        second = start_daemon(runtime)
        back = bridge.note(op("reconnected"), "reconnected")
        assert back["pid"] == second.proc.pid and back["restarted"] is True
        assert bridge.call(3, op="getsession", root=root, session=session)["session"]["id"] == session
        time.sleep(0.3)  # the renewed subscription reaches the new daemon's PUB socket
        with second.client() as other:
            other.append_events(root, session, [AssistantText(text="after the restart")])
        note = bridge.note(op("eventsappended"), "a notification from the new daemon")
        assert note["events"][0]["data"] == {"AssistantText": {"text": "after the restart"}}
        assert bridge.close_stdin() == 0
    finally:
        bridge.kill()
        first.close()
        if second is not None:
            second.close()
        shutil.rmtree(base, ignore_errors=True)


def test_wire_examples_run() -> None:
    result = doctest.testmod(azsd_client.bridge_wire)
    assert result.failed == 0 and result.attempted > 0


def test_a_search_line_is_plain_text_unless_it_says_words_false() -> None:
    """Issue 25: `:AzsSearch main.go` was an FTS5 syntax error; the bridge searches as `azs search` does."""
    from azsd.ipc.protocol import RemoteSearch, Search
    from azsd_client.bridge_wire import to_request

    plain = to_request({"op": "search", "root": "/", "query": "main.go"})
    assert isinstance(plain, Search) and plain.words
    fts = to_request({"op": "search", "root": "/", "query": "a OR b", "words": False})
    assert isinstance(fts, Search) and not fts.words
    remote = to_request({"op": "remotesearch", "root": "/", "query": "unwrap()"})
    assert isinstance(remote, RemoteSearch) and remote.words
