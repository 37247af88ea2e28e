"""The chunking policy of long writes (azsd/store/chunks.py): short holds, and pauses that a waiting
writer with SQLite's default busy handler is sure to fall into."""

from __future__ import annotations

import functools
import itertools
import sqlite3
import threading
import time
from pathlib import Path

from azsd.events import UserMessage
from azsd.store import Store
from azsd.store.chunks import PACING, ChunkedWrite, Pacer, Pacing

#: sqlite3DefaultBusyCallback's sleeps (ms), the last repeated: what rusqlite's busy_timeout uses.
BUSY_SLEEPS_MS = (1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def held_intervals(pacing: Pacing, seconds: float, step_s: float) -> list[tuple[float, float]]:
    """When a long write paced by `pacing` holds the lock, for steps of `step_s` each."""
    clock = FakeClock()
    pacer = Pacer(pacing, clock, clock.sleep)
    held: list[tuple[float, float]] = []
    while clock.now < seconds:
        pacer.begin()
        start = clock.now
        while True:
            clock.now += step_s
            pacer.stepped()
            if pacer.full():
                break
        held.append((start, clock.now))
        pacer.release()
        pacer.pause()
    return held


def busy_wait(held: list[tuple[float, float]], arrival: float, timeout: float = 5.0) -> float | None:
    """How long a writer arriving at `arrival` waits for the lock under SQLite's busy handler
    (None: its timeout ran out)."""
    sleeps = itertools.chain(BUSY_SLEEPS_MS, itertools.repeat(100))
    t = arrival
    while t - arrival <= timeout:
        if not any(a <= t < b for a, b in held):
            return t - arrival
        t += next(sleeps) / 1000
    return None


def test_no_hold_passes_the_budget_and_every_waiter_gets_in_within_a_second_and_a_half() -> None:
    held = held_intervals(PACING, 8.0, 0.013)
    assert max(b - a for a, b in held) <= 0.25
    waits = [busy_wait(held, arrival / 1000) for arrival in range(0, 6000, 3)]
    assert None not in waits
    assert max(w for w in waits if w is not None) < 1.5


def test_without_gaps_longer_than_the_busy_handlers_sleep_some_waiter_fails() -> None:
    """Why the long gap exists: short gaps alone let a waiter miss every one of them."""
    short = Pacing(chunk_s=0.2, long_gap_s=PACING.gap_s)
    held = held_intervals(short, 8.0, 0.013)
    waits = [busy_wait(held, arrival / 1000) for arrival in range(0, 2000, 1)]
    assert None in waits


def test_a_chunked_write_lets_another_writer_in_and_keeps_every_row(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    sid = store.create_session().id
    waits: list[float] = []
    done = threading.Event()

    def other_writer() -> None:
        conn = sqlite3.connect(store.path, timeout=5.0, isolation_level=None)
        while not done.is_set():
            started = time.monotonic()
            conn.execute("BEGIN IMMEDIATE")
            waits.append(time.monotonic() - started)
            conn.execute("INSERT INTO sessions (worktree) VALUES ('other')")
            conn.execute("COMMIT")
            time.sleep(0.01)
        conn.close()

    thread = threading.Thread(target=other_writer)
    thread.start()
    try:
        with ChunkedWrite(store) as chunks:
            deadline = time.monotonic() + 2.5
            n = 0
            while time.monotonic() < deadline:
                with chunks.step():
                    store.append_events(sid, [UserMessage(content=f"m{n}")])
                n += 1
    finally:
        done.set()
        thread.join()
    assert chunks.pacer.chunks > 5
    assert chunks.pacer.longest_hold_s < 0.5  # 0.2 s asked; the machine may be busy
    assert len(waits) >= 3 and max(waits) < 2.0  # it gets in at the latest in the long gap of each second
    assert store.max_seq(sid) == n
    store.close()


def test_inside_a_callers_transaction_it_is_that_one_transaction(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    sid = store.create_session().id
    reader = sqlite3.connect(store.path, isolation_level=None)
    with store.atomic():
        with ChunkedWrite(store, pacer=Pacer(Pacing(chunk_s=0.0))) as chunks:
            assert chunks.nested
            for n in range(5):
                with chunks.step():
                    store.append_events(sid, [UserMessage(content=f"m{n}")])
            assert reader.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
    assert reader.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 5
    reader.close()
    store.close()


def test_a_failing_step_rolls_back_only_the_chunk_in_progress(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    sid = store.create_session().id
    told: list[int] = []
    try:
        with ChunkedWrite(store, pacer=Pacer(Pacing(chunk_s=0.0, gap_s=0, long_gap_s=0))) as chunks:
            for n in range(3):
                with chunks.step():
                    store.append_events(sid, [UserMessage(content=f"m{n}")])
                chunks.after_commit(functools.partial(told.append, n))
            chunks.pacer.pacing = Pacing(chunk_s=10.0)  # the next chunk stays open
            with chunks.step():
                store.append_events(sid, [UserMessage(content="lost")])
            chunks.after_commit(lambda: told.append(99))
            raise RuntimeError("interrupted")
    except RuntimeError:
        pass
    assert store.max_seq(sid) == 3
    assert told == [0, 1, 2]  # a commit's notice goes out after it; the lost chunk's never
    store.close()


def test_the_docstring_example_runs() -> None:
    import doctest

    import azsd.store.chunks

    result = doctest.testmod(azsd.store.chunks)
    assert result.failed == 0 and result.attempted >= 3
