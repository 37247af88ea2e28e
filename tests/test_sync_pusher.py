"""The pusher's thread at rest, and what `search --remote` ranks, against the machine's PostgreSQL.

A pusher with nothing to push sleeps until a commit or the next poll: a first version's loop spun
while the database was healthy (it waited until the backoff's retry time, which was 0), holding
the GIL so that every other thread of the daemon (a pull, a search, the writers) ran slowly.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from azsd.ipc.transport import Outbox
from azsd.server.registry import StoreRegistry
from azsd.sync.pusher import POLL_S, Pusher
from tests import pg_fixture

make_db = pg_fixture.make_db
pg_url = pg_fixture.pg_url


@pytest.fixture
def registry() -> Iterator[StoreRegistry]:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    outbox = Outbox(ctx)
    reg = StoreRegistry(outbox, idle_close_s=30)
    yield reg
    reg.close()
    outbox.close()
    ctx.term()


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
