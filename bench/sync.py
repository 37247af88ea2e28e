"""Sync to PostgreSQL: push throughput, append-to-visible lag, `search --remote`, pull.

Against the machine's PostgreSQL (127.0.0.1:5432, or ``AZSD_BENCH_PG``), in a fresh database dropped
at the end; skipped with a note when it does not answer. Each figure has its baseline from the same
run:

- ``sync_push``: events/s of azsd's push (what the daemon's pusher runs: read the store, decode each
  event for its search text, COPY, insert, commit per batch) of a store of 1 M events (quick: 20 000)
  into a fresh database, against one bare ``COPY`` of the same rows, prepared in memory, into the same
  table in another fresh database (target: ratio ≥ 0.5).
- ``sync_lag_p50_ms`` / ``sync_lag_p99_ms``: from a client's append to the daemon until the row is
  visible in PostgreSQL (polled every 0.5 ms), against a bare INSERT + COMMIT of a row seen the same
  way (target: p50 ≤ 100 ms).
- ``sync_search_remote_p50_ms``: `azs search --remote` (a request to the daemon, which asks
  PostgreSQL) over those events, p50 of queries for one of 2 000 rarer words, against the bare full-text SQL
  on an open connection (002's query shape: without statistics, its plan scans the GIN index once
  per session; 003's search_hits fixes the shape) (target: ≤ 100 ms).
- ``sync_pull_s``: `azs pull` of a 10 000-event session (read from PostgreSQL, written as a new local
  session), against a bare SELECT of the rows and an `executemany` into a SQLite file (target ≤ 1 s).

The team's reads (`usage --remote`, `ls --remote` as a member) are measured by bench/sync_team.py on
the same store and database. Run alone: `python -m bench.sync [--quick]`.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from azsd.events import AssistantText, Event, UserMessage, decode_event
from azsd.search import search_text
from azsd.store import Store
from azsd.store.codec import RowCodec
from azsd.store.schema import AZUREAL_DDL
from azsd.sync.connection import connect
from azsd.sync.push import StorePush, prepare_connection
from azsd.sync.schema import init_database
from azsd_client import Client
from bench.common import corpus_like_events, daemon_config, percentile, report, running_daemon
from bench.sync_team import add_usage, ls_member_figures, usage_figures

ADMIN = os.environ.get("AZSD_BENCH_PG", "host=127.0.0.1 port=5432 dbname=postgres")
SESSION_EVENTS = 10_000


def _url(name: str) -> str:
    info = psycopg.conninfo.conninfo_to_dict(ADMIN)
    info["dbname"] = name
    return psycopg.conninfo.make_conninfo(**info)  # type: ignore[arg-type]


def _admin() -> psycopg.Connection[Any]:
    """A new admin connection for each use: on a shared machine the server may have been restarted
    while the store was being built (a held connection would be gone)."""
    return psycopg.connect(ADMIN, autocommit=True, connect_timeout=3)


@contextmanager
def fresh_database() -> Iterator[str]:
    name = f"azsd_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with _admin() as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        init_database(_url(name))
        yield _url(name)
    finally:
        with _admin() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def session_events(n: int, session: int) -> list[Event]:
    """Corpus-like events, each prompt and reply carrying a rarer word (`topicNNN`) to search for."""
    rng = random.Random(session)
    out: list[Event] = []
    for e in corpus_like_events(n, seed=session):
        if isinstance(e, UserMessage):
            e = UserMessage(content=f"{e.content} topic{rng.randrange(2000)}")
        elif isinstance(e, AssistantText):
            e = AssistantText(text=f"{e.text} topic{rng.randrange(2000)}")
        out.append(e)
    return out


def build_store(root: Path, n: int) -> list[int]:
    """A store of `n` events in sessions of SESSION_EVENTS (not timed); the session ids."""
    ids = []
    with Store.open(root) as store:
        for s in range(max(1, n // SESSION_EVENTS)):
            sid = store.create_session(f"bench {s}", "main").id
            events = session_events(min(SESSION_EVENTS, n), s)
            for i in range(0, len(events), 1000):
                store.append_events(sid, events[i : i + 1000])
            ids.append(sid)
    return ids


def push_all(url: str, root: Path, repository: str) -> float:
    """azsd's push of the whole store, as the pusher does it; seconds."""
    with Store.open(root) as writer:
        store_uuid = writer.sync_prepare(repository)
    store = Store.open(root, reader=True)
    conn = connect(url)
    try:
        prepare_connection(conn)
        job = StorePush(str(root), "bench@host")
        start = time.perf_counter()
        while job.push(conn, store, store_uuid, repository).events == job.batch:
            pass
        return time.perf_counter() - start
    finally:
        conn.close()
        store.close()


