"""AZUREAL never fails beside azsd (issue 2/7): no long operation of the daemon holds the store's
write lock long enough to exhaust the 5 s busy timeout of an AZUREAL-style writer that does not retry.

The writer (tests/reliability/azureal_writer.py) is a process of its own on its own connection;
it writes a session and its events in a loop while the real daemon ingests a big file, imports a big
transcript, rebuilds the search index, backs the store up and forks a big session. Each test then
counts the writer's failures (0) and its rows (all there), and checks that the daemon's work is
whole too. The inputs are big enough that one transaction over them takes well over 5 s here.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from azsd.ingest.file import ingest_file
from azsd.ingest.import_batch import AHEAD_FILE_BYTES, ALONE_EVENTS, SMALL_FILE_BYTES
from azsd.ingest.importer import claude_slug
from azsd.ipc import protocol as p
from azsd.store import Store
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir, short_tmpdir
from tests.reliability.common import scaled, stream_lines

#: Lines of the big inputs: ~70 MB of stream-json in the bounded suite (one transaction over it
#: took ~7 s here), ~350 MB under `make soak`.
LINES = scaled(400_000, 2_000_000)
WRITER = Path(__file__).with_name("azureal_writer.py")
LONG_MS = 600_000


@dataclass
class WriterRun:
    """What the AZUREAL-style writer reported once stopped."""

    report: dict[str, Any] = field(default_factory=dict)

    @property
    def failures(self) -> list[dict[str, Any]]:
        return list(self.report["failures"])

    @property
    def sessions(self) -> list[int]:
        return list(self.report["sessions"])


@contextmanager
def azureal_writer(store: Path, *, pause_s: float = 0.02) -> Iterator[WriterRun]:
    """The writer running on `store` for the duration of the block (at least a few rounds), pausing
    `pause_s` between its appends."""
    stop = store.parent / f"stop-{time.monotonic_ns()}"
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), str(store), str(stop), str(pause_s)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    run = WriterRun()
    try:
        time.sleep(0.3)  # a few rounds before the daemon's work starts
        yield run
        time.sleep(0.3)
    finally:
        stop.touch()
        out, err = proc.communicate(timeout=60)
        stop.unlink(missing_ok=True)
    assert proc.returncode == 0, err.decode(errors="replace")
    run.report = json.loads(out)


def assert_writer_whole(store: Path, run: WriterRun) -> None:
    """The writer never failed, and every session it committed holds its events."""
    assert run.failures == [], f"AZUREAL's writes failed beside azsd: {run.failures[:5]}"
    assert len(run.sessions) >= 5, run.report
    conn = sqlite3.connect(store)
    try:
        counts = dict(
            conn.execute(
                "SELECT s.id, COUNT(e.id) FROM sessions AS s LEFT JOIN events AS e ON e.session_id = s.id "
                "WHERE s.worktree = 'azureal' GROUP BY s.id"
            ).fetchall()
        )
    finally:
        conn.close()
    assert sorted(counts) == sorted(run.sessions)
    assert set(counts.values()) == {run.report["events_per_session"]}


def stream_file(path: Path) -> int:
    """Write the big claude-stream-json input; returns its line count."""
    lines = stream_lines(LINES)
    with path.open("wb") as out:
        out.writelines(lines)
    return len(lines)


def session_file(path: Path, lines: int = LINES, seed: int = 1, pad: bytes = b"") -> None:
    """Write the big input (or `lines` of another, `pad` before each text) as a Claude session
    transcript (what `import` reads)."""
    with path.open("wb") as out:
        for i, line in enumerate(stream_lines(lines, seed)[1:]):
            line = line.replace(b'"text":"', b'"text":"' + pad)
            envelope = b'"sessionId":"s","uuid":"u%d","timestamp":"2026-01-01T00:00:00Z"' % i
            out.write(line.replace(b'"session_id":"s"', envelope))


@pytest.fixture(scope="module")
def inputs() -> Iterator[Path]:
    """The big inputs, and a store holding the big file ingested into S1 (copied by the tests)."""
    base = short_tmpdir()
    stream_file(base / "big.jsonl")
    template = base / "template"
    template.mkdir()
    with Store.open(template) as store:
        sid = store.create_session(worktree="main").id
        ingest_file(store, sid, base / "big.jsonl")
    yield base
    shutil.rmtree(base, ignore_errors=True)


def worktree_with(inputs: Path, *, template: bool) -> Path:
    root = short_tmpdir()
    if template:
        shutil.copytree(inputs / "template" / ".azureal", root / ".azureal")
    return root


def store_of(root: Path) -> Path:
    return root / ".azureal" / "sessions.azs"


def events_of(store: Path, sid: int) -> int:
    conn = sqlite3.connect(store)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM events WHERE session_id = ?", (sid,)).fetchone()[0])
    finally:
        conn.close()


def new_session(d: DaemonProc, root: Path) -> int:
    reply = d.request(p.CreateSession(root=str(root), worktree="main"))
    assert isinstance(reply, p.SessionReply), reply
    return reply.session.id


def test_azureal_never_fails_during_a_big_ingest(inputs: Path) -> None:
    root = worktree_with(inputs, template=False)
    try:
        with daemon_in_tmpdir() as d:
            sid = new_session(d, root)
            with azureal_writer(store_of(root)) as run:
                reply = d.request(
                    p.IngestFile(root=str(root), session=sid, path=str(inputs / "big.jsonl")), LONG_MS
                )
            assert isinstance(reply, p.IngestReply), reply
            assert reply.appended == reply.parsed > LINES // 2
            assert events_of(store_of(root), sid) == reply.appended
        assert_writer_whole(store_of(root), run)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_azureal_never_fails_during_a_big_import(inputs: Path) -> None:
    root = worktree_with(inputs, template=False)
    source = root / "transcript.jsonl"
    session_file(source)
    try:
        with daemon_in_tmpdir() as d:
            new_session(d, root)  # the store exists before the writer starts
            with azureal_writer(store_of(root)) as run:
                request = p.ImportSession(root=str(root), path=str(source), agent="claude", worktree="main")
                reply = d.request(request, LONG_MS)
            assert isinstance(reply, p.ImportReply), reply
            assert reply.created and reply.appended > LINES // 2
            assert events_of(store_of(root), reply.session.id) == reply.appended
        assert_writer_whole(store_of(root), run)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_azureal_never_fails_while_files_read_ahead_are_created(inputs: Path) -> None:
    """Files bigger than `SMALL_FILE_BYTES` that a listing named are read ahead, and each is created
    in one transaction (`ImportSession`, as `azs import` sends them): AZUREAL's writes go on."""
    root = worktree_with(inputs, template=False)
    config = root / "claude"
    folder = config / "projects" / claude_slug(root)
    folder.mkdir(parents=True)
    paths = [folder / f"s{seed}.jsonl" for seed in range(6)]
    for seed, path in enumerate(paths):
        session_file(path, ALONE_EVENTS * 3 // 4, seed, b"parse store event line seq lock chunk " * 30)
        assert SMALL_FILE_BYTES < path.stat().st_size <= AHEAD_FILE_BYTES
    try:
        with daemon_in_tmpdir() as d:
            new_session(d, root)
            listed = d.request(
                p.ImportSources(root=str(root), agent="claude", source_dir=str(config), project=str(root))
            )
            assert isinstance(listed, p.SourcesReply) and len(listed.sources) == len(paths)
            with azureal_writer(store_of(root)) as run:
                replies = [
                    d.request(p.ImportSession(root=str(root), path=str(f), agent="claude", worktree="main"))
                    for f in paths
                ]
            for reply in replies:
                assert isinstance(reply, p.ImportReply), reply
                assert reply.created and 0 < reply.appended <= ALONE_EVENTS  # (created alone)
                assert events_of(store_of(root), reply.session.id) == reply.appended
        assert_writer_whole(store_of(root), run)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_azureal_never_fails_during_a_reindex(inputs: Path) -> None:
    root = worktree_with(inputs, template=True)
    try:
        with daemon_in_tmpdir() as d:
            with azureal_writer(store_of(root)) as run:
                reply = d.request(p.Reindex(root=str(root)), LONG_MS)
            assert isinstance(reply, p.ReindexReply), reply
            assert reply.indexed > LINES // 2
            hits = d.request(p.Search(root=str(root), query="azureal", limit=5))
            assert isinstance(hits, p.SearchReply), hits
        assert_writer_whole(store_of(root), run)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_azureal_never_fails_during_a_backup(inputs: Path) -> None:
    root = worktree_with(inputs, template=True)
    dest = root / "copy.azs"
    try:
        with daemon_in_tmpdir() as d:
            with azureal_writer(store_of(root)) as run:
                for _ in range(3):  # a copy that a loaded machine slowed down says "try again": do
                    reply = d.request(p.Backup(root=str(root), dest=str(dest)), LONG_MS)
                    if not (isinstance(reply, p.ErrorReply) and "try the backup again" in reply.message):
                        break
                    assert not dest.exists()  # a copy given up leaves nothing behind
            assert isinstance(reply, p.BackupReply), reply
            assert reply.integrity == "ok" and reply.events > LINES // 2
        assert_writer_whole(store_of(root), run)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_azureal_never_fails_during_a_fork_of_a_big_session(inputs: Path) -> None:
    root = worktree_with(inputs, template=True)
    try:
        big = events_of(store_of(root), 1)
        with daemon_in_tmpdir() as d:
            with azureal_writer(store_of(root)) as run:
                reply = d.request(p.ForkSession(root=str(root), session=1, at_seq=big), LONG_MS)
            assert isinstance(reply, p.SessionReply), reply
            assert events_of(store_of(root), reply.session.id) == big
        assert_writer_whole(store_of(root), run)
    finally:
        shutil.rmtree(root, ignore_errors=True)


#: The daemon's peak RSS while it ingests the big file: the reply keeps counts, each chunk's
#: notifications are published as it commits (it used to keep every stored event and notification:
#: 350 MB for the 70 MB file; 67 MB since). 100 MB is the daemon's target of DESIGN.md.
PEAK_RSS_KB = 100_000


def test_a_big_ingest_keeps_the_daemon_memory_bounded(inputs: Path) -> None:
    root = worktree_with(inputs, template=False)
    try:
        with daemon_in_tmpdir() as d:
            sid = new_session(d, root)
            reply = d.request(
                p.IngestFile(root=str(root), session=sid, path=str(inputs / "big.jsonl")), LONG_MS
            )
            assert isinstance(reply, p.IngestReply), reply
            peak = d.peak_rss_kb()
            print(f"peak RSS {peak} kB after ingesting {reply.appended} events")
            assert peak < PEAK_RSS_KB, f"peak RSS {peak} kB"
    finally:
        shutil.rmtree(root, ignore_errors=True)
