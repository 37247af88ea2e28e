"""Sync survives crashes: the daemon killed (-9) during a push, its connection dropped, PostgreSQL
stopped and started during a push. Remote rows equal local rows exactly, with no duplicates.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from azsd.ipc import protocol as p
from azsd.store import store_path
from tests import pg_fixture, sync_fixture
from tests.daemon_fixture import start_daemon
from tests.sync_fixture import Machine, fill, mirrored, remote_count, remote_rows, turn, wait_until

make_db = pg_fixture.make_db
pg_url = pg_fixture.pg_url
machines = sync_fixture.machines


def test_kill9_mid_push_and_a_dropped_connection_lose_nothing_and_push_nothing_twice(
    pg_url: str, machines: Callable[..., Machine]
) -> None:
    machine = machines(pg_url, "ada@box")
    root = machine.root("bulk")
    fill(root, 4, 2500)  # 40 000 events: four push batches
    total = len(local_rows_plain(root))
    machine.request(p.ListSessions(root=str(root)))  # the daemon opens the store: it is known from now on
    kills = 0
    seen = 0
    deadline = time.monotonic() + 60
    while kills < 5 and time.monotonic() < deadline:
        now = remote_count(pg_url, root)
        if now >= total:
            break
        if now > seen:  # mid-catch-up: kill it, and start it again (it resumes from the cursor)
            seen = now
            machine.kill9()
            kills += 1
            machine.daemon = start_daemon(machine.base / "run")
        else:
            time.sleep(0.01)
    # a dropped connection, mid-push of new rows
    _append_more(machine, root)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for _ in range(50):
            killed = conn.execute(
                "SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'azsd' AND datname = current_database()) t"
            ).fetchone()
            if killed and killed[0]:
                break
            time.sleep(0.02)
    wait_until("every row pushed", lambda: mirrored(pg_url, root), timeout=90)
    assert len(remote_rows(pg_url, root)) == remote_count(pg_url, root)  # one row per (session, seq)
    assert kills >= 1


def local_rows_plain(root: Path) -> list[Any]:
    with sqlite3.connect(store_path(root)) as conn:
        return conn.execute("SELECT id FROM events").fetchall()


def _append_more(machine: Machine, root: Path) -> None:
    from azsd.events import encode_event

    sid = machine.request(p.CreateSession(root=str(root), name="more")).session.id
    for i in range(20):
        machine.request(
            p.AppendEvents(root=str(root), session=sid, events=[encode_event(e).decode() for e in turn(i)])
        )
