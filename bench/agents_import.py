"""Importing Aider and OpenCode histories (`azs import aider|opencode`), against bare chains of the
same data, and `azs import opencode` of 1 000 sessions through the daemon.

The bare chain of a source is what storing its events takes and nothing else: the same reading and
the agent's own parser (so the same events), each event's JSON compressed with zstd (level 3) and
inserted with sqlite3 in DELETE-journal transactions of 1 000 rows, one plain `sessions` row per
source. It leaves out the bookkeeping that makes the rows a session azsd can serve: truncation
(`prepare_for_store`), the search index, the rendered context blocks, the summaries, the badge, the
usage, the import record and the session's name. The `_vs_raw` figures set the import against a
barer chain still, which stores the source's raw records (Aider: blank-line blocks of the file;
OpenCode: each message and part row's JSON as read) without parsing them.

- `aider_import`: lines per second of importing every run of a generated `.aider.chat.history.md`
  (the real samples of tests/data/aider repeated with varied words: ~2.7 MB, ~1 350 runs with a
  prompt; `--quick`: a fifth) into a fresh store (`import_many`, as the daemon runs it), against
  the bare chain of its runs; `aider_import_vs_parse`, against the parser alone (no store);
  `aider_import_vs_raw`, against the raw chain.
- `opencode_import`: messages per second of importing every session of a generated `opencode.db`
  (OpenCode's schema, tests/opencode_fixture.py; 1 000 sessions of one turn, 2 messages and 10 parts
  each), against the bare chain of its sessions (each read by the import's own query); and
  `opencode_import_vs_raw`, against the raw chain.
- `opencode_import_1000`: seconds of the real `azs import opencode --data-dir …` process against a
  running daemon (1 000 sessions), the baseline being the budget, 10 s (ratio ≤ 1: within it).

Run alone: `python -m bench.agents_import [--quick]`.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec
import zstandard

from azsd.events import Event, encode_event, event_kind
from azsd.ingest.import_batch import import_many
from azsd.ingest.importer import discover
from azsd.ingest.parsers.aider import AiderParser
from azsd.ingest.parsers.opencode import OpenCodeParser
from azsd.ingest.sources import aider_runs
from azsd.store import Store
from azsd.store.opencode_db import OpenCodeDb
from azsd.store.schema import AZUREAL_DDL
from bench.common import report, running_daemon

SAMPLES = Path(__file__).resolve().parent.parent / "tests" / "data" / "aider"
BATCH = 1000
BUDGET_S = 10.0
_BARE = (
    "bare chain = the same reading + the agent's parser (the same events) + event JSON + zstd(3) + "
    "sqlite3 inserts of 1 000 rows a transaction + a plain sessions row per source; without truncation, "
    "search index, context blocks, summaries, badge, usage, import record, name. raw chain = the "
    "source's records as read (Aider: blank-line blocks; OpenCode: message and part JSON), unparsed"
)


def write_aider(path: Path, copies: int) -> int:
    """A chat history of `copies` rounds of the real samples, words varied; its line count."""
    blob = b"".join(p.read_bytes() for p in sorted(SAMPLES.glob("*.md")))
    with path.open("wb") as out:
        for i in range(copies):
            out.write(blob.replace(b"the ", f"the{i} ".encode()))
    return len(path.read_bytes().splitlines())


def bare_aider(source: Path, db: Path) -> int:
    """Each run with a prompt read in one piece (as the import reads a small run) by the parser, its
    events' JSON zstd-compressed, batched sqlite3 inserts; the lines read."""
    chain = _EventChain(db)
    lines = 0
    with open(source, "rb") as stream:
        for run in aider_runs(source):
            if not run.prompted:
                continue
            parser = AiderParser(closed=run.closed)
            stream.seek(run.span[0])
            split = stream.read(run.span[1] - run.span[0]).split(b"\n")
            events = parser.feed_all(split[:-1] if not split[-1] else split)
            lines += parser.report.lines
            chain.add(run.name, events)
    chain.close()
    return lines


