"""Pages kept encoded (azsd.server.pages): a page asked again is the bytes sent before, but only
while the file is in the state they were read from, whoever writes it and however soon after."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard

from azsd.events import AssistantText, Event, UserMessage, encode_event
from azsd.ipc import protocol as p
from azsd.server.handlers import get_events
from azsd.server.pages import EncodedReplies, PageCache, R
from azsd.server.workers import Outcome, encoded
from azsd.store import Store, store_path
from azsd.store.cache import ROWS
from tests.daemon_fixture import DaemonProc, daemon

__all__ = ["daemon"]  # the fixture, re-exported for pytest

#: Longer than the store's settling time (`read_version` gives None for a file changed since).
SETTLE_S = 0.06


def texts(n: int, start: int = 0) -> list[Event]:
    return [AssistantText(text=f"event {i}") for i in range(start, start + n)]


def azureal_append(root: Path, sid: int, text: str) -> None:
    """One event appended by another program (AZUREAL's connection), as a committed transaction."""
    frame = zstandard.ZstdCompressor(level=3).compress(encode_event(AssistantText(text=text)))
    conn = sqlite3.connect(store_path(root), isolation_level=None)
    try:
        seq = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?", (sid,))
        conn.execute(
            "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, 'AssistantText', ?, 1)",
            (sid, seq.fetchone()[0], frame),
        )
    finally:
        conn.close()


def read(cache: EncodedReplies[R], reader: Store, req: R) -> tuple[Outcome, bool]:
    """A read as the daemon's reader does it (a page, a listing): the peek, else the read in a
    transaction; and whether the peek answered."""
    reader.check_file()
    found = cache.peek(reader, req)
    if found is not None:
        return found, True
    with reader.snapshot():
        return cache.answer(reader, req), False


def page_of(outcome: Outcome) -> p.EventsPage:
    reply = p.decode_reply(encoded(outcome.reply))
    assert isinstance(reply, p.EventsPage)
    return reply


@pytest.fixture
def stores(root: Path) -> Iterator[tuple[Store, Store, int]]:
    writer = Store.open(root)
    sid = writer.create_session("s").id
    writer.append_events(sid, texts(30))
    reader = Store.open(root, reader=True)
    time.sleep(SETTLE_S)
    yield writer, reader, sid
    reader.close()
    writer.close()


def test_a_page_read_again_is_the_bytes_sent_before(stores: tuple[Store, Store, int], root: Path) -> None:
    _, reader, sid = stores
    pages = PageCache()
    req = p.GetEvents(root=str(root), session=sid, from_seq=11, limit=10)
    first, peeked = read(pages, reader, req)
    assert not peeked
    again, peeked = read(pages, reader, req)
    assert peeked and again.reply is first.reply
    with reader.snapshot():
        assert encoded(get_events(reader, req).reply) == first.reply  # what it stands in for
    assert [e.seq for e in page_of(again).events] == list(range(11, 21)) and page_of(again).next_seq == 21


def test_any_commit_ours_or_azureals_makes_the_page_be_read_again(
    stores: tuple[Store, Store, int], root: Path
) -> None:
    writer, reader, sid = stores
    pages = PageCache()
    req = p.GetEvents(root=str(root), session=sid, from_seq=21, limit=20)
    for step in range(12):
        time.sleep(SETTLE_S)
        read(pages, reader, req)
        assert read(pages, reader, req)[1]  # kept, and answered from what was kept
        if step % 2:
            azureal_append(root, sid, f"theirs {step}")
        else:
            writer.append_events(sid, [UserMessage(content=f"ours {step}")])
        if step % 4 < 2:  # settled: the file's stat differs; else read at once (the racy case)
            time.sleep(SETTLE_S)
        got = page_of(read(pages, reader, req)[0])
        assert len(got.events) == min(20, 10 + step + 1), step
        assert got.events[-1].data.endswith(f'{step}"}}}}') or step >= 10


def test_a_file_changed_moments_ago_has_no_version_yet(stores: tuple[Store, Store, int]) -> None:
    writer, reader, sid = stores
    reader.check_file()
    assert reader.read_version() is not None
    writer.append_events(sid, texts(1))
    reader.check_file()
    assert reader.read_version() is None  # its mtime could still be the next write's
    time.sleep(SETTLE_S)
    reader.check_file()
    assert reader.read_version() is not None


def test_whole_second_mtimes_must_be_older_still(stores: tuple[Store, Store, int], root: Path) -> None:
    _, reader, _ = stores
    path = store_path(root)
    # the next whole second: `now - 1` is then under a second ago, whatever the clock's fraction was
    # (from the second itself, a run that began late in it could be older than the rule's 2 s)
    now = int(time.time()) + 1
    os.utime(path, ns=(now * 10**9, (now - 1) * 10**9))  # a file system that keeps seconds
    time.sleep(0.1)  # (utime set the ctime to now)
    reader.check_file()
    assert reader.read_version() is None
    os.utime(path, ns=(now * 10**9, (now - 3) * 10**9))
    time.sleep(0.1)
    reader.check_file()
    assert reader.read_version() is not None


def test_an_mtime_set_back_after_a_write_is_seen_by_the_ctime(
    stores: tuple[Store, Store, int], root: Path
) -> None:
    """A program that writes and then sets the mtime back (`touch -d`, `rsync -t`): its ctime says
    the file just changed, so no version yet (a second such write could leave the stat as it was)."""
    _, reader, _ = stores
    path = store_path(root)
    old = time.time_ns() - 60 * 10**9
    os.utime(path, ns=(old, old))
    reader.check_file()
    assert reader.read_version() is None
    time.sleep(0.1)
    reader.check_file()
    assert reader.read_version() is not None


def test_a_replaced_file_is_never_answered_from_the_old_ones_pages(
    stores: tuple[Store, Store, int], root: Path, tmp_path: Path
) -> None:
    writer, reader, sid = stores
    pages = PageCache()
    req = p.GetEvents(root=str(root), session=sid, from_seq=1, limit=5)
    before = page_of(read(pages, reader, req)[0])
    other = tmp_path / "other"
    other.mkdir()
    with Store.open(other) as them:
        them.create_session("theirs")
        them.append_events(1, [UserMessage(content="a different file")])
    writer.close()
    shutil.copy(store_path(other), store_path(root).with_suffix(".new"))
    os.replace(store_path(root).with_suffix(".new"), store_path(root))
    stamp = time.time() - 1
    os.utime(store_path(root), (stamp, stamp))  # settled at once: only the file's identity differs
    after, peeked = read(pages, reader, req)
    assert not peeked
    assert [e.data for e in page_of(after).events] != [e.data for e in before.events]
    assert "a different file" in page_of(after).events[0].data


def test_only_readers_keep_pages(stores: tuple[Store, Store, int], root: Path) -> None:
    writer, _, sid = stores
    pages = PageCache()
    writer.check_file()
    req = p.GetEvents(root=str(root), session=sid, from_seq=1, limit=5)
    with writer.atomic():  # a writer may read its own uncommitted rows
        outcome = pages.answer(writer, req)
    assert isinstance(outcome.reply, p.EventsPage) and len(pages) == 0
    assert pages.peek(writer, req) is None


def test_the_cache_keeps_to_its_budget_and_skips_huge_pages(
    stores: tuple[Store, Store, int], root: Path
) -> None:
    _, reader, sid = stores
    first = p.GetEvents(root=str(root), session=sid, from_seq=1, limit=3)
    one = len(encoded(read(PageCache(), reader, first)[0].reply)) + len(p.encode(first))  # page and key
    pages = PageCache(budget=3 * one + 8, largest=one + 8)
    for start in range(1, 8):
        read(pages, reader, p.GetEvents(root=str(root), session=sid, from_seq=start, limit=3))
    assert len(pages) == 3 and pages.size <= 3 * one + 8
    assert read(pages, reader, p.GetEvents(root=str(root), session=sid, from_seq=7, limit=3))[1]
    assert not read(pages, reader, p.GetEvents(root=str(root), session=sid, from_seq=1, limit=3))[1]
    read(pages, reader, p.GetEvents(root=str(root), session=sid, from_seq=1, limit=30))
    assert not read(pages, reader, p.GetEvents(root=str(root), session=sid, from_seq=1, limit=30))[1]


def test_appended_rows_are_sent_as_their_json_from_the_first_read(stores: tuple[Store, Store, int]) -> None:
    writer, _, sid = stores
    events = texts(3, start=100)
    writer.append_events(sid, events)
    rows = writer._query("SELECT data FROM events WHERE session_id = ? AND seq > 30", (sid,))
    cached = ROWS.get_many([data for (data,) in rows])
    assert [row.wire if row else None for row in cached] == [encode_event(e).decode() for e in events]


def test_the_daemon_answers_every_page_as_the_file_is_now(daemon: DaemonProc, root: Path) -> None:
    """Through the daemon, with AZUREAL appending between reads of the same page."""
    with daemon.client() as client:
        sid = client.create_session(root, "s").session.id
        client.append_events(root, sid, texts(5))
        time.sleep(SETTLE_S)
        for i in range(15):
            for _ in range(3):  # the first read keeps the page, the others may be answered from it
                got = client.get_events_page(root, sid, from_seq=1, limit=100)
                assert len(got.events) == 5 + i
            azureal_append(root, sid, f"theirs {i}")
            if i % 4 == 0:
                time.sleep(SETTLE_S)
        assert "theirs 14" in client.get_events_page(root, sid, from_seq=1, limit=100).events[-1].data


def foreign_wal(root: Path) -> sqlite3.Connection:
    """Another program's connection that switched the store to WAL (and stays open)."""
    conn = sqlite3.connect(store_path(root), isolation_level=None, timeout=5)
    assert conn.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
    return conn


def foreign_append(conn: sqlite3.Connection, sid: int, text: str) -> None:
    frame = zstandard.ZstdCompressor(level=3).compress(encode_event(AssistantText(text=text)))
    seq = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?", (sid,)
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, 'AssistantText', ?, 1)",
        (sid, seq, frame),
    )


