"""How a long write shares the store with AZUREAL: transactions of ~200 ms at most, with pauses.

AZUREAL writes the same file on connections of its own with a 5 s busy timeout and no retry (spec
§8), so a write lock held for seconds makes it fail. Every long operation of azsd (ingest, import,
reindex and the search index catch-up, the fork of a big session, the copy of a backup) therefore
runs as a series of short transactions driven by :class:`ChunkedWrite`, or paced by :class:`Pacer`
directly, with the one policy of :data:`PACING`:

- a transaction commits as soon as it has held the lock for :attr:`Pacing.chunk_s` (200 ms), or
  would with one more step (the longest step seen so far is counted ahead), so no hold passes
  ~250 ms as long as a single step stays well under 50 ms;
- after every commit the lock is left free for :attr:`Pacing.gap_s`, and at least once per
  :attr:`Pacing.long_gap_every_s` of holding it for :attr:`Pacing.long_gap_s` (120 ms).

Why the long gap: SQLite's default busy handler (what rusqlite's ``busy_timeout`` installs) does not
wait for the lock to be released; it sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100, 100, …
ms and tries once after each sleep. A waiter that has waited 228 ms or more tries only every 100 ms,
so a free window shorter than that can fall between two of its tries every time, and with a steady
rhythm of chunks it could miss every window until its 5 s are gone. A free window longer than
100 ms always holds one of its tries. With one such window at least every second of holding, a
writer that starts waiting at any moment gets the lock within about 1.25 s (one second of chunks,
the last chunk, and the window), far inside its 5 s even on a loaded machine; the short gaps let it
in sooner when a try happens to fall there, and give the lock back to other programs' quick writes.
The long gaps cost about a tenth of the throughput of a long write.

A :class:`ChunkedWrite` opened while the store is already in a transaction (a caller's
:meth:`~azsd.store.core.StoreCore.atomic`, or the worker's group commit) cannot release the lock:
it runs every step in that one transaction, as before, and the commit is the caller's.

An interrupted operation (a crash, or an error in a later chunk) keeps the chunks committed before
it; each operation is written so that running it again finishes the work without losing or
repeating anything (see the callers).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Self

from azsd.store.core import StoreCore

__all__ = ["PACING", "ChunkedWrite", "Pacer", "Pacing"]


@dataclass(frozen=True)
class Pacing:
    """The chunking policy (see the module docstring for why these numbers)."""

    #: A transaction commits once it has held the lock this long (or would, with one more step).
    chunk_s: float = 0.2
    #: The lock is left free this long after every commit.
    gap_s: float = 0.005
    #: … and this long (over the busy handler's longest sleep, 100 ms) at least once per
    long_gap_s: float = 0.12
    #: … this much time holding the lock.
    long_gap_every_s: float = 1.0


#: The one policy every long write of azsd follows.
PACING: Final = Pacing()


class Pacer:
    """When a chunk should end, and the pause after it: the clock side of :data:`PACING`.

    Call :meth:`begin` when the lock is taken, :meth:`stepped` after each step while holding it,
    :meth:`full` to ask whether to release it now, and :meth:`release` once it is released (which
    sleeps the gap). :attr:`longest_hold_s` is the longest hold so far.
    """

    def __init__(
        self,
        pacing: Pacing = PACING,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.pacing = pacing
        self._clock = clock
        self._sleep = sleep
        self._began: float | None = None
        self._last: float = 0.0
        self._step_s = 0.0  # the longest step of the last chunk and this one
        self._chunk_step_s = 0.0
        self._held_since_long_gap = 0.0
        self.longest_hold_s = 0.0
        self.chunks = 0

    def begin(self) -> None:
        self._began = self._last = self._clock()
        self._chunk_step_s = 0.0

    def stepped(self) -> None:
        """One step done while holding the lock (its time counts from the end of the one before,
        so work done between steps is counted too)."""
        now = self._clock()
        self._chunk_step_s = max(self._chunk_step_s, now - self._last)
        self._step_s = max(self._step_s, self._chunk_step_s)
        self._last = now

    def full(self) -> bool:
        """Whether the chunk should end now: one more step would take it past `chunk_s`."""
        if self._began is None:
            return False
        return self._clock() - self._began + self._step_s >= self.pacing.chunk_s

    def release(self) -> None:
        """The lock was released: note how long it was held, and leave it free for a while."""
        if self._began is None:
            return
        held = self._clock() - self._began
        self._began = None
        self.chunks += 1
        self.longest_hold_s = max(self.longest_hold_s, held)
        self._step_s = self._chunk_step_s  # forget an old outlier, keep this chunk's measure
        self._held_since_long_gap += held
        if self._held_since_long_gap + self.pacing.chunk_s > self.pacing.long_gap_every_s:
            self._held_since_long_gap = 0.0
            self._sleep(self.pacing.long_gap_s)
        else:
            self._sleep(self.pacing.gap_s)


class ChunkedWrite:
    """A long write as a series of short transactions on `store` (the policy: :data:`PACING`).

    >>> import tempfile, pathlib
    >>> from azsd.store import Store
    >>> with Store.open(pathlib.Path(tempfile.mkdtemp())) as store:
    ...     sid = store.create_session().id
    ...     with ChunkedWrite(store) as chunks:
    ...         for i in range(3):
    ...             with chunks.step() as conn:
    ...                 _ = conn.execute("UPDATE sessions SET name = ? WHERE id = ?", (f"n{i}", sid))
    ...     store.get_session(sid).name
    'n2'

    Each :meth:`step` runs in the current chunk's transaction (opened on the first step, committed
    by the step that fills it, then the pause); leaving the block commits the last chunk, or, on an
    exception, rolls back only the chunk in progress. :meth:`after_commit` defers work (a
    notification) until the chunk holding what it reports is committed.
    """

    def __init__(self, store: StoreCore, *, create: bool = False, pacer: Pacer | None = None) -> None:
        self._store = store
        self._create = create
        self.pacer = pacer or Pacer()
        conn = store._conn
        #: Inside a transaction of the caller's: one transaction, no pauses, the commit is theirs.
        self.nested = conn is not None and conn.in_transaction
        self._chunk: ExitStack | None = None
        self._conn: sqlite3.Connection | None = None
        self._pending: list[Callable[[], None]] = []

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            self.commit()
            self._run_pending()
        else:
            self._pending.clear()
            self._end_chunk(kind, exc, tb)

    @contextmanager
    def step(self) -> Iterator[sqlite3.Connection]:
        """One step of the work, in the current chunk (a savepoint of it); small steps (well under
        50 ms) keep every chunk under the budget."""
        if self._chunk is None and not self.nested:
            chunk = ExitStack()
            self._conn = chunk.enter_context(self._store.atomic(create=self._create))
            self._chunk = chunk
            self.pacer.begin()
        with self._store.atomic(create=self._create) as conn:
            yield conn
        if self.nested:
            return
        self.pacer.stepped()
        if self.pacer.full():
            self.commit()

    def commit(self) -> None:
        """End the chunk in progress now (commit, then pause), and run what waited for it."""
        if self._chunk is None:
            return
        self._end_chunk(None, None, None)
        self.pacer.release()
        self._run_pending()

    def after_commit(self, fn: Callable[[], None]) -> None:
        """Run `fn` once what the steps so far wrote is committed: at once when it is, else after the
        chunk's commit (nested: when this write ends)."""
        if self._chunk is None and not self.nested:
            fn()
        else:
            self._pending.append(fn)

    def _end_chunk(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        chunk, self._chunk = self._chunk, None
        if chunk is not None:
            chunk.__exit__(kind, exc, tb)

    def _run_pending(self) -> None:
        pending, self._pending = self._pending, []
        for fn in pending:
            fn()
