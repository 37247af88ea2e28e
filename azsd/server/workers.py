"""A store's threads: its writer, which commits in groups, and its reader beside it.

The writer takes everything waiting (up to :data:`MAX_BATCH`), runs it in one ``BEGIN IMMEDIATE``
transaction with a savepoint per call (one that fails rolls back only itself), commits, and only
then completes the futures, in order: a result means the write is on disk. When SQLite rolls the
whole transaction back under it (a full disk), the calls that had succeeded are run again in a
fresh one, so each result still says exactly whether its work is on disk. A `then` callback given
to a call runs in the thread right after, which is where replies and notifications are sent (so a
store's notifications leave in the order they were numbered). Before each batch the writer checks
that the file at the store's path is still the one it opened (see
:meth:`azsd.store.core.StoreCore.check_file`).

While it has nothing to do, the writer catches the store's search index and rendered context blocks
up with rows another program (AZUREAL) committed, a chunk at a time (:meth:`Writer._upkeep`).

The reader beside it is :mod:`azsd.server.reader`'s. Which store has which threads, and who waits for
what, is :mod:`azsd.server.registry`'s.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final, Generic, Protocol, TypeVar

from azsd.errors import AzsdError, StoreError
from azsd.ingest.full_record import keep_full_some
from azsd.ipc import protocol as p
from azsd.ipc.transport import Outbox
from azsd.store import Store
from azsd.store.core import StoreBusyError

__all__ = [
    "MAX_BATCH",
    "UPKEEP_S",
    "Outcome",
    "Task",
    "Writer",
    "WriterHome",
    "encoded",
    "future_then",
    "open_error",
]

log = logging.getLogger("azsd.server.workers")

#: The most calls one transaction groups.
MAX_BATCH: Final = 256
#: How often a writer looks for rows another program committed, to index and render them in the
#: background (a second of wait: the work is chunked, and a search catches up the rest itself).
UPKEEP_S: Final = 1.0

T = TypeVar("T")


@dataclass
class Outcome:
    """What a request did: its reply (or its bytes, encoded already: :mod:`azsd.server.pages`), and
    the notifications (with `seq=0`, numbered when they are published) that go out with it once the
    work is committed."""

    reply: p.Reply | bytes
    notes: list[p.Notification] = field(default_factory=list)


@dataclass(frozen=True)
class Task(Generic[T]):
    """One call queued for a store: the work, the future of its result, and what runs after the
    commit. An `alone` task runs outside any transaction (a backup cannot read a store its own
    connection is writing). A reader first tries `peek`, outside any transaction: a result it
    already has (a page encoded before), or None to `run` the task."""

    run: Callable[[Store], T]
    future: Future[T]
    alone: bool = False
    peek: Callable[[Store], T | None] | None = None


def encoded(reply: p.Reply | bytes) -> bytes:
    """The bytes of an outcome's reply."""
    return reply if isinstance(reply, bytes) else p.encode(reply)


class WriterHome(Protocol):
    """What a writer needs of the registry that runs it (:class:`~azsd.server.registry.StoreRegistry`)."""

    @property
    def outbox(self) -> Outbox: ...
    @property
    def idle_close_s(self) -> float: ...
    @property
    def keep_full(self) -> bool: ...
    def committed(self, root: str) -> None: ...
    def retire(self, worker: Writer) -> bool: ...
    def leave(self, worker: Writer) -> list[Task[Any]]: ...


