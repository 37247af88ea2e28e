"""How long azsd holds a store's write lock while it catches up with rows AZUREAL wrote (issue 2/7):
the pauses AZUREAL's busy handler needs are kept across the chunks and calls of the background
catch-up, an append never counts or indexes a pile of foreign rows in its own transaction, and azsd's
own rows are indexed as they are appended even while foreign rows wait."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import zstandard

from azsd.events import AssistantText, UserMessage, encode_event
from azsd.store import Store, store_path
from azsd.store.pacing import CONTENDED_FOR_S, Pacer, Pacing
from azsd.store.schema import SEARCH_HWM_KEY, SUMMARY_HWM_KEY
from azsd.store.summaries import STEP_ROWS


def write_as_azureal(root: Path, rows: int, per_session: int = 5000) -> list[int]:
    """`rows` events written as AZUREAL writes them (its own connection, streaming zstd frames, no
    side table touched), into new sessions of `per_session` events; their ids."""
    frame = zstandard.ZstdCompressor(level=3)
    words = ("parse", "store", "event", "line", "seq", "lock", "chunk")
    conn = sqlite3.connect(store_path(root), timeout=5.0, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    sessions: list[int] = []
    conn.execute("BEGIN")
    for start in range(0, rows, per_session):
        sid = conn.execute("INSERT INTO sessions (worktree) VALUES ('azureal-bulk')").lastrowid
        assert sid is not None
        sessions.append(sid)
        data = []
        for i in range(min(per_session, rows - start)):
            text = " ".join(words[(i * k) % len(words)] + str((start + i) % 997) for k in range(1, 9))
            event = UserMessage(content=text) if i % 2 == 0 else AssistantText(text=text)
            writer = frame.compressobj()
            payload = writer.compress(encode_event(event)) + writer.flush()
            data.append((sid, i + 1, type(event).__name__, payload, len(text)))
        conn.executemany(
            "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, ?, ?, ?)", data
        )
    conn.execute("COMMIT")
    conn.close()
    return sessions


def meta(root: Path, key: str) -> int | None:
    with sqlite3.connect(store_path(root)) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else int(row[0])


def new_store(root: Path) -> int:
    """A store azsd made, its index and summaries current; the id of its one session."""
    with Store.open(root) as store:
        sid = store.create_session(worktree="main").id
        store.append_events(sid, [UserMessage(content="first")])
        assert store.search("first")
    return sid


def test_the_catch_up_leaves_the_long_gap_across_its_calls(tmp_path: Path) -> None:
    """Each call of `catch_up_some` is one chunk; the pause owed after each second of holding the
    lock must still come (a pacer made afresh per chunk never owed one: AZUREAL's busy handler,
    which tries every 100 ms, missed every 5 ms gap for 5 s and failed). The policy is scaled down
    here (chunks of 40 ms, a pause per 200 ms of holding) to see many periods in a short test."""
    new_store(tmp_path)
    write_as_azureal(tmp_path, 20_000)
    with Store.open(tmp_path) as store:
        pacing = Pacing(chunk_s=0.04, gap_s=0.001, long_gap_s=0.02, long_gap_every_s=0.2)
        store.pacer = pacer = Pacer(pacing)
        holds = _timed_holds(pacer)
        calls = 0
        while store.catch_up_some():
            calls += 1
        assert calls >= 5 and pacer.held_s >= 0.25, (calls, pacer.held_s)  # the test needs periods
        assert pacer.long_gaps >= 1
        # the lock free for a long gap (left by the pacer, or by a pause between calls on a busy
        # machine) once per period of holds, at the latest
        worst = _longest_hold_without_long_gap(holds, pacing.long_gap_s)
        assert worst <= pacing.long_gap_every_s + pacer.longest_hold_s, (worst, holds)
        assert store.search_pending() == 0


def _timed_holds(pacer: Pacer) -> list[tuple[float, float]]:
    """(taken, released) of each hold of `pacer`'s lock from now on, as they happen."""
    holds: list[tuple[float, float]] = []
    begin, release = pacer.begin, pacer.release

    def timed_begin(waited: float = 0.0) -> None:
        begin(waited)
        holds.append((time.monotonic(), float("nan")))

    def timed_release() -> None:
        if pacer.holding:
            holds[-1] = (holds[-1][0], time.monotonic())
        release()

    pacer.begin, pacer.release = timed_begin, timed_release  # type: ignore[method-assign]
    return holds


def _longest_hold_without_long_gap(holds: list[tuple[float, float]], long_gap_s: float) -> float:
    """The most lock-holding time between two free windows of at least `long_gap_s`."""
    worst = run = 0.0
    free_since = float("-inf")
    for taken, released in holds:
        if taken - free_since >= long_gap_s:
            run = 0.0
        run += released - taken
        worst = max(worst, run)
        free_since = released
    return worst


def test_own_appends_are_indexed_while_foreign_rows_wait(tmp_path: Path) -> None:
    sid = new_store(tmp_path)
    write_as_azureal(tmp_path, 3000)
    mark = meta(tmp_path, SEARCH_HWM_KEY)
    with Store.open(tmp_path) as store:
        appended = store.append_events(sid, [UserMessage(content="zebra crossing")] * 3)
        assert len(appended.events) == 3
        with sqlite3.connect(store_path(tmp_path)) as conn:
            ids = [
                row[0]
                for row in conn.execute(
                    "SELECT id FROM events WHERE session_id = ? AND seq > 1 ORDER BY id", (sid,)
                )
            ]
            indexed = conn.execute(
                f"SELECT COUNT(*) FROM azsd_search_docsize WHERE rowid IN ({', '.join('?' * len(ids))})", ids
            ).fetchone()[0]
        assert indexed == 3  # in the append's own transaction, before any catch-up
        assert meta(tmp_path, SEARCH_HWM_KEY) == mark  # the foreign rows still wait below them
        while store.catch_up_some():
            pass
        assert meta(tmp_path, SEARCH_HWM_KEY) == ids[-1]
        assert [h.session_id for h in store.search("zebra")] == [sid] * 3
        with sqlite3.connect(store_path(tmp_path)) as conn:  # nothing indexed twice
            docs = conn.execute("SELECT COUNT(*) FROM azsd_search_docsize").fetchone()[0]
            conn.execute("INSERT INTO azsd_search (azsd_search, rank) VALUES ('integrity-check', 1)")
        assert docs == 1 + 3000 + 3
        with sqlite3.connect(store_path(tmp_path)) as conn:  # and the same as an index built afresh
            before = conn.execute("SELECT * FROM azsd_search_docsize ORDER BY rowid").fetchall()
        store.reindex_search()
        with sqlite3.connect(store_path(tmp_path)) as conn:
            assert conn.execute("SELECT * FROM azsd_search_docsize ORDER BY rowid").fetchall() == before


def test_an_append_counts_one_step_of_foreign_rows_into_the_summaries(tmp_path: Path) -> None:
    """Counting 250 000 foreign rows in an append's transaction held the lock for seconds: an append
    counts at most one step of them, the background the rest, and listings are right all along."""
    sid = new_store(tmp_path)
    foreign = write_as_azureal(tmp_path, 3 * STEP_ROWS, per_session=STEP_ROWS)
    mark = meta(tmp_path, SUMMARY_HWM_KEY)
    assert mark is not None
    with Store.open(tmp_path) as store:
        store.append_events(sid, [UserMessage(content="more")])
        moved = (meta(tmp_path, SUMMARY_HWM_KEY) or 0) - mark
        assert 0 < moved <= STEP_ROWS
        counts = {info.id: info.event_count for info in store.list_sessions()}
        assert counts == {sid: 2, **{f: STEP_ROWS for f in foreign}}
        while store.catch_up_some():
            pass
        with sqlite3.connect(store_path(tmp_path)) as conn:
            top = conn.execute("SELECT MAX(id) FROM events").fetchone()[0]
            summed = dict(conn.execute("SELECT session_id, events FROM azsd_summaries").fetchall())
        assert meta(tmp_path, SUMMARY_HWM_KEY) == top
        assert summed == counts


def test_group_commits_leave_the_long_gap_too(tmp_path: Path) -> None:
    """Not only long writes: any transactions of the store's writer that hold the lock for a second
    in all, with no free window over 100 ms between them, are followed by one."""
    with Store.open(tmp_path) as store:
        sid = store.create_session().id
        pacer = store.pacer
        while pacer.held_s < 1.2:
            with store.atomic():
                for n in range(20):
                    store.append_events(sid, [UserMessage(content=f"m{n}")])
        assert pacer.long_gaps >= 1


def test_a_wait_for_the_lock_makes_the_long_gaps_longer_and_more_frequent_for_a_while() -> None:
    """Paced by how others wait: once azsd's BEGIN IMMEDIATE waited (AZUREAL held the lock), it leaves
    long gaps twice as long twice as often, for CONTENDED_FOR_S; then its own pace again."""
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    pacing = Pacing(chunk_s=0.1, gap_s=0.001, long_gap_s=0.1, long_gap_every_s=1.0)
    pacer = Pacer(pacing, clock=lambda: now[0], sleep=sleep)

    def hold(waited: float = 0.0) -> None:
        pacer.begin(waited)
        now[0] += 0.1
        pacer.release()

    for _ in range(20):
        hold()
    alone = list(slept)
    assert alone == [0.1, 0.1]  # one long gap a second of holding
    slept.clear()
    hold(waited=0.02)  # the lock was held by another writer
    for _ in range(19):
        hold()
    assert slept == [0.2] * 4  # twice as long, twice as often: AZUREAL is at work
    slept.clear()
    now[0] += CONTENDED_FOR_S
    for _ in range(20):
        hold()
    assert slept == alone  # nobody waited lately: the store's own pace
