"""The daemon's pusher: one background thread that pushes every known store to the sync database.

A store becomes known when the daemon commits to it (:meth:`Pusher.note`, called after each commit
of a store's writer) or was known before (the ``sync-roots`` file in the state dir). The thread
wakes on those notes and, every :data:`POLL_S`, looks at each known store for commits by other
programs (AZUREAL): SQLite's ``data_version`` tells it without reading anything. It reads each
store through a read-only connection of its own, closed after :data:`READER_IDLE_S` without a commit
(then the file's mtime and size say when to open it again); the one write sync needs (giving the store and its
new sessions their UUIDs) goes through the store's writer (:meth:`StoreRegistry.call`).

Local writes never wait for it. While the database is away, it retries with capped backoff
(azsd.backoff) and catches up when it returns, in batches of :data:`~azsd.sync.push.BATCH` events
(``AZSD_SYNC_BATCH`` in the environment sets another size: the crash tests use small ones).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import psycopg

from azsd.backoff import Backoff
from azsd.errors import AzsdError, NewIncarnation, SyncError
from azsd.files import write_atomic
from azsd.store import Store, store_path
from azsd.sync import schema
from azsd.sync.connection import connect, file_id, reason
from azsd.sync.identity import repository_identity
from azsd.sync.push import BATCH, StorePush, prepare_connection
from azsd.sync.stores import Stores

__all__ = ["POLL_S", "WAITING_S", "Pusher", "StoreStatus"]

log = logging.getLogger("azsd.sync.pusher")

#: How often every known store is looked at for commits by other programs.
POLL_S: Final = 1.0
#: How long a store's reader stays open without a commit to its store.
READER_IDLE_S: Final = 60.0
#: How long a store's writer may take to give it its sync UUIDs.
_PREPARE_TIMEOUT_S: Final = 30.0
#: How long an unpushed commit may wait before `azs sync status` says why it waits.
WAITING_S: Final = 3.0


#: Errors of the database about the rows one store sends (not about the connection or the server):
#: that store's push fails alone.
_REFUSED: Final = (
    psycopg.errors.DataError, psycopg.errors.IntegrityError, psycopg.errors.InsufficientPrivilege,
)  # fmt: skip


def _file_mark(root: str) -> tuple[int, int] | None:
    """The store file's (mtime, size): a commit in DELETE journal mode changes them."""
    try:
        info = os.stat(store_path(Path(root)))
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def _batch_size(text: str) -> int:
    """The push batch size ``AZSD_SYNC_BATCH`` asks for (:data:`BATCH` unless a positive number)."""
    return int(text) if text.strip().isdigit() and int(text) > 0 else BATCH


def _wait_s(now: float, next_poll: float, backoff: Backoff) -> float:
    """How long the thread sleeps, unless a note wakes it: until the next poll, or while the
    database is away, until the backoff's next try. (A first version took the earlier of the poll
    and the retry time, which is 0 while the database answers: the thread never slept.)

    >>> healthy, away = Backoff(), Backoff(failures=1, retry_at=100.25)
    >>> _wait_s(100.0, 101.0, healthy), _wait_s(100.0, 101.0, away), _wait_s(102.0, 101.0, healthy)
    (1.0, 0.25, 0.0)
    """
    until = next_poll if backoff.ready(now) else backoff.retry_at
    return max(0.0, until - now)


@dataclass
class StoreStatus:
    """Where one store's pushing is (what `azs sync status` shows)."""

    root: str
    store_uuid: str = ""
    repository: str = ""
    pushed_event_id: int = 0
    local_event_id: int = 0
    lag_events: int = 0
    behind_since: float | None = None  # time.monotonic() when it first saw unpushed rows
    last_push: float | None = None  # time.time() of the last commit that moved the cursor
    last_error: str = ""
    pushed: int = 0  # events pushed by this daemon
    masked: int = 0  # secrets masked in what this daemon pushed (`sync-redact`)
    note: str = ""  # the last time the file became a new incarnation, and why


