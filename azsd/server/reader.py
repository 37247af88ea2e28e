"""A store's reader: a read-only connection beside its writer (:mod:`azsd.server.workers`).

The reader has a connection of its own (``query_only``) that reads while the writer writes. A read
that finds it must write (a search whose index has to catch up), or that cannot get the file's
shared lock in time (another program's commit, or a long transaction that spilled its cache, holds
it), moves to the writer. A quick read may run in the daemon's socket thread instead, on the same
connection, while the reader is idle (:meth:`Reader.read_inline`). Which store has which threads, and
who waits for what, is :mod:`azsd.server.registry`'s.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol

from azsd.errors import AzsdError
from azsd.ipc.transport import Outbox
from azsd.server.workers import Outcome, Task, Writer, open_error
from azsd.store import Store
from azsd.store.core import READ_BUSY_TIMEOUT_S, NeedsWriterError, StoreBusyError

__all__ = ["Inline", "Reader", "ReaderHome", "Slot"]

log = logging.getLogger("azsd.server.workers")

#: How much of a read may run in the calling thread while the store's reader is idle: none of it,
#: all of it (a quick read), or only its `peek` (a reply it has already: a listing or a page encoded
#: before, which is only copied out; a read it must make goes to the reader).
Inline = Literal[False, True, "peek"]


class ReaderHome(Protocol):
    """What a reader needs of the registry that runs it (:class:`~azsd.server.registry.StoreRegistry`)."""

    @property
    def outbox(self) -> Outbox: ...
    @property
    def idle_close_s(self) -> float: ...
    def forward(self, root: str, task: Task[Any]) -> None: ...
    def retire_reader(self, reader: Reader) -> bool: ...


class Reader(threading.Thread):
    """A store's reader: a read-only connection beside the writer, one call at a time.

    A quick read may also run in the daemon's socket thread (:meth:`read_inline`) while this reader is
    idle, on the same connection: that saves handing the call to this thread and its reply back,
    most of what a small read took.
    """

    def __init__(self, registry: ReaderHome, root: str) -> None:
        super().__init__(name=f"azsd-read:{root}", daemon=True)
        self.root = root
        self.queue: queue.SimpleQueue[Task[Any] | None] = queue.SimpleQueue()
        self._registry = registry
        self._store: Store | None = None
        self._using = threading.Lock()  # held by whoever uses the connection: this thread, or inline
        self._inline_at = 0.0  # when a read last ran inline (so an idle thread is not idle)

    def run(self) -> None:
        try:
            while True:
                try:
                    task = self.queue.get(timeout=self._registry.idle_close_s)
                except queue.Empty:
                    if time.monotonic() - self._inline_at < self._registry.idle_close_s:
                        continue
                    if self._registry.retire_reader(self):
                        break
                    continue
                if task is None:
                    break
                with self._using:
                    self._store, settle = self._serve(self._store, task)
                settle()  # after the connection is free: a caller told "done" finds the reader idle
        finally:
            with self._using:
                if self._store is not None:
                    self._store.close()
                    self._store = None
            self._registry.outbox.release()

    def read_inline(
        self,
        run: Callable[[Store], Outcome],
        peek: Callable[[Store], Outcome | None] | None,
        *,
        peek_only: bool = False,
    ) -> Outcome | Exception | Literal["queue", "writer"]:
        """Run a read in the calling thread, now, if this reader is idle with its store open: its
        outcome, or the error it raised (logged here when unexpected). "queue" (nothing done) when
        the reader is busy or has no store open, when the file is locked (the read must be queued
        here, to wait for the lock without holding up the caller), or, `peek_only`, when `peek` has
        nothing (the read is queued here, to run in this thread); "writer" when it must write.

        No task, no future: the caller answers with what it gets, once the connection is free again
        (so that a client told the answer finds the reader idle)."""
        if self._store is None or not self.queue.empty() or not self._using.acquire(blocking=False):
            return "queue"
        try:
            store = self._store
            if store is None or not self.queue.empty():
                return "queue"
            self._inline_at = time.monotonic()
            store.check_file()
            found = peek(store) if peek is not None else None
            if found is not None:
                return found
            if peek_only:
                return "queue"
            store.wait_for_locks(0)  # never hold up the socket thread: queue the read instead
            with store.snapshot():
                return run(store)
        except StoreBusyError:
            return "queue"
        except NeedsWriterError:
            return "writer"
        except (AzsdError, ValueError, OverflowError) as exc:
            return exc
        except Exception as exc:
            log.exception("a read failed in the store of %s", self.root)
            return exc
        finally:
            self._using.release()

    def _serve(self, store: Store | None, task: Task[Any]) -> tuple[Store | None, Callable[[], None]]:
        """Run one read (on the store, opened or reopened as needed): the store to go on with, and
        what settles `task` (called once the connection is free)."""
        try:
            if store is None:
                store = Store.open(Path(self.root), reader=True)
            else:
                store.check_file()  # the writer logs what changed
        except Exception as exc:
            if store is not None:
                store.close()
            if isinstance(exc, StoreBusyError):
                return None, partial(self._registry.forward, self.root, task)
            return None, partial(task.future.set_exception, open_error(self.root, exc))
        try:
            return store, self._outcome(task, partial(_read, store, task, READ_BUSY_TIMEOUT_S))
        except (NeedsWriterError, StoreBusyError):  # it must write, or the file stays locked
            return store, partial(self._registry.forward, self.root, task)

    def _outcome(self, task: Task[Any], read: Callable[[], Any]) -> Callable[[], None]:
        """Run `read`; what gives `task` its value or its error. A read that must move on (to the
        writer, or to wait for a lock) raises NeedsWriterError or StoreBusyError to the caller."""
        try:
            value = read()
        except (NeedsWriterError, StoreBusyError):
            raise
        except (AzsdError, ValueError, OverflowError) as exc:
            return partial(task.future.set_exception, exc)
        except Exception as exc:
            log.exception("a read failed in the store of %s", self.root)
            return partial(task.future.set_exception, exc)
        return partial(task.future.set_result, value)


@dataclass
class Slot:
    """An open store: its writer, and its reader once a read came after the writer opened it."""

    writer: Writer
    reader: Reader | None = None

    def stop(self) -> None:
        """Let both threads finish what is queued, then go."""
        self.writer.queue.put(None)
        if self.reader is not None:
            self.reader.queue.put(None)


def _read(store: Store, task: Task[Any], lock_wait_s: float) -> Any:
    """`task` on a reader's connection: what its `peek` has already, else its run in a snapshot,
    waiting at most `lock_wait_s` for another connection's lock."""
    found = task.peek(store) if task.peek is not None else None
    if found is not None:
        return found
    store.wait_for_locks(lock_wait_s)
    with store.snapshot():
        return task.run(store)
