"""Request keys in process: the side table `azsd_requests` (retention, bounded pruning, migration) and
:class:`~azsd.server.idempotency.RequestKeys` over a real store registry, with a clock the test turns.
The daemon end to end is in ``tests/reliability/test_retries.py``."""

from __future__ import annotations

import doctest
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

import azsd.server.idempotency
from azsd.ipc import protocol as p
from azsd.ipc.transport import Envelope, Outbox
from azsd.server.handlers import handle
from azsd.server.idempotency import PRUNE_BATCH, RETENTION_S, RequestKeys, request_digest
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
        store.remember_request("k", b"digest", b"reply", 1000.0, forget_before=0.0, prune=PRUNE_BATCH)
        assert store.remembered_request("k", since=1000.0) == (b"digest", b"reply")
        assert store.remembered_request("k", since=1000.5) is None  # older than asked for
        assert store.remembered_request("other", since=0.0) is None


def test_each_new_key_prunes_a_bounded_number_of_expired_ones(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.create_session()
        for i in range(150):
            store.remember_request(f"old{i}", b"d", b"r", float(i), forget_before=0.0, prune=PRUNE_BATCH)
        store.remember_request("kept", b"d", b"r", 700.0, forget_before=0.0, prune=PRUNE_BATCH)
        assert rows(tmp_path) == 151
        store.remember_request("new1", b"d", b"r", 1000.0, forget_before=600.0, prune=PRUNE_BATCH)
        assert rows(tmp_path) == 152 - PRUNE_BATCH  # the oldest ones went, no more than the batch
        assert store.remembered_request("old0", since=0.0) is None
        assert store.remembered_request(f"old{PRUNE_BATCH}", since=0.0) is not None
        for i in range(2, 5):
            store.remember_request(f"new{i}", b"d", b"r", 1000.0, forget_before=600.0, prune=PRUNE_BATCH)
        assert store.remembered_request("kept", since=0.0) is not None  # not expired: never pruned
        assert rows(tmp_path) == 1 + 4  # every expired key gone after a few requests


def test_a_store_from_before_request_keys_gets_the_table(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.create_session("old")
    with sqlite3.connect(store_path(tmp_path)) as conn:
        conn.execute("DROP TABLE azsd_requests")
    with Store.open(tmp_path) as store:
        store.remember_request("k", b"d", b"r", 1.0, forget_before=0.0, prune=PRUNE_BATCH)
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
    def __init__(self) -> None:
        self.now = 1_000_000.0

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