def bare_copy(url: str, root: Path) -> float:
    """One COPY of the same rows (read and given their text beforehand) into the same table; seconds."""
    codec = RowCodec()
    with Store.open(root, reader=True) as store:
        rows = store.sync_events_after(0, 10**9)
        sessions = {e.session_uuid for e in rows}
    prepared = []
    for e in rows:
        text = search_text(decode_event(codec.decode(e.data)))
        prepared.append((e.session_uuid, e.seq, e.kind, e.data, e.char_len, e.id, text))
    with psycopg.connect(url, autocommit=True) as conn:
        store_uuid = str(uuid.uuid4())
        conn.execute(
            "INSERT INTO azsd.stores (store_uuid, identity, repository, root) VALUES (%s, 'b', 'b', 'b')",
            (store_uuid,),
        )
        for i, s in enumerate(sessions):
            conn.execute(
                "INSERT INTO azsd.sessions (session_uuid, store_uuid, identity, repository, local_id) "
                "VALUES (%s, %s, 'b', 'b', %s)",
                (s, store_uuid, i),
            )
        start = time.perf_counter()
        with conn.transaction(), conn.cursor() as cur:
            with cur.copy(
                "COPY azsd.events (session_uuid, seq, kind, data, char_len, local_id, body) FROM STDIN"
            ) as copy:
                for row in prepared:
                    copy.write_row(row)
        return time.perf_counter() - start


def _visible(conn: psycopg.Connection[Any], sql: str, params: tuple[Any, ...], start: float) -> float:
    deadline = start + 30
    while conn.execute(sql, params).fetchone() is None:
        if time.perf_counter() > deadline:
            raise RuntimeError("a row never became visible")
        time.sleep(0.0005)
    return (time.perf_counter() - start) * 1000


def lag_ms(url: str, client: Client, root: Path, sid: int, session_uuid: str, n: int) -> list[float]:
    out = []
    with psycopg.connect(url, autocommit=True) as watch:
        seq = int(client.get_session(root, sid).session.event_count)
        for i in range(n):
            seq += 1
            start = time.perf_counter()
            client.append_events(root, sid, [UserMessage(content=f"lag probe {i}")])
            query = "SELECT 1 FROM azsd.events WHERE session_uuid = %s AND seq = %s"
            out.append(_visible(watch, query, (session_uuid, seq), start))
            time.sleep(0.02)
    return out


def bare_lag_ms(url: str, n: int) -> list[float]:
    out = []
    with psycopg.connect(url, autocommit=True) as writer, psycopg.connect(url, autocommit=True) as watch:
        writer.execute("CREATE TABLE bare_lag (id integer PRIMARY KEY, data bytea)")
        for i in range(n):
            start = time.perf_counter()
            writer.execute("INSERT INTO bare_lag VALUES (%s, %s)", (i, b"x" * 200))
            out.append(_visible(watch, "SELECT 1 FROM bare_lag WHERE id = %s", (i,), start))
            time.sleep(0.02)
    return out


def search_ms(
    client: Client, url: str, root: Path, repository: str, queries: list[str]
) -> tuple[float, float]:
    azsd, bare = [], []
    sql = (
        "SELECT e.session_uuid, e.seq, ts_rank(e.tsv, q) AS rank FROM azsd.events e "
        "JOIN azsd.sessions s USING (session_uuid), websearch_to_tsquery('simple', %s) q "
        "WHERE e.tsv @@ q AND s.repository = %s AND s.deleted IS NULL ORDER BY rank DESC LIMIT 50"
    )
    hits = 0
    with psycopg.connect(url, autocommit=True) as conn:
        for q in queries:
            start = time.perf_counter()
            reply = client.remote_search(root, q)
            azsd.append((time.perf_counter() - start) * 1000)
            hits += len(reply.hits)
            start = time.perf_counter()
            conn.execute(sql, (q, repository)).fetchall()
            bare.append((time.perf_counter() - start) * 1000)
    assert hits, "the searches found nothing"
    return percentile(azsd, 50), percentile(bare, 50)


