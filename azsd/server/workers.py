"""One worker thread per open store: it owns the store's only connection and commits in groups.

Everything that touches a store goes through one typed primitive, :meth:`StoreRegistry.call`
(datasette's ``execute_write_fn``): ``call(root, fn)`` queues ``fn(store)`` for the store's
worker and returns a :class:`~concurrent.futures.Future` of its result. Requests from clients and
the daemon's own work (follows, backups, orphan recovery) use it alike.

The worker takes everything waiting (up to :data:`MAX_BATCH`), runs it in one ``BEGIN IMMEDIATE``
transaction with a savepoint per call (one that fails rolls back only itself), commits, and only
then completes the futures, in order: a result means the write is on disk. A `then` callback given
to `call` runs in the worker thread right after, which is where replies and notifications are sent
(so a store's notifications leave in the order they were numbered). Stores open on first use and
close after `idle_close_s` without work. Work for one store never waits on another.
"""

from __future__ import annotations

import logging
import queue
import threading
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

__all__ = ["MAX_BATCH", "Outcome", "StoreRegistry", "Task", "error_reply"]

log = logging.getLogger("azsd.server.workers")

#: The most calls one transaction groups.
MAX_BATCH: Final = 256

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
    def __init__(self, registry: StoreRegistry, root: str) -> None:
        super().__init__(name=f"azsd-store:{root}", daemon=True)
        self.root = root
        self.queue: queue.SimpleQueue[Task[Any] | None] = queue.SimpleQueue()
        self._registry = registry

    def run(self) -> None:
        store: Store | None = None
        try:
            try:
                store = Store.open(Path(self.root))
            except Exception as exc:  # whatever it is, this worker cannot serve: say so, and go
                self._refuse(_open_error(self.root, exc))
                return
            while True:
                batch = self._next_batch()
                if batch is None:
                    break
                tasks = [t for t in batch if t is not None]
                if tasks:
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
        """Tasks in one transaction (one commit for them all), each in a savepoint of its own."""
        if not tasks:
            return []
        grouped = store.exists and not store.read_only
        outer: AbstractContextManager[Any] = store.atomic() if grouped else nullcontext()
        try:
            with outer:
                return [self._run_one(store, task, grouped) for task in tasks]
        except AzsdError as exc:  # the group's commit failed: none of it happened
            log.warning("commit failed for %s: %s", self.root, exc)
            return [_Result(error=exc) for _ in tasks]

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


#: Work queued first whenever a store's worker starts (the daemon's orphan recovery): it gets the
#: store and its root, and returns notifications to publish.
OnOpen = Callable[[Store, str], Sequence[p.Notification]]


class StoreRegistry:
    """The open stores, each with its worker; a store opens on its first call."""

    def __init__(self, outbox: Outbox, idle_close_s: float, on_open: OnOpen | None = None) -> None:
        self.outbox = outbox
        self.idle_close_s = idle_close_s
        self._on_open = on_open
        self._workers: dict[str, _Worker] = {}
        self._note_seqs: dict[str, int] = {}
        self._lock = threading.Lock()
        self._closed = False

    def call(
        self,
        root: str,
        fn: Callable[[Store], T],
        *,
        alone: bool = False,
        then: Callable[[Future[T]], None] | None = None,
    ) -> Future[T]:
        """Run `fn(store)` in the worker of the store of `root`, in a transaction of its own (a
        savepoint of the worker's group commit); the future completes once that is committed.

        `then(future)` runs in the worker thread as soon as the future completes: reply and publish
        there. Once the registry is closing, the future fails with :class:`ShuttingDownError`.
        """
        future = _future(then)
        with self._lock:
            if self._closed:
                future.set_exception(ShuttingDownError("azsd is stopping"))
                return future
            worker = self._workers.get(root)
            if worker is None:
                worker = _Worker(self, root)
                self._workers[root] = worker
                if self._on_open is not None:
                    on_open = self._on_open
                    worker.queue.put(
                        Task(
                            lambda store: on_open(store, root),
                            _future(lambda done: self.publish(root, done.result())),
                        )
                    )
                worker.start()
            worker.queue.put(Task(fn, future, alone))
        return future

    def answer(
        self, root: str, envelope: Envelope, fn: Callable[[Store], Outcome], *, alone: bool = False
    ) -> None:
        """Run a client's request: once committed, publish its notifications and send its reply."""
        self.call(root, fn, alone=alone, then=lambda done: self.deliver(root, envelope, done))

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

    def retire(self, worker: _Worker) -> bool:
        """Let an idle worker go, unless work arrived for it meanwhile."""
        with self._lock:
            if not worker.queue.empty():
                return False
            if self._workers.get(worker.root) is worker:
                del self._workers[worker.root]
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
            if not tasks and self._workers.get(worker.root) is worker:
                del self._workers[worker.root]
            return tasks

    def _next_note_seq(self, root: str) -> int:
        """The next notification number of a store: kept while the daemon runs, across reopens."""
        with self._lock:
            self._note_seqs[root] = n = self._note_seqs.get(root, 0) + 1
            return n

    def open_stores(self) -> list[str]:
        with self._lock:
            return sorted(self._workers)

    def close(self, timeout: float = 1.5) -> None:
        """Finish every queued call, then stop the workers (waiting at most `timeout` in all)."""
        with self._lock:
            self._closed = True
            workers = list(self._workers.values())
            self._workers.clear()
        for worker in workers:
            worker.queue.put(None)
        for worker in workers:
            worker.join(timeout)
            if worker.is_alive():
                log.warning("the store of %s did not stop in time", worker.root)


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