class Writer(threading.Thread):
    """A store's writer: its only writing connection, group commits."""

    def __init__(self, registry: WriterHome, root: str, first: Task[Any] | None = None) -> None:
        super().__init__(name=f"azsd-store:{root}", daemon=True)
        self.root = root
        self.queue: queue.SimpleQueue[Task[Any] | None] = queue.SimpleQueue()
        self.opened = False  # the store is open, migrated, its `first` work done: reads may pass
        self._first = first  # run alone as soon as the store is open (orphan recovery)
        self._registry = registry
        self._upkept = 0.0  # when _upkeep last ran
        self._behind = False  # the upkeep has more to do: it goes on as soon as no call waits
        self._held: list[Task[Any] | None] = []  # taken from the queue between chunks, run next
        self._between = False  # running calls between the chunks of a long one

    def run(self) -> None:
        store: Store | None = None
        try:
            try:
                store = Store.open(Path(self.root), exclusive=True)  # one azsd writes a store file
            except Exception as exc:  # whatever it is, this worker cannot serve: say so, and go
                self._refuse(open_error(self.root, exc))
                return
            store.between_chunks = partial(self._between_chunks, store)
            if self._first is not None:
                self._complete([self._first], self._run_batch(store, [self._first]))
                self._first = None
                self._registry.committed(self.root)
            self.opened = True
            while True:
                batch = self._next_batch(store)
                if batch is None:
                    break
                tasks = [t for t in batch if t is not None]
                if tasks:
                    try:
                        _log_change(self.root, store.check_file())
                    except Exception as exc:  # the file now at the path cannot be opened
                        error = open_error(self.root, exc)
                        self._complete(tasks, [_Result(error=error)] * len(tasks))
                        self._refuse(error)
                        return
                    self._complete(tasks, self._run_batch(store, tasks))
                    self._registry.committed(self.root)
                    self._behind |= store.take_upkeep_soon()
                    if time.monotonic() - self._upkept >= UPKEEP_S:  # busy all along: a chunk now
                        self._upkeep(store)
                if len(tasks) < len(batch):
                    break  # a stop marker
        finally:
            if store is not None:
                store.close()
            self._registry.outbox.release()
            log.debug("closed the store of %s", self.root)

    def _refuse(self, error: AzsdError) -> None:
        """Fail every call queued here with `error` and leave the registry: the next call for this
        root starts a new worker, which tries to open the store again."""
        log.warning("cannot open the store of %s: %s", self.root, error)
        if self._first is not None:
            self._complete([self._first], [_Result(error=error)])
            self._first = None
        held, self._held = [t for t in self._held if t is not None], []
        self._complete(held, [_Result(error=error)] * len(held))
        while tasks := self._registry.leave(self):
            self._complete(tasks, [_Result(error=error)] * len(tasks))

    def _next_batch(self, store: Store) -> list[Task[Any] | None] | None:
        """Wait for work, catching the store up meanwhile (:meth:`_upkeep`); None when idle long
        enough to close (and the registry agreed)."""
        idle_since = time.monotonic()
        while True:
            if self._held:  # what waited behind a long call (the catch-up's chunk too), in its order
                batch, self._held = self._held, []
                if batch[-1] is not None:
                    batch += self._take(MAX_BATCH - len(batch))
                return batch
            try:
                timeout = 0 if self._behind else min(UPKEEP_S, self._registry.idle_close_s)
                first = self.queue.get(timeout=timeout)
            except queue.Empty:
                self._behind = self._upkeep(store)
                if not self._behind and time.monotonic() - idle_since >= self._registry.idle_close_s:
                    if self._registry.retire(self):
                        return None
                    idle_since = time.monotonic()
                continue
            return [first] if first is None else [first, *self._take(MAX_BATCH - 1)]

    def _take(self, most: int) -> list[Task[Any] | None]:
        """Up to `most` calls queued now, without waiting (ending at a stop marker)."""
        batch: list[Task[Any] | None] = []
        while len(batch) < most:
            try:
                batch.append(self.queue.get_nowait())
            except queue.Empty:
                break
            if batch[-1] is None:
                break
        return batch

    def _between_chunks(self, store: Store) -> None:
        """Between two chunks of a long call (an ingest, an import, orphan recovery), carry out the
        calls queued behind it, up to the next long one (which waits, with what follows it, for
        the long call to end): a rename answers in a chunk's time, not the ingest's."""
        if self._between or self._held or not store.still_open():
            return  # (a file replaced or deleted meanwhile: the calls wait for the check before a batch)
        self._between = True
        try:
            taken = self._take(MAX_BATCH)
            ready: list[Task[Any]] = []
            for i, task in enumerate(taken):
                if task is None or task.alone:
                    self._held = taken[i:]
                    break
                ready.append(task)
            if ready:
                self._complete(ready, self._run_group(store, ready))
                self._registry.committed(self.root)
        finally:
            self._between = False

    def _upkeep(self, store: Store) -> bool:
        """One chunk of the store's upkeep between calls; whether more remains. First a store another
        program put in WAL goes back to DELETE; then the search index and context blocks catch up
        with rows another program (AZUREAL) committed (:meth:`~azsd.store.events.EventLog.catch_up_some`),
        so that a search finds them indexed; then the full record takes in what the agents wrote
        (:func:`~azsd.ingest.full_record.keep_full_some`); then expired request keys are forgotten
        and freed pages given back to the file system (:meth:`~azsd.store.vacuum.Vacuum.vacuum_some`).
        A failure (the file locked, replaced) is logged and tried again later."""
        self._upkept = time.monotonic()
        try:
            store.keep_journal_mode()
            return (
                store.catch_up_some()
                or (self._registry.keep_full and keep_full_some(store))
                or store.forget_requests(time.time())
                or store.vacuum_some()
            )
        except StoreBusyError as exc:
            log.debug("catching up %s later: %s", self.root, exc)
        except Exception:
            log.exception("catching up the store of %s failed; trying again later", self.root)
        return False

    def _run_batch(self, store: Store, tasks: list[Task[Any]]) -> list[_Result]:
        results: list[_Result] = []
        start = 0
        for i, task in enumerate(tasks):
            if task.alone:
                results += self._run_group(store, tasks[start:i])
                results.append(self._run_one(store, task, grouped=False))
                start = i + 1
        return results + self._run_group(store, tasks[start:])

    def _run_group(self, store: Store, tasks: list[Task[Any]]) -> list[_Result]:
        """Tasks in one transaction (one commit for them all), each in a savepoint of its own.

        SQLite may roll the whole transaction back under a task (SQLITE_FULL, an I/O error). That
        task failed; the work of those before it is gone with the transaction, so they are run
        again (with those after it) in a fresh one: every result says exactly whether its work is
        committed, and a client that retries what failed never stores anything twice.
        """
        results: list[_Result | None] = [None] * len(tasks)
        pending = list(range(len(tasks)))
        lost = 0
        while pending:
            grouped = store.exists and not store.read_only
            outer: AbstractContextManager[Any] = store.atomic() if grouped else nullcontext()
            try:
                with outer:
                    for n, i in enumerate(pending):
                        result = self._run_one(store, tasks[i], grouped)
                        if grouped and store.transaction_lost:
                            raise _Lost(n, result)
                        results[i] = result
            except _Lost as gone:
                error = gone.result.error or StoreError(f"{self.root}: the transaction was rolled back")
                results[pending.pop(gone.at)] = _Result(error=error)
                if not lost:
                    log.warning(
                        "the transaction of %s was rolled back (%s); running the rest again", self.root, error
                    )
                lost += 1
                continue
            except AzsdError as exc:  # the group's commit failed: none of it happened
                log.warning("commit failed for %s: %s", self.root, exc)
                for i in pending:
                    results[i] = _Result(error=exc)
            break
        if lost > 1:
            log.warning("the transaction of %s was rolled back %d times in one batch", self.root, lost)
        return [r or _Result(error=StoreError(f"{self.root}: not run")) for r in results]

    def _run_one(self, store: Store, task: Task[Any], grouped: bool) -> _Result:
        try:
            with store.atomic() if grouped else nullcontext():
                return _Result(value=task.run(store))
        except (AzsdError, ValueError, OverflowError) as exc:
            return _Result(error=exc)
        except Exception as exc:
            log.exception("a call failed in the store of %s", self.root)
            return _Result(error=exc)

    def _complete(self, tasks: Sequence[Task[Any]], results: Sequence[_Result]) -> None:
        """Complete each future, in order, now that its work is committed (or known to have failed)."""
        for task, result in zip(tasks, results, strict=True):
            if result.error is not None:
                task.future.set_exception(result.error)
            else:
                task.future.set_result(result.value)