def raw_aider(source: Path, db: Path) -> int:
    """Runs and blocks of the file, zstd, batched sqlite3 inserts; the lines read."""
    conn = _bare_db(db)
    cctx = zstandard.ZstdCompressor(level=3)
    rows: list[tuple[int, int, str, bytes, int]] = []
    sessions: list[tuple[int, str]] = []
    session = seq = lines = 0
    block: list[bytes] = []

    def put() -> None:
        nonlocal seq
        if block:
            seq += 1
            data = b"\n".join(block)
            rows.append((session, seq, "Block", cctx.compress(data), len(data)))
            block.clear()
        if len(rows) >= BATCH:
            _flush(conn, rows, sessions)

    with open(source, "rb") as stream:
        for line in stream:
            lines += 1
            if line.startswith(b"# aider chat started at "):
                put()
                session += 1
                seq = 0
                sessions.append((session, line[24:].decode().strip()))
            elif not line.strip():
                put()
            else:
                block.append(line.decode("utf-8").rstrip("\n").encode())
    put()
    _flush(conn, rows, sessions)
    conn.close()
    return lines


def build_opencode(data_dir: Path, project: Path, sessions: int) -> int:
    """An `opencode.db` of `sessions` one-turn sessions of `project`; the messages in it."""
    sys.path.insert(0, str(SAMPLES.parent.parent.parent))
    from tests.opencode_fixture import OpenCodeBuilder, conversation

    oc = OpenCodeBuilder(data_dir)
    n = 0
    with sqlite3.connect(oc.db) as conn:
        for i in range(sessions):
            sid = f"ses_{i:06}"
            conn.execute(
                "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, "
                "time_updated) VALUES (?, 'prj_1', ?, ?, ?, '1.0.0', ?, ?)",
                (sid, sid, str(project), f"session {i}", i, i),
            )
            for info, parts in conversation(i):
                n += 1
                mid, at = f"msg_{n:08}", info["time"]["created"]
                conn.execute(
                    "INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, at, at, json.dumps(info))
                )
                conn.executemany(
                    "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (f"prt_{n:08}_{j:03}", mid, sid, at + j, at + j, json.dumps(p))
                        for j, p in enumerate(parts)
                    ],
                )
    return n


def bare_opencode(source: Path, db: Path) -> int:
    """Every session read as the import reads it and parsed, its events' JSON zstd-compressed,
    batched sqlite3 inserts; the messages read."""
    chain = _EventChain(db)
    messages = 0
    with OpenCodeDb(source) as opencode:
        for session in opencode.sessions():
            parser = OpenCodeParser()
            events: list[Event] = []
            for info, parts, _ in opencode.messages(session.id):
                messages += 1
                if info is not None:
                    events += parser.feed_message(info, parts)
            chain.add(session.id, events)
    chain.close()
    return messages


def raw_opencode(source: Path, db: Path) -> int:
    """Every session's message and part rows: decode, zstd, batched inserts; the messages read."""
    conn = _bare_db(db)
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    decoder = msgspec.json.Decoder()
    cctx = zstandard.ZstdCompressor(level=3)
    rows: list[tuple[int, int, str, bytes, int]] = []
    sessions: list[tuple[int, str]] = []
    messages = 0
    for n, (sid,) in enumerate(src.execute("SELECT id FROM session ORDER BY time_created, id").fetchall(), 1):
        sessions.append((n, sid))
        seq = 0
        for (data,) in src.execute(
            "SELECT data FROM message WHERE session_id = ? "
            "UNION ALL SELECT data FROM part WHERE session_id = ?",
            (sid, sid),
        ):
            obj = decoder.decode(data)
            seq += 1
            raw = data.encode()
            rows.append((n, seq, str(obj.get("role") or obj.get("type")), cctx.compress(raw), len(raw)))
            if len(rows) >= BATCH:
                _flush(conn, rows, sessions)
        messages += src.execute("SELECT COUNT(*) FROM message WHERE session_id = ?", (sid,)).fetchone()[0]
    _flush(conn, rows, sessions)
    src.close()
    conn.close()
    return messages


class _EventChain:
    """Events into a bare AZUREAL-schema file: JSON, zstd(3), 1 000 rows a transaction."""

    def __init__(self, db: Path) -> None:
        self.conn = _bare_db(db)
        self.cctx = zstandard.ZstdCompressor(level=3)
        self.rows: list[tuple[int, int, str, bytes, int]] = []
        self.sessions: list[tuple[int, str]] = []
        self.count = 0

    def add(self, name: str, events: list[Event]) -> None:
        self.count += 1
        session = self.count
        self.sessions.append((session, name))
        for seq, event in enumerate(events, 1):
            data = encode_event(event)
            self.rows.append((session, seq, event_kind(event), self.cctx.compress(data), len(data)))
        if len(self.rows) >= BATCH:
            _flush(self.conn, self.rows, self.sessions)

    def close(self) -> None:
        _flush(self.conn, self.rows, self.sessions)
        self.conn.close()


def _bare_db(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.executescript(AZUREAL_DDL)
    return conn


def _flush(
    conn: sqlite3.Connection, rows: list[tuple[int, int, str, bytes, int]], sessions: list[tuple[int, str]]
) -> None:
    """One transaction: the new sessions' rows, then the events'."""
    if not rows and not sessions:
        return
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO sessions (id, name) VALUES (?, ?)", sessions)
    sessions.clear()
    conn.executemany("INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?,?,?,?,?)", rows)
    conn.execute("COMMIT")
    rows.clear()


def _timed_import(root: Path, agent: str, source_dir: Path, project: Path) -> float:
    start = time.perf_counter()
    with Store.open(root) as store:
        outcomes = import_many(store, discover(agent, source_dir, project))  # type: ignore[arg-type]
    elapsed = time.perf_counter() - start
    failed = [o for o in outcomes if isinstance(o, Exception)]
    if failed:
        raise RuntimeError(f"{agent} import failed: {failed[0]}")
    return elapsed


def main(*, quick: bool = False) -> None:
    runs = 2
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        project = base / "project"
        project.mkdir()
        history = project / ".aider.chat.history.md"
        lines = write_aider(history, 30 if quick else 150)
        aider = min(_timed_import(base / f"aider{i}", "aider", project, project) for i in range(runs))
        bare = min(_time(lambda i=i: bare_aider(history, base / f"bare-aider{i}.db")) for i in range(runs))
        raw = min(_time(lambda i=i: raw_aider(history, base / f"raw-aider{i}.db")) for i in range(runs))
        parse = min(
            _time(lambda: AiderParser().feed_all(history.read_bytes().splitlines())) for _ in range(runs)
        )
        print(f"# agents_import: aider {history.stat().st_size / 1e6:.1f} MB, {lines} lines")
        print(f"# agents_import: {_BARE}")
        report("aider_import", lines / aider, "lines/s", lines / bare)
        report("aider_import_vs_parse", lines / aider, "lines/s", lines / parse)
        report("aider_import_vs_raw", lines / aider, "lines/s", lines / raw)

        data = base / "opencode"
        messages = build_opencode(data, project, 1000)
        oc = min(_timed_import(base / f"oc{i}", "opencode", data, project) for i in range(runs))
        db = data / "opencode.db"
        bare = min(_time(lambda i=i: bare_opencode(db, base / f"bare-oc{i}.db")) for i in range(runs))
        raw = min(_time(lambda i=i: raw_opencode(db, base / f"raw-oc{i}.db")) for i in range(runs))
        print(f"# agents_import: opencode 1000 sessions, {messages} messages")
        report("opencode_import", messages / oc, "messages/s", messages / bare)
        report("opencode_import_vs_raw", messages / oc, "messages/s", messages / raw)

        root = base / "cli"
        root.mkdir()
        with running_daemon(base / "run"):
            argv = [
                sys.executable,
                "-m",
                "azsd_client",
                "--runtime-dir",
                str(base / "run"),
                "--root",
                str(root),
            ]
            start = time.perf_counter()
            done = subprocess.run(
                [
                    *argv,
                    "--timeout",
                    "60",
                    "import",
                    "opencode",
                    "--data-dir",
                    str(data),
                    "--project",
                    str(project),
                ],
                capture_output=True,
                check=False,
            )
            elapsed = time.perf_counter() - start
        if done.returncode != 0 or (
            b"imported 1,000 sessions" not in done.stdout and b"1000" not in done.stdout
        ):
            raise RuntimeError(f"azs import opencode failed: {done.stdout!r} {done.stderr!r}")
        print(f"# agents_import: {done.stdout.decode().strip()}")
        report("opencode_import_1000", elapsed, "s", BUDGET_S)


def _time(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
