"""The connection to one `.azs` file, and the rules every write follows.

:class:`StoreCore` owns opening the file (lazily: opening a root never creates it), the pragmas
(DELETE journal, never WAL; spec §1.2), the schema and AZUREAL's v3 migration (§1.3, §1.4), opening
a newer schema read-only, :meth:`StoreCore.atomic` (``BEGIN IMMEDIATE``, a savepoint when nested),
the translation of sqlite3 errors into the :mod:`azsd.errors` tree, the small query helpers and the
row codec the layers above share. It knows nothing of sessions or events beyond the schema text.

A Store is a store's writer, or (``Store.open(root, reader=True)``) a reader beside it: a connection
with ``PRAGMA query_only`` that never creates, migrates or writes the file, whose reads run in
:meth:`StoreCore.snapshot` (a deferred transaction: rollback-journal mode lets them read while a
writer holds RESERVED), and on which a write raises :class:`NeedsWriterError` so that the caller can
hand the call to the writer. Either notices, in :meth:`StoreCore.check_file`, that the file at its
path is no longer the one it opened (replaced, deleted, or created by someone else).
"""

from __future__ import annotations

import itertools
import logging
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Final, Self

from azsd.errors import ReadOnlyStoreError, StoreError
from azsd.store.codec import RowCodec
from azsd.store.migration import migrate, read_schema_version
from azsd.store.pacing import Pacer
from azsd.store.private import prepare_store_file
from azsd.store.schema import SCHEMA_VERSION
from azsd.store.sqlite_errors import NeedsWriterError, StoreBusyError, raise_open_error, translate
from azsd.store.writer_lock import take_writer_lock

__all__ = [
    "BUSY_TIMEOUT_S",
    "READ_BUSY_TIMEOUT_S",
    "STORE_DIR",
    "STORE_FILE",
    "NeedsWriterError",
    "StoreBusyError",
    "StoreCore",
    "store_path",
]

log = logging.getLogger("azsd.store")
#: Numbers the connections this process opens, so a reopened file never looks like the one before.
_CONNECTIONS: Final = itertools.count(1)
#: How long ago the file must have changed for :meth:`StoreCore.read_version` to tell its state
#: (well over a kernel tick), and on a file system that keeps whole seconds.
_SETTLED_NS: Final = 50_000_000
_SETTLED_COARSE_NS: Final = 2_000_000_000

STORE_DIR: Final = ".azureal"
STORE_FILE: Final = "sessions.azs"
#: rusqlite's default, which AZUREAL runs with.
BUSY_TIMEOUT_S: Final = 5.0
#: How long a reader waits for a lock (a writer spilling or committing) before it gives up, and its
#: worker hands the read to the writer instead.
READ_BUSY_TIMEOUT_S: Final = 1.0


def store_path(root: Path) -> Path:
    """Where the store of the worktree `root` lives."""
    return Path(root) / STORE_DIR / STORE_FILE


