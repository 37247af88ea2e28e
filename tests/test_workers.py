"""azsd.server.workers: the one primitive, ``StoreRegistry.call(root, fn) -> Future``, on real
stores with real worker threads, and the error reply of each failure."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest
import zmq

from azsd.errors import (
    BadRequestError,
    IngestError,
    NotAStoreError,
    SessionNotFoundError,
    ShuttingDownError,
    StoreError,
    StoreFullError,
)
from azsd.events import AssistantText, EventDecodeError
from azsd.ipc import protocol as p
from azsd.ipc.replies import error_reply
from azsd.ipc.transport import Envelope, Outbox
from azsd.server import workers
from azsd.server.registry import StoreRegistry
from azsd.server.workers import Outcome
from azsd.store import Store, backup
from azsd.store.chunks import ChunkedWrite
from azsd.store.codec import CodecError
from azsd.store.core import READ_BUSY_TIMEOUT_S, NeedsWriterError
from azsd.store.pacing import Pacer, Pacing


@pytest.fixture
def registry() -> Iterator[StoreRegistry]:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    outbox = Outbox(ctx)
    reg = StoreRegistry(outbox, idle_close_s=30)
    yield reg
    reg.close()
    outbox.close()
    ctx.term()


def test_call_returns_the_result_once_committed(registry: StoreRegistry, root: Path) -> None:
    created = registry.call(str(root), lambda store: store.create_session("one").id)
    sid = created.result(timeout=5)
    # The commit is on disk: another connection sees it.
    with Store.open(root) as other:
        assert other.get_session(sid).name == "one"


def test_a_failed_call_rolls_back_only_itself(registry: StoreRegistry, root: Path) -> None:
    registry.call(str(root), lambda store: store.create_session("base")).result(timeout=5)

    def half_then_fail(store: Store) -> None:
        store.create_session("lost")
        raise BadRequestError("no")

    failed = registry.call(str(root), half_then_fail)
    kept = registry.call(str(root), lambda store: store.create_session("kept").name)
    assert kept.result(timeout=5) == "kept"
    with pytest.raises(BadRequestError):
        failed.result(timeout=5)
    names = registry.call(str(root), lambda store: [s.name for s in store.list_sessions()]).result(5)
    assert sorted(names) == ["base", "kept"]


def test_then_runs_in_the_worker_thread_after_the_commit(registry: StoreRegistry, root: Path) -> None:
    seen: list[tuple[str, int]] = []
    ran = threading.Event()

    def then(done: Future[int]) -> None:
        seen.append((threading.current_thread().name, done.result()))
        ran.set()

    registry.call(str(root), lambda store: store.create_session().id, then=then)
    assert ran.wait(5)
    assert seen == [(f"azsd-store:{root}", 1)]


def test_a_store_that_cannot_open_fails_every_call(registry: StoreRegistry, root: Path) -> None:
    (root / ".azureal").mkdir()
    (root / ".azureal" / "sessions.azs").write_bytes(b"not sqlite at all" * 100)
    first = registry.call(str(root), lambda store: store.list_sessions())
    second = registry.call(str(root), lambda store: store.list_sessions())
    for future in (first, second):
        with pytest.raises(NotAStoreError):
            future.result(timeout=5)


def test_a_closed_registry_refuses_work(registry: StoreRegistry, root: Path) -> None:
    registry.close()
    refused = registry.call(str(root), lambda store: store.create_session())
    with pytest.raises(ShuttingDownError):
        refused.result(timeout=1)
    assert error_reply(refused.exception() or Exception()).code == "shutting_down"
    assert not (root / ".azureal").exists()


def test_on_open_runs_first_and_its_notes_are_published(root: Path) -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    outbox = Outbox(ctx)
    order: list[str] = []

    def on_open(store: Store, at: str) -> list[p.Notification]:
        order.append("open")
        return [p.SessionChanged(root=at, seq=0, session_id=1, change="renamed")]

    registry = StoreRegistry(outbox, idle_close_s=30, on_open=on_open)
    try:
        registry.call(str(root), lambda store: order.append("call")).result(timeout=5)
        assert order == ["open", "call"]
        frames = outbox.socket.recv_multipart()  # what the worker published, as the server sees it
        note = p.decode_notification(frames[-1])
        assert isinstance(note, p.SessionChanged) and note.seq == 1 and note.root == str(root)
    finally:
        registry.close()
        outbox.close()
        ctx.term()


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (SessionNotFoundError(3), "not_found"),
        (NotAStoreError(Path("/x")), "not_a_store"),
        (StoreFullError("full"), "store_full"),
        (StoreError("broken"), "store_error"),
        (IngestError("unreadable"), "ingest_error"),
        (BadRequestError("negative limit"), "bad_request"),
        (OverflowError("too big"), "bad_request"),
        (EventDecodeError("a stored row"), "internal"),
        (CodecError("a stored frame"), "internal"),
        (RuntimeError("a bug"), "internal"),
    ],
)
def test_error_reply_codes(exc: BaseException, code: str) -> None:
    reply = error_reply(exc)
    assert reply.code == code and reply.message


def test_a_read_runs_beside_a_busy_writer(registry: StoreRegistry, root: Path) -> None:
    registry.call(str(root), lambda store: store.create_session("one")).result(timeout=5)
    release = threading.Event()
    busy = registry.call(str(root), lambda store: release.wait(10))
    read = registry.call(str(root), lambda store: [s.name for s in store.list_sessions()], read=True)
    try:
        assert read.result(timeout=5) == ["one"]
        assert not busy.done()
    finally:
        release.set()
    assert busy.result(timeout=5) is True


def test_a_reader_never_writes_nor_creates(root: Path) -> None:
    with Store.open(root, reader=True) as reader:
        assert not reader.exists and reader.list_sessions() == []
        with pytest.raises(NeedsWriterError):
            reader.create_session("no")
    assert not (root / ".azureal").exists()
    with Store.open(root) as writer:
        writer.create_session("one")
    with Store.open(root, reader=True) as reader, reader.snapshot(), pytest.raises(NeedsWriterError):
        reader.rename_session(1, "no")


def test_the_number_of_open_stores_is_capped_and_a_busy_store_is_never_closed(tmp_path: Path) -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    outbox = Outbox(ctx)
    registry = StoreRegistry(outbox, idle_close_s=30, max_open=2)
    roots = [tmp_path / f"w{i}" for i in range(8)]
    for root in roots:
        root.mkdir()
    release = threading.Event()
    try:
        held = registry.call(str(roots[0]), lambda store: release.wait(10))
        most = 0
        futures = []
        for root in roots[1:]:
            futures.append(registry.call(str(root), lambda store: store.create_session(str(store.root)).name))
            futures.append(registry.call(str(root), lambda store: store.root.name, read=True))
            most = max(most, len(registry.open_stores()))
        for future in futures:
            future.result(timeout=10)
            most = max(most, len(registry.open_stores()))
        assert [f.result() for f in futures[1::2]] == [root.name for root in roots[1:]]
        assert most <= 2
        assert str(roots[0]) in registry.open_stores()  # busy all along: never closed
        assert not held.done()
    finally:
        release.set()
        registry.close()
        outbox.close()
        ctx.term()


def test_a_full_store_answers_each_call_truthfully(registry: StoreRegistry, root: Path) -> None:
    """SQLite rolls the whole group transaction back on SQLITE_FULL: each result must still say
    whether its rows are on disk (here the page limit is SQLite's own, on the writer's connection)."""
    sid = registry.call(str(root), lambda store: store.create_session().id).result(timeout=5)
    registry.call(
        str(root),
        lambda store: store._require().execute(
            "PRAGMA max_page_count = " + str(store._require().execute("PRAGMA page_count").fetchone()[0] + 40)
        ),
    ).result(timeout=5)

    def bulky(i: int) -> list[AssistantText]:
        return [
            AssistantText(text="".join(chr(0x4E00 + (i * 7919 + k * 104729) % 20000) for k in range(2000)))
        ]

    def append(i: int) -> Callable[[Store], object]:
        return lambda store: store.append_events(sid, bulky(i))

    futures = [registry.call(str(root), append(i)) for i in range(120)]
    ok = 0
    for future in futures:
        try:
            future.result(timeout=30)
            ok += 1
        except StoreFullError:
            pass
    assert 0 < ok < len(futures)
    with Store.open(root) as other:
        assert other.get_session(sid).event_count == ok


def test_a_read_locked_out_of_the_file_moves_to_the_writer(registry: StoreRegistry, root: Path) -> None:
    """Another program holds the file's EXCLUSIVE lock longer than a reader waits: the read is not
    failed, it queues on the writer (which waits its own, longer busy timeout)."""
    registry.call(str(root), lambda store: store.create_session("one")).result(timeout=5)
    registry.call(str(root), lambda store: store.list_sessions(), read=True).result(timeout=5)  # open it
    holder = sqlite3.connect(
        root / ".azureal" / "sessions.azs", isolation_level=None, check_same_thread=False
    )
    holder.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(READ_BUSY_TIMEOUT_S * 2, lambda: holder.execute("ROLLBACK"))
    release.start()
    try:
        read = registry.call(str(root), lambda store: [s.name for s in store.list_sessions()], read=True)
        assert read.result(timeout=10) == ["one"]
    finally:
        release.join()
        holder.close()


def _reply(outbox: Outbox) -> tuple[bytes, p.Reply]:
    """The next reply a worker (or an inline read) left in the outbox: its request id, decoded."""
    assert outbox.socket.poll(10_000), "no reply came"
    frames = outbox.socket.recv_multipart()
    assert frames[0] == b"R"
    return frames[2], p.decode_reply(frames[3])


def _upkept(store: Store) -> None:
    """The writer's upkeep done to the end (its commits would lock a quick read out)."""
    while store.catch_up_some() or store.forget_requests(time.time()) or store.vacuum_some():
        pass


