"""The open stores: per store, a writer thread that commits in groups and a reader thread beside it.

Everything that touches a store goes through one typed primitive, :meth:`StoreRegistry.call`
(datasette's ``execute_write_fn``): ``call(root, fn)`` queues ``fn(store)`` for the store's
writer and returns a :class:`~concurrent.futures.Future` of its result. Requests from clients and
the daemon's own work (follows, backups, orphan recovery) use it alike; a client's request goes
through :meth:`StoreRegistry.answer`, which replies once the work is done.

The writer takes everything waiting (up to :data:`MAX_BATCH`), runs it in one ``BEGIN IMMEDIATE``
transaction with a savepoint per call (one that fails rolls back only itself), commits, and only
then completes the futures, in order: a result means the write is on disk. When SQLite rolls the
whole transaction back under it (a full disk), the calls that had succeeded are run again in a
fresh one, so each result still says exactly whether its work is on disk. A `then` callback given
to `call` runs in the worker thread right after, which is where replies and notifications are sent
(so a store's notifications leave in the order they were numbered). Before each batch the writer
checks that the file at the store's path is still the one it opened (see
:meth:`azsd.store.core.StoreCore.check_file`).

Reads (`read=True`) run on the store's reader: a thread with a connection of its own
(``query_only``) that reads while the writer writes, so a read never waits behind a long write.
Only a client's own earlier write to that store waits: a read is queued once that client's last
write there is done (read-your-writes), never behind other clients' or the daemon's writes. A read
that finds it must write (a search whose index has to catch up), or that cannot get the file's
shared lock in time (another program's commit, or a long transaction that spilled its cache, holds
it), moves to the writer. Until the writer has opened the store (migrated it, recovered its
orphans), reads queue on the writer.

Stores open on first use and close after `idle_close_s` without work; at most `max_open` are open
(each holds two threads and two ZeroMQ sockets): one more closes the least recently used store that
has no work queued or running, and when every open store is busy, the calls of a new one wait for a
free place. Work for one store never waits on another's.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Generic, TypeVar

import msgspec

from azsd.errors import (
    AzsdError,
    BadRequestError,
    IngestError,
    NotAStoreError,
    ReadOnlyStoreError,
    SessionNotFoundError,
    ShuttingDownError,
    StoreError,
    StoreFullError,
)
from azsd.events import EventDecodeError
from azsd.ipc import protocol as p
from azsd.ipc.transport import Envelope, Outbox
from azsd.store import Store
from azsd.store.codec import CodecError
from azsd.store.core import NeedsWriterError, StoreBusyError

__all__ = ["MAX_BATCH", "MAX_OPEN_STORES", "Outcome", "StoreRegistry", "Task", "error_reply"]

log = logging.getLogger("azsd.server.workers")

#: The most calls one transaction groups.
MAX_BATCH: Final = 256
#: The most stores open at once, unless configured (`max-open-stores`).
MAX_OPEN_STORES: Final = 128

T = TypeVar("T")


@dataclass
class Outcome:
    """What a request did: its reply, and the notifications (with `seq=0`, numbered when they are
    published) that go out with it once the work is committed."""

    reply: p.Reply
    notes: list[p.Notification] = field(default_factory=list)


@dataclass(frozen=True)
class Task(Generic[T]):
    """One call queued for a store: the work, the future of its result, and what runs after the
    commit. An `alone` task runs outside any transaction (a backup cannot read a store its own
    connection is writing)."""

    run: Callable[[Store], T]
    future: Future[T]
    alone: bool = False


def error_reply(exc: BaseException) -> p.ErrorReply:
    """The error reply for an exception a call raised."""
    code: p.ErrorCode
    match exc:
        case SessionNotFoundError():
            code = "not_found"
        case NotAStoreError():
            code = "not_a_store"
        case ReadOnlyStoreError():
            code = "read_only"
        case StoreFullError():
            code = "store_full"
        case IngestError():
            code = "ingest_error"
        case ShuttingDownError():
            code = "shutting_down"
        case StoreError():
            code = "store_error"
        case BadRequestError() | OverflowError():  # OverflowError: an integer SQLite cannot hold
            code = "bad_request"
        case EventDecodeError() | CodecError():  # a stored row the daemon cannot read: its fault
            code = "internal"
        case ValueError():  # a value the standard library refused (a NUL byte in a path, …)
            code = "bad_request"
        case AzsdError():
            code = "store_error"
        case _:
            code = "internal"
    return p.ErrorReply(code=code, message=str(exc) or type(exc).__name__)


class _Worker(threading.Thread):
    """A store's writer: its only writing connection, group commits."""

    def __init__(self, registry: StoreRegistry, root: str, first: Task[Any] | None = None) -> None:
        super().__init__(name=f"azsd-store:{root}", daemon=True)
        self.root = root
        self.queue: queue.SimpleQueue[Task[Any] | None] = queue.SimpleQueue()
        self.opened = False  # the store is open, migrated, its `first` work done: reads may pass
        self._first = first  # run alone as soon as the store is open (orphan recovery)
        self._registry = registry

    def run(self) -> None:
        store: Store | None = None
        try:
            try:
                store = Store.open(Path(self.root))
            except Exception as exc:  # whatever it is, this worker cannot serve: say so, and go
                self._refuse(_open_error(self.root, exc))
                return
            if self._first is not None:
                self._complete([self._first], self._run_batch(store, [self._first]))
                self._first = None
            self.opened = True
            while True:
                batch = self._next_batch()
                if batch is None:
                    break
                tasks = [t for t in batch if t is not None]
                if tasks:
                    try:
                        _log_change(self.root, store.check_file())
                    except Exception as exc:  # the file now at the path cannot be opened
                        error = _open_error(self.root, exc)
                        self._complete(tasks, [_Result(error=error)] * len(tasks))
                        self._refuse(error)
                        return
                    self._complete(tasks, self._run_batch(store, tasks))
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
        while tasks := self._registry.leave(self):
            self._complete(tasks, [_Result(error=error)] * len(tasks))

    def _next_batch(self) -> list[Task[Any] | None] | None:
        """Wait for work; None when idle long enough to close (and the registry agreed)."""
        while True:
            try:
                first = self.queue.get(timeout=self._registry.idle_close_s)
            except queue.Empty:
                if self._registry.retire(self):
                    return None
                continue
            batch = [first]
            while first is not None and len(batch) < MAX_BATCH:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
                if batch[-1] is None:
                    break
            return batch

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


