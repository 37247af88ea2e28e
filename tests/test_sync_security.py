"""Sync's security, with real database roles: row-level security (002) lets a role write only its own
rows and read those of the repositories granted to it; libpq settings (`sslmode`) pass through; no
password is ever logged or shown.

Two roles are created in the test cluster for each test (with the GRANTs docs/sync.md gives a team)
and dropped afterwards, with the database.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from azsd.errors import RemoteSessionNotFound, SyncError
from azsd.events import UserMessage, encode_event
from azsd.ipc import protocol as p
from azsd.store import Store, store_path
from azsd.store.codec import RowCodec
from azsd.sync import remote
from azsd.sync.connection import connect
from azsd.sync.push import StorePush, prepare_connection
from azsd.sync.schema import init_database
from tests import pg_fixture, sync_fixture
from tests.sync_fixture import Machine, azs, mirrored, turn, wait_until

# The machine's one PostgreSQL server (test_sync_crash restarts it): `make test` runs these apart,
# one at a time, after the others.
pytestmark = pytest.mark.postgres

machines = sync_fixture.machines

WIDGET, PRIVATE = "github.com/acme/widget", "github.com/acme/private"
PASSWORD = "s3cret-Pw-4711"

#: What each person's role gets (docs/sync.md, "Setting it up for a team").
TEAM_GRANTS = """
GRANT USAGE ON SCHEMA azsd TO {role};
GRANT SELECT ON azsd.schema_version, azsd.readers TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON azsd.stores, azsd.sessions, azsd.events, azsd.compactions TO {role};
GRANT SELECT, INSERT, DELETE ON azsd.usage TO {role};
"""


@dataclass
class Team:
    db: str
    admin_url: str
    a: str  # role names
    b: str

    def url(self, role: str) -> str:
        return f"postgresql://{role}:{PASSWORD}@127.0.0.1:5432/{self.db}?sslmode=disable"

    def grant(self, repository: str, role: str) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute("INSERT INTO azsd.readers (repository, grantee) VALUES (%s, %s)", (repository, role))


@pytest.fixture
def team() -> Iterator[Team]:
    admin = pg_fixture._admin()
    tag = f"{os.getpid()}_{uuid.uuid4().hex[:6]}"
    db, a, b = f"azsd_test_{tag}_rls", f"azsd_t_{tag}_ada", f"azsd_t_{tag}_bob"
    try:
        admin.execute(f'CREATE DATABASE "{db}"')
        for role in (a, b):
            admin.execute(f'CREATE ROLE "{role}" LOGIN')
        url = pg_fixture.url_of(db)
        init_database(url)
        with psycopg.connect(url, autocommit=True) as conn:
            for role in (a, b):
                conn.execute(TEAM_GRANTS.format(role=f'"{role}"').encode())
        yield Team(db, url, a, b)
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        for role in (a, b):
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')
        admin.close()


def push_store(root: Path, url: str, identity: str, repository: str, text: str) -> tuple[str, str]:
    """A store with one session saying `text`, pushed as `url`'s role: (store UUID, session UUID)."""
    root.mkdir(exist_ok=True)
    with Store.open(root) as store:
        sid = store.create_session(f"{identity} on {repository}", "main").id
        store.append_events(sid, [*turn(1), *turn(2)])
        store.append_events(sid, [UserMessage(content=text)])
        store_uuid = store.sync_prepare(repository)
        session_uuid = next(s.uuid for s in store.sync_session_rows() if s.id == sid)
        conn = connect(url)
        try:
            prepare_connection(conn)
            StorePush(str(root), identity).push(conn, store, store_uuid, repository)
        finally:
            conn.close()
    return store_uuid, session_uuid


