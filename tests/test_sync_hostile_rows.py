"""A teammate's hostile rows hurt nobody (issue 37): a corrupt zstd frame, or a few kilobytes that
would expand past the size an event may hold, are left out of `search --remote` and `show @ref`
and counted, and every other row is read. Against the real PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from azsd.events import UserMessage, decode_event
from azsd.ipc import protocol as p
from azsd.store import Store, store_path
from azsd.store.codec import MAX_EVENT_BYTES, RowCodec
from azsd.sync import remote, team_usage
from tests import pg_fixture, sync_fixture
from tests.sync_fixture import Machine, turn, wait_until
from tests.test_codec_bounds import bomb
from tests.test_sync_trust import _push, all_pushed, append

pytestmark = pytest.mark.postgres


def _session_uuid(conn: psycopg.Connection[Any], name: str) -> str:
    """The UUID the sync database gives the pushed session named `name`."""
    row = conn.execute("SELECT session_uuid::text FROM azsd.sessions WHERE name = %s", (name,)).fetchone()
    assert row is not None, name
    return str(row[0])


make_db = pg_fixture.make_db
pg_url = pg_fixture.pg_url
machines = sync_fixture.machines


def test_corrupt_and_bomb_rows_are_left_out_and_counted_and_the_rest_is_read(
    pg_url: str, tmp_path: Path
) -> None:
    with Store.open(tmp_path) as store:
        sid = store.create_session("zebras", "main").id
        store.append_events(sid, [UserMessage(content=f"fix the zebra number {i}") for i in range(12)])
        _push(pg_url, tmp_path, store)
    repository = f"path:{tmp_path}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        uuid = _session_uuid(conn, "zebras")
        conn.execute(  # as a teammate's hostile client would write them
            "UPDATE azsd.events SET data = %s WHERE session_uuid = %s AND seq = 3",
            (b"\x28\xb5\x2f\xfd" + b"\x00" * 40, uuid),
        )
        conn.execute(
            "UPDATE azsd.events SET data = %s WHERE session_uuid = %s AND seq = 7",
            (bomb(MAX_EVENT_BYTES + (8 << 20), declared=True), uuid),
        )
        found = remote.search(
            conn, repository, p.RemoteSearch(root="/x", query="zebra", limit=50), RowCodec()
        )
        assert found.unreadable == 2
        assert len(found.hits) == 10
        assert all(isinstance(decode_event(h.data.encode()), UserMessage) for h in found.hits)
        shown = remote.session_events(conn, p.RemoteShow(root="/x", ref="@" + uuid), "ada", RowCodec())
        assert [e.seq for e in shown.events] == [1, 2, 4, 5, 6, 8, 9, 10, 11, 12]
        assert shown.unreadable == 2


def _usage_row(conn: psycopg.Connection[Any], uuid: str, repo: str, source: str, **values: object) -> None:
    row = {"input": 0, "output": 0, "cost_usd": 0.0, "first_at": 1_790_000_000.0, **values}
    conn.execute(
        "INSERT INTO azsd.usage (session_uuid, source, model, slot, repository, first_at, last_at, input, "
        "output, cost_usd) VALUES (%s, %s, 'claude-x', 0, %s, %s, %s, %s, %s, %s)",
        (uuid, source, repo, row["first_at"], row["first_at"], row["input"], row["output"], row["cost_usd"]),
    )


def test_hostile_usage_rows_count_for_nothing_and_new_ones_are_refused(pg_url: str, tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.append_events(store.create_session("u", "main").id, [UserMessage(content="hi")])
        _push(pg_url, tmp_path, store)
    repository = f"path:{tmp_path}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        uuid = _session_uuid(conn, "u")
        _usage_row(conn, uuid, repository, "good", input=100, output=10, cost_usd=0.5)
        for name in ("usage_counts", "usage_cost"):  # rows written before the checks were there
            conn.execute(f"ALTER TABLE azsd.usage DROP CONSTRAINT {name}")
        big = 9_000_000_000_000_000_000
        _usage_row(conn, uuid, repository, "huge 1", input=big)
        _usage_row(conn, uuid, repository, "huge 2", input=big)
        _usage_row(conn, uuid, repository, "nan", cost_usd=float("nan"))
        _usage_row(conn, uuid, repository, "negative", input=-5, cost_usd=-3.0)
        conn.execute(
            "ALTER TABLE azsd.usage ADD CONSTRAINT usage_counts CHECK (input BETWEEN 0 AND 1000000000000 AND "
            "output BETWEEN 0 AND 1000000000000 AND cache_read BETWEEN 0 AND 1000000000000 AND cache_write "
            "BETWEEN 0 AND 1000000000000 AND reasoning BETWEEN 0 AND 1000000000000) NOT VALID"
        )
        conn.execute(
            "ALTER TABLE azsd.usage ADD CONSTRAINT usage_cost CHECK (cost_usd IS NULL OR (cost_usd >= 0 "
            "AND cost_usd < 1000000000)) NOT VALID"
        )
        for by in ("person", "day", "model", "repository"):
            reply = team_usage.remote_usage(conn, repository, p.RemoteUsage(root="/x", by=by))
            assert (reply.total.input, reply.total.output, reply.total.cost_usd) == (100, 10, 0.5), by
        with pytest.raises(psycopg.errors.CheckViolation):
            _usage_row(conn, uuid, repository, "huge 3", input=big)
        with pytest.raises(psycopg.errors.CheckViolation):
            _usage_row(conn, uuid, repository, "nan 2", cost_usd=float("nan"))


def test_a_store_the_database_refuses_is_reported_and_the_others_go_on(
    pg_url: str, machines: Callable[..., Machine]
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:  # a refusal of what one store holds
        conn.execute(
            "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF NEW.name = 'poison' THEN RAISE EXCEPTION 'poisoned row' USING ERRCODE = '22000'; END IF; "
            "RETURN NEW; END $$"
        )
        conn.execute(
            "CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON azsd.sessions "
            "FOR EACH ROW EXECUTE FUNCTION refuse_poison()"
        )
    machine = machines(pg_url, "ada@laptop")
    first, second = machine.root("a-first"), machine.root("b-second")  # pushed in this order
    bad = machine.request(p.CreateSession(root=str(first), name="poison")).session.id
    append(machine, first, bad, *turn(0))
    good = machine.request(p.CreateSession(root=str(second), name="fine")).session.id
    append(machine, second, good, *turn(1))
    wait_until("the second store pushed, though the first cannot be", lambda: all_pushed(pg_url, second))

    def refused() -> bool:
        views = {s.root: s for s in machine.request(p.SyncStatus()).stores}
        return (
            "cannot be pushed" in views[str(first)].last_error
            and "poisoned row" in views[str(first)].last_error
        )

    wait_until("the first store's status to say why", refused)
    append(machine, second, good, UserMessage(content="and more"))
    wait_until("the second store goes on being pushed", lambda: all_pushed(pg_url, second))


def test_a_model_name_with_a_nul_and_a_nan_cost_are_pushed_as_the_database_takes_them(
    pg_url: str, tmp_path: Path
) -> None:
    with Store.open(tmp_path) as store:
        sid = store.create_session("odd usage", "main").id
        store.append_events(sid, [UserMessage(content="hi")])
    with sqlite3.connect(store_path(tmp_path)) as db:  # rows another program wrote
        insert = (
            "INSERT INTO azsd_usage (session_id, source, model, slot, first_at, last_at, input, output, "
            "cache_read, cache_write, reasoning, cost_usd, cost_source, turns) "
            "VALUES (?, ?, ?, 0, 1790000000, 1790000000, ?, 1, 0, 0, 0, ?, 'reported', 1)"
        )
        db.execute(insert, (sid, "a", "claude\x00-evil", 100, 0.25))
        db.execute(insert, (sid, "b", "claude-x", 200, float("nan")))
        db.execute(insert, (sid, "c", "claude-x", -7, 0.1))
    with Store.open(tmp_path) as store:
        _push(pg_url, tmp_path, store)  # never refused for them
    with psycopg.connect(pg_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT u.source, u.model, u.input, u.cost_usd FROM azsd.usage u JOIN azsd.sessions s "
            "USING (session_uuid) WHERE s.name = 'odd usage' ORDER BY u.source"
        ).fetchall()
    # the NUL dropped; a NaN cost is no cost (SQLite keeps it as NULL); a negative count left out
    assert rows == [("a", "claude-evil", 100, 0.25), ("b", "claude-x", 200, None)]


def test_pull_copies_only_rows_it_can_read_as_what_they_say(pg_url: str, tmp_path: Path) -> None:
    origin, here = tmp_path / "origin", tmp_path / "here"
    with Store.open(origin) as store:
        sid = store.create_session("to pull", "main").id
        store.append_events(sid, [UserMessage(content=f"line {i}") for i in range(6)])
        _push(pg_url, origin, store)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        uuid = _session_uuid(conn, "to pull")
        conn.execute("UPDATE azsd.events SET seq = -5 WHERE session_uuid = %s AND seq = 2", (uuid,))
        conn.execute(
            "UPDATE azsd.events SET data = '\\x28b52ffd00' WHERE session_uuid = %s AND seq = 3", (uuid,)
        )
        conn.execute("UPDATE azsd.events SET kind = 'Complete' WHERE session_uuid = %s AND seq = 4", (uuid,))
        pulled, _ = remote.fetch_for_pull(conn, "@" + uuid, None, None)
    assert [seq for seq, *_ in pulled.events] == [1, 5, 6] and pulled.left_out == 3
    with Store.open(here) as store:
        local = store.sync_insert_pulled(pulled).id
        assert store.load_events(local).plain() == [UserMessage(content=f"line {i}") for i in (0, 4, 5)]