class StoreCore:
    """The connection to one `.azs` file, opened lazily: absent until the first session is created."""

    def __init__(self, root: Path, *, reader: bool = False, exclusive: bool = False) -> None:
        self.root = Path(root)
        self.path = store_path(self.root)
        self._where, self._wal_where = str(self.path), f"{self.path}-wal"  # (looked at on every read)
        self.reader = reader
        self.exclusive = exclusive and not reader
        self._writer_lock: IO[str] | None = None  # held while the file is open, when exclusive
        self.read_only = False
        self.schema_version: int | None = None
        self._conn: sqlite3.Connection | None = None
        self._file_id: tuple[int, int] | None = None  # (st_dev, st_ino) of the file opened
        self._opened = 0  # which connection this is, of all this process opened (see read_version)
        self._lock_wait_ms: int | None = None  # the connection's busy_timeout, when set by us
        self._seen_wal: os.stat_result | None = None  # the `-wal` file check_file saw (another program's)
        self._version: tuple[int, ...] | None = None  # what check_file saw (see read_version)
        self._settled_ns = 0  # and from when it is sure to show a later change
        self._codec = RowCodec()
        self._depth = 0
        #: Times every write transaction, for the store's life (:mod:`azsd.store.pacing`).
        self.pacer = Pacer()
        #: Run between the chunks of a long write (:mod:`azsd.store.chunks`): the worker's queued calls.
        self.between_chunks: Callable[[], None] | None = None
        try:
            if self.path.exists():
                self._connect()
        except BaseException:
            self.close()  # (the writer lock, if taken)
            raise

    @classmethod
    def open(cls, root: Path, *, reader: bool = False, exclusive: bool = False) -> Self:
        """Open the store of `root`; the file is not created until a session is.

        A `reader` only reads (beside the store's writer, which alone creates and migrates the file).
        An `exclusive` writer (a daemon's) holds the store's writer lock while the file is open: one
        azsd writes a store file, whatever its state dir (:mod:`azsd.store.writer_lock`).
        """
        return cls(root, reader=reader, exclusive=exclusive)

    @property
    def exists(self) -> bool:
        return self._conn is not None

    @property
    def transaction_lost(self) -> bool:
        """Inside :meth:`atomic`, whether SQLite has rolled the whole transaction back (it may, on
        SQLITE_FULL or an I/O error): nothing written in it since `BEGIN` is on disk, or ever will be."""
        return self._depth > 0 and (self._conn is None or not self._conn.in_transaction)

    def close(self) -> None:
        self._forget()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._file_id, self._seen_wal, self._version = None, None, None
        if self._writer_lock is not None:
            self._writer_lock.close()
            self._writer_lock = None

    def check_file(self) -> str | None:
        """Follow the file at the store's path when it is no longer the one this Store opened: reopen
        a replaced file, let go of a deleted one (the next create makes a new file), open one that
        appeared. Returns what happened, for the log (None when nothing did). Call between
        transactions: it costs a stat, and an access of the `-wal` (kept for :meth:`read_version`).
        """
        assert self._depth == 0, "check_file inside a transaction"
        try:
            info = os.stat(self._where)
        except FileNotFoundError:
            if self._conn is None:
                return None
            self.close()
            return "deleted"
        if self._conn is None:
            self._connect()
            return "created" if self._conn is not None else None
        if (info.st_dev, info.st_ino) == self._file_id:
            self._saw(info, _stat_or_none(self._wal_where) if os.access(self._wal_where, os.F_OK) else None)
            return None
        self.close()
        self.read_only, self.schema_version = False, None  # of the file that was there
        self._connect()
        return "replaced"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _forget(self) -> None:
        """Drop what this Store keeps in memory about the file (on close, a rollback, a failed commit).

        A layer that keeps such state (the session index, :mod:`azsd.store.listing`) extends this.
        """

    # -- connection and schema ----------------------------------------------------------------

    def _connect(self) -> None:
        kind = _not_a_file(self.path)
        if kind is not None:  # SQLite would only say "unable to open database file"
            raise StoreError(f"{self.path} is {kind}, not a session store file: move it away")
        if self.reader:
            self._connect_reader()
            return
        prepare_store_file(self.path)  # (0700, 0600, kept out of git: azsd.store.private)
        if self.exclusive and self._writer_lock is None:
            self._writer_lock = take_writer_lock(self.path)
        uri = f"{self.path.as_uri()}?mode=rwc"
        conn = sqlite3.connect(
            uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        self._file_id = _file_id(self.path)
        try:
            version = read_schema_version(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise_open_error(self.path, exc)
        if version is not None and version > SCHEMA_VERSION:
            conn.close()
            ro = f"{self.path.as_uri()}?mode=ro"
            conn = sqlite3.connect(
                ro, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            self.read_only = True
            log.warning(
                "%s has schema_version %d (newer than %d): opened read-only",
                self.path,
                version,
                SCHEMA_VERSION,
            )
        else:
            with translate(self.path):
                mode = conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
                if str(mode).lower() != "delete":
                    conn.close()
                    raise StoreError(f"{self.path}: cannot switch journal mode to DELETE (it is {mode})")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
                if conn.execute("PRAGMA page_count").fetchone()[0] == 0:  # a new file: before any table
                    conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # freed pages can go back (vacuum.py)
        self._conn = conn
        self._opened, self._lock_wait_ms, self._version = next(_CONNECTIONS), None, None
        if not self.read_only:
            with translate(self.path):
                self._migrate()
        self.schema_version = version if self.read_only else SCHEMA_VERSION

    def _connect_reader(self) -> None:
        """A reader's connection: never creates the file, never writes it (`query_only`), and stays
        closed while the file has no schema yet (its writer is creating it)."""
        uri = f"{self.path.as_uri()}?mode=rw"
        with translate(self.path):
            conn = sqlite3.connect(
                uri, uri=True, timeout=READ_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        file_id = _file_id(self.path)
        try:
            conn.execute("PRAGMA query_only = 1")
            version = read_schema_version(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise_open_error(self.path, exc)
        if version is None:
            conn.close()
            return
        self._conn, self._file_id = conn, file_id
        self._opened, self._lock_wait_ms, self._version = next(_CONNECTIONS), None, None
        self.read_only = version > SCHEMA_VERSION
        self.schema_version = version

    def _migrate(self) -> None:
        """Run AZUREAL's DDL and v3 migration (spec §1.4) when the file is not already v3."""
        migrate(self._require())

    def _require(self) -> sqlite3.Connection:
        assert self._conn is not None
        return self._conn

    def _writer(self, *, create: bool = False) -> sqlite3.Connection:
        if self.read_only:
            raise ReadOnlyStoreError(
                f"{self.path} has schema_version {self.schema_version}, newer than the {SCHEMA_VERSION} "
                "this azsd understands: it is open read-only (upgrade azsd to write to it)"
            )
        if self._conn is None:
            if not create:
                raise StoreError(f"{self.path} does not exist yet (create a session first)")
            self._connect()
        return self._require()

    @contextmanager
    def atomic(self, *, create: bool = False) -> Iterator[sqlite3.Connection]:
        """A write transaction (`BEGIN IMMEDIATE`), or a savepoint inside an enclosing one.

        When SQLite has rolled the whole transaction back under it (SQLITE_FULL, an I/O error), the
        error that did it is raised as it is: there is no savepoint left to roll back to, and no
        later savepoint may begin (outside a transaction it would commit on its own).
        """
        if self.reader:
            with self._read_only_atomic(create) as conn:
                yield conn
            return
        conn = self._writer(create=create)
        depth = self._depth
        with translate(self.path):
            if depth > 0 and not conn.in_transaction:
                raise StoreError(
                    f"{self.path}: the enclosing transaction was rolled back (nothing was written)"
                )
            asked = time.monotonic()
            conn.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT azsd_{depth}")
            if depth == 0:
                self.pacer.begin(waited=time.monotonic() - asked)  # (a wait: another writer is at work)
            try:
                with self._held(conn, depth):
                    yield conn
            finally:
                if depth == 0:
                    self.pacer.release()  # (leaving the lock free for a while when that is due)

    @contextmanager
    def _held(self, conn: sqlite3.Connection, depth: int) -> Iterator[None]:
        """:meth:`atomic` holding its transaction (or savepoint): its commit, or rollback on an error."""
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth = depth
            self._forget()  # it may hold what is being rolled back
            if conn.in_transaction:  # else SQLite rolled it all back already
                conn.execute("ROLLBACK" if depth == 0 else f"ROLLBACK TO azsd_{depth}")
                if depth > 0:
                    conn.execute(f"RELEASE azsd_{depth}")
            raise
        self._depth = depth
        if not conn.in_transaction:  # rolled back under a caller that went on
            self._forget()
            raise StoreError(f"{self.path}: the transaction was rolled back (nothing was written)")
        try:
            if depth == 0:
                self.pacer.committing()
            conn.execute("COMMIT" if depth == 0 else f"RELEASE azsd_{depth}")
        except sqlite3.Error:
            self._forget()
            if depth == 0 and conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if depth == 0:
            self._committed()

    def _committed(self) -> None:
        """A write transaction of this Store was committed (the layers above file what it changed)."""

    @contextmanager
    def _read_only_atomic(self, create: bool) -> Iterator[sqlite3.Connection]:
        """`atomic` on a reader: reads go through (inside its snapshot), a write raises
        :class:`NeedsWriterError`."""
        if self._conn is None:
            raise NeedsWriterError(f"{self.path}: a write on the store's reader")
        try:
            yield self._conn
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_READONLY:
                raise NeedsWriterError(f"{self.path}: a write on the store's reader") from None
            with translate(self.path):
                raise

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads that see one state of the file (a deferred transaction, ended when they are done);
        on a Store with no file yet, nothing to do."""
        conn = self._conn
        if conn is None or conn.in_transaction:
            yield
            return
        with translate(self.path):
            conn.execute("BEGIN")
        try:
            yield
        finally:
            if _in_transaction(conn):  # (SQLite may have ended it on an I/O error)
                with translate(self.path):
                    conn.execute("ROLLBACK")
            if self.reader and self._seen_wal is not None:  # another program's WAL: hold nothing
                conn.close()  # between reads, so that the writer can switch the file back to DELETE
                self._conn = None  # (check_file opens it again)

    def wait_for_locks(self, seconds: float) -> None:
        """From now on, wait at most `seconds` for another connection's lock (then
        :class:`StoreBusyError`); kept until changed, and changing it costs a statement only when the
        value is new (a reader's inline reads wait 0, its own thread the connection's default)."""
        conn, ms = self._conn, int(seconds * 1000)
        if conn is not None and ms != self._lock_wait_ms:
            with translate(self.path):
                conn.execute(f"PRAGMA busy_timeout = {ms}")
            self._lock_wait_ms = ms

    def still_open(self) -> bool:
        """Whether the file at the store's path is the one open (a stat; :meth:`check_file` follows it)."""
        return self._conn is not None and _file_id(self.path) == self._file_id

    def read_version(self) -> tuple[int, ...] | None:
        """What tells the states of the file apart as the last :meth:`check_file` saw it, without a
        lock or a statement: the file's identity, size, mtime and ctime (every commit, ours or
        another program's, writes to the file), and which connection this is. None with no file
        open, or when the file changed too recently for a later change to be sure to show: Git's
        rule for "racily clean" index entries, since the kernel stamps times from a coarse clock, so
        two writes a few ms apart can leave the same mtime. A read that follows `check_file` reads
        the state it names, or a later one (then a later `check_file` names another).

        A file another program switched to WAL takes its commits in its `-wal` file, not in the file
        itself: that file's stat is part of the version too (until the writer switches the store back
        to DELETE, :meth:`~azsd.store.vacuum.Vacuum.keep_journal_mode`)."""
        if self._conn is None or time.time_ns() < self._settled_ns:
            return None
        return self._version

    def _saw(self, info: os.stat_result, wal: os.stat_result | None) -> None:
        """Keep what `check_file` saw, and the version it makes (:meth:`read_version`)."""
        self._seen_wal = wal
        self._version = (self._opened, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        self._settled_ns = max(_settled(info.st_mtime_ns), _settled(info.st_ctime_ns))
        if wal is not None:
            self._version += (wal.st_ino, wal.st_size, wal.st_mtime_ns, wal.st_ctime_ns)
            self._settled_ns = max(self._settled_ns, _settled(wal.st_mtime_ns), _settled(wal.st_ctime_ns))

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        if self._conn is None:
            return []
        with translate(self.path):
            return self._conn.execute(sql, params).fetchall()

    def _scalar(self, sql: str, params: Sequence[Any] = (), default: Any = None) -> Any:
        rows = self._query(sql, params)
        return rows[0][0] if rows and rows[0][0] is not None else default

    def _has_table(self, name: str) -> bool:
        return bool(self._query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)))


def _not_a_file(path: Path) -> str | None:
    """What `path` is when it is something other than a regular file ("a directory", …), else None."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # absent (or unreadable): SQLite says why
    if stat.S_ISREG(mode):
        return None
    return "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a special file"


def _settled(at: int) -> int:
    """When a file changed at `at` (ns; its mtime, or its ctime: a program may set the mtime back
    after writing) is sure to show a later change in its stat, on a file system of whole seconds too."""
    return at + (_SETTLED_COARSE_NS if at % 1_000_000_000 == 0 else _SETTLED_NS)


def _stat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _in_transaction(conn: sqlite3.Connection) -> bool:
    return conn.in_transaction


def _file_id(path: Path) -> tuple[int, int] | None:
    """What tells the file at `path` from another put there later."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino
