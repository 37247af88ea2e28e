"""The team's reads of the sync database (issue 23), run by bench/sync.py on its store and database:

- ``sync_usage_remote_day_ms``: `azs usage --remote --by day` (a request to the daemon, which sums in
  PostgreSQL under the read rules) over the usage of the bench's store (1 M events; quick: 20 000),
  p50, against the bare ``GROUP BY`` day of the same rows on an open connection (target: ≤ 100 ms).
- ``sync_ls_remote_member_ms``: `azs ls --remote`'s read (a page of 100 and the total) of a
  repository of 100 000 sessions (quick: 5 000) as a team member (a role bound by the policies),
  p50, against the same page and count read as a superuser (target: ≤ 50 ms);
  ``sync_ls_remote_member_before_ms`` is the query of version 4 (the policies checked per session)
  as the same member, against the same baseline.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

from azsd.ipc import protocol as p
from azsd.model import Cost, Usage, UsagePart
from azsd.store import Store
from azsd.sync import remote
from azsd_client import Client
from bench.common import percentile, report

__all__ = ["add_usage", "ls_member_figures", "usage_figures"]

DAY0 = 1_759_276_800.0  # 2025-10-01 00:00 UTC


def add_usage(root: Path, sids: list[int]) -> None:
    """Each session's run spread over 8 days, a part per quarter hour for two models (not timed)."""
    with Store.open(root) as store:
        for n, sid in enumerate(sids):
            parts = []
            for k in range(400):
                at = DAY0 + n * 3600 + k * 1700.0
                model = "claude-opus-4-1" if k % 3 else "claude-sonnet-4-5"
                parts.append(
                    UsagePart(
                        model=model, usage=Usage(input=100 + k, output=50, cache_read=1000),
                        cost=Cost(0.01), slot=int(at // 900 * 900), first=at, last=at + 60,
                    )
                )  # fmt: skip
            store.record_usage(sid, "bench-run", parts)


def usage_figures(client: Client, url: str, root: Path, runs: int) -> None:
    azsd, bare = [], []
    sql = (
        "SELECT to_char(to_timestamp(first_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS d, SUM(input), "
        "SUM(output), SUM(cache_read), SUM(cache_write), SUM(reasoning), SUM(cost_usd) "
        "FROM azsd.usage GROUP BY d ORDER BY d"
    )
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(runs):
            start = time.perf_counter()
            reply = client.remote_usage(root, by="day", timezone="UTC")
            azsd.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            conn.execute(sql).fetchall()
            bare.append((time.perf_counter() - start) * 1000)
    assert reply.periods, "no usage summed"
    report("sync_usage_remote_day_ms", percentile(azsd, 50), "ms", percentile(bare, 50))


_BEFORE = (  # version 4's `ls --remote`: the sessions read directly, under the policies
    "SELECT s.session_uuid FROM azsd.sessions s JOIN azsd.stores st USING (store_uuid) "
    "WHERE s.repository = %(repo)s AND s.deleted IS NULL ORDER BY s.updated DESC, s.session_uuid LIMIT 100",
    "SELECT COUNT(*) FROM azsd.sessions s WHERE s.repository = %(repo)s AND s.deleted IS NULL",
)


def ls_member_figures(admin: psycopg.Connection[Any], url: str, sessions: int, runs: int) -> None:
    """A repository of `sessions` sessions, pushed by another role, read by a member granted it."""
    tag = f"{os.getpid()}_{uuid.uuid4().hex[:6]}"
    pusher, member, repo = f"azsd_bench_{tag}_p", f"azsd_bench_{tag}_m", f"bench/{tag}"
    for role in (pusher, member):
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        with psycopg.connect(url, autocommit=True) as owner:
            for role in (pusher, member):
                owner.execute(f'GRANT USAGE ON SCHEMA azsd TO "{role}"')
                owner.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA azsd TO "{role}"')
            store = str(uuid.uuid4())
            owner.execute(
                "INSERT INTO azsd.stores (store_uuid, identity, repository, root, owner) "
                "VALUES (%s, 'p@h', %s, '/r', %s)",
                (store, repo, pusher),
            )
            owner.execute(
                "INSERT INTO azsd.sessions (session_uuid, store_uuid, owner, identity, repository, local_id, "
                "name, updated) SELECT gen_random_uuid(), %s, %s, 'p@h', %s, i, 'session ' || i, "
                "now() - i * interval '1 second' FROM generate_series(1, %s) i",
                (store, pusher, repo, sessions),
            )
            owner.execute("INSERT INTO azsd.readers (repository, grantee) VALUES (%s, %s)", (repo, member))
            owner.execute("ANALYZE azsd.sessions")
        member_url = psycopg.conninfo.make_conninfo(url, user=member)
        req = p.RemoteList(root="/r", limit=100)
        azsd, before, bare = [], [], []
        with (
            psycopg.connect(member_url, autocommit=True) as conn,
            psycopg.connect(url, autocommit=True) as su,
        ):
            for _ in range(runs):
                start = time.perf_counter()
                page = remote.list_sessions(conn, repo, req, "m@h", member)
                azsd.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                for sql in _BEFORE:
                    conn.execute(sql, {"repo": repo}).fetchall()
                before.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                for sql in _BEFORE:
                    su.execute(sql, {"repo": repo}).fetchall()
                bare.append((time.perf_counter() - start) * 1000)
        assert page.total == sessions and len(page.sessions) == 100, (page.total, len(page.sessions))
        report("sync_ls_remote_member_ms", percentile(azsd, 50), "ms", percentile(bare, 50))
        report("sync_ls_remote_member_before_ms", percentile(before, 50), "ms", percentile(bare, 50))
    finally:
        with psycopg.connect(url, autocommit=True) as owner:
            for role in (pusher, member):
                owner.execute(f'DROP OWNED BY "{role}"')
        for role in (pusher, member):
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')