def _quick_read(ran_in: list[int]) -> Callable[[Store], Outcome]:
    def read(store: Store) -> Outcome:
        store.get_session(1)  # reads the file
        ran_in.append(threading.get_ident())
        return Outcome(p.OkReply())

    return read


def test_a_quick_read_runs_in_the_calling_thread_while_the_reader_is_idle(
    registry: StoreRegistry, root: Path
) -> None:
    registry.call(str(root), lambda store: store.create_session("one")).result(timeout=5)
    registry.call(str(root), _upkept).result(timeout=30)  # no commit of the writer's comes now
    for i in range(200):  # a read that just answered has left the reader idle (none raced here)
        registry.call(str(root), lambda store: store.list_sessions(), read=True).result(timeout=5)
        ran_in: list[int] = []
        registry.answer(str(root), Envelope(b"c", b"r1"), _quick_read(ran_in), read=True, inline=True)
        assert ran_in == [threading.get_ident()], i  # done before answer returned, here
        assert _reply(registry.outbox) == (b"r1", p.OkReply())
    registry.answer(str(root), Envelope(b"c", b"r2"), _quick_read(ran_in), read=True)  # not inline
    assert _reply(registry.outbox) == (b"r2", p.OkReply())
    assert ran_in[1] != threading.get_ident()


