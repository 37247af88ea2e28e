"""Request keys in process: the side table `azsd_requests` (retention, bounded pruning, migration) and
:class:`~azsd.server.idempotency.RequestKeys` over a real store registry, with a clock the test turns.
The daemon end to end is in ``tests/reliability/test_retries.py``."""

from __future__ import annotations

import doctest
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

import azsd.server.idempotency
from azsd.events import UserMessage, encode_event
from azsd.ipc import protocol as p
from azsd.ipc.transport import Envelope, Outbox
from azsd.server.handlers import handle
from azsd.server.idempotency import MAX_TABLE_BYTES, PRUNE_BATCH, RETENTION_S, RequestKeys, request_digest
from azsd.server.idempotency import MAX_TABLE_BYTES as CAP
from azsd.server.registry import StoreRegistry
from azsd.store import Store, store_path


def test_docstring_examples_run() -> None:
    result = doctest.testmod(azsd.server.idempotency)
    assert result.failed == 0 and result.attempted >= 2


def rows(root: Path) -> int:
    with sqlite3.connect(store_path(root)) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM azsd_requests").fetchone()[0])


def test_a_key_is_remembered_for_its_retention_only(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.create_session()
        assert store.remembered_request("k", since=0.0) is None
        store.remember_request(
            "k", b"digest", b"reply", 1000.0, forget_before=0.0, prune=PRUNE_BATCH, max_bytes=CAP
        )
        assert store.remembered_request("k", since=1000.0) == (b"digest", b"reply")
        assert store.remembered_request("k", since=1000.5) is None  # older than asked for
        assert store.remembered_request("other", since=0.0) is None


def test_each_new_key_prunes_a_bounded_number_of_expired_ones(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.create_session()
        for i in range(150):
            store.remember_request(
                f"old{i}", b"d", b"r", float(i), forget_before=0.0, prune=PRUNE_BATCH, max_bytes=CAP
            )
        store.remember_request("kept", b"d", b"r", 700.0, forget_before=0.0, prune=PRUNE_BATCH, max_bytes=CAP)
        assert rows(tmp_path) == 151
        store.remember_request(
            "new1", b"d", b"r", 1000.0, forget_before=600.0, prune=PRUNE_BATCH, max_bytes=CAP
        )
        assert rows(tmp_path) == 152 - PRUNE_BATCH  # the oldest ones went, no more than the batch
        assert store.remembered_request("old0", since=0.0) is None
        assert store.remembered_request(f"old{PRUNE_BATCH}", since=0.0) is not None
        for i in range(2, 5):
            store.remember_request(
                f"new{i}", b"d", b"r", 1000.0, forget_before=600.0, prune=PRUNE_BATCH, max_bytes=CAP
            )
        assert store.remembered_request("kept", since=0.0) is not None  # not expired: never pruned
        assert rows(tmp_path) == 1 + 4  # every expired key gone after a few requests


def test_a_store_from_before_request_keys_gets_the_table(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.create_session("old")
    with sqlite3.connect(store_path(tmp_path)) as conn:
        conn.execute("DROP TABLE azsd_requests")
    with Store.open(tmp_path) as store:
        store.remember_request("k", b"d", b"r", 1.0, forget_before=0.0, prune=PRUNE_BATCH, max_bytes=CAP)
        assert store.remembered_request("k", since=0.0) == (b"d", b"r")
        assert [s.name for s in store.list_sessions()] == ["old"]


def test_a_newer_schema_without_the_table_remembers_nothing(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.create_session()
    with sqlite3.connect(store_path(tmp_path)) as conn:
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
        conn.execute("DROP TABLE azsd_requests")
    with Store.open(tmp_path) as store:
        assert store.read_only and store.remembered_request("k", since=0.0) is None


def test_the_digest_leaves_the_key_out_and_tells_requests_apart() -> None:
    a = p.CreateSession(root="/w", name="a", request_key="k1")
    assert request_digest(a) == request_digest(p.CreateSession(root="/w", name="a", request_key="k2"))
    assert request_digest(a) == request_digest(p.CreateSession(root="/w", name="a"))
    assert request_digest(a) != request_digest(p.CreateSession(root="/w", name="b", request_key="k1"))


class Clock:
    """The request keys' clock, turned by the test (from the wall clock's now, which the store's
    upkeep goes by when it forgets expired keys)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def keys(tmp_path: Path) -> Iterator[tuple[RequestKeys, Outbox, Clock]]:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    outbox = Outbox(ctx)
    registry = StoreRegistry(outbox, idle_close_s=60.0)
    clock = Clock()
    try:
        yield RequestKeys(registry, clock), outbox, clock
    finally:
        registry.close()
        outbox.close()
        ctx.destroy(linger=0)


def ask(keys: RequestKeys, outbox: Outbox, request: p.StoreRequest) -> p.Reply:
    """Answer `request` as the daemon does, and read its reply off the outbox."""
    keys.answer(request.root, Envelope(b"client", b"1"), request, lambda store: handle(store, request))
    while True:  # notifications go through the outbox too: [tag, topic, payload]
        assert outbox.socket.poll(10_000), "no reply"
        frames = outbox.socket.recv_multipart()
        if len(frames) == 4:
            break
    assert frames[1:3] == [b"client", b"1"]
    return p.decode_reply(frames[3])


def test_a_key_older_than_the_retention_is_forgotten(
    tmp_path: Path, keys: tuple[RequestKeys, Outbox, Clock]
) -> None:
    runner, outbox, clock = keys
    request = p.CreateSession(root=str(tmp_path), name="n", request_key="k")
    first = ask(runner, outbox, request)
    assert isinstance(first, p.SessionReply) and first.session.id == 1
    clock.now += RETENTION_S - 1
    assert ask(runner, outbox, request) == first  # still remembered: the first reply
    clock.now += 2
    later = ask(runner, outbox, request)  # forgotten: a new request with an old key
    assert isinstance(later, p.SessionReply) and later.session.id == 2
    clock.now += 1
    assert ask(runner, outbox, request) == later  # and that one is remembered in its turn


def test_a_request_without_a_key_is_carried_out_each_time(
    tmp_path: Path, keys: tuple[RequestKeys, Outbox, Clock]
) -> None:
    runner, outbox, _ = keys
    request = p.CreateSession(root=str(tmp_path))
    ids = [ask(runner, outbox, request) for _ in range(2)]
    assert [r.session.id for r in ids if isinstance(r, p.SessionReply)] == [1, 2]
    assert rows(tmp_path) == 0


def test_appends_of_long_prompts_leave_the_store_the_size_of_its_events(
    tmp_path: Path, keys: tuple[RequestKeys, Outbox, Clock]
) -> None:
    """100 keyed appends of a 1 MB prompt (as the issue measured it: one that compresses well, ~0.1 MB
    of events in all): the request keys keep no copy of the prompts, so the file is no bigger than 1.2×
    its events' bytes + 5 MB (it was 128 MB); a retry still gets the first reply whole."""
    runner, outbox, clock = keys
    root = str(tmp_path)
    created = ask(runner, outbox, p.CreateSession(root=root, request_key="new"))
    assert isinstance(created, p.SessionReply)
    first: p.Reply | None = None
    for i in range(100):
        event = encode_event(UserMessage(content=f"prompt {i} " + "x" * 1_000_000)).decode()
        request = p.AppendEvents(root=root, session=created.session.id, events=[event], request_key=f"k{i}")
        reply = ask(runner, outbox, request)
        assert isinstance(reply, p.AppendReply) and len(reply.events[0].data) > 900_000
        if i == 0:
            first, first_request = reply, request
        clock.now += 1
    assert ask(runner, outbox, first_request) == first  # the retry: the text read back from the row
    with sqlite3.connect(store_path(tmp_path)) as conn:
        events_bytes = conn.execute("SELECT SUM(length(data)) FROM events").fetchone()[0]
        keys_bytes = conn.execute("SELECT SUM(length(reply)) FROM azsd_requests").fetchone()[0]
    size = store_path(tmp_path).stat().st_size
    assert keys_bytes < 100 * 1024, keys_bytes
    assert size <= 1.2 * events_bytes + 5 * 2**20, (size, events_bytes)


def test_the_replies_kept_never_pass_the_table_cap(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.create_session()
        for i in range(60):  # 60 × 100 kB, all within their retention
            store.remember_request(
                f"k{i}", b"d" * 32, os.urandom(100_000), 1000.0 + i, forget_before=0.0, prune=PRUNE_BATCH,
                max_bytes=MAX_TABLE_BYTES,
            )  # fmt: skip
        with sqlite3.connect(store_path(tmp_path)) as conn:
            total, oldest = conn.execute(
                "SELECT SUM(length(reply)), MIN(created) FROM azsd_requests"
            ).fetchone()
        assert total <= MAX_TABLE_BYTES and oldest > 1000.0  # the oldest left first
        assert store.remembered_request("k59", since=0.0) is not None


def _bloat(store: Store, megabytes: int) -> None:
    """Keys with 1 MB replies, expired, then pruned by a new key: `megabytes` MB on the free list."""
    for i in range(megabytes):
        store.remember_request(
            f"old{i}", b"d", os.urandom(2**20), 1.0, forget_before=0.0, prune=0, max_bytes=2**40
        )
    store.remember_request("new", b"d", b"r", 1000.0, forget_before=600.0, prune=PRUNE_BATCH, max_bytes=2**40)


def test_freed_pages_go_back_to_the_file_system(tmp_path: Path) -> None:
    path = store_path(tmp_path)
    with Store.open(tmp_path) as store:
        store.create_session()
    with sqlite3.connect(path) as conn:  # a store as AZUREAL or an older azsd made it
        conn.execute("PRAGMA auto_vacuum = NONE")
        conn.execute("VACUUM")
    with Store.open(tmp_path) as store:
        _bloat(store, 30)
        assert path.stat().st_size > 30 * 2**20 and store.free_bytes()[0] > 29 * 2**20
        while store.vacuum_some():  # the one full VACUUM that switches it to incremental
            pass
        assert path.stat().st_size < 2 * 2**20
        _bloat(store, 20)
        while store.vacuum_some():  # now in short paced steps
            pass
        assert path.stat().st_size < 2 * 2**20
        assert store.remembered_request("new", since=0.0) == (b"d", b"r")
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_the_upkeep_forgets_expired_keys_without_waiting_for_new_ones(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.create_session()
        with store.atomic():  # (one commit: quicker)
            for i in range(300):
                store.remember_request(
                    f"old{i}", b"d", b"r", float(i), forget_before=0.0, prune=0, max_bytes=CAP
                )
        store.remember_request("fresh", b"d", b"r", 10_000.0, forget_before=0.0, prune=0, max_bytes=CAP)
        now = 10_000.0 + RETENTION_S - 1
        assert store.forget_requests(now) is True  # a bounded batch, and more remain
        assert store.forget_requests(now) is False
        assert rows(tmp_path) == 1 and store.remembered_request("fresh", since=0.0) is not None
        assert store.forget_requests(now) is False  # nothing expired: nothing written
