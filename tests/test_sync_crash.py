"""Sync survives crashes: the daemon killed (-9) during a push ten times, its connection dropped, and
PostgreSQL itself stopped and started during a push. Afterwards the remote rows equal the local rows
exactly (count and bytes), with no duplicates.

The daemons push in small batches (``AZSD_SYNC_BATCH``), so that a small store takes many push
transactions and a kill lands between and inside them. Stopping PostgreSQL needs the right to run
``pg_ctlcluster``: that test runs only as root or in CI (``CI=true``), and always starts it again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from azsd.store import Store
from tests import pg_fixture, sync_fixture
from tests.daemon_fixture import start_daemon
from tests.sync_fixture import Machine, local_rows, mirrored, remote_count, remote_rows, turn, wait_until

# The machine's one PostgreSQL server (test_sync_crash restarts it): `make test` runs these apart,
# one at a time, after the others.
pytestmark = pytest.mark.postgres

make_db = pg_fixture.make_db
pg_url = pg_fixture.pg_url
machines = sync_fixture.machines

BATCH = {"AZSD_SYNC_BATCH": "100"}
MAY_RESTART_PG = os.geteuid() == 0 or os.environ.get("CI") == "true"


def append_directly(root: Path, turns: int, name: str = "more") -> None:
    """Rows written by another program (the daemon may be dead): a new session of `turns` turns."""
    with Store.open(root) as store:
        sid = store.create_session(name, "main").id
        store.append_events(sid, [e for i in range(turns) for e in turn(i)])


def exactly_mirrored(url: str, root: Path) -> None:
    """Remote rows equal local rows: every (session, seq) with its kind, bytes and char_len, and as
    many remote rows as local ones (the primary key makes a duplicate impossible; this counts)."""
    local, remote = local_rows(root), remote_rows(url, root)
    assert remote == local
    assert remote_count(url, root) == len(local)


def start(machine: Machine) -> None:
    machine.daemon = start_daemon(machine.base / "run", BATCH)


def test_kill9_during_a_push_ten_times_loses_nothing_and_pushes_nothing_twice(
    pg_url: str, machines: Callable[..., Machine]
) -> None:
    machine = machines(None, "ada@box")  # started without sync: configured below, then restarted
    machine.daemon.close()
    root = machine.root("bulk")
    append_directly(root, 300, "first")  # 1 200 events: twelve batches
    config = machine.base / "config" / "azsd" / "config.toml"
    config.write_text(f'sync-identity = "ada@box"\nsync-url = "{pg_url}"\n')
    (machine.base / "state" / "azsd").mkdir(parents=True, exist_ok=True)
    (machine.base / "state" / "azsd" / "sync-roots").write_text(f"{root}\n")  # known: pushed at start
    kills, seen = 0, 0
    deadline = time.monotonic() + 40
    start(machine)
    while kills < 10:
        assert time.monotonic() < deadline, f"only {kills} kills during pushes"
        now = remote_count(pg_url, root)
        if now > seen:  # a push committed, more are coming: kill it in the middle of the catch-up
            seen = now
            machine.kill9()
            kills += 1
            if now + 400 >= len(local_rows(root)):
                append_directly(root, 100)  # keep it behind (written while the daemon is dead)
            start(machine)
        else:
            time.sleep(0.005)
    # and a dropped connection, mid-push
    append_directly(root, 100, "dropped")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for _ in range(100):
            row = conn.execute(
                "SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'azsd' AND datname = current_database()) t"
            ).fetchone()
            if row and row[0]:
                break
            time.sleep(0.01)
    wait_until("every row pushed", lambda: mirrored(pg_url, root), timeout=60)
    exactly_mirrored(pg_url, root)


def pg_ctl(action: str) -> None:
    version = sorted(os.listdir("/etc/postgresql"))[0]
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    argv = [*sudo, "pg_ctlcluster", "--skip-systemctl-redirect", version, "main", action]
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


@pytest.fixture
def restartable_postgres() -> Iterator[Callable[[str], None]]:
    """`pg_ctl("stop")` / `pg_ctl("start")`; PostgreSQL is running again afterwards, whatever happened."""
    if not MAY_RESTART_PG:
        pytest.skip("stops and starts PostgreSQL: only as root or in CI (CI=true)")
    if shutil.which("pg_ctlcluster") is None or not os.path.isdir("/etc/postgresql"):
        pytest.fail("pg_ctlcluster is missing: the crash test needs the machine's PostgreSQL cluster")
    try:
        yield pg_ctl
    finally:
        if not _answers():
            pg_ctl("start")
        wait_until("PostgreSQL answers again", _answers, timeout=60)


def _answers() -> bool:
    try:
        psycopg.connect(pg_fixture.ADMIN, connect_timeout=2).close()
        return True
    except psycopg.OperationalError:
        return False


def test_postgres_stopped_and_started_during_a_push_loses_nothing(
    pg_url: str, machines: Callable[..., Machine], restartable_postgres: Callable[[str], None]
) -> None:
    machine = machines(pg_url, "ada@box")
    machine.daemon.close()  # started again below, pushing in small batches
    root = machine.root("restart")
    append_directly(root, 500, "big")  # 2 000 events: twenty batches
    (machine.base / "state" / "azsd").mkdir(parents=True, exist_ok=True)
    (machine.base / "state" / "azsd" / "sync-roots").write_text(f"{root}\n")  # known: pushed at start
    start(machine)
    deadline = time.monotonic() + 30
    while remote_count(pg_url, root) == 0:  # the catch-up has begun
        assert time.monotonic() < deadline, "the push never began"
        time.sleep(0.005)
    restartable_postgres("stop")
    append_directly(root, 100, "while down")  # written while the database is away
    time.sleep(0.5)
    restartable_postgres("start")
    wait_until("every row pushed", lambda: _answers() and mirrored(pg_url, root), timeout=60)
    exactly_mirrored(pg_url, root)