class Pusher(threading.Thread):
    """Pushes every known store; `note(root)` after a commit, `stop()` at the end."""

    def __init__(
        self,
        url: str,
        identity: str,
        registry: Stores,
        roots_path: Path,
        on_caught_up: Callable[[str, StoreStatus], None] | None = None,
        *,
        redact: bool = True,
        seed: set[str] | None = None,
    ) -> None:
        super().__init__(name="azsd-sync-push", daemon=True)
        self.url, self.identity, self.redact = url, identity, redact
        self._registry = registry
        self._roots_path = roots_path
        self._on_caught_up = on_caught_up
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._dirty: set[str] = set()
        self._roots: set[str] = set()
        self._status: dict[str, StoreStatus] = {}
        self._pushes: dict[str, StorePush] = {}
        self._readers: dict[str, Store] = {}
        self._versions: dict[str, int] = {}
        self._changed: dict[str, float] = {}  # when each open reader last saw a commit
        self._idle: dict[str, tuple[int, int]] = {}  # a closed reader's store file: (mtime, size)
        self._backoff = Backoff()
        self._conn: psycopg.Connection[Any] | None = None
        self.error = ""  # the connection's last failure, "" while it works
        self._batch = _batch_size(os.environ.get("AZSD_SYNC_BATCH", ""))
        self._busy_since: float | None = None  # time.monotonic() when the current push began
        try:
            self._roots = {r for r in roots_path.read_text().splitlines() if r}
        except FileNotFoundError:
            pass
        if seed and not seed <= self._roots:  # every store the daemon knows, pushed when sync starts
            self._roots |= seed
            self._save_roots()
        self._dirty = set(self._roots)

    # -- from other threads ---------------------------------------------------------------------

    def note(self, root: str) -> None:
        """The store of `root` committed: push it soon (and remember it from now on)."""
        with self._lock:
            if root not in self._roots:
                self._roots.add(root)
                self._save_roots()
            self._dirty.add(root)
            status = self._status.setdefault(root, StoreStatus(root=root))
            if status.behind_since is None:  # the oldest commit not known to be pushed
                status.behind_since = time.monotonic()
        self._wake.set()

    def statuses(self) -> list[StoreStatus]:
        with self._lock:
            return [
                self._status.get(r) or StoreStatus(root=r, last_error=self.error) for r in sorted(self._roots)
            ]

    def waiting(self, status: StoreStatus, now: float) -> str:
        """Why a store's unpushed commit has waited for more than :data:`WAITING_S` ("" if none has)."""
        if status.behind_since is None or now - status.behind_since < WAITING_S:
            return ""
        busy = self._busy_since
        if busy is not None and now - busy >= WAITING_S:
            return f"the database has not answered for {now - busy:.0f} s (a lock held by someone?)"
        if status.last_error or self.error:
            return status.last_error or self.error
        return "a push is queued behind other stores"

    def stop(self, timeout: float = 2.0) -> None:
        self._stopping.set()
        self._wake.set()
        if self.is_alive():
            self.join(timeout)

    # -- the thread ------------------------------------------------------------------------------

    def run(self) -> None:
        try:
            next_poll = 0.0
            while not self._stopping.is_set():
                self._wake.wait(_wait_s(time.monotonic(), next_poll, self._backoff))
                self._wake.clear()
                if self._stopping.is_set() or not self._backoff.ready(time.monotonic()):
                    continue
                poll = time.monotonic() >= next_poll
                if poll:
                    next_poll = time.monotonic() + POLL_S
                with self._lock:
                    roots = set(self._roots) if poll else set(self._dirty)
                    forced = set(self._dirty)
                    self._dirty.clear()
                self._push_roots(sorted(roots), forced)
        finally:
            self._close()
            for store in self._readers.values():
                store.close()
            self._registry.outbox.release()

    def _push_roots(self, roots: list[str], forced: set[str]) -> None:
        try:
            conn = self._connection()
            for root in roots:
                if self._stopping.is_set():
                    return
                self._push_root(conn, root, force=root in forced)
        except (psycopg.Error, SyncError) as exc:
            self.error = str(exc) if isinstance(exc, SyncError) else reason(exc)
            with self._lock:
                self._dirty.update(roots)  # all of them again, once it is back
                for root in roots:
                    self._status.setdefault(root, StoreStatus(root=root)).last_error = self.error
            self._close()
            for root in roots:
                self._observe(root)
            delay = self._backoff.fail(self.error, time.monotonic())
            if self._backoff.failures == 1 or self._backoff.failures % 10 == 0:
                log.warning("sync: %s (trying again in %.1f s)", self.error, delay)
        else:
            if self._backoff.failures:
                log.info("sync: the database answers again")
            self._backoff.reset()
            self.error = ""

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            conn = connect(self.url)
            try:
                schema.check(conn)
                prepare_connection(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
            self._pushes.clear()  # what a lost connection committed is not known: start over
        return self._conn

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except psycopg.Error:
                pass
            self._conn = None

    def _reader(self, root: str) -> Store | None:
        store = self._readers.get(root)
        try:
            if store is None:
                store = self._readers[root] = Store.open(Path(root), reader=True)
            else:
                store.check_file()
        except AzsdError as exc:
            self._readers.pop(root, None)
            self._set(root, last_error=f"cannot read the store: {exc}")
            return None
        return store if store.exists else None

    def _push_root(self, conn: psycopg.Connection[Any], root: str, *, force: bool) -> None:
        """Push what the store of `root` gained; a store that cannot be read now is tried later."""
        if not force and root in self._idle and _file_mark(root) == self._idle[root]:
            return  # its reader was closed for idleness, and the file has not changed since
        self._idle.pop(root, None)
        store = self._reader(root)
        if store is None:
            return
        version: int | None = None
        try:
            version = store.sync_data_version()
            if not force and self._versions.get(root) == version:
                with self._lock:  # nothing committed since the last push
                    status = self._status.get(root)
                    if status is not None and not status.lag_events:
                        status.behind_since = None
                self._close_if_idle(root, store)
                return
            self._changed[root] = time.monotonic()
            if not store.sync_ready():
                repository = repository_identity(root)
                self._registry.call(root, lambda s: s.sync_prepare(repository)).result(_PREPARE_TIMEOUT_S)
                store.check_file()
            ident = store.sync_identity()
            if ident is None:
                return
            job = self._pushes.setdefault(
                root, StorePush(root, self.identity, batch=self._batch, redact=self.redact)
            )
            job.file_id = file_id(root)
            while True:
                self._busy_since = time.monotonic()
                try:
                    done = job.push(conn, store, *ident)
                finally:
                    self._busy_since = None
                self._after_push(root, store, ident, done.events, done.cursor, sum(job.masked.values()))
                job.masked.clear()
                if done.events < job.batch or self._stopping.is_set():
                    break
            self._versions[root] = version
        except NewIncarnation as exc:
            self._reincarnate(root, str(exc))
        except AzsdError as exc:  # the store, not the database: the others go on
            self._set(root, last_error=str(exc))
        except _REFUSED as exc:  # what this store holds, refused by the database: the others go on
            self._refused(conn, root, exc)
            if version is not None:
                self._versions[root] = version  # tried again once the store changes
        except TimeoutError:
            self._set(root, last_error="the store's writer is busy; trying again")
            with self._lock:
                self._dirty.add(root)

    def _refused(self, conn: psycopg.Connection[Any], root: str, exc: psycopg.Error) -> None:
        """The database refused what the store of `root` holds (a value it cannot take, a row of
        another role's: a copy of a teammate's store file): said in its status, and tried again once
        the store changes; the connection, which is fine, goes on to the next store."""
        try:
            conn.rollback()
        except psycopg.Error:
            self._close()
        why = reason(exc)
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            why += " (is this a copy of another person's store? its sessions are theirs to push)"
        log.warning("sync: %s cannot be pushed: %s", root, why)
        self._set(root, last_error=f"cannot be pushed: {why}")
        self._pushes.pop(root, None)  # where it stood is not known: from what the database holds, next time

    def _close_if_idle(self, root: str, store: Store) -> None:
        """Close the reader of a store nothing was committed to for :data:`READER_IDLE_S` (its file's
        mtime and size then tell whether to open it again: no connection is held meanwhile)."""
        if time.monotonic() - self._changed.setdefault(root, time.monotonic()) < READER_IDLE_S:
            return
        mark = _file_mark(root)
        if mark is None:
            return
        store.close()
        self._readers.pop(root, None)
        self._versions.pop(root, None)  # another connection's data_version is not comparable
        self._changed.pop(root, None)
        self._idle[root] = mark

    def _reincarnate(self, root: str, reason: str) -> None:
        """The store file is not the one the database's cursor belongs to: give it a store UUID and
        session UUIDs of its own (its writer does), and push all of it as new. What the other file
        pushed stays as it is: never a tombstone for a session that lives somewhere."""
        self._pushes.pop(root, None)
        self._versions.pop(root, None)
        try:
            new = self._registry.call(root, lambda s: s.sync_reincarnate()).result(_PREPARE_TIMEOUT_S)
        except (AzsdError, TimeoutError) as exc:
            self._set(root, last_error=f"cannot give the store a new identity: {exc}")
        else:
            log.warning("sync: %s; it is pushed as a new store, %s", reason, new)
            self._set(root, note=f"{reason}: pushed as a new store {new}", last_error="")
        with self._lock:
            self._dirty.add(root)
        self._wake.set()

    def _after_push(
        self, root: str, store: Store, ident: tuple[str, str], events: int, cursor: int, masked: int = 0
    ) -> None:
        local = store.sync_max_event_id()
        lag = store.sync_count_after(cursor) if local > cursor else 0
        now = time.monotonic()
        with self._lock:
            status = self._status.setdefault(root, StoreStatus(root=root))
            was_behind = status.behind_since is not None
            status.store_uuid, status.repository = ident
            if events or status.last_push is None:
                status.last_push = time.time()
            status.pushed += events
            status.masked += masked
            status.pushed_event_id, status.local_event_id, status.lag_events = cursor, local, lag
            status.last_error = ""
            status.behind_since = (status.behind_since or now) if lag else None
        if (was_behind or events) and not lag and self._on_caught_up is not None:
            self._on_caught_up(root, status)

    def _observe(self, root: str) -> None:
        """While the database is away: how far the store is ahead of what was last pushed."""
        store = self._reader(root)
        if store is None:
            return
        try:
            local = store.sync_max_event_id()
            with self._lock:
                pushed = self._status.setdefault(root, StoreStatus(root=root)).pushed_event_id
            lag = store.sync_count_after(pushed) if local > pushed else 0
        except AzsdError:
            return
        with self._lock:
            status = self._status[root]
            status.local_event_id, status.lag_events = local, lag
            if lag and status.behind_since is None:
                status.behind_since = time.monotonic()

    def _set(self, root: str, **values: Any) -> None:
        with self._lock:
            status = self._status.setdefault(root, StoreStatus(root=root))
            for key, value in values.items():
                setattr(status, key, value)

    def _save_roots(self) -> None:
        self._roots_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self._roots_path, "".join(f"{r}\n" for r in sorted(self._roots)).encode(), mode=0o600)
