"""A teammate's hostile rows hurt nobody (issue 37): a corrupt zstd frame, or a few kilobytes that
would expand past the size an event may hold, are left out of `search --remote` and `show @ref`
and counted, and every other row is read. Against the real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from azsd.events import UserMessage, decode_event
from azsd.ipc import protocol as p
from azsd.store import Store
from azsd.store.codec import MAX_EVENT_BYTES, RowCodec
from azsd.sync import remote
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