class _Reader(threading.Thread):
    """A store's reader: a read-only connection beside the writer, one call at a time."""

    def __init__(self, registry: StoreRegistry, root: str) -> None:
        super().__init__(name=f"azsd-read:{root}", daemon=True)
        self.root = root
        self.queue: queue.SimpleQueue[Task[Any] | None] = queue.SimpleQueue()
        self._registry = registry

    def run(self) -> None:
        store: Store | None = None
        try:
            while True:
                try:
                    task = self.queue.get(timeout=self._registry.idle_close_s)
                except queue.Empty:
                    if self._registry.retire_reader(self):
                        break
                    continue
                if task is None:
                    break
                store = self._serve(store, task)
        finally:
            if store is not None:
                store.close()
            self._registry.outbox.release()

    def _serve(self, store: Store | None, task: Task[Any]) -> Store | None:
        """Run one read (on the store, opened or reopened as needed); returns the store to go on with."""
        try:
            if store is None:
                store = Store.open(Path(self.root), reader=True)
            else:
                store.check_file()  # the writer logs what changed
        except Exception as exc:
            if store is not None:
                store.close()
            if isinstance(exc, StoreBusyError):
                self._registry.forward(self.root, task)
            else:
                task.future.set_exception(_open_error(self.root, exc))
            return None
        try:
            with store.snapshot():
                value = task.run(store)
        except (NeedsWriterError, StoreBusyError):  # it must write, or the file stays locked
            self._registry.forward(self.root, task)
        except (AzsdError, ValueError, OverflowError) as exc:
            task.future.set_exception(exc)
        except Exception as exc:
            log.exception("a read failed in the store of %s", self.root)
            task.future.set_exception(exc)
        else:
            task.future.set_result(value)
        return store


@dataclass
class _Slot:
    """An open store: its writer, and its reader once a read came after the writer opened it."""

    writer: _Worker
    reader: _Reader | None = None

    def stop(self) -> None:
        """Let both threads finish what is queued, then go."""
        self.writer.queue.put(None)
        if self.reader is not None:
            self.reader.queue.put(None)


@dataclass(frozen=True)
class _Result:
    value: Any = None
    error: BaseException | None = None


class _Lost(Exception):
    """The group's transaction was rolled back under the `at`-th pending task (whose `result` it is)."""

    def __init__(self, at: int, result: _Result) -> None:
        super().__init__(at)
        self.at, self.result = at, result


#: Work queued first whenever a store's worker starts (the daemon's orphan recovery): it gets the
#: store and its root, and returns notifications to publish.
OnOpen = Callable[[Store, str], Sequence[p.Notification]]


