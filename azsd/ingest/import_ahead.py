"""Files read ahead of an import's writer, in worker processes: :class:`ReadAhead`.

An import's writer inserts rows (:mod:`azsd.ingest.import_prepared`); reading, parsing, compacting
and compressing the files (:func:`~azsd.ingest.prepare.prepare_file`) is pure Python and needs no
store, so it runs beside the writer, in processes of its own (threads would share one interpreter
lock). They read in order, at most :data:`AHEAD_BYTES` ahead of the file the writer takes, and
hand back each file's rows; the writer takes them in the order of the sources, so the import's
outcome does not depend on which worker finished first.

The workers are started on the first import big enough to gain from them (:data:`POOL_MIN_BYTES`;
a smaller one reads in the writer's thread, as a start costs more than it saves) and stop after
:data:`IDLE_S` without work. A listing of sources (:func:`expect`) only notes its files: a client
that only looks starts nothing; the first import request after it starts the workers, which then
read on through the listing, ahead of the requests that follow.

A file a worker fails on (it vanished, it is not what it should be, or the worker died) is handed
back as the error, and the writer imports it the usual way, which says what is wrong with it, or
imports it after all.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Final, TypeVar

from azsd.ingest.prepare import PreparedFile, prepare_file
from azsd.ingest.sources import Agent

__all__ = ["AHEAD_BYTES", "IDLE_S", "POOL_MIN_BYTES", "WORKERS", "Job", "ReadAhead", "expect", "in_workers"]

log = logging.getLogger("azsd.ingest.importer")

#: An import reading at least this much is read by the worker processes; a smaller one in the
#: writer's thread (starting the workers costs about what reading this much there does).
POOL_MIN_BYTES: Final = 8 << 20
#: Bytes of files given to the workers and not yet taken by the writer (what the rows waiting for
#: it take in memory is about as much).
AHEAD_BYTES: Final = 24 << 20
#: Worker processes: the writer keeps a core busy; on a machine of two, one reader keeps up with it
#: only when the writer has less to do, so they share.
WORKERS: Final = max(1, min(2, (os.cpu_count() or 1)))
#: The workers stop after this long without work.
IDLE_S: Final = 30.0

#: A file to read: its path, its agent, and its size (for the read-ahead's bound); None: not one to
#: read ahead (the writer imports it the usual way).
Job = tuple[str, Agent, int] | None
Prepared = PreparedFile | Exception | None


class _Pool:
    """The worker processes, started when first needed and stopped when idle."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._users = 0
        self._idle: threading.Timer | None = None

    def take(self) -> ProcessPoolExecutor | None:
        """The running pool (started now if need be), or None when processes cannot be started."""
        with self._lock:
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None
            if self._executor is None:
                try:
                    spawn = multiprocessing.get_context("spawn")
                    self._executor = ProcessPoolExecutor(
                        WORKERS, mp_context=spawn, initializer=_watch_parent, initargs=(os.getpid(),)
                    )
                except (OSError, ValueError) as exc:  # no processes here: the writer's thread reads
                    log.warning("reading files in the writer's thread: %s", exc)
                    return None
            self._users += 1
            return self._executor

    def give_back(self, broken: bool = False) -> None:
        """Done with the pool; it stops after :data:`IDLE_S` unless taken again (at once, `broken`)."""
        with self._lock:
            self._users -= 1
            if broken and self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None
            if self._users == 0 and self._executor is not None:
                self._idle = threading.Timer(IDLE_S, self._stop)
                self._idle.daemon = True
                self._idle.start()

    def _stop(self) -> None:
        with self._lock:
            if self._users == 0 and self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None
                with _LISTED_LOCK:
                    for listed in _LISTED.values():
                        listed.drop()
                    _LISTED.clear()


_POOL: Final = _Pool()

T = TypeVar("T")
R = TypeVar("R")


def in_workers(fn: Callable[[T], R], items: Sequence[T], *, size: int) -> Iterator[R | Exception]:
    """`fn` of each of `items`, in order, by the worker processes when the files they name hold at
    least :data:`POOL_MIN_BYTES` (`size`), else here; an item `fn` failed on gives its error.
    `fn` must be a module's function (the workers import it), its items and results small."""
    executor = _POOL.take() if size >= POOL_MIN_BYTES else None
    futures: list[Future[R]] = []
    if executor is not None:
        try:
            futures = [executor.submit(fn, item) for item in items]
        except RuntimeError as exc:  # the pool broke or was shut down: read here
            log.warning("reading files here: %s", exc)
            _POOL.give_back(broken=True)
            executor = None
    if executor is None:
        for item in items:
            try:
                yield fn(item)
            except Exception as exc:
                yield exc
        return
    broken = False
    try:
        for future in futures:
            try:
                yield future.result()
            except Exception as exc:  # (BrokenProcessPool among them: the rest fail alike)
                broken = broken or type(exc).__name__ == "BrokenProcessPool"
                yield exc
    finally:
        for future in futures:
            future.cancel()
        _POOL.give_back(broken)


class _Listed:
    """The files a listing of sources (`ImportSources`) found to import, read ahead of the requests
    that will ask for them (by path; the requests come in the listing's order)."""

    def __init__(self, jobs: Sequence[tuple[str, Agent, int]]) -> None:
        self.waiting: dict[str, tuple[str, Agent, int]] = {job[0]: job for job in jobs}  # not submitted
        self.read: dict[str, tuple[Future[PreparedFile], int]] = {}  # submitted, not taken: (result, size)
        self.ahead = 0  # the bytes of `read`
        self.used = time.monotonic()  # when it was made, or an import last took from it

    @property
    def stale(self) -> bool:
        """Whether no import has taken from it for :data:`IDLE_S` (its requests are not coming)."""
        return time.monotonic() - self.used > IDLE_S

    def claim(self, job: tuple[str, Agent, int]) -> Future[PreparedFile] | None:
        """What was read ahead of `job` (taken from the listing), else None (and it is not read for
        the listing any more)."""
        self.used = time.monotonic()
        self.waiting.pop(job[0], None)
        found = self.read.pop(job[0], None)
        if found is None:
            return None
        self.ahead -= found[1]
        return found[0]

    def top_up(self, executor: ProcessPoolExecutor, room: int) -> None:
        """Submit the next files of the listing while the ones submitted and not taken hold less
        than `room` bytes."""
        while self.waiting and self.ahead < room:
            path = next(iter(self.waiting))
            job = self.waiting.pop(path)
            self.read[path] = (executor.submit(prepare_file, job[0], job[1]), job[2])
            self.ahead += job[2]

    def drop(self) -> None:
        for future, _ in self.read.values():
            future.cancel()
        self.read.clear()
        self.waiting.clear()
        self.ahead = 0


#: The latest listing of each store (by its root), while the workers run.
_LISTED: Final[dict[str, _Listed]] = {}
_LISTED_LOCK: Final = threading.Lock()


def expect(root: str, jobs: Sequence[tuple[str, Agent, int]]) -> None:
    """The files an import into the store of `root` may ask for next, in order (a listing's), when
    they are enough to be worth reading ahead (:data:`POOL_MIN_BYTES`). Nothing is read yet (a
    client may only be looking): the first import request that follows starts the workers, and they
    read on through the listing from then on, so that the next requests find their files read.
    Replaces an earlier listing."""
    with _LISTED_LOCK:
        old = _LISTED.pop(root, None)
        if old is not None:
            old.drop()
        if sum(job[2] for job in jobs) >= POOL_MIN_BYTES:
            _LISTED[root] = _Listed(jobs)


