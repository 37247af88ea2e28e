"""Sync loses nothing on ordinary actions (issue 23): a backup put back, a worktree copied with
`cp -a`, a compaction of a session created during a catch-up; what is pushed has its secrets masked;
`ls --remote` is newest first; the config file's sync settings are taken without a restart.

Each test is a finding of the issue, against the real PostgreSQL (and the real daemon where the
pusher's own decisions are what is tested).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from azsd.events import UserMessage, decode_event, encode_event
from azsd.ipc import protocol as p
from azsd.store import Store, store_path
from azsd.store.codec import RowCodec
from azsd.sync import remote
from azsd.sync.connection import connect
from azsd.sync.push import StorePush, prepare_connection
from tests import pg_fixture, sync_fixture
from tests.sync_fixture import Machine, azs, local_rows, turn, uuid_of, wait_until

# The machine's one PostgreSQL server (test_sync_crash restarts it): `make test` runs these apart,
# one at a time, after the others.
pytestmark = pytest.mark.postgres

make_db = pg_fixture.make_db
pg_url = pg_fixture.pg_url
machines = sync_fixture.machines

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2


def all_remote_rows(url: str) -> dict[tuple[str, int], tuple[str, bytes, int]]:
    """Every event row of the database, whichever store pushed it."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT session_uuid::text, seq, kind, data, char_len FROM azsd.events"
        ).fetchall()
    return {(u, seq): (kind, bytes(data), n) for u, seq, kind, data, n in rows}


def all_pushed(url: str, root: Path) -> bool:
    """Every local row of `root`'s store is in the database, under the session UUID the file gives it."""
    local = local_rows(root)
    held = all_remote_rows(url)
    return bool(local) and all(held.get(key) == row for key, row in local.items())


