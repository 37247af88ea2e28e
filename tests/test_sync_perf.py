"""What the sync's speed-ups keep true, against the machine's PostgreSQL.

- A pusher with nothing to push sleeps until a commit or the next poll: a first version's loop spun
  while the database was healthy (it waited until the backoff's retry time, which was 0), holding
  the GIL so that every other thread of the daemon (a pull, a search, the writers) ran slowly.
- `search --remote` ranks at most the newest 10 000 matches (003_search_plan.sql), and the ones it
  returns are the repository's live sessions, with the kind and worktree filters.
- A REMOTE-REF prefix is a range of the primary key: found, refused when ambiguous, and a prefix
  whose dashes are misplaced names nothing (as the `LIKE` on the UUID's text did).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from azsd.errors import BadRequestError, RemoteSessionNotFound
from azsd.ipc import protocol as p
from azsd.server.registry import StoreRegistry
from azsd.store.codec import RowCodec
from azsd.sync import remote
from azsd.sync.pusher import POLL_S, Pusher
from tests import pg_fixture
from tests.test_workers import registry

# The machine's one PostgreSQL server (test_sync_crash restarts it): `make test` runs these apart,
# one at a time, after the others.
pytestmark = pytest.mark.postgres

make_db = pg_fixture.make_db
pg_url = pg_fixture.pg_url
__all__ = ["registry"]  # the fixture, shared with test_workers


class _CountingPusher(Pusher):
    """The real pusher, counting the rounds its thread makes."""

    rounds = 0

    def _push_roots(self, roots: list[str], forced: set[str]) -> None:
        self.rounds += 1
        super()._push_roots(roots, forced)


def test_an_idle_pusher_sleeps_until_a_commit_or_the_next_poll(
    pg_url: str, registry: StoreRegistry, tmp_path: Path
) -> None:
    pusher = _CountingPusher(pg_url, "ada@laptop", registry, tmp_path / "sync-roots")
    pusher.start()
    try:
        time.sleep(POLL_S / 2)  # the first poll (at once), then nothing to do until the next one
        at_rest = pusher.rounds
        pusher.note(str(tmp_path / "nowhere"))  # a note wakes it at once (its store is not there)
        deadline = time.monotonic() + 10
        while pusher.rounds == at_rest and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        pusher.stop()
    assert 1 <= at_rest <= 2, f"{at_rest} rounds in {POLL_S / 2} s with nothing to push"
    assert pusher.rounds > at_rest and pusher.error == ""


REPO = "github.com/acme/perf"
_SESSION = (
    "INSERT INTO azsd.sessions (session_uuid, store_uuid, identity, repository, local_id, worktree, deleted) "
    "VALUES (%s, %s, 'ada@laptop', %s, %s, %s, %s)"
)


def _store(conn: psycopg.Connection[tuple[object, ...]], store: str, repository: str = REPO) -> None:
    conn.execute(
        "INSERT INTO azsd.stores (store_uuid, identity, repository, root) "
        "VALUES (%s, 'ada@laptop', %s, '/wt')",
        (store, repository),
    )


def _events(
    conn: psycopg.Connection[tuple[object, ...]], session: str, first: int, n: int, body: str
) -> None:
    """`n` events of `body`, seq `first`…, each pushed a second after the one before (seq order)."""
    conn.execute(
        "INSERT INTO azsd.events (session_uuid, seq, kind, data, char_len, local_id, body, pushed) "
        "SELECT %s, g, CASE WHEN g %% 2 = 0 THEN 'UserMessage' ELSE 'AssistantText' END, "
        "convert_to('{}', 'UTF8'), 1, g, %s, "
        "timestamptz '2025-01-01' + g * interval '1 second' FROM generate_series(%s::integer, %s::integer) g",
        (session, body, first, first + n - 1),
    )


def test_search_ranks_the_newest_ten_thousand_matches_of_the_repositorys_live_sessions(
    make_db: Callable[[bool], str],
) -> None:
    url = make_db(True)
    with psycopg.connect(url, autocommit=True) as conn:
        _store(conn, "00000000-0000-4000-8000-000000000001")
        _store(conn, "00000000-0000-4000-8000-000000000002", "github.com/acme/other")
        live, gone, other = (f"10000000-0000-4000-8000-00000000000{i}" for i in (1, 2, 3))
        conn.execute(_SESSION, (live, "00000000-0000-4000-8000-000000000001", REPO, 1, "main", None))
        conn.execute(_SESSION, (gone, "00000000-0000-4000-8000-000000000001", REPO, 2, "main", "2025-01-02"))
        conn.execute(
            _SESSION,
            (other, "00000000-0000-4000-8000-000000000002", "github.com/acme/other", 3, "main", None),
        )
        # the oldest 500 say the word the most: the best ranks, were every match ranked
        _events(conn, live, 1, 500, "zebra " * 20)
        _events(conn, live, 501, 10_000, "zebra and some other words")
        for session in (gone, other):
            _events(conn, session, 1, 50, "zebra " * 30)
        hits = remote.search(conn, REPO, p.RemoteSearch(root="/x", query="zebra", limit=20), RowCodec()).hits
        assert len(hits) == 20 and {h.session for h in hits} == {live}
        assert min(h.seq for h in hits) > 500  # only the newest 10 000 matches were ranked
        few = remote.search(conn, REPO, p.RemoteSearch(root="/x", query="zebra", limit=5), RowCodec()).hits
        assert [h.seq for h in few] == [h.seq for h in hits[:5]]  # the same order, page by page
        # fewer matches than that: every one is ranked, and the best come first
        _events(conn, live, 20_001, 30, "quagga " * 20)
        _events(conn, live, 20_031, 30, "quagga once")
        best = remote.search(conn, REPO, p.RemoteSearch(root="/x", query="quagga", limit=30), RowCodec()).hits
        assert sorted(h.seq for h in best) == list(range(20_001, 20_031))
        users = p.RemoteSearch(root="/x", query="quagga", limit=100, kinds=["user"])
        assert {h.kind for h in remote.search(conn, REPO, users, RowCodec()).hits} == {"UserMessage"}
        elsewhere = p.RemoteSearch(root="/x", query="quagga", worktrees=["feature"])
        assert not remote.search(conn, REPO, elsewhere, RowCodec()).hits


def test_a_ref_prefix_is_a_key_range(make_db: Callable[[bool], str]) -> None:
    url = make_db(True)
    with psycopg.connect(url, autocommit=True) as conn:
        _store(conn, "00000000-0000-4000-8000-000000000001")
        a, b = "0fec6189-1111-4000-8000-000000000001", "0fec6189-2222-4000-8000-000000000002"
        for i, uuid in enumerate((a, b)):
            conn.execute(_SESSION, (uuid, "00000000-0000-4000-8000-000000000001", REPO, i, "main", None))
        assert remote.resolve_ref(conn, "@0fec6189-1") == a
        assert remote.resolve_ref(conn, b.upper()) == b
        with pytest.raises(BadRequestError, match="more than one"):
            remote.resolve_ref(conn, "@0fec6189")
        for nothing in ("@0fec-6189", "@0fec6188", "@0fec61891111"):
            with pytest.raises(RemoteSessionNotFound):
                remote.resolve_ref(conn, nothing)