def header_journal(root: Path) -> str:
    """The journal mode the file's header says (its read and write versions: 2 is WAL)."""
    return "wal" if store_path(root).read_bytes()[18] == 2 else "delete"


def test_commits_into_another_programs_wal_are_never_served_stale(
    stores: tuple[Store, Store, int], root: Path
) -> None:
    """Commits in WAL mode go to `-wal`, and the main file's stat stays as it was: the page's version
    counts the `-wal` file too (and the reader holds no connection between reads meanwhile, so that
    the writer can switch the file back once the other program lets go)."""
    writer, reader, sid = stores
    pages = PageCache()
    req = p.GetEvents(root=str(root), session=sid, from_seq=1, limit=100)
    read(pages, reader, req)
    foreign = foreign_wal(root)
    try:
        for step in range(6):
            time.sleep(SETTLE_S)
            read(pages, reader, req)
            foreign_append(foreign, sid, f"theirs {step}")
            if step % 2:
                time.sleep(SETTLE_S)
            got = page_of(read(pages, reader, req)[0])
            assert len(got.events) == 30 + step + 1, step
        writer.keep_journal_mode()  # cannot while the other program has it open in WAL: no wait
        assert header_journal(root) == "wal"
    finally:
        foreign.close()
    writer.keep_journal_mode()
    assert header_journal(root) == "delete" and not Path(f"{store_path(root)}-wal").exists()
    writer.append_events(sid, texts(1, 100))
    time.sleep(SETTLE_S)
    assert len(page_of(read(pages, reader, req)[0]).events) == 37


def test_the_daemon_switches_a_foreign_wal_back_and_serves_it_fresh(daemon: DaemonProc, root: Path) -> None:
    with daemon.client() as client:
        sid = client.create_session(root, "s").session.id
        client.append_events(root, sid, texts(1))
        time.sleep(SETTLE_S)
        assert len(client.get_events_page(root, sid, from_seq=1, limit=100).events) == 1
        foreign = foreign_wal(root)
        try:
            for i in range(5):
                foreign_append(foreign, sid, f"theirs {i}")
                assert len(client.get_events_page(root, sid, from_seq=1, limit=100).events) == 2 + i
        finally:
            foreign.close()
        deadline = time.monotonic() + 20
        while header_journal(root) != "delete":
            assert time.monotonic() < deadline, "the daemon left the store in WAL"
            time.sleep(0.1)
        client.append_events(root, sid, texts(1, 50))
        assert len(client.get_events_page(root, sid, from_seq=1, limit=100).events) == 7
    assert header_journal(root) == "delete"
