"""Reads never wait for a long write (issue 2/7): a store's reads run on a connection of their own,
beside its writer, so `azs ls` answers while the writer is held up; and a client still reads its own
writes (a read waits for that client's earlier, uncommitted write to the same store, and for nothing
else)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.ipc import protocol as p
from azsd.store import store_path
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir
from tests.reliability.pipeline import Pipe


@pytest.fixture
def daemon_and_root() -> Iterator[tuple[DaemonProc, Path]]:
    with daemon_in_tmpdir() as d:
        root = d.runtime_dir.parent / "w"
        root.mkdir()
        created = d.request(p.CreateSession(root=str(root), name="first"))
        assert isinstance(created, p.SessionReply), created
        yield d, root


def hold_write_lock(root: Path) -> sqlite3.Connection:
    """An AZUREAL-style writer in the middle of a transaction: it holds the RESERVED lock, so every
    write of the daemon waits (up to its 5 s busy timeout) while readers may still read."""
    holder = sqlite3.connect(store_path(root), isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("UPDATE meta SET value = value WHERE key = 'schema_version'")
    return holder


def names(reply: p.Reply) -> list[str]:
    assert isinstance(reply, p.SessionsReply), reply
    return sorted(s.name for s in reply.sessions)


def test_a_read_answers_while_the_stores_writer_is_held_up(daemon_and_root: tuple[DaemonProc, Path]) -> None:
    d, root = daemon_and_root
    writer, reader = Pipe(d), Pipe(d)
    holder = hold_write_lock(root)
    try:
        create = writer.send(p.CreateSession(root=str(root), name="held"))
        # The writer's requests are taken in order: once Status is answered, the create is queued.
        status = writer.send(p.Status())
        rid, reply = writer.recv()
        assert rid == status and isinstance(reply, p.StatusReply), reply
        listing = reader.send(p.ListSessions(root=str(root)))
        rid, reply = reader.recv()
        assert rid == listing
        assert names(reply) == ["first"]  # read beside the writer: its pending create is not there
        assert not writer.ready(), "the read was answered only after the write"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    rid, reply = writer.recv()
    assert rid == create and isinstance(reply, p.SessionReply), reply
    writer.close()
    reader.close()


@pytest.mark.parametrize("key", [None, "k-1"], ids=["unkeyed", "keyed"])  # the clients key every write
def test_a_client_reads_its_own_pipelined_write(
    daemon_and_root: tuple[DaemonProc, Path], key: str | None
) -> None:
    d, root = daemon_and_root
    client, other = Pipe(d), Pipe(d)
    holder = hold_write_lock(root)
    release = threading.Timer(0.5, lambda: holder.execute("ROLLBACK"))
    release.start()
    try:
        create = client.send(
            p.CreateSession(root=str(root), name="mine")
            if key is None
            else p.CreateSession(root=str(root), name="mine", request_key=key)
        )
        listing = client.send(p.ListSessions(root=str(root)))
        their_listing = other.send(p.ListSessions(root=str(root)))
        # Another client's read does not wait for this client's write.
        rid, theirs = other.recv()
        assert rid == their_listing and names(theirs) == ["first"]
        replies = client.replies([create, listing])
    finally:
        release.join()
        holder.close()
    assert isinstance(replies[create], p.SessionReply), replies[create]
    assert names(replies[listing]) == ["first", "mine"]  # the read waited for this client's write
    client.close()
    other.close()


def test_a_search_whose_index_must_catch_up_still_answers(daemon_and_root: tuple[DaemonProc, Path]) -> None:
    d, root = daemon_and_root
    created = d.request(p.CreateSession(root=str(root), name="searched"))
    assert isinstance(created, p.SessionReply)
    appended = d.request(
        p.AppendEvents(
            root=str(root), session=created.session.id, events=['{"UserMessage":{"content":"zebra one"}}']
        )
    )
    assert isinstance(appended, p.AppendReply), appended
    # An AZUREAL-style writer adds a row the search index has not seen: the search has to write.
    with sqlite3.connect(store_path(root)) as conn:
        row = conn.execute("SELECT data, char_len FROM events WHERE session_id = ?", (created.session.id,))
        data, char_len = row.fetchone()
        conn.execute(
            "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, 2, 'UserMessage', ?, ?)",
            (created.session.id, data, char_len),
        )
    found = d.request(p.Search(root=str(root), query="zebra"))
    assert isinstance(found, p.SearchReply), found
    assert sorted(h.seq for h in found.hits) == [1, 2]
