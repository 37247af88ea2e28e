"""Files read ahead of an import's writer, in worker processes: :class:`ReadAhead`.

An import's writer inserts rows (:mod:`azsd.ingest.import_prepared`); reading, parsing, compacting
and compressing the files (:func:`~azsd.ingest.prepare.prepare_file`) is pure Python and needs no
store, so it runs beside the writer, in processes of its own (threads would share one interpreter
lock). They read in order, at most :data:`AHEAD_BYTES` ahead of the file the writer takes, and
hand back each file's rows; the writer takes them in the order of the sources, so the import's
outcome does not depend on which worker finished first.

The workers are started on the first import big enough to gain from them (:data:`POOL_MIN_BYTES`;
a smaller one reads in the writer's thread, as a start costs more than it saves) and stop after
:data:`IDLE_S` without work. A file a worker fails on (it vanished, it is not what it should be, or
the worker died) is handed back as the error, and the writer imports it the usual way, which says
what is wrong with it, or imports it after all.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Final

from azsd.ingest.prepare import PreparedFile, prepare_file
from azsd.ingest.sources import Agent

__all__ = ["AHEAD_BYTES", "IDLE_S", "POOL_MIN_BYTES", "WORKERS", "ReadAhead"]

log = logging.getLogger("azsd.ingest.importer")

#: An import reading at least this much is read by the worker processes; a smaller one in the
#: writer's thread.
POOL_MIN_BYTES: Final = 2 << 20
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
                    self._executor = ProcessPoolExecutor(WORKERS, mp_context=spawn)
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
                self._executor.shutdown(wait=False)
                self._executor = None


_POOL: Final = _Pool()


class ReadAhead:
    """:func:`~azsd.ingest.prepare.prepare_file` of each job, in order (:meth:`next`), read ahead in
    worker processes when they are many (see the module docstring). Use as a context manager."""

    def __init__(self, jobs: Sequence[Job], *, workers: bool | None = None) -> None:
        self._jobs = list(jobs)
        total = sum(job[2] for job in self._jobs if job is not None)
        use = workers if workers is not None else total >= POOL_MIN_BYTES
        self._executor = _POOL.take() if use else None
        self._broken = False
        self._given = 0  # jobs submitted (or passed over)
        self._taken = 0  # results handed out
        self._ahead = 0  # bytes submitted and not taken
        self._futures: deque[Future[PreparedFile] | None] = deque()

    @property
    def in_workers(self) -> bool:
        """Whether the files are read by the worker processes (else in the caller's thread)."""
        return self._executor is not None

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Give the workers back (the files still being read are dropped)."""
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
        return found

    def _fill(self) -> None:
        """Submit jobs while fewer than :data:`AHEAD_BYTES` wait (at least the next one)."""
        assert self._executor is not None
        while self._given < len(self._jobs) and (self._given <= self._taken or self._ahead < AHEAD_BYTES):
            job = self._jobs[self._given]
            self._given += 1
            if job is None:
                self._futures.append(None)
                continue
            try:
                self._futures.append(self._executor.submit(prepare_file, job[0], job[1]))
                self._ahead += job[2]
            except RuntimeError as exc:  # the pool broke or was shut down: the writer reads the rest
                log.warning("reading files in the writer's thread: %s", exc)
                self._broken = True
                self._futures.append(None)
                self._given = len(self._jobs)
                return


def _prepared_here(job: tuple[str, Agent, int]) -> Prepared:
    try:
        return prepare_file(job[0], job[1])
    except Exception as exc:
        return exc