def test_only_the_peek_of_a_long_read_runs_in_the_calling_thread(registry: StoreRegistry, root: Path) -> None:
    """`inline="peek"` (a listing): a reply the peek has already is sent from the calling thread;
    when it has none, the read runs on the reader, peek and all, not in the caller."""
    registry.call(str(root), lambda store: store.create_session("one")).result(timeout=5)
    registry.call(str(root), lambda store: store.list_sessions(), read=True).result(timeout=5)
    peeked_in: list[int] = []
    ran_in: list[int] = []
    kept: list[Outcome] = []

    def peek(store: Store) -> Outcome | None:
        peeked_in.append(threading.get_ident())
        return kept[0] if kept else None

    def answer(n: int) -> None:
        envelope = Envelope(b"c", b"r%d" % n)
        registry.answer(str(root), envelope, _quick_read(ran_in), read=True, inline="peek", peek=peek)

    answer(1)
    assert _reply(registry.outbox) == (b"r1", p.OkReply())
    assert peeked_in[0] == threading.get_ident() and peeked_in[1] != threading.get_ident()
    assert len(ran_in) == 1 and ran_in[0] != threading.get_ident()
    kept.append(Outcome(p.encode(p.SessionsReply(sessions=[], total=0))))
    answer(2)
    assert peeked_in[2] == threading.get_ident() and len(ran_in) == 1  # answered here, from the peek
    assert _reply(registry.outbox) == (b"r2", p.SessionsReply(sessions=[], total=0))


def test_a_quick_read_of_a_locked_file_waits_on_the_reader_not_the_caller(
    registry: StoreRegistry, root: Path
) -> None:
    """Another program holds the file's EXCLUSIVE lock: the read is not run in the calling thread
    (the daemon's socket loop, which must not wait for a lock); it queues on the reader."""
    registry.call(str(root), lambda store: store.create_session("one")).result(timeout=5)
    registry.call(str(root), lambda store: store.list_sessions(), read=True).result(timeout=5)
    holder = sqlite3.connect(
        root / ".azureal" / "sessions.azs", isolation_level=None, check_same_thread=False
    )
    holder.execute("BEGIN EXCLUSIVE")
    ran_in: list[int] = []
    try:
        registry.answer(str(root), Envelope(b"c", b"r1"), _quick_read(ran_in), read=True, inline=True)
        assert ran_in == []  # answer returned without running it
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert _reply(registry.outbox) == (b"r1", p.OkReply())
    assert len(ran_in) == 1 and ran_in[0] != threading.get_ident()