def deleted_sessions(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT session_uuid::text FROM azsd.sessions WHERE deleted IS NOT NULL")
        return {str(r[0]) for r in rows}


def append(machine: Machine, root: Path, session: int, *events: object) -> None:
    machine.request(
        p.AppendEvents(root=str(root), session=session, events=[encode_event(e).decode() for e in events])  # type: ignore[arg-type]
    )


def test_a_backup_put_back_is_pushed_as_a_new_store_and_nothing_is_lost(
    pg_url: str, machines: Callable[..., Machine], tmp_path: Path
) -> None:
    machine = machines(pg_url, "ada@laptop")
    root = machine.root()
    sid = machine.request(p.CreateSession(root=str(root), name="restored")).session.id
    append(machine, root, sid, *turn(0))
    wait_until("the first turn pushed", lambda: all_pushed(pg_url, root))
    backup = tmp_path / "backup.azs"
    reply = machine.request(p.Backup(root=str(root), dest=str(backup)))
    assert Path(reply.path).exists()
    first_uuid = uuid_of(root, sid)
    append(machine, root, sid, *turn(1), *turn(2))
    wait_until("the later turns pushed", lambda: all_pushed(pg_url, root))
    # README: restore by putting the backup back as .azureal/sessions.azs (copied over: same inode)
    machine.daemon.close()
    shutil.copyfile(reply.path, store_path(root))
    machine.restart()
    append(machine, root, sid, UserMessage(content="after the restore"), UserMessage(content="and again"))
    wait_until("the restored store's new events pushed", lambda: all_pushed(pg_url, root))
    assert uuid_of(root, sid) != first_uuid  # a new incarnation: its own UUIDs
    assert first_uuid not in deleted_sessions(pg_url)  # what was pushed before stays as it was
    status = machine.request(p.SyncStatus())
    (view,) = [s for s in status.stores if s.root == str(root)]
    assert "new store" in view.note and view.lag_events == 0


def test_a_copied_worktree_never_tombstones_the_originals_sessions(
    pg_url: str, machines: Callable[..., Machine]
) -> None:
    machine = machines(pg_url, "ada@laptop")
    here = machine.root("original")
    one = machine.request(p.CreateSession(root=str(here), name="one")).session.id
    append(machine, here, one, *turn(0))
    wait_until("the original pushed", lambda: all_pushed(pg_url, here))
    there = machine.base / "copy"
    subprocess.run(["cp", "-a", str(here), str(there)], check=True)
    there = there.resolve()
    two = machine.request(p.CreateSession(root=str(here), name="two, only in the original")).session.id
    append(machine, here, two, *turn(1))
    wait_until("the original's new session pushed", lambda: all_pushed(pg_url, here))
    append(machine, there, one, UserMessage(content="written in the copy"))
    wait_until("the copy pushed", lambda: all_pushed(pg_url, there))
    assert uuid_of(there, one) != uuid_of(here, one)
    assert not deleted_sessions(pg_url) & {uuid_of(here, one), uuid_of(here, two)}
    assert all_pushed(pg_url, here)  # the original's rows all there, none removed
    append(machine, here, two, UserMessage(content="the original goes on"))
    wait_until("the original goes on being pushed", lambda: all_pushed(pg_url, here))


def _push(url: str, root: Path, store: Store, identity: str = "ada@laptop", **kw: object) -> StorePush:
    store_uuid = store.sync_prepare(f"path:{root}")
    job = StorePush(str(root), identity, **kw)  # type: ignore[arg-type]
    conn = connect(url)
    try:
        prepare_connection(conn)
        job.push(conn, store, store_uuid, f"path:{root}")
    finally:
        conn.close()
    return job


def test_a_compaction_of_a_session_created_during_a_catch_up_is_never_skipped(
    pg_url: str, tmp_path: Path
) -> None:
    with Store.open(tmp_path) as store:
        a = store.create_session("a", "main").id
        store.append_events(a, turn(0))
        store.sync_prepare(f"path:{tmp_path}")
        b = store.create_session("b, created meanwhile", "main").id  # no UUID yet
        store.append_events(b, turn(1))
        store.store_compaction(b, 2, "b's summary")
        store.store_compaction(a, 2, "a's summary")
        conn = connect(pg_url)
        try:
            prepare_connection(conn)
            job = StorePush(str(tmp_path), "ada@laptop")
            store_uuid, repository = store.sync_identity() or ("", "")
            job.push(conn, store, store_uuid, repository)
            store.sync_prepare(repository)  # what the pusher does next: b gets its UUID
            job.push(conn, store, store_uuid, repository)
            held = conn.execute(
                "SELECT summary FROM azsd.compactions WHERE store_uuid = %s ORDER BY summary", (store_uuid,)
            ).fetchall()
        finally:
            conn.close()
    assert [r[0] for r in held] == ["a's summary", "b's summary"]


def test_secrets_are_masked_in_what_is_pushed_and_the_store_keeps_them(pg_url: str, tmp_path: Path) -> None:
    prompt = f"deploy with GITHUB_TOKEN={TOKEN} please"
    with Store.open(tmp_path) as store:
        sid = store.create_session(f"token {TOKEN}", "main").id
        store.append_events(sid, [UserMessage(content=prompt)])
        store.store_compaction(sid, 1, f"used {TOKEN}")
        job = _push(pg_url, tmp_path, store)
        assert store.load_events(sid).events[0].event == UserMessage(content=prompt)  # the original, locally
    assert job.masked["github-token"] == 2  # the event and the summary (a name is not counted)
    with psycopg.connect(pg_url) as conn:
        (data, body), *_ = conn.execute(
            "SELECT e.data, e.body FROM azsd.events e JOIN azsd.sessions s USING (session_uuid) "
            "JOIN azsd.stores st USING (store_uuid) WHERE st.root = %s",
            (str(tmp_path),),
        ).fetchall()
        texts = conn.execute(
            "SELECT s.name, c.summary FROM azsd.sessions s JOIN azsd.compactions c USING (session_uuid) "
            "JOIN azsd.stores st ON st.store_uuid = s.store_uuid WHERE st.root = %s",
            (str(tmp_path),),
        ).fetchone()
    pushed = decode_event(RowCodec().decode(bytes(data)))
    assert isinstance(pushed, UserMessage) and TOKEN not in pushed.content
    assert "[REDACTED:github-token]" in pushed.content and TOKEN not in body
    assert texts is not None and all(TOKEN not in t for t in texts)


def test_ls_remote_is_newest_first_even_for_sessions_pushed_at_once(pg_url: str, tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        for i in range(8):
            store.append_events(store.create_session(f"s{i}", "main").id, turn(i))
    with sqlite3.connect(store_path(tmp_path)) as lite:  # an old session, pushed with the others
        lite.execute("UPDATE sessions SET created = '2025-01-01 10:00:00' WHERE id = 3")
    with Store.open(tmp_path) as store:
        _push(pg_url, tmp_path, store)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        listed = remote.list_sessions(conn, f"path:{tmp_path}", p.RemoteList(root=str(tmp_path)), "x")
    assert [v.local_id for v in listed.sessions] == [8, 7, 6, 5, 4, 2, 1, 3]
    assert listed.sessions[-1].updated == "2025-01-01T10:00:00Z"  # its own time, not the push's


def test_sync_settings_are_taken_without_a_restart_and_known_stores_are_pushed_at_once(
    pg_url: str, machines: Callable[..., Machine]
) -> None:
    machine = machines(None, "ada@laptop")  # sync off
    root = machine.root()
    sid = machine.request(p.CreateSession(root=str(root), name="before sync")).session.id
    append(machine, root, sid, *turn(0))
    assert not machine.request(p.SyncStatus()).configured
    config = machine.base / "config" / "azsd" / "config.toml"
    config.write_text(f'sync-identity = "ada@laptop"\nsync-url = "{pg_url}"\n')
    os.chmod(config, 0o600)
    wait_until("sync on", lambda: machine.request(p.SyncStatus()).configured, timeout=20)
    # the store written while sync was off is pushed without another write
    wait_until("the earlier store pushed", lambda: all_pushed(pg_url, root), timeout=30)
    # a bad value is refused, and said so; the settings before it stay
    config.write_text(f'sync-identity = 3\nsync-url = "{pg_url}"\n')
    wait_until("the error shown", lambda: bool(machine.request(p.SyncStatus()).config_error), timeout=20)
    assert machine.request(p.SyncStatus()).configured
    # `azsd reload`: the new identity at once
    config.write_text(f'sync-identity = "ada@desk"\nsync-url = "{pg_url}"\n')
    done = subprocess.run(
        [sys.executable, "-m", "azsd", "reload", "--runtime-dir", str(machine.base / "run")],
        capture_output=True,
        text=True,
        check=False,
        env=machine.daemon.env,
    )
    assert done.returncode == 0, done.stderr
    wait_until("the new identity", lambda: machine.request(p.SyncStatus()).identity == "ada@desk", timeout=20)
    config.write_text('sync-identity = "ada@desk"\n')
    wait_until("sync off", lambda: not machine.request(p.SyncStatus()).configured, timeout=20)


def test_a_file_put_back_with_mv_is_a_new_incarnation_too(pg_url: str, tmp_path: Path) -> None:
    from azsd.errors import NewIncarnation
    from azsd.sync.connection import file_id

    root = tmp_path / "wt"
    root.mkdir()
    with Store.open(root) as store:
        store.append_events(store.create_session("x", "main").id, turn(0))
        job = _push(pg_url, root, store, file_id=file_id(str(root)))
    saved = tmp_path / "saved.azs"
    shutil.copy2(store_path(root), saved)
    os.replace(saved, store_path(root))  # another inode at the same path
    with Store.open(root) as store:
        store_uuid, repository = store.sync_identity() or ("", "")
        job.file_id = file_id(str(root))
        conn = connect(pg_url)
        try:
            prepare_connection(conn)
            with pytest.raises(NewIncarnation, match="not the one that pushed"):
                job.push(conn, store, store_uuid, repository)
        finally:
            conn.close()


def test_verify_finds_what_the_database_lacks_and_pushes_it_again(
    pg_url: str, machines: Callable[..., Machine], capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.test_cli_json import check as json_check

    machine = machines(pg_url, "ada@laptop")
    root = machine.root()
    kept = machine.request(p.CreateSession(root=str(root), name="kept")).session.id
    lost = machine.request(p.CreateSession(root=str(root), name="lost")).session.id
    append(machine, root, kept, *turn(0))
    append(machine, root, lost, *turn(1), *turn(2))
    wait_until("pushed", lambda: all_pushed(pg_url, root))
    gone = uuid_of(root, lost)
    with psycopg.connect(pg_url) as conn:  # rows lost remotely (the tombstone a copy used to push)
        conn.execute("UPDATE azsd.sessions SET deleted = now() WHERE session_uuid = %s", (gone,))
        conn.execute("DELETE FROM azsd.events WHERE session_uuid = %s AND seq > 2", (gone,))
    code, out, _ = azs(capsys, machine, root, "sync", "verify", "--no-repair")
    assert code == 1 and "S2" in out and "8 events here, 2 in the database" in out, out
    assert not all_pushed(pg_url, root)
    code, out, _ = azs(capsys, machine, root, "--json", "sync", "verify")
    assert code == 0, out
    json_check("sync", [json.loads(out)])
    (view,) = json.loads(out)["stores"]
    assert view["checked"] == 2 and [(s["uuid"], s["repaired"]) for s in view["sessions"]] == [(gone, 6)]
    assert all_pushed(pg_url, root) and gone not in deleted_sessions(pg_url)
    with psycopg.connect(pg_url) as conn:
        counted = conn.execute("SELECT event_count FROM azsd.sessions WHERE session_uuid = %s", (gone,))
        assert counted.fetchone() == (8,)
    code, out, _ = azs(capsys, machine, root, "sync", "verify")
    assert code == 0 and "2 sessions, all there" in out
