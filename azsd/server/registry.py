"""The open stores: :class:`StoreRegistry`, the one way to a store's threads (:mod:`azsd.server.workers`).

Everything that touches a store goes through one typed primitive, :meth:`StoreRegistry.call`
(datasette's ``execute_write_fn``): ``call(root, fn)`` queues ``fn(store)`` for the store's
writer and returns a :class:`~concurrent.futures.Future` of its result. Requests from clients and
the daemon's own work (follows, backups, orphan recovery) use it alike; a client's request goes
through :meth:`StoreRegistry.answer`, which replies once the work is done.

Reads (`read=True`) run on the store's reader, so a read never waits behind a long write. Only a
client's own earlier write to that store waits: a read is queued once that client's last write
there is done (read-your-writes), never behind other clients' or the daemon's writes. Until the
writer has opened the store (migrated it, recovered its orphans), reads queue on the writer.

Stores open on first use and close after `idle_close_s` without work; at most `max_open` are open
(each holds two threads and two ZeroMQ sockets): one more closes the least recently used store that
has no work queued or running, and when every open store is busy, the calls of a new one wait for a
free place. Work for one store never waits on another's.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Final, TypeVar

import msgspec

from azsd.errors import ShuttingDownError
from azsd.ipc import protocol as p
from azsd.ipc.replies import error_reply
from azsd.ipc.transport import Envelope, Outbox
from azsd.server.reader import Inline, Reader, Slot
from azsd.server.workers import Outcome, Task, Writer, encoded, future_then
from azsd.store import Store

__all__ = ["MAX_OPEN_STORES", "OnOpen", "StoreRegistry"]

log = logging.getLogger("azsd.server.registry")

#: The most stores open at once, unless configured (`max-open-stores`).
MAX_OPEN_STORES: Final = 128

T = TypeVar("T")


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
        *,
        keep_full: bool = True,
    ) -> None:
        self.outbox = outbox
        #: Whether the writers keep each store's full record (azsd.ingest.full_record) when idle.
        self.keep_full = keep_full
        self.idle_close_s = idle_close_s
        self.max_open = max_open
        self._on_open = on_open
        self._slots: OrderedDict[str, Slot] = OrderedDict()  # least recently used first
        self._busy: dict[str, int] = {}  # calls accepted and not yet done, by root
        self._waiting: OrderedDict[str, list[tuple[Task[Any], bool]]] = OrderedDict()  # for a place
        self._writes: dict[tuple[str, bytes], Future[Any]] = {}  # each client's last write, by root
        self._note_seqs: dict[str, int] = {}
        self._lock = threading.RLock()  # futures may complete (and call back) while it is held
        self._closed = False
        #: Called with a store's root after each batch its writer committed (the sync pusher's cue).
        self.on_commit: Callable[[str], None] | None = None

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
        task = Task(fn, future_then(then), alone)
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
        inline: Inline = False,
        peek: Callable[[Store], Outcome | None] | None = None,
    ) -> None:
        """Run a client's request: once committed, publish its notifications and send its reply.

        A read waits for this client's last write to the store, if it is not done yet. An `inline`
        read (a quick one: a page, a session) runs at once in the calling thread, the daemon's
        socket thread, when the store's reader is open and idle (:meth:`Reader.read_inline`), with
        no task or future; with `inline="peek"`, only its `peek` does (a reply encoded before), and
        a read it must make is queued on the reader.
        """
        if inline and read and self._answer_inline(root, envelope, fn, peek, inline == "peek"):
            return
        task = Task(fn, future_then(lambda done: self.deliver(root, envelope, done)), alone, peek)
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

    def _answer_inline(
        self,
        root: str,
        envelope: Envelope,
        fn: Callable[[Store], Outcome],
        peek: Callable[[Store], Outcome | None] | None,
        peek_only: bool,
    ) -> bool:
        """Answer a read in the calling thread if the store's reader is idle and this client has no
        write in flight there (see :meth:`answer`); False when it must be queued instead."""
        with self._lock:
            reader = None if (root, envelope.identity) in self._writes else self._idle_reader(root)
        if reader is None:
            return False
        got = reader.read_inline(fn, peek, peek_only=peek_only)
        reply: p.Reply | bytes
        if isinstance(got, Outcome):
            if got.notes:
                self.publish(root, got.notes)
            reply = got.reply
        elif isinstance(got, Exception):
            reply = error_reply(got)
        elif got == "queue":
            return False
        else:  # it must write: on to the writer
            task = Task(fn, future_then(lambda done: self.deliver(root, envelope, done)), False, peek)
            with self._lock:
                placed = self._accept(root, task)
            if placed:
                self.forward(root, task)
            else:
                task.future.set_exception(ShuttingDownError("azsd is stopping"))
            return True
        self.outbox.sender().reply(envelope, encoded(reply))
        return True

    def deliver(self, root: str, envelope: Envelope | None, done: Future[Outcome]) -> None:
        """Publish a finished request's notifications and answer it (an error reply if it failed)."""
        exc = done.exception()
        if exc is not None:
            reply: p.Reply | bytes = error_reply(exc)
        else:
            outcome = done.result()
            self.publish(root, outcome.notes)
            reply = outcome.reply
        if envelope is not None:
            self.outbox.sender().reply(envelope, encoded(reply))

    def publish(self, root: str, notes: Sequence[p.Notification]) -> None:
        """Number and publish notifications of the store of `root` (call from its worker thread)."""
        if not notes:
            return
        sender = self.outbox.sender()
        for note in notes:
            numbered = msgspec.structs.replace(note, seq=self._next_note_seq(root))
            session = note.session.id if isinstance(note, p.SessionCreated) else note.session_id
            sender.publish(p.topic(root, session), p.encode(numbered))

    def committed(self, root: str) -> None:
        """A store's writer committed a batch (call from its thread): tell :attr:`on_commit`."""
        if self.on_commit is not None:
            try:
                self.on_commit(root)
            except Exception:
                log.exception("the commit hook failed for %s", root)

    def forward(self, root: str, task: Task[Any]) -> None:
        """Run on the writer a read that must write or could not read (from the reader thread)."""
        self._resubmit(root, task, read=False)

    def retire(self, worker: Writer) -> bool:
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

    def retire_reader(self, reader: Reader) -> bool:
        """Let an idle reader go (its store stays open), unless a read arrived meanwhile."""
        with self._lock:
            if not reader.queue.empty():
                return False
            slot = self._slots.get(reader.root)
            if slot is not None and slot.reader is reader:
                slot.reader = None
            return True

    def leave(self, worker: Writer) -> list[Task[Any]]:
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
                slot.reader = Reader(self, root)
                slot.reader.start()
            slot.reader.queue.put(task)
        else:
            slot.writer.queue.put(task)
        return True

    def _idle_reader(self, root: str) -> Reader | None:
        """The reader of an open store, to run a quick read in the calling thread (with the lock held)."""
        slot = self._slots.get(root)
        if self._closed or slot is None or not slot.writer.opened or slot.reader is None:
            return None
        self._slots.move_to_end(root)
        return slot.reader

    def _resubmit(self, root: str, task: Task[Any], read: bool) -> None:
        """Queue an accepted call again (after the write it waited for, or from the reader)."""
        with self._lock:
            placed = self._submit(root, task, read)
        if not placed:
            task.future.set_exception(ShuttingDownError("azsd is stopping"))

    def _open(self, root: str) -> Slot:
        """A new slot for `root`, its writer started (with the open-time work to do first)."""
        first: Task[Sequence[p.Notification]] | None = None
        if self._on_open is not None:
            on_open = self._on_open
            first = Task(  # alone: a long recovery commits in chunks of its own
                lambda store: on_open(store, root),
                future_then(lambda done: self.publish(root, done.result())),
                alone=True,
            )
            self._accept(root, first)
        slot = Slot(Writer(self, root, first))
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