def _one(conn: psycopg.Connection[Any], sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = conn.execute(sql, params).fetchone()
    assert row is not None
    return row[0]


def test_a_role_writes_only_its_own_rows_and_reads_the_repositories_granted_to_it(
    team: Team, tmp_path: Path
) -> None:
    b_store, b_shared = push_store(tmp_path / "b1", team.url(team.b), "bob@box", WIDGET, "zebra tokens")
    _, b_secret = push_store(tmp_path / "b2", team.url(team.b), "bob@box", PRIVATE, "zebra secrets")
    team.grant(WIDGET, team.a)
    _, a_own = push_store(tmp_path / "a1", team.url(team.a), "ada@laptop", WIDGET, "zebra mine")

    with psycopg.connect(team.url(team.a), autocommit=True) as conn:
        # reads: its own rows and the granted repository's, not the other one
        seen = {str(r[0]) for r in conn.execute("SELECT session_uuid FROM azsd.sessions")}
        assert seen == {b_shared, a_own}
        assert _one(conn, "SELECT COUNT(*) FROM azsd.events WHERE session_uuid = %s", (b_shared,)) == 9
        assert _one(conn, "SELECT COUNT(*) FROM azsd.events WHERE session_uuid = %s", (b_secret,)) == 0
        assert _one(conn, "SELECT COUNT(*) FROM azsd.stores WHERE repository = %s", (PRIVATE,)) == 0
        assert _one(conn, "SELECT owner FROM azsd.sessions WHERE session_uuid = %s", (a_own,)) == team.a
        # writes to bob's rows: invisible to UPDATE and DELETE, refused to INSERT
        assert (
            conn.execute("UPDATE azsd.sessions SET name = 'pwned' WHERE owner <> current_user").rowcount == 0
        )
        assert conn.execute("DELETE FROM azsd.events WHERE session_uuid = %s", (b_shared,)).rowcount == 0
        assert (
            conn.execute("UPDATE azsd.stores SET root = '/pwned' WHERE owner <> current_user").rowcount == 0
        )
        refused = [
            ("INSERT INTO azsd.events (session_uuid, seq, kind, data, char_len, local_id) "
             "VALUES (%s, 99, 'UserMessage', '\\x00', 1, 99)", (b_shared,)),
            ("INSERT INTO azsd.sessions (session_uuid, store_uuid, identity, repository, local_id) "
             "VALUES (gen_random_uuid(), %s, 'ada@laptop', %s, 7)", (b_store, WIDGET)),
            ("INSERT INTO azsd.sessions (session_uuid, store_uuid, identity, repository, local_id) "
             "VALUES (%s, %s, 'ada@laptop', %s, 1) ON CONFLICT (session_uuid) DO UPDATE SET name = 'x'",
             (b_shared, b_store, WIDGET)),
            ("INSERT INTO azsd.stores (store_uuid, identity, repository, root, owner) "
             "VALUES (gen_random_uuid(), 'bob@box', %s, '/x', %s)", (WIDGET, team.b)),
            ("INSERT INTO azsd.compactions (store_uuid, local_id, session_uuid, after_seq, summary, created) "
             "VALUES (%s, 1, %s, 1, 'x', 'now')", (b_store, b_shared)),
        ]  # fmt: skip
        for sql, params in refused:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                conn.execute(sql, params)
        # search: the granted repository's hits, through the GIN index (azsd.search_hits)
        hits = remote.search(conn, WIDGET, p.RemoteSearch(root="/x", query="zebra"), RowCodec()).hits
        assert {h.session for h in hits} == {b_shared, a_own}
        assert not remote.search(conn, PRIVATE, p.RemoteSearch(root="/x", query="zebra"), RowCodec()).hits
        # a session's rows through the functions that check the rule once (003): the same answer
        for session, visible in ((b_shared, 9), (a_own, 9), (b_secret, 0)):
            events = "SELECT COUNT(*) FROM azsd.session_events(%s, 1, NULL)"
            assert _one(conn, events, (session,)) == visible
            assert _one(conn, "SELECT azsd.may_read_session(%s)", (session,)) == bool(visible)
        assert _one(conn, "SELECT COUNT(*) FROM azsd.session_compactions(%s)", (b_secret,)) == 0
        secret = "SELECT COUNT(*) FROM azsd.search_page(%s, 'zebra', NULL, NULL, 50, '')"
        assert _one(conn, secret, (PRIVATE,)) == 0
        with pytest.raises(RemoteSessionNotFound):
            remote.fetch_for_pull(conn, "@" + b_secret, None, None)
        pulled, _ = remote.fetch_for_pull(conn, "@" + b_shared[:8], None, None)
        assert len(pulled.events) == 9

    # bob's store file copied to ada's machine: pushing it as ada is refused, bob's rows unchanged
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "b1", copy)
    conn = connect(team.url(team.a))
    try:
        prepare_connection(conn)
        with Store.open(copy) as store, pytest.raises(psycopg.errors.InsufficientPrivilege):
            StorePush(str(copy), "ada@laptop").push(conn, store, b_store, WIDGET)
    finally:
        conn.close()
    with psycopg.connect(team.admin_url) as admin:
        row = admin.execute("SELECT name, owner FROM azsd.sessions WHERE session_uuid = %s", (b_shared,))
        assert row.fetchone() == ("bob@box on github.com/acme/widget", team.b)
        assert _one(admin, "SELECT root FROM azsd.stores WHERE store_uuid = %s", (b_store,)) == str(
            tmp_path / "b1"
        )


