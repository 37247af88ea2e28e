"""Sync to PostgreSQL (azsd.sync), against the machine's real server and the real daemon.

The machines and the comparisons are in tests/sync_fixture.py: the remote rows of a store equal its
local rows (seq, kind, the stored bytes, char_len), one for one.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from azsd.errors import ConfigError, SyncError
from azsd.events import Complete
from azsd.ipc import protocol as p
from azsd.pgurl import check_url_in_file, redact_url
from azsd.store import Store, store_path
from azsd.sync import schema
from tests import pg_fixture, sync_fixture
from tests.sync_fixture import (
    Machine,
    azs,
    mirrored,
    remote_rows,
    remote_session,
    turn,
    uuid_of,
    wait_until,
)
from tests.test_cli_json import check as json_check

# The machine's one PostgreSQL server (test_sync_crash restarts it): `make test` runs these apart,
# one at a time, after the others.
pytestmark = pytest.mark.postgres

make_db = pg_fixture.make_db
pg_url = pg_fixture.pg_url
machines = sync_fixture.machines

# -- configuration -----------------------------------------------------------------------------------


def test_a_password_in_a_file_others_can_read_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("")
    os.chmod(config, 0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        check_url_in_file("postgresql://ada:s3cret@db/azsd", config)
    with pytest.raises(ConfigError, match="chmod 600"):
        check_url_in_file("host=db password=s3cret", config)
    check_url_in_file("postgresql://ada@db/azsd?sslmode=verify-full", config)  # .pgpass does the rest
    os.chmod(config, 0o600)
    check_url_in_file("postgresql://ada:s3cret@db/azsd", config)
    assert "s3cret" not in redact_url("postgresql://ada:s3cret@db/azsd?password=s3cret")


def test_the_config_file_check_runs_on_load(tmp_path: Path) -> None:
    from azsd.config import load_config_file

    config = tmp_path / "config.toml"
    config.write_text('sync-url = "postgresql://ada:pw@db/azsd"\n')
    os.chmod(config, 0o640)
    with pytest.raises(ConfigError, match="holds a password"):
        load_config_file(config)
    os.chmod(config, 0o600)
    assert load_config_file(config).sync_url == "postgresql://ada:pw@db/azsd"


def test_sync_off_changes_nothing_and_never_imports_psycopg(machines: Callable[..., Machine]) -> None:
    code = (
        "import sys, azsd.cli, azsd.config, azsd.server.daemon, azsd.store, azsd_client.cli;"
        "assert 'psycopg' not in sys.modules, 'psycopg imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    machine = machines(None, "ada@laptop")
    assert machine.request(p.SyncStatus()) == p.SyncStatusReply(configured=False)
    reply = machine.daemon.request(p.RemoteList(root=str(machine.root())))
    assert isinstance(reply, p.ErrorReply) and reply.code == "sync_error" and "sync-url" in reply.message
    root = machine.root()
    created = machine.request(p.CreateSession(root=str(root), name="x")).session
    machine.request(
        p.AppendEvents(root=str(root), session=created.id, events=['{"UserMessage":{"content":"hi"}}'])
    )
    with sqlite3.connect(store_path(root)) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert not {t for t in tables if t.startswith("azsd_sync")}


# -- schema ------------------------------------------------------------------------------------------


def test_init_creates_the_schema_once_and_a_push_needs_it(make_db: Callable[[bool], str]) -> None:
    url = make_db(False)
    with psycopg.connect(url, autocommit=True) as conn:
        with pytest.raises(SyncError, match="azsd sync init"):
            schema.check(conn)
    latest = schema.latest_version()
    assert schema.init_database(url) == ([m.name for m in schema.migrations()], latest)
    assert schema.init_database(url) == ([], latest)
    with psycopg.connect(url, autocommit=True) as conn:
        assert schema.check(conn) == latest
    out = subprocess.run(
        [sys.executable, "-m", "azsd", "sync", "init", "--url", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"schema version {latest} (already up to date)" in out


# -- push --------------------------------------------------------------------------------------------


def test_every_change_is_pushed_and_deletes_become_tombstones(
    pg_url: str, machines: Callable[..., Machine]
) -> None:
    machine = machines(pg_url, "ada@laptop")
    root = machine.root()
    r = str(root)
    a = machine.request(p.CreateSession(root=r, name="parser")).session
    b = machine.request(p.CreateSession(root=r, name="doomed")).session
    from azsd.events import encode_event

    for i in range(3):
        events = [encode_event(e).decode() for e in turn(i)]
        machine.request(p.AppendEvents(root=r, session=a.id, events=events))
    machine.request(p.AppendEvents(root=r, session=b.id, events=['{"UserMessage":{"content":"bye"}}']))
    machine.request(p.StoreCompaction(root=r, session=a.id, after_seq=4, summary="the first turn, summed up"))
    machine.request(p.MarkCompleted(root=r, session=a.id, success=True, duration_ms=1500, cost_usd=0.25))
    machine.request(p.RenameSession(root=r, session=a.id, name="parser panic"))
    fork = machine.request(p.ForkSession(root=r, session=a.id, at_seq=4, name="fork")).session
    wait_until("the events pushed", lambda: mirrored(pg_url, root))
    ua, ub, uf = uuid_of(root, a.id), uuid_of(root, b.id), uuid_of(root, fork.id)
    wait_until("the rename pushed", lambda: remote_session(pg_url, ua)["name"] == "parser panic")
    row = remote_session(pg_url, ua)
    assert (row["completed"], row["duration_ms"], row["cost_usd"], row["state"]) == (
        True,
        1500,
        0.25,
        "succeeded",
    )
    assert row["identity"] == "ada@laptop" and row["event_count"] == 12
    assert remote_session(pg_url, uf)["parent_uuid"] is not None
    assert str(remote_session(pg_url, uf)["parent_uuid"]) == ua
    with psycopg.connect(pg_url) as conn:
        summaries = conn.execute(
            "SELECT after_seq, summary FROM azsd.compactions WHERE session_uuid = %s", (ua,)
        ).fetchall()
    assert summaries == [(4, "the first turn, summed up")]

    # an AZUREAL-style foreign writer: rows appended by another program, the daemon not asked
    from azsd.store.codec import RowCodec

    with sqlite3.connect(store_path(root)) as conn:
        conn.execute(
            "INSERT INTO events (session_id, seq, kind, data, char_len) "
            "VALUES (?, 13, 'AssistantText', ?, 7)",
            (a.id, RowCodec().encode(b'{"AssistantText":{"text":"foreign"}}')),
        )
    wait_until("the foreign row pushed", lambda: (ua, 13) in remote_rows(pg_url, root))
    assert mirrored(pg_url, root)

    machine.request(p.ArchiveSession(root=r, session=fork.id))
    wait_until("the archive pushed", lambda: remote_session(pg_url, uf)["archived"])
    machine.request(p.DeleteSession(root=r, session=b.id))
    wait_until("the tombstone pushed", lambda: remote_session(pg_url, ub)["deleted"] is not None)
    assert mirrored(pg_url, root)
    assert not [k for k in remote_rows(pg_url, root) if k[0] == ub]

    # a delete by AZUREAL (its own connection, foreign keys on, as it opens the file): a tombstone too
    c = machine.request(p.CreateSession(root=r, name="azureal deletes me")).session
    machine.request(p.AppendEvents(root=r, session=c.id, events=['{"UserMessage":{"content":"x"}}']))
    wait_until("the session pushed", lambda: mirrored(pg_url, root) and _has_uuid(root, c.id))
    uc = uuid_of(root, c.id)
    with sqlite3.connect(store_path(root)) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM sessions WHERE id = ?", (c.id,))
    wait_until("the foreign delete pushed", lambda: remote_session(pg_url, uc)["deleted"] is not None)
    assert mirrored(pg_url, root) and not [k for k in remote_rows(pg_url, root) if k[0] == uc]
    with sqlite3.connect(store_path(root)) as conn:  # and nothing was added to AZUREAL's tables
        assert not conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()

    status = machine.request(p.SyncStatus())
    assert status.configured and status.identity == "ada@laptop" and status.error == ""
    (view,) = [s for s in status.stores if s.root == r]
    assert view.lag_events == 0 and view.lag_s == 0.0 and view.last_error == ""
    assert view.pushed_event_id == view.local_event_id >= _max_id(root)  # the last rows were deleted


def _has_uuid(root: Path, session: int) -> bool:
    with sqlite3.connect(store_path(root)) as conn:
        query = "SELECT 1 FROM azsd_sync_sessions WHERE session_id = ?"
        return conn.execute(query, (session,)).fetchone() is not None


def test_the_first_versions_trigger_is_dropped_when_the_store_opens(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.create_session("kept", "main")
        store.sync_prepare("path:/x")
    with sqlite3.connect(store_path(tmp_path)) as conn:  # what the first version of sync left
        conn.executescript(
            "CREATE TABLE azsd_sync_tombstones (uuid TEXT PRIMARY KEY, deleted TEXT);"
            "CREATE TRIGGER azsd_sync_tombstone BEFORE DELETE ON sessions BEGIN "
            "INSERT OR IGNORE INTO azsd_sync_tombstones (uuid) "
            "SELECT uuid FROM azsd_sync_sessions WHERE session_id = OLD.id; END;"
        )
    with Store.open(tmp_path) as store:
        assert [s.name for s in store.list_sessions()] == ["kept"]
        assert [s.name for s in store.sync_session_rows()] == ["kept"]
    with sqlite3.connect(store_path(tmp_path)) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert not {"azsd_sync_tombstone", "azsd_sync_tombstones"} & names and "azsd_sync_sessions" in names


def _max_id(root: Path) -> int:
    with sqlite3.connect(store_path(root)) as conn:
        return int(conn.execute("SELECT MAX(id) FROM events").fetchone()[0])


def test_a_subscriber_hears_when_pushes_catch_up_and_store_subscribers_never_do(
    pg_url: str, machines: Callable[..., Machine]
) -> None:
    import asyncio

    from azsd_client import AsyncClient, Client

    machine = machines(pg_url, "ada@laptop")
    root = machine.root()
    config = machine.daemon.config
    with Client(config) as client, client.subscribe_pushes() as pushes, client.subscribe(root) as store:
        sid = client.create_session(root, "noted").session.id
        deadline = time.monotonic() + 20
        note: p.SyncCaughtUp | None = None
        while note is None or note.pushed_event_id < _max_id(root):
            assert time.monotonic() < deadline, "no SyncCaughtUp for the appends"
            if note is None:  # (again, if the SUB socket joined after the first one was published)
                client.append_events(root, sid, turn(1))
            note = pushes.recv(1.0) or note
        assert isinstance(note, p.SyncCaughtUp) and note.root == str(root) and note.seq >= 1
        assert note.store_uuid and note.repository == f"path:{root}" and mirrored(pg_url, root)
        seen = []  # the store's own subscription: its notifications only, every one decodable
        while (got := store.recv(0.2)) is not None:
            seen.append(got)
        assert seen and all(not isinstance(n, p.SyncCaughtUp) for n in seen)

    async def hear_async() -> p.SyncCaughtUp | None:
        async with AsyncClient(config) as aclient, aclient.subscribe_pushes() as apushes:
            for i in range(20):  # (again, if the SUB socket joined after one was published)
                await aclient.rename_session(root, sid, f"renamed {i}")
                if (heard := await apushes.recv(1.0)) is not None:
                    return heard
        return None

    heard = asyncio.run(hear_async())
    assert heard is not None and heard.root == str(root)


# -- two machines: list, show, search, pull, continue --------------------------------------------------


def test_two_machines_list_show_search_and_pull_a_session_to_continue_it(
    pg_url: str,
    machines: Callable[..., Machine],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from azsd.events import encode_event

    origin = "git@github.com:acme/widget.git"
    laptop, box = machines(pg_url, "ada@laptop"), machines(pg_url, "bob@box")
    here, there = laptop.root("widget", origin), box.root("widget", "https://github.com/Acme/widget")
    sid = laptop.request(p.CreateSession(root=str(here), name="tokenizer panic")).session.id
    for i in range(3):
        events = [encode_event(e).decode() for e in turn(i)]
        laptop.request(p.AppendEvents(root=str(here), session=sid, events=events))
    laptop.request(
        p.AppendEvents(
            root=str(here),
            session=sid,
            events=[encode_event(Complete(success=True, duration_ms=900, cost_usd=0.5)).decode()],
        )
    )
    laptop.request(
        p.StoreCompaction(root=str(here), session=sid, after_seq=8, summary="two turns about the lexer")
    )
    wait_until("the laptop's session pushed", lambda: mirrored(pg_url, here))
    uuid = uuid_of(here, sid)
    wait_until("the compaction pushed", lambda: _remote_count_compactions(pg_url, uuid) == 1)

    monkeypatch.setenv("XDG_CONFIG_HOME", str(box.base / "config"))
    code, out, _ = azs(capsys, box, there, "ls", "--remote")
    assert code == 0 and f"@{uuid[:8]}" in out and "ada@laptop" in out and "tokenizer panic" in out
    code, out, _ = azs(capsys, box, there, "--json", "ls", "--remote")
    (listed,) = [line for line in out.splitlines() if uuid in line]
    assert '"mine":false' in listed.replace(" ", "")
    json_check("ls", [json.loads(line) for line in out.splitlines()])
    code, out, _ = azs(capsys, box, there, "--json", "show", f"@{uuid[:8]}")
    json_check("show", [json.loads(out)])
    assert json.loads(out)["events"][0]["event"] == {"UserMessage": {"content": turn(0)[0].content}}
    code, out, _ = azs(capsys, box, there, "--json", "search", "--remote", "--all-worktrees", "lexer")
    json_check("search", [json.loads(line) for line in out.splitlines()])
    code, out, _ = azs(capsys, box, there, "show", f"@{uuid[:8]}")
    assert code == 0 and "ada@laptop" in out and "answer 2: an unwrap on None in the lexer" in out
    code, out, _ = azs(capsys, box, there, "search", "--remote", "--all-worktrees", "unwrap lexer")
    assert code == 0 and f"@{uuid[:8]}" in out and "lexer" in out, out
    # issue 25: plain text by default, as locally (every word must appear); web-search syntax with --fts
    code, out, _ = azs(capsys, box, there, "search", "--remote", "--all-branches", "lexer or void")
    assert code == 0 and f"@{uuid[:8]}" not in out, out
    code, out, _ = azs(capsys, box, there, "search", "--remote", "-e", "--all-branches", "lexer or void")
    assert code == 0 and f"@{uuid[:8]}" in out, out
    code, out, _ = azs(capsys, box, there, "search", "--remote", "--all-worktrees", "--kind", "user", "lexer")
    assert code == 0 and f"@{uuid[:8]}" not in out  # the prompts never say lexer
    code, _, err = azs(capsys, box, there, "show", "@ffffffff")
    assert code == 1 and "no remote session" in err

    code, out, err = azs(capsys, box, there, "pull", f"@{uuid[:8]}")
    assert code == 0, err
    pulled_id = int(out.split(" as S")[1].split(":")[0])
    with Store.open(there) as store:
        mine = store.list_sessions()
        info = store.get_session(pulled_id)
        pulled_context = store.build_context(pulled_id)
    with Store.open(here) as store:
        original_context = store.build_context(sid)
    assert info.state == "succeeded" and info.name == "tokenizer panic" and len(mine) == 1
    assert pulled_context == original_context  # `azs run -s` continues it with the full context
    # events byte for byte, seqs kept
    with sqlite3.connect(store_path(there)) as conn:
        copied = conn.execute("SELECT seq, kind, data, char_len FROM events ORDER BY seq").fetchall()
        (pulled_from,) = conn.execute("SELECT origin_uuid FROM azsd_sync_pulled").fetchone()
    with sqlite3.connect(store_path(here)) as conn:
        first = conn.execute("SELECT seq, kind, data, char_len FROM events ORDER BY seq").fetchall()
    assert copied == first and pulled_from == uuid
    # the copy is a session of the box's own, pushed with where it came from
    wait_until("the pulled session pushed", lambda: mirrored(pg_url, there))
    copy_uuid = uuid_of(there, pulled_id)
    assert str(remote_session(pg_url, copy_uuid)["pulled_from"]) == uuid
    code, out, _ = azs(capsys, box, there, "sync", "status")
    assert code == 0 and "bob@box" in out and "caught up" in out
    code, out, _ = azs(capsys, box, there, "--json", "sync", "status")
    json_check("sync", [json.loads(out)])
    code, out, _ = azs(capsys, box, there, "--json", "pull", f"@{uuid[:8]}")
    json_check("pull", [json.loads(out)])


def _remote_count_compactions(url: str, uuid: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM azsd.compactions WHERE session_uuid = %s", (uuid,)
        ).fetchone()
    return int(row[0]) if row else 0


def test_a_database_that_is_away_is_waited_for_and_caught_up_with(
    make_db: Callable[[bool], str], machines: Callable[..., Machine]
) -> None:
    from tests.pg_fixture import url_of

    name = f"azsd_test_{os.getpid()}_later"
    url = url_of(name) + " password=s3cret-away"  # trust auth: never asked for, never shown
    machine = machines(url, "ada@laptop")
    root = machine.root()
    sid = machine.request(p.CreateSession(root=str(root), name="offline")).session.id
    machine.request(p.AppendEvents(root=str(root), session=sid, events=['{"UserMessage":{"content":"hi"}}']))

    def behind() -> bool:
        stores = machine.request(p.SyncStatus()).stores
        return bool(stores) and stores[0].lag_events == 1 and bool(stores[0].last_error)

    wait_until("the error and the lag shown", behind)
    status = machine.request(p.SyncStatus())
    assert "does not exist" in status.error or "cannot connect" in status.error
    assert "s3cret-away" not in machine.daemon.log_text() + repr(status) and "password=***" in status.url
    (view,) = status.stores
    assert view.lag_events == 1 and view.last_error
    # the database comes (back): created and initialized, the pusher catches up by itself
    with psycopg.connect(pg_fixture.ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        schema.init_database(url)
        wait_until("the catch-up", lambda: mirrored(url, root), timeout=60)
        wait_until("the status clear", lambda: machine.request(p.SyncStatus()).stores[0].lag_events == 0)
    finally:
        machine.daemon.close()
        with psycopg.connect(pg_fixture.ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
