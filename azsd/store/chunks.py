"""How a long write shares the store with AZUREAL: transactions of ~200 ms at most, with pauses.

AZUREAL writes the same file on connections of its own with a 5 s busy timeout and no retry (spec
§8), so a write lock held for seconds makes it fail. Every long operation of azsd (ingest, import,
reindex and the search index catch-up, the fork of a big session) therefore runs as a series of short
transactions driven by :class:`ChunkedWrite`, timed by the store's one pacer
(:mod:`azsd.store.pacing`, where the policy and its reasons are): each transaction commits once it
has held the lock ~200 ms, the lock stays free a few ms after each, and ~120 ms after each second of
holding, counted across chunks and calls. After each commit the store's
:attr:`~azsd.store.core.StoreCore.between_chunks` runs: the daemon's worker carries out there the
calls queued behind the long write, so a rename waits for a chunk, not for a 200 000-line ingest.

A :class:`ChunkedWrite` opened while the store is already in a transaction (a caller's
:meth:`~azsd.store.core.StoreCore.atomic`, or the worker's group commit) cannot release the lock:
it runs every step in that one transaction, as before, and the commit is the caller's.

An interrupted operation (a crash, or an error in a later chunk) keeps the chunks committed before
it; each operation is written so that running it again finishes the work without losing or
repeating anything (see the callers).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from types import TracebackType
from typing import Self

from azsd.store.core import StoreCore
from azsd.store.pacing import PACING, Pacer, Pacing

__all__ = ["PACING", "ChunkedWrite", "Pacer", "Pacing"]


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
        #: The store's pacer (one for its life: the pauses are owed across chunks and calls), or
        #: `pacer`, which times the store's transactions while this write lasts.
        self.pacer = pacer or store.pacer
        self._pacer_before = store.pacer
        store.pacer = self.pacer
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
        try:
            if exc is None:
                self.commit()
                self._run_pending()
            else:
                self._pending.clear()
                self._end_chunk(kind, exc, tb)
        finally:
            self._store.pacer = self._pacer_before

    @contextmanager
    def step(self) -> Iterator[sqlite3.Connection]:
        """One step of the work, in the current chunk (a savepoint of it); small steps (well under
        50 ms) keep every chunk under the budget."""
        if self._chunk is None and not self.nested:
            chunk = ExitStack()
            self._conn = chunk.enter_context(self._store.atomic(create=self._create))  # (the pacer begins)
            self._chunk = chunk
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
        self._end_chunk(None, None, None)  # (the pacer releases, leaving the long gap when due)
        self.pacer.pause()
        self._run_pending()
        between = self._store.between_chunks
        if between is not None:  # the writes queued behind this one (a rename) answer now
            between()

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
