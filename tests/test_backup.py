"""Backups: SQLite's online backup API, verified, timestamped; consistent while a follow writes."""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from azsd.errors import StoreError
from azsd.events import AssistantText, UserMessage
from azsd.ipc import protocol as p
from azsd.server.handlers import backup_path
from azsd.store import Store
from tests.conftest import corpus_files, requires_corpus
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir, short_tmpdir


def event_rows(path: Path) -> list[tuple[int, int, str, bytes]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute(
            "SELECT session_id, seq, kind, data FROM events ORDER BY session_id, seq"
        ).fetchall()


def integrity(path: Path) -> str:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def test_backup_path_names(tmp_path: Path) -> None:
    now = datetime(2026, 11, 21, 9, 5, 7, tzinfo=UTC)
    assert backup_path(Path("/w"), None, now) == Path("/w/.azureal/backups/sessions-20261121T090507Z.azs")
    assert backup_path(Path("/w"), str(tmp_path), now) == tmp_path / "sessions-20261121T090507Z.azs"
    assert backup_path(Path("/w"), f"{tmp_path}/mine.azs", now) == tmp_path / "mine.azs"
    with pytest.raises(ValueError, match="absolute"):
        backup_path(Path("/w"), "relative/dir", now)
    (tmp_path / "sessions-20261121T090507Z.azs").touch()
    assert backup_path(Path("/w"), str(tmp_path), now).name == "sessions-20261121T090507Z-2.azs"


def test_a_backup_is_a_verified_copy(store: Store, tmp_path: Path) -> None:
    s = store.create_session("kept", worktree="main")
    store.append_events(s.id, [UserMessage(content="hello"), AssistantText(text="world")])
    info = store.backup(tmp_path / "copy.azs")
    assert (info.sessions, info.events, info.integrity) == (1, 2, "ok")
    assert info.bytes == (tmp_path / "copy.azs").stat().st_size
    assert event_rows(tmp_path / "copy.azs") == event_rows(store.path)
    assert integrity(tmp_path / "copy.azs") == "ok"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["copy.azs", "worktree"]  # no temporary left
    copy_root = tmp_path / "restored"
    (copy_root / ".azureal").mkdir(parents=True)
    shutil.copy(tmp_path / "copy.azs", copy_root / ".azureal" / "sessions.azs")
    with Store.open(copy_root) as reopened:
        assert [e.event for e in reopened.load_events(s.id).events] == [
            UserMessage(content="hello"),
            AssistantText(text="world"),
        ]
        assert [h.seq for h in reopened.search("world")] == [2]


def test_a_backup_never_overwrites_and_needs_a_store(store: Store, tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="nothing to back up"):
        store.backup(tmp_path / "none.azs")
    store.create_session()
    (tmp_path / "taken.azs").write_bytes(b"precious")
    with pytest.raises(StoreError, match="already exists"):
        store.backup(tmp_path / "taken.azs")
    assert (tmp_path / "taken.azs").read_bytes() == b"precious"


# -- through the daemon, while a follow writes --------------------------------------------------------


@pytest.fixture
def env() -> Iterator[tuple[DaemonProc, Path]]:
    root = short_tmpdir()
    with daemon_in_tmpdir() as d:
        try:
            yield d, root
        finally:
            shutil.rmtree(root, ignore_errors=True)


def stored_count(d: DaemonProc, root: Path, sid: int) -> int:
    reply = d.request(p.GetSession(root=str(root), session=sid))
    assert isinstance(reply, p.SessionReply)
    return reply.session.event_count


@requires_corpus
def test_backups_taken_during_a_live_follow_hold_everything_committed_before_them(
    env: tuple[DaemonProc, Path],
) -> None:
    d, root = env
    created = d.request(p.CreateSession(root=str(root), name="live"))
    assert isinstance(created, p.SessionReply)
    sid = created.session.id
    source = max(corpus_files("claude-session"), key=lambda f: f.stat().st_size)
    lines = source.read_bytes().splitlines(keepends=True)
    target = root / "agent.jsonl"
    target.write_bytes(b"")
    follow = d.request(p.Follow(root=str(root), session=sid, path=str(target)), timeout_ms=30_000)
    assert isinstance(follow, p.FollowReply), follow
    writing = threading.Event()
    writing.set()

    def agent() -> None:  # the agent writes its session file line by line, a few times over
        with open(target, "ab") as out:
            for _ in range(3):
                for line in lines:
                    if not writing.is_set():
                        return
                    out.write(line)
                    out.flush()
                    time.sleep(0.001)

    writer = threading.Thread(target=agent)
    writer.start()
    backups: list[tuple[int, p.BackupReply]] = []
    try:
        deadline = time.monotonic() + 30
        while len(backups) < 4 and time.monotonic() < deadline:
            if stored_count(d, root, sid) == 0:
                time.sleep(0.02)
                continue
            before = stored_count(d, root, sid)  # committed before the backup is asked for
            reply = d.request(p.Backup(root=str(root), dest=str(root / "backups")), timeout_ms=30_000)
            assert isinstance(reply, p.BackupReply), reply
            backups.append((before, reply))
            time.sleep(0.05)
    finally:
        writing.clear()
        writer.join()
    d.request(p.Unfollow(root=str(root), path=str(target)), timeout_ms=30_000)
    final = event_rows(root / ".azureal" / "sessions.azs")
    assert len(backups) == 4
    assert len({reply.path for _, reply in backups}) == len(backups)  # one second, several names
    for before, reply in backups:
        path = Path(reply.path)
        assert path.parent == root / "backups" and path.name.startswith("sessions-") and path.suffix == ".azs"
        assert reply.integrity == "ok" and integrity(path) == "ok"
        copy = event_rows(path)
        assert len(copy) == reply.events >= before
        assert copy == final[: len(copy)]  # a consistent prefix of what the follow went on to store


def test_backup_errors_through_the_daemon(env: tuple[DaemonProc, Path]) -> None:
    d, root = env
    empty = d.request(p.Backup(root=str(root)))
    assert (
        isinstance(empty, p.ErrorReply)
        and empty.code == "store_error"
        and "nothing to back up" in empty.message
    )
    d.request(p.CreateSession(root=str(root)))
    relative = d.request(p.Backup(root=str(root), dest="backups"))
    assert isinstance(relative, p.ErrorReply) and relative.code == "bad_request"
    (root / "x.azs").write_bytes(b"")
    taken = d.request(p.Backup(root=str(root), dest=str(root / "x.azs")))
    assert isinstance(taken, p.ErrorReply) and "already exists" in taken.message
    for dest in (root / "nowhere" / "x.azs", root / "nowhere" / "dir"):  # a typo never makes directories
        missing = d.request(p.Backup(root=str(root), dest=str(dest)))
        assert isinstance(missing, p.ErrorReply) and missing.code == "bad_request", missing
        assert f"no such directory for the backup: {root / 'nowhere'}" in missing.message
        assert not (root / "nowhere").exists()
    default = d.request(p.Backup(root=str(root)))
    assert isinstance(default, p.BackupReply)
    assert Path(default.path).parent == root / ".azureal" / "backups"
