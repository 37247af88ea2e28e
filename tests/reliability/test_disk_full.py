"""A disk that fills in the middle of a group commit (issue 2/7): SQLite may roll the whole
transaction back; every reply must still say exactly whether its write is on disk, so that a client
that retries what failed never stores anything twice. The test counts rows against replies."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.errors import StoreFullError
from azsd.events import AssistantText, encode_event
from azsd.ingest.file import ingest_file
from azsd.ipc import protocol as p
from azsd.store import Store, store_path
from azsd.store.chunks import Pacer, Pacing
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir
from tests.reliability.common import size_limited_tmpfs
from tests.reliability.pipeline import Pipe


@pytest.fixture
def small_fs() -> Iterator[Path]:
    """A 1.5 MiB tmpfs: smaller than SQLite's page cache, so it fills in the middle of a batch."""
    with size_limited_tmpfs("1536k") as mount:
        yield mount


@pytest.fixture
def daemon() -> Iterator[DaemonProc]:
    with daemon_in_tmpdir() as d:
        yield d


def bulky(i: int) -> str:
    """An event of ~12 KB that zstd cannot shrink much."""
    text = f"{i} " + "".join(chr(0x4E00 + (i * 7919 + k * 104729) % 20000) for k in range(4000))
    return encode_event(AssistantText(text=text)).decode()


def test_pipelined_appends_on_a_filling_disk_are_answered_truthfully(
    small_fs: Path, daemon: DaemonProc
) -> None:
    # small_fs comes first: it is torn down last, after the daemon has let go of the store on it.
    d, root = daemon, small_fs
    created = d.request(p.CreateSession(root=str(root)))
    assert isinstance(created, p.SessionReply), created
    sid = created.session.id
    client = Pipe(d)
    try:
        rids = [
            client.send(p.AppendEvents(root=str(root), session=sid, events=[bulky(i)])) for i in range(400)
        ]
        replies = client.replies(rids, timeout_ms=60_000)
    finally:
        client.close()
    ok = [r for r in replies.values() if isinstance(r, p.AppendReply)]
    failed = [r for r in replies.values() if isinstance(r, p.ErrorReply)]
    assert failed, "the disk never filled"
    assert {r.code for r in failed} == {"store_full"}, {(r.code, r.message) for r in failed}
    conn = sqlite3.connect(store_path(root))
    try:
        stored = conn.execute("SELECT COUNT(*) FROM events WHERE session_id = ?", (sid,)).fetchone()[0]
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
    assert stored == len(ok), f"{stored} rows stored, {len(ok)} appends acknowledged"
    # The seqs acknowledged are the ones stored: no gap, no repeat.
    assert sorted(r.events[0].seq for r in ok) == list(range(1, len(ok) + 1))


def test_an_ingest_that_fills_the_disk_says_how_much_it_stored(small_fs: Path, tmp_path: Path) -> None:
    """An ingest commits chunk by chunk; when the disk fills, the error says what is stored (it said
    "nothing was written" after 26 112 events were), and running it again stores the rest."""
    source = tmp_path / "run.jsonl"
    with source.open("w") as out:
        for i in range(3000):
            text = f"{i} " + base64.b64encode(os.urandom(300)).decode()  # zstd cannot shrink it
            content = [{"type": "text", "text": text}]
            line = {"type": "assistant", "session_id": "s", "message": {"id": f"m{i}", "content": content}}
            out.write(json.dumps(line) + "\n")
    every_step = Pacer(Pacing(chunk_s=0.0, gap_s=0.0, long_gap_s=0.0))  # each step its own commit
    with Store.open(small_fs) as store:
        sid = store.create_session().id
        with pytest.raises(StoreFullError) as caught:
            ingest_file(store, sid, source, "claude-stream-json", pacer=every_step)
    conn = sqlite3.connect(store_path(small_fs))
    try:
        stored = conn.execute("SELECT COUNT(*) FROM events WHERE session_id = ?", (sid,)).fetchone()[0]
    finally:
        conn.close()
    assert stored > 0, "the disk filled before the first chunk: nothing to say"
    assert str(caught.value) == (
        f"stored {stored:,} of 3,000 events of run.jsonl before the disk filled; "
        "make room and run it again to store the rest"
    )