@dataclass(frozen=True)
class _Result:
    value: Any = None
    error: BaseException | None = None


class _Lost(Exception):
    """The group's transaction was rolled back under the `at`-th pending task (whose `result` it is)."""

    def __init__(self, at: int, result: _Result) -> None:
        super().__init__(at)
        self.at, self.result = at, result


def _log_change(root: str, change: str | None) -> None:
    """Say in the log that a store's file changed under azsd (see `StoreCore.check_file`)."""
    match change:
        case "replaced":
            log.warning("the store of %s was replaced under azsd: reopened the file now there", root)
        case "deleted":
            log.warning(
                "the store of %s was deleted under azsd: closed it (a new session makes a new file)", root
            )
        case "created":
            log.info("the store of %s was created by another program: opened it", root)
        case _:
            pass


def open_error(root: str, exc: Exception) -> AzsdError:
    """Why the store of `root` cannot be opened, as an error of the tree (with the OS's reason)."""
    if isinstance(exc, AzsdError):
        return exc
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
    return StoreError(f"cannot open the store of {root}: {reason}")


def future_then(then: Callable[[Future[T]], None] | None) -> Future[T]:
    """A future that runs `then` when it completes, with a failure of `then` logged here."""
    future: Future[T] = Future()
    if then is not None:

        def run(done: Future[T]) -> None:
            try:
                then(done)
            except Exception:
                log.exception("work after a store call failed")

        future.add_done_callback(run)
    return future