def test_libpq_settings_pass_through_and_no_password_is_ever_shown(
    team: Team, machines: Callable[..., Machine], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # sslmode reaches libpq: this server has no TLS, so `require` is refused, by libpq, and said so
    with pytest.raises(SyncError) as refused:
        connect(team.url(team.a).replace("sslmode=disable", "sslmode=require"))
    assert "SSL" in str(refused.value) and PASSWORD not in str(refused.value)

    push_store(tmp_path / "bob", team.url(team.b), "bob@box", WIDGET, "zebra from bob")
    team.grant(WIDGET, team.a)
    ada = machines(team.url(team.a), "ada@laptop")
    root = ada.root("widget", "git@github.com:acme/widget.git")
    sid = ada.request(p.CreateSession(root=str(root), name="ada's")).session.id
    events = [encode_event(e).decode() for e in turn(1)]
    ada.request(p.AppendEvents(root=str(root), session=sid, events=events))
    wait_until("ada's session pushed as her role", lambda: mirrored(team.admin_url, root))
    listed = ada.request(p.RemoteList(root=str(root))).sessions
    assert {s.identity for s in listed} == {"ada@laptop", "bob@box"}

    status = ada.request(p.SyncStatus())
    assert status.error == "" and status.url == team.url(team.a).replace(PASSWORD, "***")
    code, out, err = azs(capsys, ada, root, "sync", "status")
    assert code == 0 and "ada@laptop" in out
    assert PASSWORD not in out + err
    assert PASSWORD not in p.encode(status).decode("utf-8", "replace")
    log = ada.daemon.log_text()
    assert PASSWORD not in log and f"{team.a}:***@" in log  # the URL is logged, without it
    assert os.path.exists(store_path(root))


def test_a_member_who_sets_the_team_group_role_still_writes_only_as_itself(team: Team) -> None:
    """docs/sync.md's grants may go to a group role that each person is a member of; `SET ROLE` to
    the group must not make rows the group owns (every member could then change them)."""
    group = f"{team.a}_group"
    admin = pg_fixture._admin()
    try:
        admin.execute(f'CREATE ROLE "{group}" NOLOGIN')
        with psycopg.connect(team.admin_url, autocommit=True) as conn:
            conn.execute(TEAM_GRANTS.format(role=f'"{group}"').encode())
        admin.execute(f'GRANT "{group}" TO "{team.a}"')
        with psycopg.connect(team.url(team.a), autocommit=True) as conn:
            conn.execute(f'SET ROLE "{group}"')
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                conn.execute(
                    "INSERT INTO azsd.stores (store_uuid, identity, repository, root) "
                    "VALUES (gen_random_uuid(), 'ada@laptop', %s, '/x')",
                    (WIDGET,),
                )
            conn.execute("RESET ROLE")  # as itself, as ever
            conn.execute(
                "INSERT INTO azsd.stores (store_uuid, identity, repository, root) "
                "VALUES (gen_random_uuid(), 'ada@laptop', %s, '/x')",
                (WIDGET,),
            )
    finally:
        with psycopg.connect(team.admin_url, autocommit=True) as conn:
            conn.execute(f'REVOKE ALL ON ALL TABLES IN SCHEMA azsd FROM "{group}"')
            conn.execute(f'REVOKE USAGE ON SCHEMA azsd FROM "{group}"')
        admin.execute(f'DROP ROLE IF EXISTS "{group}"')
        admin.close()
