"""A teammate's hostile rows hurt nobody (issue 37): a corrupt zstd frame, or a few kilobytes that
would expand past the size an event may hold, are left out of `search --remote` and `show @ref`
and counted, and every other row is read. Against the real PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from azsd.events import UserMessage, decode_event
from azsd.ipc import protocol as p
from azsd.store import Store
from azsd.store.codec import MAX_EVENT_BYTES, RowCodec
from azsd.sync import remote, team_usage
from tests import pg_fixture
from tests.test_codec_bounds import bomb
from tests.test_sync_trust import _push

pytestmark = pytest.mark.postgres

make_db = pg_fixture.make_db
pg_url = pg_fixture.pg_url


def test_corrupt_and_bomb_rows_are_left_out_and_counted_and_the_rest_is_read(
    pg_url: str, tmp_path: Path
) -> None:
    with Store.open(tmp_path) as store:
        sid = store.create_session("zebras", "main").id
        store.append_events(sid, [UserMessage(content=f"fix the zebra number {i}") for i in range(12)])
        _push(pg_url, tmp_path, store)
    repository = f"path:{tmp_path}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute("SELECT session_uuid::text FROM azsd.sessions WHERE name = 'zebras'").fetchone()
        assert row is not None
        uuid = row[0]
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
        row = conn.execute("SELECT session_uuid::text FROM azsd.sessions WHERE name = 'u'").fetchone()
        assert row is not None
        uuid = row[0]
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