def test_writes_queued_behind_a_long_write_run_between_its_chunks(
    registry: StoreRegistry, root: Path
) -> None:
    """A rename queued behind a long ingest used to wait for all of it (33 s): the long write yields
    the writer, not only the lock, between its chunks. A long call queued behind waits its turn."""
    sid = registry.call(str(root), lambda store: store.create_session("one").id).result(timeout=5)
    release = threading.Event()
    chunks_done: list[int] = []

    def long_write(store: Store) -> int:
        with ChunkedWrite(store) as chunks:
            n = 0
            while not release.is_set() and n < 2000:  # at most ~20 s
                with chunks.step() as conn:
                    conn.execute("UPDATE sessions SET worktree = ? WHERE id = ?", (f"w{n}", sid))
                    time.sleep(0.01)
                chunks_done.append(chunks.pacer.chunks)
                n += 1
        return n

    long = registry.call(str(root), long_write, alone=True)
    while not chunks_done:
        time.sleep(0.01)
    rename = registry.call(str(root), lambda store: store.rename_session(sid, "two"))
    second_long = registry.call(str(root), lambda store: store.get_session(sid).name, alone=True)
    try:
        rename.result(timeout=10)
        assert not long.done()  # it answered between two chunks of the long write
        assert not second_long.done()  # a long call behind it still waits for it
    finally:
        release.set()
    assert long.result(timeout=20) < 2000
    assert second_long.result(timeout=10) == "two"


def test_writes_queued_behind_a_backup_run_between_its_steps(
    registry: StoreRegistry, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backup is long work too: the writes behind it run between its steps, on its connection,
    and SQLite copies them into the backup as they are made (no restart)."""
    monkeypatch.setattr(backup, "STEP_BYTES", 8192)  # many short steps, a pause after each
    monkeypatch.setattr(backup, "Pacer", lambda: Pacer(Pacing(chunk_s=0.0, gap_s=0.01, long_gap_s=0.01)))

    def fill(store: Store) -> int:
        sid = store.create_session("one").id
        store.append_events(sid, [AssistantText(text=f"row {i} " + "x" * 400) for i in range(3000)])
        return sid

    sid = registry.call(str(root), fill).result(timeout=30)
    steps: list[int] = []
    real_copy = backup._copy

    def counting_copy(
        path: Path, conn: sqlite3.Connection, target: sqlite3.Connection, between: Callable[[], None] | None
    ) -> None:
        def counted() -> None:
            steps.append(1)
            if between is not None:
                between()

        real_copy(path, conn, target, counted)

    monkeypatch.setattr(backup, "_copy", counting_copy)
    dest = root / "copy.azs"
    copied = registry.call(str(root), lambda store: store.backup(dest), alone=True)
    deadline = time.monotonic() + 30
    while not steps:
        assert time.monotonic() < deadline and not copied.done(), "no step of the backup"
        time.sleep(0.005)
    rename = registry.call(str(root), lambda store: store.rename_session(sid, "two"))
    rename.result(timeout=10)
    assert not copied.done()  # it answered between two steps of the backup
    info = copied.result(timeout=60)
    assert info.integrity == "ok"
    with sqlite3.connect(dest) as conn:  # the copy holds the rename made while it was taken
        assert conn.execute("SELECT name FROM sessions WHERE id = ?", (sid,)).fetchone() == ("two",)


def test_an_ingests_full_record_is_kept_as_soon_as_no_call_waits(
    registry: StoreRegistry, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upkeep runs after a quiet spell (a second) so that a busy store is not held up; a call
    that asked for its work (`azs ingest` and the file's full record) has it start as soon as no
    call waits. Made an hour here: only the ask can start it within the test."""
    monkeypatch.setattr(workers, "UPKEEP_S", 3600.0)
    source = tmp_path / "s.jsonl"
    source.write_bytes(b'{"type":"user","message":{"role":"user","content":"hi"}}\n' * 50)
    size = source.stat().st_size

    def ingest(store: Store) -> None:
        sid = store.create_session("one").id
        store.append_events(sid, [AssistantText(text="hi")])
        store.want_full(sid, str(source), "claude", size)

    registry.call(str(root), ingest).result(timeout=5)
    deadline = time.monotonic() + 10
    while (waiting := registry.call(str(root), lambda store: store.full_waiting()).result(timeout=5)) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.05)
    assert waiting == 0
    with Store.open(root) as other:
        assert other.full_cost().source_bytes == size
