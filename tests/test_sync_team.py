"""Sync trusts nobody it should not (issue 23), with real database roles: a teammate can neither erase
another's compactions nor pose as them, nor stop everyone's sync with a lock; a lost connection costs
a reader nothing.

The roles and their grants are those of docs/sync.md (tests/test_sync_security.py's `team`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from azsd.events import encode_event
from azsd.ipc import protocol as p
from azsd.model import Cost, Usage, UsagePart
from azsd.store import Store
from azsd.sync.connection import LOCK_TIMEOUT_MS, connect
from azsd.sync.push import StorePush, prepare_connection
from azsd.sync.team_usage import remote_usage
from tests import sync_fixture
from tests.daemon_fixture import start_daemon
from tests.sync_fixture import Machine, azs, mirrored, turn, uuid_of, wait_until
from tests.test_cli_json import check as json_check
from tests.test_sync_security import PRIVATE, WIDGET, Team, push_store, team

# The machine's one PostgreSQL server (test_sync_crash restarts it): `make test` runs these apart,
# one at a time, after the others.
pytestmark = pytest.mark.postgres

machines = sync_fixture.machines
__all__ = ["team"]  # the fixture, re-exported for pytest


def test_a_teammate_cannot_erase_anothers_compactions(team: Team, tmp_path: Path) -> None:
    team.grant(WIDGET, team.b)  # bob reads ada's repository
    ada_store, _ = push_store(tmp_path / "ada", team.url(team.a), "ada@laptop", WIDGET, "hers")
    _, bobs = push_store(tmp_path / "bob", team.url(team.b), "bob@box", WIDGET, "his")
    with psycopg.connect(team.url(team.b), autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                "INSERT INTO azsd.compactions (store_uuid, local_id, session_uuid, after_seq, summary, "
                "created) SELECT %s, i, %s, 1, 'x', 'now' FROM generate_series(1, 1000) i",
                (ada_store, bobs),
            )
    with Store.open(tmp_path / "ada") as store:  # ada's compaction, pushed after bob tried
        sid = store.list_sessions()[0].id
        store.store_compaction(sid, 4, "ada's summary")
        conn = connect(team.url(team.a))
        try:
            prepare_connection(conn)
            StorePush(str(tmp_path / "ada"), "ada@laptop").push(conn, store, ada_store, WIDGET)
        finally:
            conn.close()
    with psycopg.connect(team.admin_url) as admin:
        held = admin.execute("SELECT summary FROM azsd.compactions WHERE store_uuid = %s", (ada_store,))
        assert [r[0] for r in held] == ["ada's summary"]


def test_a_teammate_posing_as_another_is_shown_as_who_they_are(
    team: Team, machines: Callable[..., Machine], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    team.grant(WIDGET, team.a)
    ada = machines(team.url(team.a), "ada@laptop")
    root = ada.root("widget", "git@github.com:acme/widget.git")
    sid = ada.request(p.CreateSession(root=str(root), name="ada's own")).session.id
    ada.request(
        p.AppendEvents(root=str(root), session=sid, events=[encode_event(e).decode() for e in turn(1)])
    )
    wait_until("ada's session pushed", lambda: mirrored(team.admin_url, root))
    # bob pushes a session claiming ada's identity and worktree
    fake = tmp_path / "fake"
    fake.mkdir()
    with Store.open(fake) as store:
        bad = store.create_session("ada's notes", "main").id
        store.append_events(bad, turn(1))
        store.record_usage(bad, "run", [_part("opus", 10, 0.5, DAY)])
        store_uuid = store.sync_prepare(WIDGET)
        conn = connect(team.url(team.b))
        try:
            prepare_connection(conn)
            StorePush(str(root), "ada@laptop").push(conn, store, store_uuid, WIDGET)
        finally:
            conn.close()
        posed = next(s.uuid for s in store.sync_session_rows())
    listed = {v.uuid: v for v in ada.request(p.RemoteList(root=str(root))).sessions}
    own = listed[uuid_of(root, sid)]
    assert (own.owner, own.own, own.mine) == (team.a, True, True)
    assert (listed[posed].owner, listed[posed].own, listed[posed].mine) == (team.b, False, False)
    code, out, _ = azs(capsys, ada, root, "ls", "--remote")
    assert code == 0 and f"(role {team.b})" in out and "you, here" in out
    code, out, _ = azs(capsys, ada, root, "show", f"@{posed[:8]}")
    assert code == 0 and f"role {team.b}" in out
    code, out, _ = azs(capsys, ada, root, "pull", f"@{posed[:8]}")
    assert code == 0 and f"role {team.b}" in out and "is not your own" in out
    code, out, _ = azs(capsys, ada, root, "--json", "usage", "--remote", "--by", "person")
    json_check("usage", [json.loads(out)])
    assert [(v["period"], v["usage"]["input"]) for v in json.loads(out)["periods"]] == [(team.b, 10)]
    code, out, _ = azs(capsys, ada, root, "usage", "--remote", "--by", "model")
    assert code == 0 and "opus" in out and "$0.5" in out


DAY = 1_759_399_200.0  # 2025-10-02 10:00 UTC


def _part(model: str, tokens: int, usd: float, at: float, source: str = "reported") -> UsagePart:
    slot = int(at // 900 * 900)
    cost = Cost(usd, source)  # type: ignore[arg-type]
    return UsagePart(
        model=model, usage=Usage(input=tokens, output=1), cost=cost, slot=slot, first=at, last=at
    )


def _push_usage(root: Path, url: str, repository: str, parts: list[UsagePart]) -> None:
    root.mkdir()
    with Store.open(root) as store:
        sid = store.create_session("spent", "main").id
        store.append_events(sid, turn(1))
        store.record_usage(sid, "run", parts)
        store_uuid = store.sync_prepare(repository)
        conn = connect(url)
        try:
            prepare_connection(conn)
            StorePush(str(root), "someone@somewhere").push(conn, store, store_uuid, repository)
        finally:
            conn.close()


def test_the_teams_usage_is_summed_in_the_database_under_the_read_rules(team: Team, tmp_path: Path) -> None:
    _push_usage(
        tmp_path / "a",
        team.url(team.a),
        WIDGET,
        [_part("opus", 100, 1.0, DAY), _part("sonnet", 50, 0.5, DAY + 86400)],
    )
    _push_usage(tmp_path / "b", team.url(team.b), WIDGET, [_part("opus", 7, 0.25, DAY + 60, "estimated")])
    _push_usage(tmp_path / "p", team.url(team.b), PRIVATE, [_part("opus", 1000, 9.0, DAY)])
    team.grant(WIDGET, team.a)

    def report(role: str, by: str, **kw: object) -> p.UsageReply:
        with psycopg.connect(team.url(role), autocommit=True) as conn:
            return remote_usage(conn, WIDGET, p.RemoteUsage(root="/x", by=by, timezone="UTC", **kw))  # type: ignore[arg-type]

    days = report(team.a, "day")
    assert [(v.period, v.usage.input, v.models) for v in days.periods] == [
        ("2025-10-02", 107, ["opus"]),
        ("2025-10-03", 50, ["sonnet"]),
    ]
    assert days.total.cost_usd == pytest.approx(1.75) and days.total.cost_source == "estimated"
    assert days.periods[0].start == "2025-10-02T10:00:00+00:00" and days.by == "day"
    people = report(team.a, "person")
    assert {v.period: v.usage.input for v in people.periods} == {team.a: 150, team.b: 7}
    assert {v.period: v.usage.input for v in report(team.a, "repository").periods} == {WIDGET: 157}
    mine = report(team.b, "repository")  # bob reads no one's but his own
    assert {v.period: v.usage.input for v in mine.periods} == {WIDGET: 7, PRIVATE: 1000}
    split = report(team.a, "week", by_model=True)
    assert [(v.period, v.model, v.usage.input) for v in split.periods] == [
        ("2025-W40", "opus", 107),
        ("2025-W40", "sonnet", 50),
    ]
    assert [v.period for v in report(team.a, "day", since="2025-10-03").periods] == ["2025-10-03"]
    with pytest.raises(Exception, match="expected one of"):
        report(team.a, "block")


def test_a_lock_held_by_a_teammate_bounds_every_wait_and_status_says_why(
    team: Team, machines: Callable[..., Machine], tmp_path: Path
) -> None:
    ada = machines(team.url(team.a), "ada@laptop")
    ada.daemon.close()
    ada.daemon = start_daemon(ada.base / "run", {"AZSD_SYNC_LOCK_TIMEOUT_MS": "1000"})
    root = ada.root()
    sid = ada.request(p.CreateSession(root=str(root), name="blocked")).session.id
    ada.request(p.AppendEvents(root=str(root), session=sid, events=[encode_event(turn(0)[0]).decode()]))
    wait_until("the first push", lambda: mirrored(team.admin_url, root))
    release = threading.Event()
    locked = threading.Event()

    def hold() -> None:
        with psycopg.connect(team.url(team.b)) as conn:  # a transaction, left open
            conn.execute("LOCK TABLE azsd.stores, azsd.sessions, azsd.events IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10)
        ada.request(p.AppendEvents(root=str(root), session=sid, events=[encode_event(turn(0)[1]).decode()]))

        def says_waiting() -> bool:
            (view,) = ada.request(p.SyncStatus()).stores
            return bool(view.waiting)

        wait_until("sync status says it waits", says_waiting, timeout=30)
        started = time.monotonic()
        reply = ada.daemon.request(p.RemoteList(root=str(root)), 20_000)
        assert isinstance(reply, p.ErrorReply) and "waited 1 s for a lock" in reply.message  # said why
        assert LOCK_TIMEOUT_MS < 5000  # told before a client stops waiting (`azs --timeout`: 5 s)
        assert time.monotonic() - started < 15
    finally:
        release.set()
        holder.join()
    wait_until("pushed once the lock is gone", lambda: mirrored(team.admin_url, root), timeout=60)
    wait_until("no longer waiting", lambda: ada.request(p.SyncStatus()).stores[0].waiting == "")


def test_a_read_after_a_lost_connection_reconnects(team: Team, machines: Callable[..., Machine]) -> None:
    team.grant(WIDGET, team.a)
    ada = machines(team.url(team.a), "ada@laptop")
    root = ada.root("widget", "git@github.com:acme/widget.git")
    for _ in range(4):  # both reader threads hold a connection
        ada.request(p.RemoteList(root=str(root)))
    with psycopg.connect(team.admin_url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'azsd' AND usename = %s",
            (team.a,),
        ).fetchall()
    assert killed
    for _ in range(4):
        ada.request(p.RemoteList(root=str(root)))  # (an ErrorReply fails the request helper)