class ReadAhead:
    """:func:`~azsd.ingest.prepare.prepare_file` of each job, in order (:meth:`next`), read ahead in
    worker processes when they are many, or were listed for the store of `root` (:func:`expect`;
    see the module docstring). Use as a context manager."""

    def __init__(self, jobs: Sequence[Job], *, workers: bool | None = None, root: str = "") -> None:
        self._jobs = list(jobs)
        with _LISTED_LOCK:
            self._listed = _LISTED.get(root) if root else None
            if self._listed is not None and self._listed.stale:
                del _LISTED[root]
                self._listed = None
        total = sum(job[2] for job in self._jobs if job is not None)
        use = workers if workers is not None else total >= POOL_MIN_BYTES or self._listed is not None
        self._executor = _POOL.take() if use else None
        self._broken = False
        self._given = 0  # jobs submitted (or passed over)
        self._taken = 0  # results handed out
        self._ahead = 0  # bytes submitted and not taken
        self._futures: deque[Future[PreparedFile] | None] = deque()
        self._from_listing: set[int] = set()  # (id of) the futures read for the listing

    @property
    def in_workers(self) -> bool:
        """Whether the files are read by the worker processes (else in the caller's thread)."""
        return self._executor is not None

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Give the workers back (the files still being read for this are dropped; those read ahead
        for the listing's next requests are kept)."""
        if self._executor is not None:
            for future in self._futures:
                if future is not None:
                    future.cancel()
            self._futures.clear()
            self._executor = None
            _POOL.give_back(self._broken)

    def next(self) -> Prepared:
        """The next job's prepared file, or the error that stopped it; None for a None job."""
        job = self._jobs[self._taken]
        self._taken += 1
        if self._executor is None:
            return None if job is None else _prepared_here(job)
        self._fill()
        future = self._futures.popleft() if self._futures else None
        if job is None:
            return None
        if future is None:  # the pool could not take it
            return _prepared_here(job)
        self._ahead -= job[2]
        try:
            found = future.result()
        except Exception as exc:  # (BrokenProcessPool among them: the rest fail alike)
            self._broken = self._broken or type(exc).__name__ == "BrokenProcessPool"
            return exc
        self._fill()
        if id(future) in self._from_listing and not _unchanged(found):
            self._from_listing.discard(id(future))
            return _prepared_here(job)  # it changed since the listing's read: read it as it is now
        return found

    def _fill(self) -> None:
        """Submit jobs while fewer than :data:`AHEAD_BYTES` wait (at least the next one), taking what
        was read for the listing; then go on with the listing's next files."""
        assert self._executor is not None
        try:
            while self._given < len(self._jobs) and (self._given <= self._taken or self._ahead < AHEAD_BYTES):
                job = self._jobs[self._given]
                self._given += 1
                future = None
                if job is not None:
                    future = self._claimed(job) or self._executor.submit(prepare_file, job[0], job[1])
                    self._ahead += job[2]
                self._futures.append(future)
            if self._listed is not None and self._given == len(self._jobs):
                with _LISTED_LOCK:
                    self._listed.top_up(self._executor, AHEAD_BYTES - self._ahead)
        except RuntimeError as exc:  # the pool broke or was shut down: the writer reads the rest
            log.warning("reading files in the writer's thread: %s", exc)
            self._broken = True
            self._futures.append(None)
            self._given = len(self._jobs)

    def _claimed(self, job: tuple[str, Agent, int]) -> Future[PreparedFile] | None:
        if self._listed is None:
            return None
        with _LISTED_LOCK:
            future = self._listed.claim(job)
        if future is not None:
            self._from_listing.add(id(future))
        return future


def _unchanged(prepared: PreparedFile) -> bool:
    """Whether the file is still as it was read (its size and modification time)."""
    try:
        info = os.stat(prepared.path)
    except OSError:
        return False
    return info.st_size == prepared.size and info.st_mtime == prepared.at


def _watch_parent(parent: int) -> None:
    """In a worker: end the process once the daemon that started it is gone (killed, it could not
    tell its workers to stop)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="azsd-parent-watch", daemon=True).start()


def _prepared_here(job: tuple[str, Agent, int]) -> Prepared:
    try:
        return prepare_file(job[0], job[1])
    except Exception as exc:
        return exc