class StoreRegistry:
    """The open stores, each with its writer and reader; a store opens on its first call."""

    def __init__(
        self,
        outbox: Outbox,
        idle_close_s: float,
        on_open: OnOpen | None = None,
        max_open: int = MAX_OPEN_STORES,
    ) -> None:
        self.outbox = outbox
        self.idle_close_s = idle_close_s
        self.max_open = max_open
        self._on_open = on_open
        self._slots: OrderedDict[str, _Slot] = OrderedDict()  # least recently used first
        self._busy: dict[str, int] = {}  # calls accepted and not yet done, by root
        self._waiting: OrderedDict[str, list[tuple[Task[Any], bool]]] = OrderedDict()  # for a place
        self._writes: dict[tuple[str, bytes], Future[Any]] = {}  # each client's last write, by root
        self._note_seqs: dict[str, int] = {}
        self._lock = threading.RLock()  # futures may complete (and call back) while it is held
        self._closed = False

    def call(
        self,
        root: str,
        fn: Callable[[Store], T],
        *,
        alone: bool = False,
        read: bool = False,
        then: Callable[[Future[T]], None] | None = None,
        client: bytes | None = None,
    ) -> Future[T]:
        """Run `fn(store)` in the worker of the store of `root`, in a transaction of its own (a
        savepoint of the worker's group commit); the future completes once that is committed. A
        `read` runs on the store's reader instead (it must not write).

        `then(future)` runs in the worker thread as soon as the future completes: reply and publish
        there. A write made for a `client` (its identity) holds back that client's later reads
        until it is done (read-your-writes, see :meth:`answer`). Once the registry is closing, the
        future fails with :class:`ShuttingDownError`.
        """
        task = Task(fn, _future(then), alone)
        with self._lock:
            placed = self._accept(root, task)
            if placed and client is not None and not read:
                self._track_write((root, client), task.future)
            placed = placed and self._submit(root, task, read)
        if not placed:
            task.future.set_exception(ShuttingDownError("azsd is stopping"))
        return task.future

    def answer(
        self,
        root: str,
        envelope: Envelope,
        fn: Callable[[Store], Outcome],
        *,
        alone: bool = False,
        read: bool = False,
    ) -> None:
        """Run a client's request: once committed, publish its notifications and send its reply.

        A read waits for this client's last write to the store, if it is not done yet.
        """
        task = Task(fn, _future(lambda done: self.deliver(root, envelope, done)), alone)
        key = (root, envelope.identity)
        before: Future[Any] | None = None
        with self._lock:
            placed = self._accept(root, task)
            if placed and read:
                before = self._writes.get(key)
                if before is None:
                    placed = self._submit(root, task, read=True)
            elif placed:
                self._track_write(key, task.future)
                placed = self._submit(root, task, read=False)
        if not placed:
            task.future.set_exception(ShuttingDownError("azsd is stopping"))
        elif before is not None:
            before.add_done_callback(lambda _: self._resubmit(root, task, read=True))

    def deliver(self, root: str, envelope: Envelope | None, done: Future[Outcome]) -> None:
        """Publish a finished request's notifications and answer it (an error reply if it failed)."""
        exc = done.exception()
        if exc is not None:
            reply: p.Reply = error_reply(exc)
        else:
            outcome = done.result()
            self.publish(root, outcome.notes)
            reply = outcome.reply
        if envelope is not None:
            self.outbox.sender().reply(envelope, p.encode(reply))

    def publish(self, root: str, notes: Sequence[p.Notification]) -> None:
        """Number and publish notifications of the store of `root` (call from its worker thread)."""
        if not notes:
            return
        sender = self.outbox.sender()
        for note in notes:
            numbered = msgspec.structs.replace(note, seq=self._next_note_seq(root))
            session = note.session.id if isinstance(note, p.SessionCreated) else note.session_id
            sender.publish(p.topic(root, session), p.encode(numbered))

    def forward(self, root: str, task: Task[Any]) -> None:
        """Run on the writer a read that must write or could not read (from the reader thread)."""
        self._resubmit(root, task, read=False)

    def retire(self, worker: _Worker) -> bool:
        """Let an idle writer go (with its reader), unless work arrived for its store meanwhile."""
        with self._lock:
            slot = self._slots.get(worker.root)
            if slot is None or slot.writer is not worker:
                return True  # closed already, to make room for another store
            if self._busy.get(worker.root) or not worker.queue.empty():
                return False
            del self._slots[worker.root]
            if slot.reader is not None:
                slot.reader.queue.put(None)
            self._admit_waiting()
            return True

    def retire_reader(self, reader: _Reader) -> bool:
        """Let an idle reader go (its store stays open), unless a read arrived meanwhile."""
        with self._lock:
            if not reader.queue.empty():
                return False
            slot = self._slots.get(reader.root)
            if slot is not None and slot.reader is reader:
                slot.reader = None
            return True

    def leave(self, worker: _Worker) -> list[Task[Any]]:
        """What is queued for a worker that is going away; once nothing is, it is unregistered (and
        an empty list returned), so that no call is queued to it afterwards."""
        with self._lock:
            tasks: list[Task[Any]] = []
            while not worker.queue.empty():
                task = worker.queue.get_nowait()
                if task is not None:
                    tasks.append(task)
            slot = self._slots.get(worker.root)
            if not tasks and slot is not None and slot.writer is worker:
                del self._slots[worker.root]
                if slot.reader is not None:
                    slot.reader.queue.put(None)
                self._admit_waiting()
            return tasks

    def _next_note_seq(self, root: str) -> int:
        """The next notification number of a store: kept while the daemon runs, across reopens."""
        with self._lock:
            self._note_seqs[root] = n = self._note_seqs.get(root, 0) + 1
            return n

    def open_stores(self) -> list[str]:
        with self._lock:
            return sorted(self._slots)

    def close(self, timeout: float = 1.5) -> None:
        """Finish every queued call, then stop the workers (waiting at most `timeout` in all)."""
        with self._lock:
            self._closed = True
            slots = list(self._slots.values())
            self._slots.clear()
            waiting = [task for tasks in self._waiting.values() for task, _ in tasks]
            self._waiting.clear()
        for task in waiting:
            task.future.set_exception(ShuttingDownError("azsd is stopping"))
        for slot in slots:
            slot.stop()
        for slot in slots:
            for thread in (slot.writer, slot.reader):
                if thread is None:
                    continue
                thread.join(timeout)
                if thread.is_alive():
                    log.warning("the store of %s did not stop in time", thread.root)

    # -- placing calls (with the lock held) -------------------------------------------------------

    def _accept(self, root: str, task: Task[Any]) -> bool:
        """Count a call against its store until it is done (a store with calls is never closed)."""
        if self._closed:
            return False
        self._busy[root] = self._busy.get(root, 0) + 1
        task.future.add_done_callback(lambda _: self._finished(root))
        return True

    def _submit(self, root: str, task: Task[Any], read: bool) -> bool:
        """Queue an accepted call on its store's writer or reader, opening the store (or waiting for
        a place to open it); False once the registry is closing."""
        if self._closed:
            return False
        slot = self._slots.get(root)
        if slot is not None:
            self._slots.move_to_end(root)
        elif root in self._waiting or (len(self._slots) >= self.max_open and not self._evict()):
            self._waiting.setdefault(root, []).append((task, read))
            return True
        else:
            slot = self._open(root)
        if read and slot.writer.opened:
            if slot.reader is None:
                slot.reader = _Reader(self, root)
                slot.reader.start()
            slot.reader.queue.put(task)
        else:
            slot.writer.queue.put(task)
        return True

    def _resubmit(self, root: str, task: Task[Any], read: bool) -> None:
        """Queue an accepted call again (after the write it waited for, or from the reader)."""
        with self._lock:
            placed = self._submit(root, task, read)
        if not placed:
            task.future.set_exception(ShuttingDownError("azsd is stopping"))

    def _open(self, root: str) -> _Slot:
        """A new slot for `root`, its writer started (with the open-time work to do first)."""
        first: Task[Sequence[p.Notification]] | None = None
        if self._on_open is not None:
            on_open = self._on_open
            first = Task(  # alone: a long recovery commits in chunks of its own
                lambda store: on_open(store, root),
                _future(lambda done: self.publish(root, done.result())),
                alone=True,
            )
            self._accept(root, first)
        slot = _Slot(_Worker(self, root, first))
        self._slots[root] = slot
        slot.writer.start()
        return slot

    def _evict(self) -> bool:
        """Close the least recently used store that has no call queued or running."""
        for root, slot in self._slots.items():
            if not self._busy.get(root):
                del self._slots[root]
                slot.stop()
                log.debug("closed the store of %s to make room for another", root)
                return True
        return False

    def _admit_waiting(self) -> None:
        """Open the stores waiting for a place, while there is one."""
        while self._waiting and not self._closed and (len(self._slots) < self.max_open or self._evict()):
            root, tasks = self._waiting.popitem(last=False)
            self._open(root)
            for task, read in tasks:
                self._submit(root, task, read)

    def _finished(self, root: str) -> None:
        with self._lock:
            left = self._busy.get(root, 0) - 1
            if left > 0:
                self._busy[root] = left
                return
            self._busy.pop(root, None)
            self._admit_waiting()

    def _track_write(self, key: tuple[str, bytes], future: Future[Any]) -> None:
        """Note a client's latest write to a store (call holding the lock) until it is done."""
        self._writes[key] = future
        future.add_done_callback(lambda done: self._written(key, done))

    def _written(self, key: tuple[str, bytes], done: Future[Any]) -> None:
        with self._lock:
            if self._writes.get(key) is done:
                del self._writes[key]


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


def _open_error(root: str, exc: Exception) -> AzsdError:
    """Why the store of `root` cannot be opened, as an error of the tree (with the OS's reason)."""
    if isinstance(exc, AzsdError):
        return exc
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
    return StoreError(f"cannot open the store of {root}: {reason}")


def _future(then: Callable[[Future[T]], None] | None) -> Future[T]:
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
