"""Load: many clients at once, live follows running, and a foreign writer on the same store."""

from __future__ import annotations

import random
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import zstandard

from azsd.compact import prepare_for_store
from azsd.events import AssistantText, UserMessage, decode_event, encode_event
from azsd.ingest.parsers import make_parser
from azsd.ipc import protocol as p
from bench.common import percentile
from tests.daemon_fixture import DaemonProc, short_tmpdir, start_daemon
from tests.reliability.common import scaled, stored_data, stream_lines, wait_until

CLIENTS = 50
REQUESTS = scaled(100, 1000)
FOREIGN = scaled(200, 2000)


def mixed_requests(
    d: DaemonProc, root: Path, sid: int, n: int, seed: int, errors: list[str], latencies: list[float]
) -> None:
    """One client: `n` requests of every kind, checking each reply's type."""
    from azsd.ipc.transport import connect_dealer, recv_reply, send_request

    rng = random.Random(seed)
    sock = connect_dealer(d.ctx, d.rpc)
    try:
        for i in range(n):
            kind = rng.random()
            request: p._Msg
            expected: type
            if kind < 0.25:
                text = encode_event(AssistantText(text=f"client {seed} #{i}")).decode()
                request, expected = p.AppendEvents(root=str(root), session=sid, events=[text]), p.AppendReply
            elif kind < 0.45:
                request, expected = p.GetEvents(root=str(root), session=sid, limit=100), p.EventsPage
            elif kind < 0.6:
                request, expected = p.ListSessions(root=str(root), limit=20), p.SessionsReply
            elif kind < 0.7:
                request, expected = p.GetSession(root=str(root), session=sid), p.SessionReply
            elif kind < 0.8:
                request, expected = p.BuildContext(root=str(root), session=sid, prompt="next"), p.ContextReply
            elif kind < 0.9:
                request, expected = p.ContextMeter(root=str(root), session=sid), p.MeterReply
            else:
                request, expected = p.Status(), p.StatusReply
            rid = f"{seed}-{i}".encode()
            start = time.perf_counter()
            send_request(sock, rid, p.encode(request))
            if not sock.poll(30_000):
                errors.append(f"client {seed}: no reply to {type(request).__name__}")
                return
            got_id, payload = recv_reply(sock)
            latencies.append(time.perf_counter() - start)
            reply = p.decode_reply(payload)
            if got_id != rid or not isinstance(reply, expected):
                errors.append(f"client {seed}: {type(request).__name__} -> {reply!r}")
    finally:
        sock.close(linger=0)


def foreign_writer(path: Path, sid: int, n: int, collisions: list[int]) -> None:
    """AZUREAL's append (spec §2.5/§8): seq read before a deferred transaction; retried on collision."""
    cctx = zstandard.ZstdCompressor(level=3, write_content_size=False)
    conn = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    for i in range(n):
        payload = encode_event(UserMessage(content=f"foreign {i}"))
        while True:
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?", (sid,)
            ).fetchone()[0]
            try:
                conn.execute("BEGIN")
                conn.execute(
                    "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, ?, ?, ?)",
                    (sid, seq, "UserMessage", cctx.compress(payload), len(payload)),
                )
                conn.execute("COMMIT")
                break
            except sqlite3.IntegrityError:
                conn.execute("ROLLBACK")
                collisions.append(i)
            except sqlite3.OperationalError:  # busy past the timeout: try again, as a user would
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
        time.sleep(0.001)
    conn.close()


def test_fifty_clients_four_follows_and_a_foreign_writer() -> None:
    base, root = short_tmpdir(), short_tmpdir()
    d = start_daemon(base / "run")
    try:
        sessions = []
        for _ in range(CLIENTS + 4 + 1):
            created = d.request(p.CreateSession(root=str(root)))
            assert isinstance(created, p.SessionReply)
            sessions.append(created.session.id)
        client_sids, follow_sids, foreign_sid = sessions[:CLIENTS], sessions[CLIENTS:-1], sessions[-1]

        # Four live follows, written while the load runs.
        files, contents = [], []
        for i, sid in enumerate(follow_sids):
            f = root / f"agent{i}.jsonl"
            f.write_bytes(b"")
            files.append(f)
            contents.append(stream_lines(scaled(300, 1500), seed=100 + i))
            reply = d.request(p.Follow(root=str(root), session=sid, path=str(f), format="claude-stream-json"))
            assert isinstance(reply, p.FollowReply)

        def write(path: Path, lines: list[bytes]) -> None:
            with open(path, "ab") as out:
                for line in lines:
                    out.write(line)
                    out.flush()
                    time.sleep(0.002)

        errors: list[str] = []
        latencies: list[float] = []
        collisions: list[int] = []
        threads = [threading.Thread(target=write, args=(f, c)) for f, c in zip(files, contents, strict=True)]
        threads += [
            threading.Thread(target=mixed_requests, args=(d, root, sid, REQUESTS, i, errors, latencies))
            for i, sid in enumerate(client_sids)
        ]
        store = root / ".azureal" / "sessions.azs"
        threads.append(
            threading.Thread(target=foreign_writer, args=(store, foreign_sid, FOREIGN, collisions))
        )
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        elapsed = time.perf_counter() - started

        assert errors == []
        assert len(latencies) == CLIENTS * REQUESTS
        print(  # the load's figures, for whoever runs it with -s
            f"\n{CLIENTS} clients x {REQUESTS} requests in {elapsed:.1f} s; "
            f"p50 {percentile(latencies, 50) * 1000:.1f} ms, p99 {percentile(latencies, 99) * 1000:.1f} ms; "
            f"foreign collisions retried: {len(collisions)}"
        )

        # The follows stored their files exactly.
        for sid, lines in zip(follow_sids, contents, strict=True):
            want = [
                encode_event(e).decode()
                for e in prepare_for_store(make_parser("claude-stream-json").feed_all(lines))
            ]
            n = len(want)
            wait_until(lambda sid=sid, n=n: len(stored_data(d, root, sid)) >= n, what=f"follow S{sid}")
            assert stored_data(d, root, sid) == want
        # Each client's appends are all there, in its own order.
        for i, sid in enumerate(client_sids):
            texts = [decode_event(x) for x in stored_data(d, root, sid)]
            mine = [e.text for e in texts if isinstance(e, AssistantText)]
            assert mine == sorted(mine, key=lambda t: int(t.rsplit("#", 1)[1])) and all(
                f"client {i} #" in t for t in mine
            )
        # The foreign writer lost nothing, and every session's seqs are 1..n without a gap.
        foreign = [decode_event(x) for x in stored_data(d, root, foreign_sid)]
        assert foreign == [UserMessage(content=f"foreign {i}") for i in range(FOREIGN)]
        with sqlite3.connect(store) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            for (sid,) in conn.execute("SELECT id FROM sessions").fetchall():
                seqs = [
                    s
                    for (s,) in conn.execute(
                        "SELECT seq FROM events WHERE session_id = ? ORDER BY seq", (sid,)
                    )
                ]
                assert seqs == list(range(1, len(seqs) + 1)), sid
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
