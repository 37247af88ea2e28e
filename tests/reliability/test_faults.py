"""Stores in trouble (a full disk, a file that is not SQLite, a newer schema) and the others keep serving."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.events import AssistantText, encode_event
from azsd.ipc import protocol as p
from azsd.store import Store
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir
from tests.reliability.common import size_limited_tmpfs


@pytest.fixture
def daemon_and_roots() -> Iterator[tuple[DaemonProc, Path]]:
    with daemon_in_tmpdir() as d:
        yield d, d.runtime_dir.parent


@pytest.fixture
def small_fs() -> Iterator[Path]:
    """A 512 KiB tmpfs: a real file system that fills up."""
    with size_limited_tmpfs("512k") as mount:
        yield mount


def rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT session_id, seq, kind, data, char_len FROM events ORDER BY session_id, seq"
        ).fetchall()


def test_a_full_disk_is_a_clear_error_and_loses_nothing(
    small_fs: Path, daemon_and_roots: tuple[DaemonProc, Path]
) -> None:
    # small_fs comes first: it is torn down last, after the daemon has let go of the store on it.
    d, base = daemon_and_roots
    full_root, other_root = small_fs, base / "other"
    other_root.mkdir()
    filler = small_fs / "filler"
    filler.write_bytes(b"\0" * 96 * 1024)  # removed later, to make room again
    created = d.request(p.CreateSession(root=str(full_root)))
    assert isinstance(created, p.SessionReply)
    sid = created.session.id
    acknowledged = 0
    error: p.ErrorReply | None = None
    for i in range(10_000):  # incompressible-ish text, until the disk is full
        text = f"{i} " + "".join(chr(0x4E00 + (i * 7919 + k * 104729) % 20000) for k in range(400))
        reply = d.request(
            p.AppendEvents(
                root=str(full_root), session=sid, events=[encode_event(AssistantText(text=text)).decode()]
            )
        )
        if isinstance(reply, p.ErrorReply):
            error = reply
            break
        acknowledged += 1
    assert error is not None, "the disk never filled"
    assert error.code == "store_full" and "full" in error.message
    # Everything acknowledged is there; the failed write left nothing behind.
    page = d.request(p.GetEvents(root=str(full_root), session=sid, limit=100_000))
    assert isinstance(page, p.EventsPage) and len(page.events) == acknowledged
    # Other stores keep serving.
    assert isinstance(d.request(p.CreateSession(root=str(other_root))), p.SessionReply)
    # Once there is room again, the same store takes writes again.
    filler.unlink()
    more = encode_event(AssistantText(text="after the disk was freed")).decode()
    appended = d.request(p.AppendEvents(root=str(full_root), session=sid, events=[more]))
    assert isinstance(appended, p.AppendReply) and appended.events[0].seq == acknowledged + 1
    with sqlite3.connect(full_root / ".azureal" / "sessions.azs") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_not_sqlite_and_newer_schema_stores_beside_a_healthy_one(
    daemon_and_roots: tuple[DaemonProc, Path],
) -> None:
    d, base = daemon_and_roots
    garbage, newer, healthy = base / "garbage", base / "newer", base / "healthy"
    for root in (garbage, newer, healthy):
        root.mkdir()
    (garbage / ".azureal").mkdir()
    (garbage / ".azureal" / "sessions.azs").write_bytes(b"\x00not sqlite\x00" * 1000)
    with Store.open(newer) as store:
        sid = store.create_session().id
        store.append_events(sid, [AssistantText(text="kept")])
    with sqlite3.connect(newer / ".azureal" / "sessions.azs") as conn:
        conn.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    before = rows(newer / ".azureal" / "sessions.azs")

    bad = d.request(p.ListSessions(root=str(garbage)))
    assert (
        isinstance(bad, p.ErrorReply)
        and bad.code == "not_a_store"
        and "not an SQLite database" in bad.message
    )
    listed = d.request(p.ListSessions(root=str(newer)))
    assert isinstance(listed, p.SessionsReply) and listed.total == 1  # readable
    refused = d.request(
        p.AppendEvents(root=str(newer), session=sid, events=[encode_event(AssistantText(text="x")).decode()])
    )
    assert (
        isinstance(refused, p.ErrorReply)
        and refused.code == "read_only"
        and "schema_version 9" in refused.message
    )
    assert isinstance(d.request(p.CreateSession(root=str(healthy))), p.SessionReply)
    assert rows(newer / ".azureal" / "sessions.azs") == before
    assert (garbage / ".azureal" / "sessions.azs").read_bytes() == b"\x00not sqlite\x00" * 1000
