"""One worker thread per open store: it owns the store's only connection and commits in groups.

Requests for a store queue up for its worker, which takes everything waiting (up to
:data:`MAX_BATCH`), runs it in one ``BEGIN IMMEDIATE`` transaction with a savepoint per request
(one failing request rolls back only itself), commits, and only then sends the replies and
notifications: a reply means the write is on disk. Stores open on first use and close after
`idle_close_s` without requests. Requests for one store never wait on another.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec

from azsd.errors import (
    AzsdError,
    IngestError,
    NotAStoreError,
    ReadOnlyStoreError,
    SessionNotFoundError,
    StoreError,
    StoreFullError,
)
from azsd.ipc import protocol as p
from azsd.ipc.transport import Envelope, Outbox, OutboxSender
from azsd.server.handlers import Outcome
from azsd.store import Store

__all__ = ["MAX_BATCH", "StoreRegistry", "Task", "error_reply"]

log = logging.getLogger("azsd.server.workers")

#: The most requests one transaction groups.
MAX_BATCH: Final = 256


@dataclass(frozen=True)
class Task:
    """One piece of work for a store: who asked (None for the daemon's own work), the work, and
    who to tell, after the commit, whether it succeeded. An `alone` task runs outside any
    transaction (a backup cannot read a store its own connection is writing)."""

    envelope: Envelope | None
    run: Callable[[Store], Outcome]
    on_done: Callable[[bool], None] | None = None
    alone: bool = False


def error_reply(exc: BaseException) -> p.ErrorReply:
    """The error reply for an exception a handler raised."""
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
        case StoreError():
            code = "store_error"
        case ValueError() | OverflowError():  # OverflowError: an integer SQLite cannot hold
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
        self.queue: queue.SimpleQueue[Task | None] = queue.SimpleQueue()
        self._registry = registry

    def run(self) -> None:
        outbox = self._registry.outbox
        store: Store | None = None
        open_error: AzsdError | None = None
        try:
            try:
                store = Store.open(Path(self.root))
            except AzsdError as exc:
                open_error = exc
                log.warning("cannot open the store of %s: %s", self.root, exc)
            if store is not None and self._registry.on_open is not None:
                self._opened(store)
            while True:
                batch = self._next_batch()
                if batch is None:
                    break
                tasks = [t for t in batch if t is not None]
                if tasks:
                    self._deliver(tasks, self._run_batch(store, tasks, open_error))
                if len(tasks) < len(batch):
                    break  # a stop marker
        finally:
            if store is not None:
                store.close()
            outbox.release()
            log.debug("closed the store of %s", self.root)

    def _opened(self, store: Store) -> None:
        """Run the registry's on-open work (orphan recovery) and announce what it stored."""
        assert self._registry.on_open is not None
        try:
            notes = self._registry.on_open(self.root, store)
        except Exception:
            log.exception("on-open work failed for %s", self.root)
            return
        self._deliver([], [], notes)

    def _next_batch(self) -> list[Task | None] | None:
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

    def _run_batch(
        self, store: Store | None, tasks: list[Task], open_error: AzsdError | None
    ) -> list[Outcome]:
        if store is None:
            assert open_error is not None
            return [Outcome(error_reply(open_error)) for _ in tasks]
        outcomes: list[Outcome] = []
        start = 0
        for i, task in enumerate(tasks):
            if task.alone:
                outcomes += self._run_group(store, tasks[start:i])
                outcomes.append(self._run_one(store, task, grouped=False))
                start = i + 1
        return outcomes + self._run_group(store, tasks[start:])

    def _run_group(self, store: Store, tasks: list[Task]) -> list[Outcome]:
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
            return [Outcome(error_reply(exc)) for _ in tasks]

    def _run_one(self, store: Store, task: Task, grouped: bool) -> Outcome:
        try:
            with store.atomic() if grouped else nullcontext():
                return task.run(store)
        except (AzsdError, ValueError, OverflowError) as exc:
            return Outcome(error_reply(exc))
        except Exception as exc:
            log.exception("request failed in the store of %s", self.root)
            return Outcome(error_reply(exc))

    def _publish(self, sender: OutboxSender, note: p.Notification) -> None:
        numbered = msgspec.structs.replace(note, seq=self._registry.next_note_seq(self.root))
        session = note.session.id if isinstance(note, p.SessionCreated) else note.session_id
        sender.publish(p.topic(self.root, session), p.encode(numbered))

    def _deliver(
        self, tasks: list[Task], outcomes: list[Outcome], extra: Sequence[p.Notification] = ()
    ) -> None:
        sender = self._registry.outbox.sender()
        for note in extra:
            self._publish(sender, note)
        for task, outcome in zip(tasks, outcomes, strict=True):
            for note in outcome.notes:
                self._publish(sender, note)
            if task.envelope is not None:
                sender.reply(task.envelope, p.encode(outcome.reply))
            if task.on_done is not None:
                try:
                    task.on_done(not isinstance(outcome.reply, p.ErrorReply))
                except Exception:
                    log.exception("a completion callback failed")


OnOpen = Callable[[str, Store], list[p.Notification]]


class StoreRegistry:
    """The open stores, each with its worker; a store opens on its first request."""

    def __init__(self, outbox: Outbox, idle_close_s: float, on_open: OnOpen | None = None) -> None:
        self.outbox = outbox
        self.idle_close_s = idle_close_s
        self.on_open = on_open
        self._workers: dict[str, _Worker] = {}
        self._note_seqs: dict[str, int] = {}
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, root: str, task: Task) -> bool:
        """Queue a task for the store of `root`; False once the registry is closing."""
        with self._lock:
            if self._closed:
                return False
            worker = self._workers.get(root)
            if worker is None:
                worker = _Worker(self, root)
                self._workers[root] = worker
                worker.start()
            worker.queue.put(task)
            return True

    def retire(self, worker: _Worker) -> bool:
        """Let an idle worker go, unless work arrived for it meanwhile."""
        with self._lock:
            if not worker.queue.empty():
                return False
            if self._workers.get(worker.root) is worker:
                del self._workers[worker.root]
            return True

    def next_note_seq(self, root: str) -> int:
        """The next notification number of a store: kept while the daemon runs, across reopens."""
        with self._lock:
            self._note_seqs[root] = n = self._note_seqs.get(root, 0) + 1
            return n

    def open_stores(self) -> list[str]:
        with self._lock:
            return sorted(self._workers)

    def close(self, timeout: float = 1.5) -> None:
        """Finish every queued request, then stop the workers (waiting at most `timeout` in all)."""
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
