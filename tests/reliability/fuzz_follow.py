"""Live follows for the JSONL fuzzing (tests/reliability/test_fuzz_follow_*.py): a daemon, a root,
waits on what it read, bad lines and corpus lines to write.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest

from azsd.compact import prepare_for_store
from azsd.events import AssistantText, Complete, Event, decode_event, encode_event
from azsd.ingest.file import parse_file
from azsd.ingest.parsers import make_parser
from azsd.ipc import protocol as p
from tests.conftest import corpus_files
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir, short_tmpdir
from tests.reliability.fuzz_helpers import REPLY_MS, WAIT_S, new_session, status

# == 2. fuzzed JSONL into live follows ================================================================


@pytest.fixture(scope="module")
def follow_daemon() -> Iterator[DaemonProc]:
    with daemon_in_tmpdir() as d:
        yield d


@pytest.fixture
def follow_root(follow_daemon: DaemonProc) -> Iterator[tuple[DaemonProc, Path, int]]:
    root = short_tmpdir()
    try:
        yield follow_daemon, root, new_session(follow_daemon, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def start_follow(d: DaemonProc, root: Path, sid: int, path: Path, fmt: str) -> None:
    reply = d.request(p.Follow(root=str(root), session=sid, path=str(path), format=fmt), REPLY_MS)
    assert isinstance(reply, p.FollowReply), reply


def view_of(d: DaemonProc, path: Path) -> p.FollowView:
    """The follow of `path` in Status: the live one, else the most recently ended one."""
    real = os.path.realpath(path)
    views = [v for v in status(d).follows if v.path == real]
    assert views, f"{real} is not in Status.follows"
    return views[0]


def wait_read_to(d: DaemonProc, path: Path, size: int, timeout: float = WAIT_S) -> p.FollowView:
    """The follow of `path` once it has read to byte `size` (or ended there), and once what it read
    is committed (or failed to be): asserts it got there."""
    deadline = time.monotonic() + timeout
    while (view := view_of(d, path)).offset != size and time.monotonic() < deadline:
        time.sleep(0.05)
    assert view.offset == size, (
        f"after {timeout:.0f} s the follow is still at byte {view.offset} of {size}: {view}"
    )
    settle(d, view.root)
    return view


def settle(d: DaemonProc, root: str) -> None:
    """A barrier: the follower thread handles requests one at a time, between its reads, and it
    hands each read's events to the store's writer before it moves on; the writer runs its tasks in
    order. So once an Unfollow (of a file nobody follows) is answered, every read seen so far is in
    the writer's queue, and a write queued afterwards (an append of nothing) is answered after
    their commits. (A read alone is no barrier: reads run beside the writer.)"""
    reply = d.request(p.Unfollow(root=root, path=os.path.join(root, "nothing-follows-this")), REPLY_MS)
    assert isinstance(reply, p.ErrorReply) and reply.code == "not_found", reply
    listed = d.request(p.ListSessions(root=root, limit=1, archived="include"), REPLY_MS)
    assert isinstance(listed, p.SessionsReply), listed
    if listed.sessions:
        done = d.request(p.AppendEvents(root=root, session=listed.sessions[0].id, events=[]), REPLY_MS)
        assert isinstance(done, p.AppendReply) and done.events == [], done


def unfollow(d: DaemonProc, root: Path, path: Path) -> p.FollowView:
    """End a live follow: once the daemon answers, everything it read is stored (the reply is sent
    after the commit, and the store's earlier commits come before it). The ended follow's view."""
    if view_of(d, path).active:
        reply = d.request(p.Unfollow(root=str(root), path=str(path)), REPLY_MS)
        assert isinstance(reply, p.OkReply), reply
    view = view_of(d, path)
    assert not view.active, view
    return view


def wall_time_filled(got: list[str], want: list[str]) -> list[str]:
    """`got`, with the wall time the daemon gives a Complete that reported 0 set back to 0."""
    out = []
    for g, w in zip(got, want, strict=False):
        ge, we = decode_event(g), decode_event(w)
        if isinstance(ge, Complete) and isinstance(we, Complete) and we.duration_ms == 0:
            g = encode_event(msgspec.structs.replace(ge, duration_ms=0)).decode()
        out.append(g)
    return out + got[len(want) :]


def data_of(events: list[Event]) -> list[str]:
    return [encode_event(e).decode() for e in prepare_for_store(events)]


def blank(line: bytes) -> bool:
    return not line.strip()


def bad_line(rng: random.Random, n: int) -> bytes:
    """One line (no newline) that every format must skip and count, unless it is blank (random
    bytes can be)."""
    match rng.choice(["random", "utf8", "not-object", "unknown", "cut-json", "control", "bom"]):
        case "random":  # (an object of a known type with the fields it needs is out of reach)
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
            return body.replace(b"\n", b"")
        case "utf8":
            bad = rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80"])
            return b'{"type":"assistant","session_id":"s","message":{"content":"' + bad + b'"}}'
        case "not-object":
            return rng.choice(
                [b"[1,2,3]", b'"a string"', b"42", b"null", b"true", b"-1.5e3", b'[{"type":"x"}]']
            )
        case "unknown":
            return b'{"type":"zz-fuzz-unknown-%d","payload":{"n":%d},"x":[1,{"y":null}]}' % (n, n)
        case "cut-json":
            return b'{"type":"assistant","session_id":"s","message":{"id":"cut%d","content":[{"type":"te' % n
        case "control":  # a raw control character inside a string is invalid JSON
            return b'{"type":"zz\x00\x01","n":%d}' % n
        case _:
            return b'\xef\xbb\xbf{"type":"zz-bom-%d"}' % n


def blank_line(rng: random.Random) -> bytes:
    return rng.choice([b"", b" ", b"\t", b"\r", b"  \t \r", b"\x0b\x0c"])


def write_lines(target: Path, lines: list[bytes], rng: random.Random, torn_share: float = 0.3) -> None:
    """Append lines the way a misbehaving agent might: some torn in two with a pause, some batched."""
    with open(target, "ab") as out:
        i = 0
        while i < len(lines):
            line = lines[i]
            if len(line) > 2 and rng.random() < torn_share:
                cut = rng.randrange(1, len(line) - 1)
                out.write(line[:cut])
                out.flush()
                time.sleep(rng.uniform(0.005, 0.04))
                out.write(line[cut:])
                i += 1
            else:
                batch = rng.randrange(1, 4)
                out.write(b"".join(lines[i : i + batch]))
                i += batch
            out.flush()
            if rng.random() < 0.3:
                time.sleep(rng.uniform(0.001, 0.02))


@dataclass
class CorpusPick:
    path: Path
    lines: list[bytes]  # with their newlines
    prefix: int  # how many lines are written before any bad input


def _corpus_pick(fmt: str) -> CorpusPick | None:
    """A corpus file of the format whose only final event (if any) is on its last line, so that the
    follow reads every line written before that line."""
    best: CorpusPick | None = None
    for path in corpus_files(fmt):
        raw = path.read_bytes()
        lines = raw.splitlines(keepends=True)
        if not 5 <= len(lines) <= 60 or not raw.endswith(b"\n"):
            continue
        events, report = parse_file(path, fmt)
        if report.skipped_total or not events:
            continue
        parser = make_parser(fmt)
        early = [e for line in lines[:-1] for e in parser.feed(line)]
        if any(isinstance(e, Complete) for e in early):
            continue
        prefix = len(lines) // 3
        parser = make_parser(fmt)
        while prefix < len(lines) - 2 and not data_of([e for ln in lines[:prefix] for e in parser.feed(ln)]):
            prefix += 1
            parser = make_parser(fmt)
        if best is None or len(lines) > len(best.lines):
            best = CorpusPick(path, lines, prefix)
    return best


def aline(text: str) -> bytes:
    """A claude-stream-json line with one assistant text (its message id is the text)."""
    return (
        b'{"type":"assistant","session_id":"s","message":{"id":"m-%s","content":[{"type":"text","text":"%s"}]}}\n'
        % (text.encode(), text.encode())
    )


def texts(data: list[str]) -> list[str]:
    out = []
    for item in data:
        event = decode_event(item)
        assert isinstance(event, AssistantText), event
        out.append(event.text)
    return out


def mixed(names: list[str], rng: random.Random, bad_each: int = 1) -> tuple[bytes, int]:
    """Lines with these texts, each followed by `bad_each` bad lines and a blank one; and the bad count."""
    out = b""
    bad = 0
    for i, name in enumerate(names):
        out += aline(name)
        while bad < (i + 1) * bad_each:
            junk = bad_line(rng, bad)
            if not blank(junk):
                out += junk + b"\n"
                bad += 1
        out += blank_line(rng) + b"\n"
    return out, bad
