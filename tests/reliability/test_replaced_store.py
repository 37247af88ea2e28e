"""Stores replaced or deleted under the daemon (issue 2/7): each batch looks at the file's identity,
so a store replaced (a restored backup, `os.replace`) is reopened and one deleted is closed, and the
next write lands in the file that is at the path now, never in an unlinked inode."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.ipc import protocol as p
from azsd.store import Store, store_path
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir

EVENT = '{"UserMessage":{"content":"landed"}}'


@pytest.fixture
def daemon_and_root() -> Iterator[tuple[DaemonProc, Path]]:
    with daemon_in_tmpdir() as d:
        root = d.runtime_dir.parent / "w"
        root.mkdir()
        created = d.request(p.CreateSession(root=str(root), name="old"))
        assert isinstance(created, p.SessionReply), created
        listed = d.request(p.ListSessions(root=str(root)))  # the reader has the file open too
        assert isinstance(listed, p.SessionsReply), listed
        yield d, root


def stored(root: Path) -> dict[str, int]:
    """Each session of the file now at the store's path, with its event count."""
    with Store.open(root) as store:
        return {s.name: s.event_count for s in store.list_sessions()}


def test_a_replaced_store_is_reopened(daemon_and_root: tuple[DaemonProc, Path]) -> None:
    d, root = daemon_and_root
    elsewhere = d.runtime_dir.parent / "elsewhere"
    elsewhere.mkdir()
    with Store.open(elsewhere) as other:
        other.create_session("new")  # S1 there too
    os.replace(store_path(elsewhere), store_path(root))
    listed = d.request(p.ListSessions(root=str(root)))
    assert isinstance(listed, p.SessionsReply), listed
    assert [s.name for s in listed.sessions] == ["new"]
    appended = d.request(p.AppendEvents(root=str(root), session=1, events=[EVENT]))
    assert isinstance(appended, p.AppendReply), appended
    assert stored(root) == {"new": 1}
    assert "replaced" in d.log_text()


def test_a_deleted_store_is_closed_and_the_next_create_makes_a_new_file(
    daemon_and_root: tuple[DaemonProc, Path],
) -> None:
    d, root = daemon_and_root
    store_path(root).unlink()
    listed = d.request(p.ListSessions(root=str(root)))
    assert isinstance(listed, p.SessionsReply) and listed.sessions == [], listed
    created = d.request(p.CreateSession(root=str(root), name="after"))
    assert isinstance(created, p.SessionReply), created
    appended = d.request(p.AppendEvents(root=str(root), session=created.session.id, events=[EVENT]))
    assert isinstance(appended, p.AppendReply), appended
    assert stored(root) == {"after": 1}
    assert "deleted" in d.log_text()