def pull_s(client: Client, url: str, root: Path, ref: str, tmp: Path) -> tuple[float, float]:
    start = time.perf_counter()
    reply = client.pull(root, ref)
    azsd = time.perf_counter() - start
    assert reply.session.event_count == SESSION_EVENTS or reply.session.event_count > 0
    start = time.perf_counter()
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT seq, kind, data, char_len FROM azsd.events WHERE session_uuid = %s ORDER BY seq",
            (ref.lstrip("@"),),
        ).fetchall()
    lite = sqlite3.connect(tmp / "bare.db", isolation_level=None)
    lite.executescript(AZUREAL_DDL)
    lite.execute("BEGIN IMMEDIATE")
    lite.execute("INSERT INTO sessions (id) VALUES (1)")
    lite.executemany(
        "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (1, ?, ?, ?, ?)",
        [(seq, kind, bytes(data), n) for seq, kind, data, n in rows],
    )
    lite.execute("COMMIT")
    lite.close()
    return azsd, time.perf_counter() - start


def main(*, quick: bool = False) -> None:
    try:
        admin = psycopg.connect(ADMIN, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        print(f"# sync: skipped, PostgreSQL does not answer at {ADMIN!r}: {exc}".strip(), file=sys.stderr)
        return
    n = 20_000 if quick else 1_000_000
    admin.close()
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        root = base / "wt"
        root.mkdir()
        repository = f"path:{root.resolve()}"
        sids = build_store(root, n)
        add_usage(root, sids)
        with fresh_database() as url:
            pushed_s = push_all(url, root, repository)
            with fresh_database() as bare_url:
                copy_s = bare_copy(bare_url, root)
            report("sync_push", n / pushed_s, "events/s", n / copy_s)
            run_daemon_figures(url, base, root, repository, sids, quick)
            with _admin() as admin:
                ls_member_figures(admin, url, 5_000 if quick else 100_000, 10 if quick else 30)


def run_daemon_figures(
    url: str, base: Path, root: Path, repository: str, sids: list[int], quick: bool
) -> None:
    config = base / "config" / "azsd"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(f'sync-url = "{url}"\nsync-identity = "bench@host"\n')
    state = base / "state" / "azsd"
    state.mkdir(parents=True)
    (state / "sync-roots").write_text(f"{root.resolve()}\n")
    env = {"XDG_CONFIG_HOME": str(base / "config"), "XDG_STATE_HOME": str(base / "state")}
    with running_daemon(base / "run", env), Client(daemon_config(base / "run"), timeout=60) as client:
        deadline = time.monotonic() + 60
        while not any(s.pushed_event_id and not s.lag_events for s in client.sync_status().stores):
            if time.monotonic() > deadline:
                raise RuntimeError("the daemon did not catch up with the pushed store")
            time.sleep(0.05)
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "SELECT session_uuid::text FROM azsd.sessions WHERE local_id = %s AND repository = %s",
                (sids[0], repository),
            ).fetchone()
        assert row is not None
        probes = 30 if quick else 200
        lag = lag_ms(url, client, root, sids[0], row[0], probes)
        bare = bare_lag_ms(url, probes)
        report("sync_lag_p50_ms", percentile(lag, 50), "ms", percentile(bare, 50))
        report("sync_lag_p99_ms", percentile(lag, 99), "ms", percentile(bare, 99))
        rng = random.Random(3)
        queries = [f"topic{rng.randrange(2000)}" for _ in range(10 if quick else 50)]
        azsd_ms, bare_ms = search_ms(client, url, root, repository, queries)
        report("sync_search_remote_p50_ms", azsd_ms, "ms", bare_ms)
        pulled = (base / "pulled").resolve()
        pulled.mkdir()
        with psycopg.connect(url) as conn:
            full = conn.execute(
                "SELECT session_uuid::text FROM azsd.sessions WHERE local_id = %s AND repository = %s",
                (sids[-1], repository),
            ).fetchone()
        assert full is not None
        azsd_s, bare_s = pull_s(client, url, pulled, "@" + full[0], base)
        report("sync_pull_s", azsd_s, "s", bare_s)
        usage_figures(client, url, root, 10 if quick else 30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
